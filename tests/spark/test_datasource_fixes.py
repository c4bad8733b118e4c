"""format("iceberg") data source: every mapped type on the read path, SQL path option, name resolution."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import floe
import floe.spark.datasource.provider  # registers format("iceberg")
from floe.io.arrow_schema import schema_to_arrow
from floe.spark.runtime.configure import attach
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

U1 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
U2 = uuid.UUID("8dc314d8-3fd4-4a42-9a5d-1f2e3d4c5b6a")
TS = dt.datetime(2017, 11, 16, 22, 31, 8, 1)
TSTZ = dt.datetime(2017, 11, 16, 22, 31, 8, 1, tzinfo=dt.timezone.utc)

ALL_TYPES = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "b", BooleanType(), False),
    NestedField(3, "i", IntegerType(), False),
    NestedField(4, "l", LongType(), False),
    NestedField(5, "f", FloatType(), False),
    NestedField(6, "d", DoubleType(), False),
    NestedField(7, "dec", DecimalType(9, 2), False),
    NestedField(8, "dt", DateType(), False),
    NestedField(9, "tm", TimeType(), False),
    NestedField(10, "ts", TimestampType(), False),
    NestedField(11, "tstz", TimestamptzType(), False),
    NestedField(12, "s", StringType(), False),
    NestedField(13, "u", UUIDType(), False),
    NestedField(14, "fx", FixedType(4), False),
    NestedField(15, "bin", BinaryType(), False),
    NestedField(
        16,
        "st",
        StructType(
            NestedField(20, "x", IntegerType(), False),
            NestedField(21, "at", TimestamptzType(), False),
            NestedField(22, "uid", UUIDType(), False),
        ),
        False,
    ),
    NestedField(17, "lst", ListType(23, TimestamptzType(), False), False),
    NestedField(18, "mp", MapType(24, StringType(), 25, UUIDType(), False), False),
    NestedField(19, "lu", ListType(26, UUIDType(), False), False),
)

ROW = {
    "id": 1,
    "b": True,
    "i": 7,
    "l": 1 << 40,
    "f": 1.5,
    "d": 2.25,
    "dec": decimal.Decimal("14.20"),
    "dt": dt.date(2017, 11, 16),
    "tm": dt.time(22, 31, 8, 5),
    "ts": TS,
    "tstz": TSTZ,
    "s": "iceberg",
    "u": U1,
    "fx": b"\x00\x01\x02\x03",
    "bin": b"\xff\x00",
    "st": {"x": 3, "at": TSTZ, "uid": U2},
    "lst": [TSTZ, None],
    "mp": [("k", U1)],
    "lu": [U2],
}
NULLS = {"id": 2, **{k: None for k in ROW if k != "id"}}


def _build(target: pa.Schema) -> pa.Table:
    def conv(v: object) -> object:
        if isinstance(v, uuid.UUID):
            return v.bytes
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        return v

    def storage(t: pa.DataType) -> pa.DataType:
        # pa.array cannot build nested extension (uuid) values from Python objects: build the storage
        # type (fixed_size_binary(16)) and cast.
        if isinstance(t, pa.BaseExtensionType):
            return t.storage_type
        return _retype(t, storage)

    def plain(t: pa.DataType) -> pa.DataType:
        # Same type without field-id metadata: the writer matches columns by name.
        return t if isinstance(t, pa.BaseExtensionType) else _retype(t, plain)

    target = pa.schema([pa.field(f.name, plain(f.type), f.nullable) for f in target])
    arrays = [pa.array([conv(ROW[f.name]), conv(NULLS[f.name])], type=storage(f.type)) for f in target]
    return pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, target)], schema=target)


def _retype(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``fn`` applied to its children (metadata dropped)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, fn(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, fn(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(
            pa.field(t.key_field.name, fn(t.key_type), False),
            pa.field(t.item_field.name, fn(t.item_type), t.item_field.nullable),
        )
    return t


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh FLOE_HOME: the embedded catalog ``floe`` lives there; no config file or env catalogs."""
    monkeypatch.setenv("FLOE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    for var in list(__import__("os").environ):
        if var.startswith("FLOE_CATALOG__") or var == "FLOE_DEFAULT_CATALOG":
            monkeypatch.delenv(var)
    yield tmp_path / "home"


def _all_types_table(spark: SparkSession, tmp_path: Path) -> floe.Table:
    attach(spark)
    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.types", ALL_TYPES)
    t.append(_build(schema_to_arrow(ALL_TYPES)))
    return t.refresh()


def test_datasource_read_every_type_matches_spark_schema(spark: SparkSession, tmp_path: Path) -> None:
    t = _all_types_table(spark, tmp_path)
    df = spark.read.format("iceberg").load(t.location())
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types["tstz"] == "timestamp"
    assert types["ts"] == "timestamp_ntz"
    assert types["u"] == "string"
    assert types["fx"] == "binary"
    rows = {r["id"]: r.asDict(recursive=True) for r in df.collect()}
    got = rows[1]
    assert got["b"] is True
    assert got["i"] == 7
    assert got["l"] == 1 << 40
    assert got["f"] == 1.5
    assert got["d"] == 2.25
    assert got["dec"] == decimal.Decimal("14.20")
    assert got["dt"] == dt.date(2017, 11, 16)
    assert got["tm"] == dt.time(22, 31, 8, 5)
    assert got["ts"] == TS
    # The session time zone is UTC (tests/conftest.py): the instant collects as this naive UTC value.
    assert got["tstz"].replace(tzinfo=None) == TSTZ.replace(tzinfo=None)
    assert got["s"] == "iceberg"
    assert got["u"] == str(U1)
    assert bytes(got["fx"]) == b"\x00\x01\x02\x03"
    assert bytes(got["bin"]) == b"\xff\x00"
    assert got["st"]["x"] == 3
    assert got["st"]["uid"] == str(U2)
    assert got["st"]["at"].replace(tzinfo=None) == TSTZ.replace(tzinfo=None)
    assert [v if v is None else v.replace(tzinfo=None) for v in got["lst"]] == [TSTZ.replace(tzinfo=None), None]
    assert got["mp"] == {"k": str(U1)}
    assert got["lu"] == [str(U2)]
    assert all(v is None for k, v in rows[2].items() if k != "id")


def test_datasource_read_timestamptz_filter_pushdown_returns_row(spark: SparkSession, tmp_path: Path) -> None:
    t = _all_types_table(spark, tmp_path)
    df = spark.read.format("iceberg").load(t.location())
    got = df.where("tstz >= timestamp'2017-11-16 00:00:00' and u = '" + str(U1) + "'").select("id").collect()
    assert [r["id"] for r in got] == [1]


def test_datasource_sql_create_table_options_path_explains_and_temp_view_works(
    spark: SparkSession, tmp_path: Path
) -> None:
    attach(spark)
    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    loc = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())])).location()
    # Spark stores no options for a Python data source table: the path is gone when the table is used.
    spark.sql(f"CREATE TABLE floe_opts_t USING iceberg OPTIONS (path '{loc}')")
    try:
        with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
            spark.sql("SELECT * FROM floe_opts_t").collect()
        with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
            spark.sql("INSERT INTO floe_opts_t VALUES (1, 'a')").collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS floe_opts_t")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW floe_opts_v USING iceberg OPTIONS (path '{loc}')")
    spark.sql("INSERT INTO floe_opts_v VALUES (1, 'a'), (2, 'b')")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM floe_opts_v").collect()) == [(1, "a"), (2, "b")]


