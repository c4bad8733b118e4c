"""floe.sql.engine: USE, SET, SHOW and the namespace statements against a real SQLite and Hadoop catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from floe.config import FloeConfig
from floe.errors import (
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NotFoundError,
    UnsupportedError,
    ValidationError,
)
from floe.sql import ResultSet
from floe.sql.engine import SqlSession, show_pattern_matches


@pytest.fixture
def session(tmp_path: Path) -> SqlSession:
    cfg = FloeConfig.load(
        {
            "spark.sql.catalog.hadoop_catalog": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.hadoop_catalog.type": "hadoop",
            "spark.sql.catalog.hadoop_catalog.warehouse": str(tmp_path / "dw" / "iceberg"),
        },
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    return SqlSession(cfg)


def run(session: SqlSession, sql: str) -> ResultSet:
    return session.sql(sql)[-1]


def test_session_seed_use_create_use_sequence(session: SqlSession) -> None:
    # seed 002 chapter 3: use hadoop_catalog; create database db; use db;
    session.sql("use hadoop_catalog; create database db; use db;")
    assert (session.current_catalog, session.current_namespace) == ("hadoop_catalog", ("db",))
    assert run(session, "show databases").rows == [("db",)]
    assert run(session, "show tables").columns == ["namespace", "tableName", "isTemporary"]
    assert run(session, "show tables").rows == []


def test_session_use_catalog_dot_namespace(session: SqlSession) -> None:
    session.sql("CREATE NAMESPACE hadoop_catalog.db; USE hadoop_catalog.db")
    assert (session.current_catalog, session.current_namespace) == ("hadoop_catalog", ("db",))


def test_session_use_missing_namespace_raises(session: SqlSession) -> None:
    with pytest.raises(NoSuchNamespaceError, match="Namespace nope does not exist in catalog floe"):
        session.sql("USE nope")
    with pytest.raises(NotFoundError, match="Unknown catalog 'nope'"):
        session.sql("USE CATALOG nope")


def test_session_default_namespace_property(tmp_path: Path) -> None:
    cfg = FloeConfig.load(
        {
            "spark.sql.catalog.c.type": "hadoop",
            "spark.sql.catalog.c.warehouse": str(tmp_path / "w"),
            "spark.sql.catalog.c.default-namespace": "db",
        },
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    s = SqlSession(cfg)
    s.sql("USE c")
    assert s.namespace() == ("db",)


def test_session_create_namespace_if_not_exists_and_properties(session: SqlSession) -> None:
    with pytest.raises(ValidationError, match="owner is a reserved namespace property"):  # as Spark
        session.sql("CREATE NAMESPACE db COMMENT 'sensors' WITH DBPROPERTIES ('owner'='bigdata')")
    session.sql("CREATE NAMESPACE db COMMENT 'sensors' WITH DBPROPERTIES ('team'='bigdata')")
    session.sql("CREATE NAMESPACE IF NOT EXISTS db")
    with pytest.raises(NamespaceAlreadyExistsError):
        session.sql("CREATE NAMESPACE db")
    props = session.catalog().load_namespace_properties(("db",))  # type: ignore[attr-defined]
    assert props["comment"] == "sensors"
    assert props["team"] == "bigdata"


def test_session_drop_namespace_if_exists_and_cascade(session: SqlSession) -> None:
    session.sql("DROP NAMESPACE IF EXISTS missing")
    with pytest.raises(NoSuchNamespaceError):
        session.sql("DROP NAMESPACE missing")
    session.sql("CREATE NAMESPACE a; CREATE NAMESPACE a.b; USE a")
    session.sql("DROP NAMESPACE a CASCADE")
    assert run(session, "SHOW NAMESPACES").rows == []
    assert session.current_namespace is None


def test_session_show_namespaces_in_catalog_and_pattern(session: SqlSession) -> None:
    session.sql(
        "CREATE NAMESPACE hadoop_catalog.db1; CREATE NAMESPACE hadoop_catalog.db2; CREATE NAMESPACE hadoop_catalog.x"
    )
    assert run(session, "SHOW NAMESPACES IN hadoop_catalog LIKE 'db*'").rows == [("db1",), ("db2",)]
    assert run(session, "SHOW NAMESPACES IN hadoop_catalog LIKE 'x|db2'").rows == [("db2",), ("x",)]


def test_session_set_show_and_catalog_keys(session: SqlSession, tmp_path: Path) -> None:
    assert run(session, "SET spark.sql.shuffle.partitions=4").rows == [("spark.sql.shuffle.partitions", "4")]
    assert run(session, "SET spark.sql.shuffle.partitions").rows == [("spark.sql.shuffle.partitions", "4")]
    assert ("spark.sql.shuffle.partitions", "4") in run(session, "SET").rows
    assert run(session, "SET spark.unset.key").rows == [("spark.unset.key", "<undefined>")]
    # seed 002 chapter 6: a catalog defined with Hive-style SET statements
    session.sql(
        f"SET iceberg.catalog.hive_style.type=hadoop; SET iceberg.catalog.hive_style.warehouse={tmp_path}/hs"
    )
    assert "hive_style" in session.catalog_names
    session.sql("CREATE NAMESPACE hive_style.db")
    assert run(session, "SHOW NAMESPACES IN hive_style").rows == [("db",)]


def test_session_show_catalogs(session: SqlSession) -> None:
    assert run(session, "SHOW CATALOGS").rows == [("floe",), ("hadoop_catalog",)]


def test_session_unhandled_statement_raises_unsupported_naming_it(session: SqlSession) -> None:
    with pytest.raises(UnsupportedError, match="Not supported yet: SELECT 1"):
        session.sql("SELECT 1")


def test_session_register_handler_overrides_dispatch(session: SqlSession) -> None:
    from floe.sql import Select

    session.register(Select, lambda s, stmt: ResultSet(columns=["sql"], rows=[(stmt.sql,)]))
    assert run(session, "SELECT 1").rows == [("SELECT 1",)]


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [(None, "x", True), ("db*", "DB1", True), ("a|b", "b", True), ("a*c", "abd", False), ("*", "", True)],
)
def test_show_pattern_matches_spark_semantics(pattern: str | None, value: str, expected: bool) -> None:
    assert show_pattern_matches(pattern, value) is expected
