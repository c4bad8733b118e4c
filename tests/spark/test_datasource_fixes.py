"""format("iceberg") data source: every mapped type on the read path, SQL path option, name resolution."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from _every_type import ALL_TYPES, TS, TSTZ, U1, U2
from _every_type import build_rows as _build
from pyspark.sql import SparkSession

import floe
import floe.spark.datasource.provider  # registers format("iceberg")
from floe.io.arrow_schema import schema_to_arrow
from floe.spark.runtime.configure import attach


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
