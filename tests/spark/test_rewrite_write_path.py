"""A copy-on-write rewrite of many small files per partition writes through the Arrow path
(floe.spark.write.dataframe_write._rewrites_many_small_files): the same rows, partitions and metrics as
Spark's writer gives, read back by PyIceberg; a rewrite of few or large files stays on Spark's writer."""

from __future__ import annotations

from typing import Any

import pytest
from _sql_helpers import rows, run, table
from pyspark.sql import SparkSession

import floe.spark.write.dataframe_write as dw
from floe.sql.engine import SqlSession

_BUCKETS = dw._SMALL_REWRITE_FILES + 10
_ROWS = _BUCKETS * 60  # every bucket holds rows each statement matches


def _fill(session: SqlSession, name: str) -> None:
    run(session, f"CREATE TABLE {name} (id BIGINT, name STRING, score DOUBLE) USING iceberg "
                 f"PARTITIONED BY (bucket({_BUCKETS}, id)) TBLPROPERTIES ('format-version'='2', "
                 "'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write')")
    run(session, f"INSERT INTO {name} SELECT id, IF(id % 7 = 0, NULL, concat('n', id)), "
                 f"IF(id % 11 = 0, double('NaN'), id / 3) FROM range({_ROWS})")


def _files(session: SqlSession, name: str) -> dict[str, tuple[Any, ...]]:
    """Each file's metrics by its partition (one file a partition)."""
    got = run(session, f"SELECT partition, record_count, value_counts, null_value_counts, nan_value_counts, lower_bounds, "
                       f"upper_bounds FROM floe.{name}.files").rows
    out = {repr(r[0]): tuple(r[1:]) for r in got}
    assert len(out) == len(got)
    return out


def _refines(arrow: dict[int, Any] | None, native: dict[int, Any] | None) -> bool:
    """Every metric Spark's writer gives, the Arrow path gives the same (Spark's writer leaves out the NaN
    count and the bounds of a float column holding a NaN: floe.spark.write.dataframe_write)."""
    return all((arrow or {}).get(k) == v for k, v in (native or {}).items())


def test_a_rewrite_of_many_small_partitions_writes_through_the_arrow_path_as_spark_would(
    session: SqlSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    arrow_writes: list[str] = []
    arrow_path = dw._write_arrow_path

    def recorded(table: Any, *args: Any, **kwargs: Any) -> Any:
        arrow_writes.append(table.name())
        return arrow_path(table, *args, **kwargs)

    monkeypatch.setattr(dw, "_write_arrow_path", recorded)
    results = {}
    for path in ("arrow", "native"):
        if path == "native":
            monkeypatch.setattr(dw, "_SMALL_REWRITE_FILES", 10**9)
        name = f"db.cow_many_{path}"
        _fill(session, name)
        assert not arrow_writes  # the INSERT is no rewrite
        run(session, f"DELETE FROM {name} WHERE id % 10 = 3")
        run(session, f"UPDATE {name} SET score = score + 1 WHERE id % 10 = 4")
        assert len(arrow_writes) == (2 if path == "arrow" else 0)
        arrow_writes.clear()
        got = rows(session, f"SELECT id, name, CAST(score AS STRING) FROM {name} ORDER BY id")
        assert len(got) == _ROWS * 9 // 10
        results[path] = (got, _files(session, name))
        t = table(session, name.split(".")[1])
        static = pytest.importorskip("pyiceberg.table").StaticTable.from_metadata(t.refresh().metadata_location)
        assert static.scan().to_arrow().num_rows == _ROWS * 9 // 10
    (arrow_rows, arrow_files), (native_rows, native_files) = results["arrow"], results["native"]
    assert arrow_rows == native_rows
    assert arrow_files.keys() == native_files.keys()
    for key, (count, values, nulls, nans, lower, upper) in native_files.items():
        a_count, a_values, a_nulls, a_nans, a_lower, a_upper = arrow_files[key]
        assert (a_count, a_values, a_nulls) == (count, values, nulls)
        assert _refines(a_nans, nans) and _refines(a_lower, lower) and _refines(a_upper, upper)
        assert {k: v for k, v in a_lower.items() if k != 3} == {k: v for k, v in lower.items() if k != 3}
        assert {k: v for k, v in a_upper.items() if k != 3} == {k: v for k, v in upper.items() if k != 3}
    assert any(nans.get(3) for _, _, _, nans, _, _ in arrow_files.values())  # exact NaN counts on the Arrow path


def test_few_or_large_files_stay_on_sparks_writer(session: SqlSession, spark: SparkSession) -> None:
    run(session, "CREATE TABLE db.cow_choice (id BIGINT) USING iceberg PARTITIONED BY (bucket(4, id))")
    run(session, "INSERT INTO db.cow_choice SELECT id FROM range(40)")
    t = table(session, "cow_choice")
    schema = t.schema()
    files = [task.data_file for task in t.scan().plan_files()]
    assert len(files) == 4
    many = [f.with_changes(partition=(i,), file_size_in_bytes=dw._SMALL_REWRITE_FILE_BYTES)
            for i in range(dw._SMALL_REWRITE_FILES) for f in files[:1]]
    assert dw._rewrites_many_small_files(spark, schema, many)
    assert not dw._rewrites_many_small_files(spark, schema, many[:-1])  # too few partitions
    assert not dw._rewrites_many_small_files(spark, schema, [*many[:-1], many[-1].with_changes(file_size_in_bytes=dw._SMALL_REWRITE_FILE_BYTES + 1)])
    assert not dw._rewrites_many_small_files(spark, schema, many * 2)  # two files a partition: twice the bytes
    assert not dw._rewrites_many_small_files(spark, schema, files)
