"""Helpers the Spark SQL test modules share: run a statement, its rows in a stable order, load a table."""

from __future__ import annotations

from floe.sql import ResultSet
from floe.sql.engine import SqlSession
from floe.table.table import Table


def run(session: SqlSession, sql: str) -> ResultSet:
    """The last statement's result."""
    return session.sql(sql)[-1]


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    """The result's rows, sorted (SQL gives no order without ORDER BY)."""
    return sorted(run(session, sql).rows, key=repr)


def table(session: SqlSession, name: str) -> Table:
    """Table ``db.<name>`` of the session's current catalog."""
    t = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t
