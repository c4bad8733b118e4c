"""Spark session settings, Iceberg <-> Spark type mapping, and Parquet field ids written/read by Spark."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from floe.errors import UnsupportedError, ValidationError
from floe.io.arrow_schema import field_id_of, schema_to_arrow
from floe.io.parquet_metrics import footer_metrics
from floe.io.projection import project_by_field_id
from floe.serde.single_value import from_bytes
from floe.spark.runtime.configure import REQUIRED_SQL_CONF, attach, register_session_hook
from floe.spark.types import from_spark_schema, to_spark_ddl, to_spark_schema, to_spark_type
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

SPARK_SCHEMA = Schema(
    NestedField(1, "id", LongType(), True, doc="row id"),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "b", BooleanType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(20, 3)),
    NestedField(7, "day", DateType()),
    NestedField(8, "tod", TimeType()),
    NestedField(9, "ts", TimestampType()),
    NestedField(10, "tstz", TimestamptzType()),
    NestedField(11, "s", StringType()),
    NestedField(12, "bin", BinaryType()),
    NestedField(
        13, "st", StructType(NestedField(14, "x", LongType(), True), NestedField(15, "y", StringType()))
    ),
    NestedField(16, "arr", ListType(17, IntegerType(), False)),
    NestedField(18, "m", MapType(19, StringType(), 20, DoubleType(), False)),
)

ROW = (
    1,
    2,
    True,
    1.5,
    2.5,
    Decimal("12.345"),
    datetime.date(2024, 2, 29),
    datetime.time(13, 14, 15, 16),
    datetime.datetime(2024, 2, 29, 1, 2, 3, 4),
    datetime.datetime(2024, 2, 29, 1, 2, 3, tzinfo=datetime.timezone.utc),
    "hello",
    b"\x00\x01",
    (7, "seven"),
    [1, None, 3],
    {"k": 0.5},
)


def _single_parquet(path: Path) -> Path:
    files = sorted(path.glob("*.parquet"))
    assert len(files) == 1
    return files[0]


def test_session_required_sql_conf_set(spark: SparkSession) -> None:
    for key, value in REQUIRED_SQL_CONF.items():
        assert spark.conf.get(key) == value
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.sparkContext.master == "local[2]"


def test_attach_reapplies_conf_and_runs_hooks(spark: SparkSession) -> None:
    seen: list[SparkSession] = []
    register_session_hook(seen.append)
    register_session_hook(seen.append)  # idempotent registration
    spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "false")
    try:
        assert attach(spark) is spark
        assert spark.conf.get("spark.sql.parquet.fieldId.read.enabled") == "true"
        assert seen == [spark]
    finally:
        from floe.spark.runtime import configure as session_module

        session_module._SESSION_HOOKS.remove(seen.append)


def test_spark_writes_field_ids_on_top_level_and_struct_fields(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.createDataFrame([ROW], to_spark_schema(SPARK_SCHEMA, for_files=True))
    df.coalesce(1).write.parquet(str(tmp_path / "out"))
    file_schema = pq.read_schema(_single_parquet(tmp_path / "out"))
    assert [field_id_of(f) for f in file_schema] == [f.field_id for f in SPARK_SCHEMA.fields]
    st = file_schema.field("st").type
    assert [field_id_of(st.field(i)) for i in range(st.num_fields)] == [14, 15]
    assert file_schema.field("ts").type == pa.timestamp("us")  # TIMESTAMP_MICROS, not INT96
    assert file_schema.field("tstz").type == pa.timestamp("us", tz="UTC")
    assert file_schema.field("tod").type == pa.time64("us")
    # Spark cannot write ids for list elements or map keys/values (DESIGN.md section 5)
    assert field_id_of(file_schema.field("arr").type.value_field) is None


def test_spark_written_file_projects_and_yields_metrics(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.createDataFrame([ROW], to_spark_schema(SPARK_SCHEMA, for_files=True))
    df.coalesce(1).write.parquet(str(tmp_path / "out"))
    path = _single_parquet(tmp_path / "out")
    row = project_by_field_id(pq.read_table(path), SPARK_SCHEMA).to_pylist()[0]
    assert row["tod"] == datetime.time(13, 14, 15, 16)
    assert row["st"] == {"x": 7, "y": "seven"}
    assert row["arr"] == [1, None, 3]
    assert row["m"] == [("k", 0.5)]
    m = footer_metrics(pq.ParquetFile(path).metadata, SPARK_SCHEMA)
    assert m.record_count == 1
    assert m.value_counts[17] == 3
    assert m.null_value_counts[17] == 1  # list elements matched by position
    assert from_bytes(TimestampType(), m.lower_bounds[9]) == 1709168523000004
    assert from_bytes(TimeType(), m.upper_bounds[8]) == 47655000016
    assert from_bytes(LongType(), m.lower_bounds[14]) == 7


def test_spark_reads_by_field_id_after_rename_and_name_reuse(spark: SparkSession, tmp_path: Path) -> None:
    v1 = Schema(NestedField(1, "a", StringType()), NestedField(2, "b", LongType()))
    spark.createDataFrame([("old-a", 1)], to_spark_schema(v1)).coalesce(1).write.parquet(str(tmp_path / "t"))
    # rename a -> renamed, drop b, add a new column that reuses the name "a"
    v2 = Schema(NestedField(1, "renamed", StringType()), NestedField(3, "a", StringType()))
    rows = spark.read.schema(to_spark_schema(v2)).parquet(str(tmp_path / "t")).collect()
    assert [r.asDict() for r in rows] == [{"renamed": "old-a", "a": None}]


def test_spark_reads_pyarrow_uuid_file_with_binary_read_schema(spark: SparkSession, tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "u", UUIDType()), NestedField(2, "n", IntegerType()))
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    path = tmp_path / "u.parquet"
    pq.write_table(pa.Table.from_pylist([{"u": u, "n": 1}], schema=schema_to_arrow(schema)), path)
    read_schema = to_spark_schema(schema, for_files=True)
    assert read_schema["u"].dataType == T.BinaryType()
    rows = spark.read.schema(read_schema).parquet(str(path)).collect()
    assert uuid.UUID(bytes=bytes(rows[0].u)) == u


def _shape(schema: Schema) -> list[tuple[int, str, str, bool, str | None]]:
    """Ids, names, types and nullability of top-level and struct fields (Spark keeps no list/map child ids)."""
    out = []
    for f in schema.fields:
        out.append((f.field_id, f.name, str(f.field_type), f.required, f.doc))
        if isinstance(f.field_type, StructType):
            out += [(c.field_id, c.name, str(c.field_type), c.required, c.doc) for c in f.field_type.fields]
    return out


def test_type_mapping_round_trips_through_spark(spark: SparkSession) -> None:
    spark_schema = to_spark_schema(SPARK_SCHEMA)
    back = from_spark_schema(spark_schema, keep_ids=True)
    assert _shape(back) == _shape(SPARK_SCHEMA)
    assert back.find_type("arr") == ListType(19, IntegerType(), False)  # above the highest known id (18)
    # DataFrames keep StructField metadata, so ids survive a trip through the JVM
    df = spark.createDataFrame([ROW], spark_schema)
    assert _shape(from_spark_schema(df.schema, keep_ids=True)) == _shape(SPARK_SCHEMA)
    assert df.collect()[0]["st"]["y"] == "seven"


def test_spark_ddl_parses_to_same_schema(spark: SparkSession, tmp_path: Path) -> None:
    ddl = to_spark_ddl(SPARK_SCHEMA)
    assert ddl.startswith('`id` BIGINT NOT NULL COMMENT "row id", `i` INT')
    parsed = spark.createDataFrame([], ddl).schema
    fresh = from_spark_schema(parsed)
    assert [(n, str(t), r) for _, n, t, r, _ in _shape(fresh)] == [
        (n, str(t), r) for _, n, t, r, _ in _shape(SPARK_SCHEMA)
    ]
    assert fresh.find_field("id").doc == "row id"
    # Spark accepts the DDL for a real table too (it drops NOT NULL for file-source tables)
    name = f"ddl_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} ({ddl}) USING parquet LOCATION '{tmp_path / name}'")
    try:
        assert spark.table(name).columns == SPARK_SCHEMA.column_names
    finally:
        spark.sql(f"DROP TABLE {name}")


def test_type_mapping_uuid_string_in_tables_and_unsupported_types_named() -> None:
    assert to_spark_type(UUIDType()) == T.StringType()
    assert to_spark_type(TimestampType()) == T.TimestampNTZType()
    assert to_spark_type(TimestamptzType()) == T.TimestampType()
    with pytest.raises(UnsupportedError, match="'events.at'"):
        to_spark_schema(
            Schema(NestedField(1, "events", StructType(NestedField(2, "at", TimestampNanoType()))))
        )
    with pytest.raises(UnsupportedError, match="interval"):
        from_spark_schema(T.StructType([T.StructField("x", T.DayTimeIntervalType())]))
    with pytest.raises(ValidationError, match="parquet.field.id"):
        from_spark_schema(T.StructType([T.StructField("x", T.LongType())]), keep_ids=True)
