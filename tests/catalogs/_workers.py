"""Worker processes for the concurrency and crash tests (module-level so multiprocessing can import them)."""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Mapping
from typing import Any

from _helpers import open_catalog, write_data_file

from floe.errors import CommitConflictError

FAST_RETRIES = {
    "commit.retry.num-retries": "1000",
    "commit.retry.min-wait-ms": "10",
    "commit.retry.max-wait-ms": "100",
    "commit.retry.total-timeout-ms": "120000",
}


def context() -> Any:
    """A forkserver context with Floe preloaded: children start in milliseconds, not a second.

    pandas is imported lazily by the first ``pq.write_table`` (half a second), so it is preloaded too.
    """
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["floe", "floe.catalog", "sqlalchemy", "pyarrow.parquet", "pandas"])
    return ctx


def appender(props: Mapping[str, str], identifier: str, worker: int, count: int, start: Any) -> int:
    """Append ``count`` one-row files, each in its own commit; returns rows written."""
    cat = open_catalog(props)
    table = cat.load_table(identifier)
    start.wait()
    for i in range(count):
        f = write_data_file(
            table, [{"id": worker * 1000 + i, "data": f"w{worker}", "p": worker}], partition=()
        )
        table.append([f])
    return count


def overwriter(
    props: Mapping[str, str], identifier: str, worker: int, rounds: int, start: Any
) -> list[tuple[str, int]]:
    """Overwrite partition p=1 with this worker's rows, retrying on conflict after reloading.

    Returns the outcome of each attempt: ("committed", snapshot id) or ("conflict", 0).
    """
    cat = open_catalog(props)
    start.wait()
    outcomes: list[tuple[str, int]] = []
    for r in range(rounds):
        table = cat.load_table(identifier)
        begin = table.current_snapshot()
        rows = [{"id": worker * 100 + r * 10 + k, "data": f"w{worker}r{r}", "p": 1} for k in range(3)]
        op = (
            table.new_overwrite()
            .overwrite_by_filter("p = 1")
            .add_file(write_data_file(table, rows, partition=(1,)))
        )
        op.set("test.start-snapshot", str(begin.snapshot_id if begin else -1))
        op.set("test.writer", f"w{worker}r{r}")
        try:
            op.commit()
            outcomes.append(("committed", table.current_snapshot().snapshot_id))
        except CommitConflictError:
            outcomes.append(("conflict", 0))
    return outcomes


def crash_loop(props: Mapping[str, str], identifier: str, ready: Any) -> None:
    """Commit appends forever (until killed); the first commit happens before signalling ready."""
    cat = open_catalog(props)
    table = cat.load_table(identifier)
    i = 0
    while True:
        f = write_data_file(table, [{"id": i, "data": "c", "p": 0}])
        table.new_fast_append().append_file(f).commit() if i % 2 else table.append([f])
        if i == 0:
            ready.set()
        i += 1
        time.sleep(0)