_E2E_SCRIPT = """
import json, sys
import pyarrow as pa
import floe, floe.spark.datasource.provider
from floe.spark.scan.table_read import read as native_read
from floe.spark.runtime.configure import session

spark = session({"spark.master": "local[1]", "spark.sql.session.timeZone": "UTC"}, app_name="floe-e2e")
cat = floe.load_catalog()  # the embedded catalog `floe` in $FLOE_HOME
cat.create_namespace("db")
cat.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]))
spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string").write.format("iceberg").mode("append").save("floe.db.t")
spark.createDataFrame([(3, "c")], "id long, name string").write.format("iceberg").mode("append").save("db.t")
out = {
    "qualified": sorted(tuple(r) for r in spark.read.format("iceberg").load("floe.db.t").collect()),
    "default": sorted(tuple(r) for r in spark.read.format("iceberg").load("db.t").collect()),
    "native": sorted(tuple(r) for r in native_read(spark, "floe.db.t").collect()),
    "snapshots": len(cat.load_table("db.t").snapshots()),
}
spark.stop()
print("RESULT" + json.dumps(out))
"""


@pytest.mark.spark  # Spark runs in a process of its own
def test_datasource_embedded_catalog_names_write_and_read_end_to_end(home: Path, tmp_path: Path) -> None:
    """``save("floe.db.t")`` / ``load("floe.db.t")`` with a fresh FLOE_HOME.

    A separate process: Python data source workers inherit the environment of the JVM, fixed when the
    session starts, so FLOE_HOME must be set before Spark starts (as a user's shell would).
    """
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _E2E_SCRIPT], check=False, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT") :])
    rows = [[1, "a"], [2, "b"], [3, "c"]]
    assert out == {"qualified": rows, "default": rows, "native": rows, "snapshots": 2}
    assert (home / "catalog.db").is_file()
    assert any((home / "warehouse").rglob("*.parquet"))
