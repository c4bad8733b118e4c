"""floe.spark.scan.table_read on ORC data files: Spark reads them natively, columns matched by Iceberg field id.

ORC files are written with pyarrow, which stores field metadata as ORC type attributes (``iceberg.id``, as
Iceberg Java does). Files with position deletes are read on the driver (Spark's ORC source has no
``_metadata.row_index``); every other ORC file must be a native Spark scan (checked with ``inputFiles``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import orc
from pyspark.sql import DataFrame, SparkSession

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.io.name_mapping import NameMapping, mapping_contradicts_schema
from floe.io.table_folder import open_table_folder
from floe.spark.scan.table_read import located_folder_table
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import (
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from floe.table.table import Table
from floe.transforms import IdentityTransform

FIXTURES = Path("/work/shared/fixtures/java-tables")


def _field(name: str, t: pa.DataType, field_id: int | None) -> pa.Field:
    return pa.field(name, t, True, {b"iceberg.id": str(field_id).encode()} if field_id is not None else None)


def _write_orc(table: Table, data: pa.Table, partition: tuple[object, ...]) -> DataFile:
    path = os.path.join(table.location(), "data", f"{uuid.uuid4().hex}.orc")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    orc.write_table(data, path)
    return DataFile(FileContent.DATA, path, FileFormat.ORC, partition, data.num_rows, os.path.getsize(path),
                    spec_id=table.spec().spec_id)


def _write_parquet_delete(table: Table, data: pa.Table, partition: tuple[object, ...], content: FileContent,
                          equality_ids: tuple[int, ...] | None = None) -> DataFile:
    path = os.path.join(table.location(), "data", f"{uuid.uuid4().hex}.parquet")
    pq.write_table(data, path)
    return DataFile(content, path, FileFormat.PARQUET, partition, data.num_rows, os.path.getsize(path),
                    equality_ids=equality_ids, spec_id=table.spec().spec_id)


def _native_orc_files(df: DataFrame) -> set[str]:
    return {os.path.basename(p) for p in df.inputFiles() if p.endswith(".orc")}


def _sorted(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return sorted(rows, key=lambda row: tuple((v is not None, v) for v in row))


def test_read_orc_natively_by_field_id_across_renames_promotions_nested_changes_and_deletes(
    spark: SparkSession, tmp_path: Path
) -> None:
    cat = HadoopCatalog("test", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    info = StructType(NestedField(7, "a", IntegerType()), NestedField(8, "b", StringType()))
    schema = Schema(NestedField(1, "id", IntegerType()), NestedField(2, "name", StringType()),
                    NestedField(3, "info", info), NestedField(4, "ts", TimestampType()),
                    NestedField(5, "tstz", TimestamptzType()), NestedField(6, "cat", StringType()))
    spec = PartitionSpec(0, (PartitionField(6, 1000, IdentityTransform(), "cat"),))
    t = cat.create_table("db.o", schema, partition_spec=spec, properties={"format-version": "2"})
    assert t.schema().find_field("info.b").field_id == 8  # ids as written into the files below
    when = dt.datetime(2020, 1, 2, 3, 4, 5, 123456)
    # An imported-style file without the identity partition column `cat`.
    old = pa.schema([_field("id", pa.int32(), 1), _field("name", pa.string(), 2),
                     _field("info", pa.struct([_field("a", pa.int32(), 7), _field("b", pa.string(), 8)]), 3),
                     _field("ts", pa.timestamp("us"), 4), _field("tstz", pa.timestamp("us", tz="UTC"), 5)])
    f1 = _write_orc(t, pa.table({"id": [1, 2, 3], "name": ["p", "q", "r"],
                                 "info": [{"a": 10, "b": "x"}, None, {"a": 30, "b": None}],
                                 "ts": [when, None, when], "tstz": [when.replace(tzinfo=dt.timezone.utc), None, None]},
                                schema=old), ("x",))
    t.new_fast_append().append_file(f1).commit()
    t = cat.load_table("db.o")
    (t.update_schema().rename_column("name", "full_name").update_column("id", LongType())
     .rename_column("info.b", "c").add_column(("info", "d"), IntegerType()).add_column("name", StringType()).commit())
    t = cat.load_table("db.o")
    d_id, name_id = t.schema().find_field("info.d").field_id, t.schema().find_field("name").field_id
    new = pa.schema([_field("id", pa.int64(), 1), _field("full_name", pa.string(), 2),
                     _field("info", pa.struct([_field("a", pa.int32(), 7), _field("c", pa.string(), 8),
                                               _field("d", pa.int32(), d_id)]), 3),
                     _field("ts", pa.timestamp("us"), 4), _field("tstz", pa.timestamp("us", tz="UTC"), 5),
                     _field("cat", pa.string(), 6), _field("name", pa.string(), name_id)])
    f2 = _write_orc(t, pa.table({"id": [4], "full_name": ["s"], "info": [{"a": 40, "c": "z", "d": 7}],
                                 "ts": [None], "tstz": [None], "cat": ["y"], "name": ["new"]}, schema=new), ("y",))
    t.new_fast_append().append_file(f2).commit()
    t = cat.load_table("db.o")
    eq = _write_parquet_delete(t, pa.table({"id": pa.array([2], pa.int64())},
                                           schema=pa.schema([pa.field("id", pa.int64(), True, {b"PARQUET:field_id": b"1"})])),
                               ("x",), FileContent.EQUALITY_DELETES, equality_ids=(1,))
    t.new_row_delta().add_deletes(eq).commit()
    t = cat.load_table("db.o")

    df = floe.spark.read(spark, t)
    assert _native_orc_files(df) == {os.path.basename(f1.file_path), os.path.basename(f2.file_path)}
    assert df.columns == ["id", "full_name", "info", "ts", "tstz", "cat", "name"]
    got = df.selectExpr("id", "full_name", "info.a", "info.c", "info.d", "cast(ts as string)", "cast(tstz as string)",
                        "cat", "name").collect()
    stamp = "2020-01-02 03:04:05.123456"
    assert _sorted([tuple(r) for r in got]) == [
        (1, "p", 10, "x", None, stamp, stamp, "x", None),
        (3, "r", 30, None, None, stamp, None, "x", None),
        (4, "s", 40, "z", 7, None, None, "y", "new"),
    ]
    # Filters go to the files by their own names: `name` in the first file is today's `full_name`.
    assert [r[0] for r in floe.spark.read(spark, t, filter="full_name = 'r'", columns=["id"]).collect()] == [3]
    assert [r[0] for r in floe.spark.read(spark, t, filter="name = 'new'", columns=["id"]).collect()] == [4]
    assert _sorted([tuple(r) for r in floe.spark.read(spark, t, filter="cat = 'x'", columns=["id"]).collect()]) == [(1,), (3,)]


def test_read_orc_without_ids_by_name_mapping_and_position_deleted_files_on_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    cat = HadoopCatalog("test", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "label", StringType()),
                    NestedField(3, "part", StringType()))
    mapping = NameMapping.from_json([{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["label", "old_label"]},
                                     {"field-id": 3, "names": ["part"]}])
    spec = PartitionSpec(0, (PartitionField(3, 1000, IdentityTransform(), "part"),))
    t = cat.create_table("db.m", schema, partition_spec=spec,
                         properties={"format-version": "2", "schema.name-mapping.default": mapping.to_json()})
    # Hive-written files: no ids, an old column name, the partition column only in the path.
    hive = pa.schema([_field("id", pa.int64(), None), _field("old_label", pa.string(), None)])
    a = _write_orc(t, pa.table({"id": [1, 2, 3], "old_label": ["a", "b", "c"]}, schema=hive), ("p",))
    b = _write_orc(t, pa.table({"id": [4], "old_label": ["d"]}, schema=hive), ("q",))
    t.new_fast_append().append_file(a).append_file(b).commit()
    t = cat.load_table("db.m")
    pos_schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    pos = _write_parquet_delete(t, pa.table({"file_path": [a.file_path], "pos": [1]}, schema=pos_schema), ("p",),
                                FileContent.POSITION_DELETES)
    t.new_row_delta().add_deletes(pos).commit()
    t = cat.load_table("db.m")
    df = floe.spark.read(spark, t)
    assert _native_orc_files(df) == {os.path.basename(b.file_path)}  # `a` has position deletes: driver
    assert _sorted([tuple(r) for r in df.collect()]) == [(1, "a", "p"), (3, "c", "p"), (4, "d", "q")]
    assert [tuple(r) for r in floe.spark.read(spark, t, filter="label = 'd'").collect()] == [(4, "d", "q")]


# Impala's published results for this table (testdata/.../iceberg-migrated-table-field-id-resolution.test).
IMPALA_MIGRATED_COMPLEX_ROW = {
    "struct_1_col": {"int_array_col": [0], "string_col": "A", "bool_int_map_col": [(True, 1)]},
    "int_bigint_map_col": [(2, 3)],
    "struct_2_col": {"struct_3_col": {"float_col": 0.5, "string_double_map_col": [("B", 1.5)], "bigint_array_col": [4]},
                     "int_int_map_col": [(5, 6)]},
}


def test_read_migrated_complex_orc_ignores_a_mapping_that_contradicts_the_schema(
    spark: SparkSession, caplog: pytest.LogCaptureFixture
) -> None:
    name = "impala__iceberg_migrated_complex_test_orc"
    entry = next(m for m in json.loads((FIXTURES / "MANIFEST.json").read_text()) if m["folder"] == name)
    ft = open_table_folder(FIXTURES / name / entry["table_root"], prefixes=list(entry["ref_prefixes"]))
    mapping = NameMapping.from_json(ft.metadata.properties["schema.name-mapping.default"])
    assert "struct_1_col.int_array_col maps to field id 2" in (mapping_contradicts_schema(mapping, ft.metadata.schema()) or "")
    with caplog.at_level(logging.WARNING):
        df = floe.spark.read(spark, located_folder_table(ft))
    assert "Ignoring schema.name-mapping.default" in caplog.text
    assert [os.path.basename(p) for p in df.inputFiles()] == ["000000_0"]  # a native Spark ORC scan
    assert df.toArrow().to_pylist() == [IMPALA_MIGRATED_COMPLEX_ROW]


def test_mapping_contradicts_schema_only_on_ids_nested_elsewhere() -> None:
    schema = Schema(NestedField(1, "s", StructType(NestedField(3, "x", IntegerType()))), NestedField(2, "y", IntegerType()))
    consistent = NameMapping.from_json([{"field-id": 1, "names": ["s"], "fields": [{"field-id": 3, "names": ["x", "old_x"]}]},
                                        {"field-id": 2, "names": ["y"]}, {"field-id": 9, "names": ["dropped"]}])
    assert mapping_contradicts_schema(consistent, schema) is None
    swapped = NameMapping.from_json([{"field-id": 1, "names": ["s"], "fields": [{"field-id": 2, "names": ["x"]}]},
                                     {"field-id": 3, "names": ["y"]}])
    assert mapping_contradicts_schema(swapped, schema) == "s.x maps to field id 2, which the schema has at the top level"
