"""Bin-pack compaction of small files in Spark's Python workers (floe.spark.procedures.worker_binpack): the
same rows, files, partitions and metrics as Spark's path gives, every delete applied, PyIceberg reading the
result, and nothing left behind when a group fails."""

from __future__ import annotations

import math
import os
import re
from typing import Any

import pytest
from _sql_helpers import rows, run, table
from pyspark.sql import SparkSession

from floe.errors import NoSuchFileError
from floe.io.locations import to_local_path
from floe.spark.procedures import rewrite_data_files as rdf
from floe.spark.procedures import worker_binpack
from floe.sql.engine import SqlSession

_COLUMNS = ("id BIGINT, ts TIMESTAMP, d DATE, amount DECIMAL(10,2), name STRING, score DOUBLE, "
            "tags ARRAY<STRING>, attrs STRUCT<a: INT, b: STRING>")


def _fill(session: SqlSession, name: str) -> None:
    session.sql(f"CREATE TABLE {name} ({_COLUMNS}) USING iceberg PARTITIONED BY (days(ts), bucket(4, id)) "
                "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    def row(i: int) -> str:
        name = "NULL" if i % 7 == 0 else f"'n{i}'"
        score = "double('NaN')" if i % 11 == 0 else str(i / 3)
        return (f"({i}, TIMESTAMP '2024-01-0{1 + i % 2} 10:00:00' + INTERVAL {i} MINUTES, DATE '2024-02-0{1 + i % 3}', "
                f"{i}.25, {name}, {score}, array('t{i % 2}', NULL), named_struct('a', {i}, 'b', 'b{i}'))")

    for batch in range(6):
        values = ", ".join(row(i) for i in range(batch * 20, batch * 20 + 20))
        run(session, f"INSERT INTO {name} VALUES {values}")
    run(session, f"DELETE FROM {name} WHERE id % 5 = 0")  # position deletes the rewrite applies


def _rows(session: SqlSession, name: str) -> list[tuple[Any, ...]]:
    """The table's rows, NaN spelled out (NaN equals nothing, itself included)."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r) for r in rows(session, f"SELECT * FROM {name}")]


def _files(session: SqlSession, name: str) -> list[tuple[Any, ...]]:
    return sorted(
        run(session, f"SELECT partition, record_count, null_value_counts, nan_value_counts, lower_bounds, upper_bounds "
                     f"FROM floe.{name}.files WHERE content = 0").rows,
        key=repr,
    )


def test_a_group_of_small_files_rewrites_in_workers_as_spark_would(
    session: SqlSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths: list[str] = []
    in_workers = worker_binpack.rewrite_in_workers

    def recorded(*args: Any, **kwargs: Any) -> Any:
        paths.append("workers")
        return in_workers(*args, **kwargs)

    monkeypatch.setattr(rdf, "rewrite_in_workers", recorded)
    results = {}
    for path in ("workers", "workers_file_by_file", "spark"):
        if path == "workers_file_by_file":  # each file's rows handed to the writer alone
            monkeypatch.setattr(worker_binpack, "_GATHER_BYTES", 1)
        if path == "spark":
            monkeypatch.setattr(worker_binpack, "WORKER_FILE_BYTES", 0)
        name = f"db.binpack_{path}"
        _fill(session, name)
        expected = _rows(session, name)
        assert len(expected) == 96
        called = len(paths)
        result = run(session, f"CALL floe.system.rewrite_data_files(table => '{name}', options => map('min-input-files', '2'))")
        assert (len(paths) > called) == path.startswith("workers")
        assert _rows(session, name) == expected
        results[path] = (result.rows, _files(session, name), expected)
        t = table(session, name.split(".")[1])
        static = pytest.importorskip("pyiceberg.table").StaticTable.from_metadata(t.refresh().metadata_location)
        assert static.scan().to_arrow().num_rows == 96
    (w_result, w_files, w_rows), (s_result, s_files, s_rows) = results["workers"], results["spark"]
    assert results["workers_file_by_file"] == results["workers"]
    assert w_rows == s_rows
    assert w_result[0][0] == s_result[0][0] and w_result[0][1] == s_result[0][1]  # files rewritten and added
    assert w_files == s_files


def test_a_failed_group_in_workers_leaves_no_file_and_commits_nothing(
    session: SqlSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "db.binpack_failing"
    _fill(session, name)
    t = table(session, "binpack_failing")
    before = t.refresh().current_snapshot()
    data_dir = to_local_path(f"{t.location()}/data")
    files_before = {os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs}
    victim = next(p for p in sorted(files_before) if p.endswith(".parquet") and "deletes" not in p)
    os.remove(victim)
    with pytest.raises(NoSuchFileError, match=f"^File does not exist: {re.escape(victim)}$"):
        run(session, f"CALL floe.system.rewrite_data_files(table => '{name}', options => map('min-input-files', '2'))")
    files_after = {os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs}
    assert files_after == files_before - {victim}
    assert t.refresh().current_snapshot() == before


def test_groups_of_large_files_stay_on_spark(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "db.binpack_tiny"
    _fill(session, name)
    t = table(session, "binpack_tiny")
    group = rdf.plan_rewrite(t.refresh(), options={"min-input-files": "2"}).groups[0]
    assert worker_binpack.rewrites_in_workers(spark, t, group)  # files of a few KB: workers
    monkeypatch.setattr(worker_binpack, "WORKER_FILE_BYTES", min(x.data_file.file_size_in_bytes for x in group.tasks) - 1)
    assert not worker_binpack.rewrites_in_workers(spark, t, group)
