"""Queries kept as SQL: the :class:`~floe.sql.commands.Query` and :class:`~floe.sql.commands.SqlExpr`
values of parsed trees, with the table references (names, aliases, time travel) a query reads.

Spark cannot resolve Floe's tables by itself (they are not Spark catalog tables), nor Iceberg's
metadata-table names or time travel on a Python data source, so the engine registers one view per
:class:`~floe.sql.commands.TableRef` and runs the rewritten SQL (floe.sql.query_tables finds and rewrites
the tables in the tree).
"""

from __future__ import annotations

from sqlglot import exp

from floe.errors import UnsupportedError
from floe.sql.commands import Query, SqlExpr, TableRef, TimeTravel
from floe.sql.literals import evaluate
from floe.sql.query_tables import catalog_tables, spark_sql, table_name

__all__ = ["make_expr", "make_query", "table_refs"]


def _time_travel(table: exp.Table) -> TimeTravel | None:
    version = table.args.get("version")
    if not isinstance(version, exp.Version):
        return None
    kind = "timestamp" if str(version.this).upper() == "TIMESTAMP" else "version"
    expr = version.expression
    sql = expr.sql(dialect="spark")
    try:
        value: object = evaluate(expr)
    except UnsupportedError:
        value = None
    if kind == "version" and isinstance(value, str) and value.isdigit():
        value = int(value)
    return TimeTravel(kind=kind, value=value, sql=sql)


def table_refs(node: exp.Expression) -> tuple[TableRef, ...]:
    """Every catalog table reference in ``node``, in source order, with alias and time travel."""
    return tuple(
        TableRef(name=table_name(t), alias=t.alias or None, time_travel=_time_travel(t), index=i)
        for i, t in enumerate(catalog_tables(node))
    )


def make_query(node: exp.Expression) -> Query:
    """A :class:`Query` for a parsed query tree."""
    return Query(sql=spark_sql(node), tables=table_refs(node), node=node)


def make_expr(node: exp.Expression) -> SqlExpr:
    return SqlExpr(sql=spark_sql(node), node=node)
