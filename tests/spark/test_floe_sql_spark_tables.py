"""``floe sql`` statements on Spark's own tables (``spark_catalog``, ``USING parquet``) run in Spark, so a
script can create and fill a Spark table and then ``CALL snapshot`` / ``migrate`` it, as in transparent mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from _sql_helpers import rows
from pyspark.sql import SparkSession

from floe.sql.engine import SqlSession

pytestmark = pytest.mark.spark


@pytest.mark.slow  # about 45 s: Spark lists and imports the table's folder twice
def test_floe_sql_creates_spark_table_and_snapshots_and_migrates_it(
        session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src = "spark_catalog.default.fsql_src"
    session.sql(f"CREATE TABLE {src} (id BIGINT, data STRING, p STRING) USING parquet PARTITIONED BY (p) "
                f"LOCATION '{tmp_path / 'fsql_src'}'")
    session.sql(f"INSERT INTO {src} VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    assert spark.table(src).count() == 2  # a table of Spark's session catalog, not of Floe's
    assert rows(session, f"SELECT id, data FROM {src} ORDER BY id") == [(1, "a"), (2, "b")]
    described = session.sql(f"DESCRIBE {src}")[-1]
    assert [r[0] for r in described.rows[:3]] == ["id", "data", "p"]
    session.sql(f"CALL system.snapshot('{src}', 'db.fsql_snap')")
    assert rows(session, "SELECT id, p FROM db.fsql_snap ORDER BY id") == [(1, "x"), (2, "y")]
    assert session.sql(f"CALL system.migrate('{src}', backup_table_name => 'fsql_src_bak')")[-1].rows == [(2,)]
    assert rows(session, "SELECT id FROM default.fsql_src ORDER BY id") == [(1,), (2,)]  # Floe's catalog
    session.sql("DROP TABLE spark_catalog.default.fsql_src_bak")
    assert not spark.catalog.tableExists("default.fsql_src_bak")


def test_statements_naming_floe_tables_stay_floes(session: SqlSession) -> None:
    session.sql("CREATE TABLE db.fsql_own (id BIGINT) USING iceberg")
    session.sql("INSERT INTO db.fsql_own VALUES (7)")
    assert rows(session, "SELECT id FROM db.fsql_own") == [(7,)]
    assert "iceberg" in str(session.sql("SHOW CREATE TABLE db.fsql_own")[-1].rows[0][0])
