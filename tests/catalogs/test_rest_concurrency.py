"""Concurrent commits through ``floe serve``: Floe processes and PyIceberg clients racing, nothing lost.

Every writer commits through the REST protocol (requirements + updates); a 409 makes Floe's transaction
refresh and replay, PyIceberg's appends are retried by the test loop (bounded). The end state must hold
every committed append exactly once.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest
from _helpers import live_files, missing_references, row_count
from _rest import served_catalog
from _workers import FAST_RETRIES, appender, context

from floe.spec.schema import Schema
from floe.spec.snapshot import Operation

pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog.rest")
from pyiceberg.exceptions import CommitFailedException

WRITERS, APPENDS = 4, 15
PYICEBERG_APPENDS = 15


def test_rest_concurrent_appends_floe_processes_and_pyiceberg_lose_nothing(tmp_path: Path, schema: Schema) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client()
        cat.create_namespace("db")
        cat.create_table("db.t", schema, properties=FAST_RETRIES)
        props = {"name": "rc", "type": "rest", "uri": served.uri}
        py = pyiceberg_catalog.RestCatalog("py", uri=served.uri)
        py_table = py.load_table("db.t")
        py_rows = pa.Table.from_pylist(
            [{"id": 1, "data": "py", "p": 0}],
            schema=py_table.schema().as_arrow(),
        )
        ctx = context()
        start = ctx.Manager().Event()
        py_done: list[int] = []
        py_conflicts: list[int] = []

        def pyiceberg_writer() -> None:
            start.wait()
            for _ in range(PYICEBERG_APPENDS):
                for _attempt in range(200):  # bounded: PyIceberg retries a 409 4 times, then raises
                    try:
                        loaded = py.load_table("db.t")
                        time.sleep(0.02)  # widen the window so Floe's writers commit in between
                        loaded.append(py_rows)
                        py_done.append(1)
                        break
                    except CommitFailedException:
                        py_conflicts.append(1)
                        time.sleep(0.01)
                else:
                    raise AssertionError("PyIceberg append kept conflicting")

        started = time.monotonic()
        thread = threading.Thread(target=pyiceberg_writer)
        thread.start()
        with ProcessPoolExecutor(WRITERS, mp_context=ctx) as pool:
            futures = [pool.submit(appender, props, "db.t", w, APPENDS, start) for w in range(WRITERS)]
            start.set()
            written = sum(f.result(timeout=300) for f in futures)
        thread.join(timeout=300)
        elapsed = time.monotonic() - started
        total = WRITERS * APPENDS + len(py_done)
        table = cat.load_table("db.t")
        appends = [s for s in table.snapshots() if s.operation == Operation.APPEND]
        assert written == WRITERS * APPENDS
        assert len(py_done) == PYICEBERG_APPENDS
        assert len(appends) == total
        assert len(list(table.metadata.ancestors_of(table.metadata.current_snapshot_id))) == total
        assert table.current_snapshot().summary["total-records"] == str(total)
        assert row_count(table) == total
        assert len(live_files(table)) == total
        assert missing_references(table) == []
        # the backing catalog sees the same table state the clients committed
        assert served.backing.load_table("db.t").metadata_location == table.metadata_location
        print(f"{total} commits through floe serve in {elapsed:.1f}s; PyIceberg retries 409s itself, "
              f"{len(py_conflicts)} more were retried by the loop")


LOAD_WRITERS, LOAD_APPENDS = 8, 25


@pytest.mark.slow  # a load test (about a minute on 2 cores): make test-slow
def test_rest_load_8_processes_200_commits_lose_nothing(tmp_path: Path, schema: Schema) -> None:
    """A bounded load test on loopback: 8 client processes x 25 appends, every commit through the server."""
    with served_catalog(tmp_path) as served:
        cat = served.client()
        cat.create_namespace("db")
        cat.create_table("db.load", schema, properties=FAST_RETRIES)
        props = {"name": "rc", "type": "rest", "uri": served.uri}
        ctx = context()
        start = ctx.Manager().Event()
        with ProcessPoolExecutor(LOAD_WRITERS, mp_context=ctx) as pool:
            futures = [pool.submit(appender, props, "db.load", w, LOAD_APPENDS, start) for w in range(LOAD_WRITERS)]
            started = time.monotonic()
            start.set()
            written = sum(f.result(timeout=600) for f in futures)
            elapsed = time.monotonic() - started
        total = LOAD_WRITERS * LOAD_APPENDS
        table = cat.load_table("db.load")
        assert written == total
        assert len([s for s in table.snapshots() if s.operation == Operation.APPEND]) == total
        assert len(list(table.metadata.ancestors_of(table.metadata.current_snapshot_id))) == total
        assert row_count(table) == total
        assert len(live_files(table)) == total
        assert missing_references(table) == []
        print(f"{total} commits from {LOAD_WRITERS} processes through floe serve in {elapsed:.1f}s "
              f"({total / elapsed:.1f} commits/s), 0 lost")


def test_rest_two_servers_over_one_postgresql_catalog_lose_nothing(
    tmp_path: Path, schema: Schema, postgres_url: str
) -> None:
    """Two servers (threads here, machines in a deployment) over one PostgreSQL catalog, clients committing
    through both: the database's compare-and-set orders them, nothing is lost."""
    import uuid

    import floe
    from floe.server import background_server

    name = f"shared{uuid.uuid4().hex[:8]}"
    props = {"type": "sql", "uri": postgres_url, "warehouse": str(tmp_path / "wh")}
    one, two = floe.load_catalog(name, **props), floe.load_catalog(name, **props)
    with background_server(one) as s1, background_server(two) as s2:
        first = floe.load_catalog("c1", type="rest", uri=s1.uri)
        first.create_namespace("db")
        first.create_table("db.t", schema, properties=FAST_RETRIES)
        counts = {"c1": 0, "c2": 0}

        def writer(uri: str, key: str, n: int) -> None:
            table = floe.load_catalog(key, type="rest", uri=uri).load_table("db.t")
            for i in range(n):
                table.append(pa.Table.from_pylist(
                    [{"id": i, "data": key, "p": 0}], schema=pa.schema(
                        [pa.field("id", pa.int64(), nullable=False), pa.field("data", pa.string()), pa.field("p", pa.int32())]
                    ),
                ))
                counts[key] += 1

        threads = [threading.Thread(target=writer, args=(s.uri, k, 15)) for s, k in ((s1, "c1"), (s2, "c2"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        table = floe.load_catalog("c3", type="rest", uri=s2.uri).load_table("db.t")
        assert counts == {"c1": 15, "c2": 15}
        assert len(list(table.metadata.ancestors_of(table.metadata.current_snapshot_id))) == 30
        assert row_count(table) == 30
        assert missing_references(table) == []
        one.drop_table("db.t")  # the PostgreSQL database is shared by the suite: leave nothing behind
        one.drop_namespace("db")
