"""Format v3 column defaults without Spark: SQL DDL, the schema update, the Arrow write and read paths."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from _table_testing import make_table

from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.errors import UnsupportedError, ValidationError
from floe.spec.types import DateType, IntegerType, StringType
from floe.sql.engine import SqlSession
from floe.sql.parser import parse_statement


@pytest.fixture
def session(tmp_path: Path) -> SqlSession:
    cfg = FloeConfig.load(
        {
            "spark.sql.catalog.cat": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.cat.type": "hadoop",
            "spark.sql.catalog.cat.warehouse": str(tmp_path / "wh"),
        },
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    s = make_session(cfg)
    s.sql("CREATE NAMESPACE cat.db; USE cat.db")
    return s


def test_defaults_parse_checks_value_against_type() -> None:
    stmt = parse_statement(
        "CREATE TABLE t (id INT, c INT DEFAULT 5, s STRING DEFAULT 'x' NOT NULL, d DATE DEFAULT DATE '2020-01-02', "
        "m DECIMAL(5,2) DEFAULT 1.5, n INT DEFAULT NULL)"
    )
    fields = {f.name: f for f in stmt.schema.fields}  # type: ignore[attr-defined]
    assert (fields["c"].initial_default, fields["c"].write_default) == (5, 5)
    assert fields["s"].write_default == "x" and fields["s"].required
    assert fields["d"].initial_default == (dt.date(2020, 1, 2) - dt.date(1970, 1, 1)).days
    assert fields["m"].write_default == Decimal("1.50")
    assert fields["n"].initial_default is None and fields["n"].write_default is None
    for bad, message in [
        ("CREATE TABLE t (c INT DEFAULT 'abc')", "Column 'c': DEFAULT 'abc' does not fit type int"),
        ("CREATE TABLE t (c INT DEFAULT 9999999999)", "Column 'c': DEFAULT 9999999999 is out of range for type int"),
        ("CREATE TABLE t (c DECIMAL(3,1) DEFAULT 1.25)", "Column 'c': DEFAULT Decimal('1.25') does not fit"),
    ]:
        with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_statement(bad)
    with pytest.raises(UnsupportedError, match="Column 'ts': DEFAULT CURRENT_TIMESTAMP\\(\\) is not a constant"):
        parse_statement("CREATE TABLE t (ts TIMESTAMP DEFAULT current_timestamp())")
    with pytest.raises(UnsupportedError, match="SET DEFAULT now\\(\\): not a constant"):
        parse_statement("ALTER TABLE t ALTER COLUMN c SET DEFAULT now()")


def test_defaults_sql_ddl_sets_initial_and_write_default(session: SqlSession, tmp_path: Path) -> None:
    session.sql(
        "CREATE TABLE t (id BIGINT, c INT DEFAULT 5 COMMENT 'five') USING iceberg TBLPROPERTIES ('format-version'='3')"
    )
    session.sql("ALTER TABLE t ADD COLUMN s STRING DEFAULT 'abc'")
    cat = session.catalog("cat")
    t = cat.load_table("db.t")
    s = t.schema()
    assert (s.find_field("c").initial_default, s.find_field("c").write_default) == (5, 5)
    assert (s.find_field("s").initial_default, s.find_field("s").write_default) == ("abc", "abc")
    session.sql("ALTER TABLE t ALTER COLUMN s SET DEFAULT 'xyz'")
    s = cat.load_table("db.t").schema()
    assert (s.find_field("s").initial_default, s.find_field("s").write_default) == ("abc", "xyz")
    session.sql("ALTER TABLE t ALTER COLUMN c DROP DEFAULT")
    s = cat.load_table("db.t").schema()
    assert (s.find_field("c").initial_default, s.find_field("c").write_default) == (5, None)
    text = session.sql("SHOW CREATE TABLE t")[-1].rows[0][0]
    assert "s STRING DEFAULT 'xyz'" in text and "c INT COMMENT 'five'" in text
    # The metadata JSON carries the spec's names.
    meta = max((tmp_path / "wh" / "db" / "t" / "metadata").glob("v*.metadata.json"))
    doc = json.loads(meta.read_text())
    schema = next(x for x in doc["schemas"] if x["schema-id"] == doc["current-schema-id"])
    by_name = {f["name"]: f for f in schema["fields"]}
    assert by_name["s"]["initial-default"] == "abc" and by_name["s"]["write-default"] == "xyz"
    assert by_name["c"]["initial-default"] == 5 and "write-default" not in by_name["c"]
    with pytest.raises(ValidationError, match="DEFAULT 'no' does not fit type int"):
        session.sql("ALTER TABLE t ALTER COLUMN c SET DEFAULT 'no'")


def test_defaults_refused_below_v3_in_one_line(session: SqlSession) -> None:
    with pytest.raises(ValidationError, match=r"column 'c'.*need format version 3 \(table is v2"):
        session.sql("CREATE TABLE v2t (id BIGINT, c INT DEFAULT 5) USING iceberg TBLPROPERTIES ('format-version'='2')")
    session.sql("CREATE TABLE v2u (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2')")
    with pytest.raises(ValidationError, match=r"DEFAULT 5 on column 'c' of table .*need format version 3 \(table is v2"):
        session.sql("ALTER TABLE v2u ADD COLUMN c INT DEFAULT 5")
    session.sql("ALTER TABLE v2u ADD COLUMN c INT")
    with pytest.raises(ValidationError, match=r"DEFAULT 7 on column 'c'.*table is v2"):
        session.sql("ALTER TABLE v2u ALTER COLUMN c SET DEFAULT 7")
    assert session.catalog("cat").load_table("db.v2u").schema().find_field("c").write_default is None


def test_defaults_arrow_append_fills_write_default_and_reads_initial_default(tmp_path: Path) -> None:
    t = make_table(tmp_path, version=3, partitioned=False)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "data": ["a", "b"], "p": pa.array([0, 0], pa.int32())}))
    with t.update_schema() as u:
        u.add_column("c", IntegerType(), default=5)
        u.add_column("d", DateType(), default="2021-03-04")
        u.add_column("r", StringType(), required=True, default="req")
    with t.update_schema() as u:
        u.update_column_default("c", 9)
    # the writer omits c, d and r: it writes their write-defaults (c's changed one)
    t.append(pa.table({"id": pa.array([3], pa.int64()), "data": ["c"], "p": pa.array([1], pa.int32())}))
    t.append(pa.table({"id": pa.array([4], pa.int64()), "c": pa.array([None], pa.int32()), "r": ["given"]}))
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    day = dt.date(2021, 3, 4)
    assert [(r["id"], r["c"], r["d"], r["r"]) for r in rows] == [
        (1, 5, day, "req"),  # older file: initial-default
        (2, 5, day, "req"),
        (3, 9, day, "req"),  # omitted: write-default
        (4, None, day, "given"),  # an explicit null stays null
    ]
    with pytest.raises(ValidationError, match="Column 'x': DEFAULT 'nope' does not fit type int"):
        t.update_schema().add_column("x", IntegerType(), default="nope")


def test_v3_types_spark_has_no_match_for_are_refused_naming_column_and_type() -> None:
    from pyspark.sql import types as ST

    from floe.spark.types import from_spark_type, to_spark_type
    from floe.spec import types as IT

    assert isinstance(to_spark_type(IT.UnknownType(), column="u"), ST.NullType)
    assert isinstance(to_spark_type(IT.VariantType(), column="v"), ST.VariantType)
    assert isinstance(from_spark_type(ST.VariantType(), column="v"), IT.VariantType)
    for t, text in [
        (IT.TimestampNanoType(), "timestamp_ns"),
        (IT.TimestamptzNanoType(), "timestamptz_ns"),
        (IT.GeometryType("projjson:x"), r"geometry\(projjson:x\)"),  # Spark names CRSs by SRID
        (IT.GeographyType("OGC:CRS84", "karney"), r"geography\(OGC:CRS84, karney\)"),  # spherical only
    ]:
        with pytest.raises(UnsupportedError, match=rf"Iceberg type {text}.*\(column 'c'\)"):
            to_spark_type(t, column="c")
