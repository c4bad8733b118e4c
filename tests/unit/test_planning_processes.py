"""Scan planning in worker processes (the ``planning-processes`` scan option, floe.scan.parallel): the same
files as one process, and never for a scan whose callers need column metrics the workers do not return."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from _table_testing import make_table

from floe.io.manifest_reader import read_manifest_files
from floe.scan.parallel import MIN_MANIFESTS_FOR_PROCESSES
from floe.scan.table_scan import SCAN_PROCESSES_OPTION
from floe.spec.types import IntegerType
from floe.table.table import Table


def _many_manifests(tmp_path: Path) -> Table:
    t = make_table(tmp_path, partitioned=False, version=3, **{"commit.manifest-merge.enabled": "false"})
    for i in range(MIN_MANIFESTS_FOR_PROCESSES + 2):
        t.append(pa.table({"id": pa.array([i], pa.int64()), "data": [f"d{i}"], "p": pa.array([i % 3], pa.int32())}))
    t = t.refresh()
    snapshot = t.current_snapshot()
    assert snapshot is not None and len(read_manifest_files(t.io, snapshot)) >= MIN_MANIFESTS_FOR_PROCESSES
    return t


def test_processes_plan_the_files_one_process_plans(tmp_path: Path) -> None:
    t = _many_manifests(tmp_path)
    for row_filter in (None, "id >= 30", "id = 5 or p = 2"):
        scan = t.scan(row_filter) if row_filter else t.scan()
        one = sorted(task.data_file.file_path for task in scan.plan_files())
        two = sorted(task.data_file.file_path for task in scan.option(SCAN_PROCESSES_OPTION, "2").plan_files())
        assert two == one and one


def test_processes_never_drop_metrics_a_scan_needs(tmp_path: Path) -> None:
    t = _many_manifests(tmp_path)
    with t.update_schema() as u:  # a default: planning loads the column's metrics (does a file lack it?)
        u.add_column("c", IntegerType(), default=7)
    t = t.refresh()
    t.append(pa.table({"id": pa.array([100], pa.int64()), "c": pa.array([99], pa.int32())}))
    c = t.refresh().schema().find_field("c").field_id
    tasks = list(t.refresh().scan().option(SCAN_PROCESSES_OPTION, "2").plan_files())
    newest = [task for task in tasks if task.data_file.record_count == 1 and c in (task.data_file.value_counts or {})]
    assert len(newest) == 1  # the file written with the column says so
    full = list(t.scan().include_column_stats().option(SCAN_PROCESSES_OPTION, "2").plan_files())
    assert all(task.data_file.value_counts for task in full)
