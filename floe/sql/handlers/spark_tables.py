"""Statements on Spark's own tables (``spark_catalog``) in ``floe sql``: run by Spark, as transparent mode runs them.

A script migrating a Spark table into Iceberg creates and fills it in Spark's session catalog
(``CREATE TABLE spark_catalog.default.t ... USING parquet``, ``INSERT INTO spark_catalog.default.t``) and
then calls ``snapshot`` or ``migrate`` on it. A statement whose every table or namespace is in
``spark_catalog`` (and no Floe catalog has that name) goes to ``spark.sql`` in the session Floe's
statements use, so the procedures see the same tables; statements naming Floe tables stay Floe's.
"""

from __future__ import annotations

from typing import Any

from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.parse_common import short_sql
from floe.sql.result import ResultSet
from floe.sql.statement_names import statement_names

__all__ = ["SPARK_CATALOG", "names_spark_tables_only", "run_in_spark"]

SPARK_CATALOG = "spark_catalog"


def names_spark_tables_only(ctx: HandlerContext, stmt: c.Statement) -> bool:
    """Whether everything ``stmt`` names lies in Spark's session catalog (and something does)."""
    if SPARK_CATALOG in {k.lower() for k in ctx.session.catalog_properties}:
        return False  # a Floe catalog named spark_catalog keeps the name
    if not isinstance(stmt, (c.CreateTable, c.DropTable, c.Insert, c.Select, c.DescribeTable, c.ShowCreateTable,
                             c.ShowTblProperties, c.Delete, c.Update, c.Merge)):
        return False
    names = list(statement_names(stmt))
    return bool(names) and all(kind == "table" and name[0].lower() == SPARK_CATALOG for kind, name in names)


def _value(v: Any) -> Any:
    return v.asDict(recursive=True) if hasattr(v, "asDict") else v


def run_in_spark(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """Run the statement's text with ``spark.sql``; its rows as a result (none for DDL and DML)."""
    what = short_sql(stmt.sql) or type(stmt).__name__
    with spark_errors(what):
        df = ctx.spark().sql(stmt.sql)
        rows = [tuple(_value(v) for v in row) for row in df.collect()]
    if not df.columns:
        return ResultSet.empty(f"{what}: run by Spark")
    return ResultSet(columns=list(df.columns), rows=rows)
