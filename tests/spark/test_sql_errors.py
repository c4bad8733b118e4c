"""Failing statements: bad SQL, unknown tables/columns/snapshots, unsupported statements.

Each must fail with ONE clear line naming the problem and leave the table exactly as it was (same
metadata file, same rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from floe.cli.main import main
from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.errors import (
    FloeError,
    NoSuchSnapshotError,
    NoSuchTableError,
    ParseError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _config(tmp_path: Path) -> FloeConfig:
    return FloeConfig.load(
        {"spark.sql.session.timeZone": "UTC"},
        environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")},
        cwd=tmp_path,
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> tuple[SqlSession, Path]:
    """One embedded-catalog session with table db.t (partitioned by dt, one row) shared by the module."""
    tmp_path = tmp_path_factory.mktemp("sql_errors")
    session = make_session(_config(tmp_path), spark=spark)
    session.sql(
        "CREATE DATABASE db; USE db;"
        "CREATE TABLE t (id BIGINT, name STRING, dt STRING) USING iceberg PARTITIONED BY (dt);"
        "INSERT INTO t VALUES (1, 'a', '2021-12-01')"
    )
    return session, tmp_path


def _state(session: SqlSession) -> tuple[str | None, list[tuple[object, ...]]]:
    table = session.catalog().load_table(("db", "t"))  # type: ignore[attr-defined]
    data = sorted(session.sql("SELECT * FROM db.t")[-1].rows)
    return table.metadata_location, data


@pytest.mark.parametrize(
    ("sql", "error", "pattern"),
    [
        ("SELEC * FROM t", ParseError, r"SELEC"),
        ("SELECT * FROM nope", NoSuchTableError, r"Table not found: floe\.db\.nope"),
        ("SELECT missing_col FROM t", ValidationError, r"failed: .*missing_col"),
        ("SELECT * FROM t VERSION AS OF 12345", NoSuchSnapshotError, r"12345"),
        ("INSERT INTO t VALUES (2, 'b')", ValidationError, r"expects 3 data columns .* gives 2"),
        ("INSERT INTO t VALUES ('x', 'b', '2021-12-02')", ValidationError, r"INSERT INTO t VALUES .* failed: "),
        ("INSERT INTO t (id, nope, dt) VALUES (2, 'b', 'c')", ValidationError, r"has no column 'nope'"),
        ("INSERT INTO nope VALUES (1)", NoSuchTableError, r"floe\.db\.nope"),
        ("DELETE FROM t WHERE nope = 1", ValidationError, r"has no column 'nope'"),
        ("UPDATE t SET nope = 1", ValidationError, r"has no column 'nope'"),
        ("UPDATE t SET name = missing + 1 WHERE id = 1", ValidationError, r"has no column 'missing'"),
        (
            "MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 2",
            ValidationError,
            r"more than one source row",
        ),
        ("MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1", ValidationError, r"no column 'nope'"),
        ("CREATE FUNCTION f AS 'x.Y'", UnsupportedError, r"^Unsupported statement: CREATE FUNCTION f"),
        ("CALL floe.system.rewrite_table_path('db.t', 'a', 'b')", UnsupportedError,
         r"^Not supported yet: CALL floe\.system\.rewrite_table_path"),
        ("CALL floe.system.expire_snapshots('db.t', retain_last => 0)", ValidationError, r"retain_last must be at least 1"),
        ("CALL floe.system.rollback_to_snapshot('db.t', 42)", NoSuchSnapshotError, r"42"),
        ("CALL floe.system.rollback_to_snapshot('db.t')", ValidationError, r"snapshot_id"),
        ("CALL floe.system.rollback_to_snapshot(table => 'db.t', id => 1)", ValidationError, r"no parameter 'id'"),
        ("ALTER TABLE t ADD COLUMNS (name string)", ValidationError, r"name"),
        ("ALTER TABLE t ALTER COLUMN name TYPE int", ValidationError, r"name"),
        ("ALTER TABLE t DROP COLUMN nope", ValidationError, r"no column 'nope'"),
        ("ALTER TABLE t DROP PARTITION FIELD bucket(4, id)", ValidationError, r"no partition field bucket\[4\]\(id\)"),
        ("ALTER TABLE t ADD PARTITION FIELD bucket(4, nope)", ValidationError, r"nope"),
        ("CREATE TABLE t (a int) USING iceberg", TableAlreadyExistsError, r"floe\.db\.t"),
        ("CREATE TABLE p (a int) USING parquet", UnsupportedError, r"USING parquet"),
        ("CREATE TABLE c USING iceberg AS SELECT nope FROM t", ValidationError, r"failed: .*nope"),
        ("DROP TABLE nope", NoSuchTableError, r"floe\.db\.nope"),
        ("DESC nope", NoSuchTableError, r"floe\.db\.nope"),
    ],
)
def test_sql_error_one_line_and_no_change(
    env: tuple[SqlSession, Path], sql: str, error: type[FloeError], pattern: str
) -> None:
    session, _ = env
    before = _state(session)
    with pytest.raises(error, match=pattern) as info:
        session.sql(sql)
    message = str(info.value)
    assert "\n" not in message.strip(), message
    assert len(message) < 400, message
    assert _state(session) == before
    assert not session.catalog().table_exists(("db", "c"))  # type: ignore[attr-defined]


def test_sql_error_cli_prints_one_line(env: tuple[SqlSession, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, tmp_path = env
    import os

    old = os.environ.get("FLOE_HOME")
    os.environ["FLOE_HOME"] = str(tmp_path / ".floe")
    try:
        status = main(["sql", "USE db; DROP TABLE nope"])
        err = capsys.readouterr().err.strip().splitlines()
        spark_status = main(["sql", "USE db; SELECT nope FROM t"])  # a Spark analysis error
        spark_err = [line for line in capsys.readouterr().err.strip().splitlines() if "WARN" not in line]
    finally:
        if old is None:
            os.environ.pop("FLOE_HOME", None)
        else:
            os.environ["FLOE_HOME"] = old
    assert status == 1
    assert err == ["error: Table not found: floe.db.nope"]
    assert spark_status == 1
    assert len(spark_err) == 1
    assert spark_err[0].startswith("error: SELECT nope FROM t failed: [UNRESOLVED_COLUMN")
