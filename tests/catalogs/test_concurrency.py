"""Optimistic concurrency across processes, for every catalog kind.

- 8 processes x 25 appends end with exactly 200 append snapshots, the exact row count, every file present.
- 4 processes overwriting the same partition: every attempt commits or fails with CommitConflictError, and
  no committed overwrite ever removed a file added after it started (nobody's rows are silently lost).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import pytest
from _helpers import live_files, missing_references, open_catalog, row_count, write_data_file
from _workers import FAST_RETRIES, appender, context, overwriter

from floe.scan.planner import read_manifest_files
from floe.serde.manifest_avro import read_manifest
from floe.spec.manifest import ManifestEntryStatus
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.snapshot import Operation


@pytest.mark.parametrize(
    ("writers", "per_writer"),
    [(4, 6), pytest.param(8, 25, marks=pytest.mark.slow)],  # the full load runs in make test-slow
    ids=["4x6", "8x25"],
)
def test_concurrent_appends_from_processes_lose_nothing(
    props: dict[str, str], schema: Schema, writers: int, per_writer: int
) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    cat.create_table("db.t", schema, properties=FAST_RETRIES)
    ctx = context()
    start = ctx.Manager().Event()
    with ProcessPoolExecutor(writers, mp_context=ctx) as pool:
        futures = [pool.submit(appender, props, "db.t", w, per_writer, start) for w in range(writers)]
        start.set()
        written = sum(f.result(timeout=300) for f in futures)
    table = cat.load_table("db.t")
    appends = [s for s in table.snapshots() if s.operation == Operation.APPEND]
    assert written == writers * per_writer
    assert len(appends) == writers * per_writer
    assert len(table.history()) == writers * per_writer
    assert len(list(table.metadata.ancestors_of(table.metadata.current_snapshot_id))) == writers * per_writer
    assert table.current_snapshot().summary["total-records"] == str(writers * per_writer)
    assert row_count(table) == writers * per_writer
    assert len(live_files(table)) == writers * per_writer
    assert missing_references(table) == []


def test_conflicting_overwrites_same_partition_commit_or_conflict(
    props: dict[str, str], schema: Schema
) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    spec = PartitionSpecBuilder(schema).identity("p").build()
    table = cat.create_table("db.o", schema, partition_spec=spec, properties=FAST_RETRIES)
    table.append([write_data_file(table, [{"id": -1, "data": "seed", "p": 1}], partition=(1,))])
    table.append([write_data_file(table, [{"id": -2, "data": "other", "p": 2}], partition=(2,))])
    ctx = context()
    start = ctx.Manager().Event()
    with ProcessPoolExecutor(4, mp_context=ctx) as pool:
        futures = [pool.submit(overwriter, props, "db.o", w, 3, start) for w in range(4)]
        start.set()
        outcomes = [o for f in futures for o in f.result(timeout=300)]
    committed = [sid for kind, sid in outcomes if kind == "committed"]
    assert len(outcomes) == 12
    assert committed  # every attempt ended in commit or a clear conflict
    table = cat.load_table("db.o")
    overwrites = [s for s in table.snapshots() if s.operation == Operation.OVERWRITE]
    assert len(overwrites) == len(committed)
    for s in overwrites:
        # Every file this overwrite removed was live in the snapshot it started from: it never dropped rows
        # that a concurrent writer committed after it began.
        start_id = int(s.summary["test.start-snapshot"])
        before = live_files(table, start_id)
        for m in read_manifest_files(table.io, s):
            with table.io.new_input(m.manifest_path).open() as fo:
                for e in read_manifest(fo.read(), manifest_file=m):
                    if e.status == ManifestEntryStatus.DELETED and e.snapshot_id == s.snapshot_id:
                        assert e.data_file.file_path in before, (
                            f"{s.summary['test.writer']} dropped unseen rows"
                        )
    # Partition 1 holds exactly the last committed overwrite's rows; partition 2 is untouched.
    rows = table.scan().to_arrow().to_pylist()
    last = table.current_snapshot().summary["test.writer"]
    assert sorted(r["data"] for r in rows if r["p"] == 1) == [last] * 3
    assert [r["data"] for r in rows if r["p"] == 2] == ["other"]
    assert missing_references(table) == []
