"""floe.spark.scan.table_read on tables Floe commits itself: schema evolution, the rename/pushdown guard, deletes,
time travel, incremental appends, the ``iceberg`` data source and metadata tables as DataFrames.

Data files are written with pyarrow (field ids in the Parquet schema) and committed with Floe's producers.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.errors import NoSuchSnapshotError, UnsupportedError
from floe.io.arrow_schema import schema_to_arrow
from floe.spark.scan.metadata_tables import metadata_table_df
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType
from floe.table.table import Table
from floe.transforms import IdentityTransform


def _catalog(tmp_path: Path) -> HadoopCatalog:
    # A space and a '+' in the path: Spark reports them URL-encoded in _metadata.file_path.
    wh = tmp_path / "ware house+x"
    wh.mkdir()
    cat = HadoopCatalog("test", warehouse=str(wh))
    cat.create_namespace("db")
    return cat


def _write(table: Table, data: pa.Table, *, partition: tuple[object, ...] = (), spec_id: int | None = None,
           content: FileContent = FileContent.DATA, equality_ids: tuple[int, ...] | None = None) -> DataFile:
    path = os.path.join(table.location(), "data", f"{uuid.uuid4().hex}.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(data, path)
    return DataFile(content, path, FileFormat.PARQUET, partition, data.num_rows, os.path.getsize(path),
                    equality_ids=equality_ids, spec_id=table.spec().spec_id if spec_id is None else spec_id)


def _rows(df: object, *cols: str) -> list[tuple[object, ...]]:
    rows = [tuple(r[c] for c in cols) for r in df.collect()]  # type: ignore[attr-defined]
    return sorted(rows, key=lambda row: tuple((v is not None, v) for v in row))


def _append(cat: HadoopCatalog, name: str, data: pa.Table) -> Table:
    t = cat.load_table(name)
    t.new_fast_append().append_file(_write(t, data)).commit()
    return cat.load_table(name)


def test_read_renamed_column_whose_old_name_is_reused_filters_by_field_id(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", Schema(NestedField(1, "a", IntegerType()), NestedField(2, "s", StringType())))
    t = _append(cat, "db.t", pa.table({"a": pa.array([1, 2, 3], pa.int32()), "s": ["x", "y", "z"]},
                                      schema=schema_to_arrow(t.schema())))
    t.update_schema().rename_column("a", "b").commit()
    cat.load_table("db.t").update_schema().add_column("a", StringType()).commit()
    t = cat.load_table("db.t")
    t = _append(cat, "db.t", pa.table([pa.array([4, 5], pa.int32()), pa.array(["p", "q"]), pa.array(["1", "2"])],
                                      schema=schema_to_arrow(t.schema())))
    # Old files hold an int column *named* a (now b): pushdown by name would compare it with '1'.
    assert _rows(floe.spark.read(spark, t, filter="a = '1'"), "b", "a") == [(4, "1")]
    assert _rows(floe.spark.read(spark, t).where("a = '2'"), "b", "a") == [(5, "2")]
    assert _rows(floe.spark.read(spark, t, filter="b = 1"), "b", "s", "a") == [(1, "x", None)]
    assert _rows(floe.spark.read(spark, t, filter="a is null"), "b") == [(1,), (2,), (3,)]


def test_read_reordered_dropped_added_promoted_columns_resolve_by_id(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", Schema(NestedField(1, "id", IntegerType()), NestedField(2, "x", StringType()),
                                        NestedField(3, "y", DoubleType())))
    t = _append(cat, "db.t", pa.table({"id": pa.array([1, 2], pa.int32()), "x": ["a", "b"], "y": [0.5, 1.5]},
                                      schema=schema_to_arrow(t.schema())))
    (t.update_schema().update_column("id", LongType()).delete_column("y").add_column("z", StringType())
     .move_first("x").commit())
    t = cat.load_table("db.t")
    assert [f.name for f in t.schema().fields] == ["x", "id", "z"]
    t = _append(cat, "db.t", pa.table({"x": ["c"], "id": pa.array([3], pa.int64()), "z": ["new"]},
                                      schema=schema_to_arrow(t.schema())))
    df = floe.spark.read(spark, t)
    assert df.columns == ["x", "id", "z"]
    assert {f.name: f.dataType.simpleString() for f in df.schema.fields}["id"] == "bigint"
    assert _rows(df, "x", "id", "z") == [("a", 1, None), ("b", 2, None), ("c", 3, "new")]
    assert _rows(floe.spark.read(spark, t, filter="id >= 2", columns=["z"]), "z") == [(None,), ("new",)]  # None sorts first


def test_read_time_travel_options_select_the_snapshot(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType()))
    t = cat.create_table("db.t", schema)
    arrow = schema_to_arrow(t.schema())
    t = _append(cat, "db.t", pa.table({"id": [1]}, schema=arrow))
    first = t.current_snapshot()
    t.manage_snapshots().create_tag(first.snapshot_id, "v1").create_branch(first.snapshot_id, "dev").commit()
    t = _append(cat, "db.t", pa.table({"id": [2]}, schema=arrow))
    second = t.current_snapshot().snapshot_id
    t = _append(cat, "db.t", pa.table({"id": [3]}, schema=arrow))
    assert _rows(floe.spark.read(spark, t), "id") == [(1,), (2,), (3,)]
    assert _rows(floe.spark.read(spark, t, snapshot_id=second), "id") == [(1,), (2,)]
    assert _rows(floe.spark.read(spark, t, as_of_timestamp=first.timestamp_ms), "id") == [(1,)]
    assert _rows(floe.spark.read(spark, t, tag="v1"), "id") == [(1,)]
    assert _rows(floe.spark.read(spark, t, branch="dev"), "id") == [(1,)]
    assert _rows(floe.spark.read(spark, t, start_snapshot_id=first.snapshot_id), "id") == [(2,), (3,)]
    assert _rows(floe.spark.read(spark, t, start_snapshot_id=first.snapshot_id, end_snapshot_id=second), "id") == [(2,)]
    with pytest.raises(NoSuchSnapshotError, match="12345"):
        floe.spark.read(spark, t, snapshot_id=12345)
    # The iceberg data source takes the same options.
    loc = t.metadata_location
    ds = spark.read.format("iceberg").option("snapshot-id", str(second)).load(loc)
    assert _rows(ds, "id") == [(1,), (2,)]
    assert _rows(spark.read.format("iceberg").option("tag", "v1").load(loc), "id") == [(1,)]
    assert _rows(spark.read.format("floe").option("start-snapshot-id", str(second)).load(loc), "id") == [(3,)]
    assert _rows(spark.read.format("iceberg").load(loc).where("id > 1"), "id") == [(2,), (3,)]


def test_read_incremental_range_with_overwrite_raises_unsupported(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", Schema(NestedField(1, "id", LongType())))
    arrow = schema_to_arrow(t.schema())
    first = _write(t, pa.table({"id": [1]}, schema=arrow))
    t.new_fast_append().append_file(first).commit()
    t = cat.load_table("db.t")
    start = t.current_snapshot().snapshot_id
    t = _append(cat, "db.t", pa.table({"id": [2]}, schema=arrow))
    t.new_overwrite().delete_file(first).add_file(_write(t, pa.table({"id": [9]}, schema=arrow))).commit()
    t = cat.load_table("db.t")
    with pytest.raises(UnsupportedError, match="overwrite"):
        floe.spark.read(spark, t, start_snapshot_id=start)


def _deletes_table(cat: HadoopCatalog) -> tuple[Table, dict[str, DataFile]]:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "cat", StringType()), NestedField(3, "v", StringType()))
    spec = PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "cat"),))
    t = cat.create_table("db.d", schema, partition_spec=spec, properties={"format-version": "2"})
    arrow = schema_to_arrow(t.schema())
    a = _write(t, pa.table({"id": [1, 2, 3, 4], "cat": ["a"] * 4, "v": ["p", None, "r", "s"]}, schema=arrow), partition=("a",))
    b = _write(t, pa.table({"id": [5, 6], "cat": ["b"] * 2, "v": [None, "u"]}, schema=arrow), partition=("b",))
    t.new_fast_append().append_file(a).append_file(b).commit()
    return cat.load_table("db.d"), {"a": a, "b": b}


def test_read_position_and_equality_deletes_follow_sequence_rules(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t, files = _deletes_table(cat)
    pos_schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    pos = _write(t, pa.table({"file_path": [files["a"].file_path], "pos": [0]}, schema=pos_schema), partition=("a",),
                 content=FileContent.POSITION_DELETES)
    eq_schema = pa.schema([pa.field("v", pa.string(), True, {b"PARQUET:field_id": b"3"})])
    # Equality delete on v: deletes 'r' in partition a, and the null v (nulls match nulls) in partition a only.
    eq = _write(t, pa.table({"v": ["r", None, "u"]}, schema=eq_schema), partition=("a",),
                content=FileContent.EQUALITY_DELETES, equality_ids=(3,))
    t.new_row_delta().add_deletes(pos).add_deletes(eq).commit()
    t = cat.load_table("db.d")
    # Rows appended after the delete are not deleted by it (data seq == delete seq + 1 > delete seq).
    arrow = schema_to_arrow(t.schema())
    t.new_fast_append().append_file(_write(t, pa.table({"id": [7], "cat": ["a"], "v": ["r"]}, schema=arrow), partition=("a",))).commit()
    t = cat.load_table("db.d")
    expected = [(4, "a", "s"), (5, "b", None), (6, "b", "u"), (7, "a", "r")]  # sorted by id
    assert _rows(floe.spark.read(spark, t), "id", "cat", "v") == expected
    assert sorted(((r["id"], r["cat"], r["v"]) for r in t.scan().to_arrow().to_pylist()), key=lambda r: r[0]) == expected
    assert _rows(floe.spark.read(spark, t, filter="cat = 'a'", columns=["id"]), "id") == [(4,), (7,)]
    assert _rows(spark.read.format("iceberg").load(t.metadata_location), "id", "cat", "v") == expected


def test_read_identity_partition_column_missing_from_file_is_filled(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "cat", StringType()))
    spec = PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "cat"),))
    t = cat.create_table("db.p", schema, partition_spec=spec)
    only_id = pa.schema([pa.field("id", pa.int64(), True, {b"PARQUET:field_id": b"1"})])
    imported = _write(t, pa.table({"id": [1, 2]}, schema=only_id), partition=("x",))
    t.new_fast_append().append_file(imported).commit()
    t = cat.load_table("db.p")
    assert _rows(floe.spark.read(spark, t), "id", "cat") == [(1, "x"), (2, "x")]
    assert _rows(floe.spark.read(spark, t, filter="cat = 'x' and id = 2"), "id", "cat") == [(2, "x")]


def test_metadata_tables_as_dataframes_have_iceberg_columns(spark: SparkSession, tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t, _ = _deletes_table(cat)
    files = metadata_table_df(spark, t, "files")
    assert files.columns[:5] == ["content", "file_path", "file_format", "spec_id", "partition"]
    assert sorted(r["partition"]["cat"] for r in files.collect()) == ["a", "b"]
    snaps = metadata_table_df(spark, t, "snapshots").collect()
    assert len(snaps) == 1
    assert snaps[0]["operation"] == "append"
    parts = {r["partition"]["cat"]: r["record_count"] for r in metadata_table_df(spark, t, "partitions").collect()}
    assert parts == {"a": 4, "b": 2}
    assert metadata_table_df(spark, t, "manifests").count() == 1
    assert metadata_table_df(spark, t, "history").count() == 1
    assert metadata_table_df(spark, t, "refs").collect()[0]["name"] == "main"


def test_read_matches_pyiceberg_on_position_deletes_and_renames(spark: SparkSession, tmp_path: Path) -> None:
    """PyIceberg 0.12 as a second reader (it cannot apply equality deletes, so none here)."""
    from pyiceberg.table import StaticTable

    cat = _catalog(tmp_path)
    t = cat.create_table("db.x", Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType())),
                         properties={"format-version": "2"})
    data = _write(t, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema_to_arrow(t.schema())))
    t.new_fast_append().append_file(data).commit()
    t = cat.load_table("db.x")
    pos_schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    pos = _write(t, pa.table({"file_path": [data.file_path], "pos": [1]}, schema=pos_schema),
                 content=FileContent.POSITION_DELETES)
    t.new_row_delta().add_deletes(pos).commit()
    cat.load_table("db.x").update_schema().rename_column("v", "value").commit()
    t = cat.load_table("db.x")
    ours = _rows(floe.spark.read(spark, t), "id", "value")
    theirs = StaticTable.from_metadata(str(t.metadata_location)).scan().to_arrow().to_pylist()
    assert ours == sorted((r["id"], r["value"]) for r in theirs) == [(1, "a"), (3, "c")]
