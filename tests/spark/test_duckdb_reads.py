"""DuckDB (its iceberg extension, from PyPI) reads what Floe writes: every primitive and nested type,
partition transforms, merge-on-read deletes (position delete files on v2, deletion vectors on v3), equality
deletes from an upsert table, schema evolution (added and renamed columns) and v1 tables. Rows are compared
value by value with Floe's own read of the same snapshot."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from typing import Any

import duckdb
import duckdb_extensions
import pytest
from pyspark.sql import Row, SparkSession

import floe.spark
from floe.sql.engine import SqlSession

COLUMNS = ("id BIGINT, b BOOLEAN, i INT, f FLOAT, d DOUBLE, dec DECIMAL(12, 3), day DATE, ts TIMESTAMP, "
           "ntz TIMESTAMP_NTZ, s STRING, bin BINARY, st STRUCT<x: INT, y: STRING>, arr ARRAY<BIGINT>, m MAP<STRING, INT>")
VALUES = ("SELECT id, id % 2 = 0, CAST(id AS INT) * 3, CAST(id AS FLOAT) / 4, id / 3.0D, CAST(id AS DECIMAL(12, 3)) / 8, "
          "date_add(DATE'2024-02-27', CAST(id AS INT)), timestamp_micros(1709000000000000 + id * 3600000001), "
          "CAST(timestamp_micros(1709000000000000 + id * 7) AS TIMESTAMP_NTZ), "
          "IF(id % 7 = 0, NULL, concat('s', id, 'é')), CAST(concat('b', id) AS BINARY), named_struct('x', CAST(id AS INT), 'y', "
          "CAST(id AS STRING)), sequence(id, id + id % 3), map('k', CAST(id AS INT)) FROM range({lo}, {hi})")


@pytest.fixture(scope="module")
def duck() -> Iterator[Any]:
    con = duckdb.connect()
    for extension in ("avro", "iceberg"):
        duckdb_extensions.import_extension(extension, con=con)
    yield con
    con.close()


def _plain(value: Any) -> Any:
    """One spelling of a value for both engines (UTC timestamps without zone, dicts for structs)."""
    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    return value


def _rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_plain(v) for v in r) for r in rows), key=lambda r: r[0])


def _same_rows(session: SqlSession, spark: SparkSession, duck: Any, name: str) -> int:
    table = session.catalog().load_table(name)
    ours = floe.spark.read(spark, table)
    columns = ", ".join(f'"{c}"' for c in ours.columns)
    theirs = duck.sql(f"SELECT {columns} FROM iceberg_scan('{table.metadata_location}')").fetchall()
    assert _rows(theirs) == _rows(ours.collect())
    return len(theirs)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_duckdb_reads_every_type_partitioned_with_deletes(session: SqlSession, spark: SparkSession, duck: Any, version: int) -> None:
    name = f"db.types_v{version}"
    mor = ", 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read'" if version > 1 else ""
    session.sql(f"CREATE TABLE {name} ({COLUMNS}) PARTITIONED BY (bucket(4, id), days(ts), truncate(2, s)) "
                f"TBLPROPERTIES ('format-version'='{version}'{mor})")
    session.sql(f"INSERT INTO {name} " + VALUES.format(lo=0, hi=300))
    session.sql(f"INSERT INTO {name} " + VALUES.format(lo=300, hi=400))
    session.sql(f"DELETE FROM {name} WHERE id % 10 = 0")
    session.sql(f"UPDATE {name} SET s = 'updated', m = map('u', 1) WHERE id % 10 = 1")
    table = session.catalog().load_table(name)
    kinds = {e.data_file.content.name for t in table.scan().plan_files() for e in t.deletes}
    assert kinds == (set() if version == 1 else {"POSITION_DELETES"})
    assert _same_rows(session, spark, duck, name) == 360


def test_duckdb_reads_equality_deletes_of_an_upsert_table(session: SqlSession, spark: SparkSession, duck: Any) -> None:
    session.sql("CREATE TABLE db.ups (id BIGINT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                "TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='true')")
    session.sql("INSERT INTO db.ups SELECT id, concat('a', id) FROM range(0, 200)")
    session.sql("INSERT INTO db.ups SELECT id, concat('b', id) FROM range(150, 260)")
    table = session.catalog().load_table("db.ups")
    assert any(e.data_file.content.name == "EQUALITY_DELETES" for t in table.scan().plan_files() for e in t.deletes)
    assert _same_rows(session, spark, duck, "db.ups") == 260


def test_duckdb_reads_added_and_renamed_columns(session: SqlSession, spark: SparkSession, duck: Any) -> None:
    session.sql("CREATE TABLE db.evolved (id BIGINT, a STRING) TBLPROPERTIES ('format-version'='2')")
    session.sql("INSERT INTO db.evolved VALUES (1, 'x'), (2, 'y')")
    session.sql("ALTER TABLE db.evolved RENAME COLUMN a TO renamed")
    session.sql("ALTER TABLE db.evolved ADD COLUMN extra DOUBLE")
    session.sql("ALTER TABLE db.evolved ALTER COLUMN id TYPE BIGINT")
    session.sql("INSERT INTO db.evolved VALUES (3, 'z', 1.5)")
    assert _same_rows(session, spark, duck, "db.evolved") == 3
