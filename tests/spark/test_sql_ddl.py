"""DDL and metadata statements run from metadata alone: no SparkSession is started for them."""

from __future__ import annotations

from pathlib import Path

import pytest

import floe.spark  # noqa: F401 - registers the Spark engine the SQL handlers run on
from floe.config import FloeConfig
from floe.sql.engine import SqlSession
from floe.sql.handlers import register_handlers


@pytest.fixture
def session_ctx(tmp_path: Path) -> tuple[SqlSession, object]:
    cfg = FloeConfig.load(
        {
            "spark.sql.catalog.hadoop_catalog.type": "hadoop",
            "spark.sql.catalog.hadoop_catalog.warehouse": str(tmp_path / "dw"),
        },
        environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")},
        cwd=tmp_path,
    )
    session = SqlSession(cfg)
    return session, register_handlers(session)


def test_sql_ddl_statements_never_start_spark(session_ctx: tuple[SqlSession, object]) -> None:
    session, ctx = session_ctx
    session.sql(
        """
        USE hadoop_catalog; CREATE DATABASE db; USE db;
        CREATE TABLE t (id BIGINT NOT NULL, ts TIMESTAMP, name STRING, dt STRING) USING iceberg
          PARTITIONED BY (dt, bucket(8, id), days(ts)) TBLPROPERTIES ('k'='v');
        ALTER TABLE t SET TBLPROPERTIES ('k2'='v2');
        ALTER TABLE t UNSET TBLPROPERTIES ('k');
        ALTER TABLE t ADD COLUMNS (extra int COMMENT 'more' AFTER id);
        ALTER TABLE t RENAME COLUMN extra TO extra2;
        ALTER TABLE t ALTER COLUMN extra2 TYPE bigint;
        ALTER TABLE t ADD PARTITION FIELD truncate(4, name) AS name_prefix;
        ALTER TABLE t REPLACE PARTITION FIELD days(ts) WITH hours(ts);
        ALTER TABLE t DROP PARTITION FIELD name_prefix;
        ALTER TABLE t WRITE ORDERED BY id DESC NULLS LAST, name;
        ALTER TABLE t SET IDENTIFIER FIELDS id;
        CREATE TABLE t2 LIKE t;
        DELETE FROM t WHERE dt = '2021-12-01'
        """
    )
    desc = session.sql("DESC t")[-1].rows
    assert desc[:6] == [
        ("id", "bigint", None),
        ("extra2", "bigint", "more"),
        ("ts", "timestamp", None),
        ("name", "string", None),
        ("dt", "string", None),
        ("", "", ""),
    ]
    parts = [r[1] for r in desc if str(r[0]).startswith("Part ")]
    assert parts == ["dt", "bucket(8, id)", "hours(ts)"]
    props = dict(session.sql("SHOW TBLPROPERTIES t")[-1].rows)
    assert props["k2"] == "v2"
    assert "k" not in props
    assert props["write.distribution-mode"] == "range"
    assert props["identifier-fields"] == "[id]"
    assert props["sort-order"] == "id DESC NULLS LAST, name ASC NULLS FIRST"  # as Iceberg Java prints it
    like = [r[:2] for r in session.sql("DESC t2")[-1].rows]
    assert like == [r[:2] for r in desc]
    assert "CREATE TABLE hadoop_catalog.db.t (" in str(session.sql("SHOW CREATE TABLE t")[-1].rows[0][0])
    # a metadata-only DELETE of whole partitions does not need Spark either
    from floe.spec.manifest import DataFile, FileContent, FileFormat

    table = session.catalog().load_table(("db", "t"))  # type: ignore[attr-defined]
    for i, day in enumerate(("2021-12-01", "2021-12-02")):
        f = DataFile(
            content=FileContent.DATA, file_path=f"{table.location()}/data/f{i}.parquet",
            file_format=FileFormat.PARQUET, partition=(day, i, 1), record_count=10, file_size_in_bytes=100,
            spec_id=table.spec().spec_id,
        )
        table.new_fast_append().append_file(f).commit()
    session.sql("DELETE FROM t WHERE dt = '2021-12-01'")
    snaps = session.catalog().load_table(("db", "t")).snapshots()  # type: ignore[attr-defined]
    assert [s.summary.as_dict()["operation"] for s in snaps] == ["append", "append", "delete"]
    session.sql("DROP TABLE t2; DROP TABLE IF EXISTS t2")
    assert session.sql("SHOW TABLES")[-1].rows == [("db", "t", False)]
    # renames: the embedded SQL catalog (a Hadoop table's name is its location)
    session.sql("USE floe; CREATE NAMESPACE n; CREATE TABLE n.a (x int) USING iceberg; ALTER TABLE n.a RENAME TO b")
    assert session.sql("SHOW TABLES IN n")[-1].rows == [("n", "b", False)]
    assert not ctx.spark_started  # type: ignore[attr-defined]
