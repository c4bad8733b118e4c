"""Statement handlers: what each SQL command does, registered on a :class:`floe.sql.engine.SqlSession`.

    session = SqlSession(config)
    ctx = register_handlers(session)            # Spark starts on the first statement that needs it

One module per statement family: ddl (CREATE/DROP/ALTER TABLE), describe (DESC, SHOW TBLPROPERTIES,
SHOW CREATE TABLE), dml (INSERT, DELETE, UPDATE), merge (MERGE INTO), query (SELECT, EXPLAIN),
procedures (CALL), views (CREATE/DROP/ALTER VIEW, SHOW VIEWS). Statements without a handler fail with "Not supported yet: <statement>" and change
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.ddl import run_alter, run_create_table, run_drop_table
from floe.sql.handlers.describe import run_describe, run_show_create_table, run_show_tblproperties
from floe.sql.handlers.dml import run_delete, run_insert, run_update
from floe.sql.handlers.merge import run_merge
from floe.sql.handlers.procedures import run_call
from floe.sql.handlers.query import run_explain, run_select
from floe.sql.handlers.spark_tables import names_spark_tables_only, run_in_spark
from floe.sql.handlers.views import run_alter_view, run_create_view, run_drop_view, run_show_views

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.sql.engine import SqlSession
    from floe.sql.handlers.context import Handler
    from floe.sql.result import ResultSet

__all__ = ["HandlerContext", "register_handlers"]

_ALTER_FORMS: tuple[type[c.AlterTable], ...] = (
    c.SetProperties,
    c.UnsetProperties,
    c.AddColumns,
    c.DropColumns,
    c.RenameColumn,
    c.AlterColumnType,
    c.AlterColumnComment,
    c.AlterColumnNullability,
    c.AlterColumnDefault,
    c.AlterColumnPosition,
    c.AddPartitionField,
    c.DropPartitionField,
    c.ReplacePartitionField,
    c.WriteOrderedBy,
    c.RenameTable,
    c.SetIdentifierFields,
    c.DropIdentifierFields,
    c.CreateBranch,
    c.CreateTag,
    c.DropBranch,
    c.DropTag,
)


def _bind(ctx: HandlerContext, fn: Handler) -> object:
    def handler(session: SqlSession, stmt: c.Statement) -> ResultSet:
        return fn(ctx, stmt)  # type: ignore[no-any-return]

    return handler


def register_handlers(session: SqlSession, *, spark: SparkSession | None = None) -> HandlerContext:
    """Register every statement handler on ``session``; returns the shared context.

    Args:
        session: the SQL session.
        spark: use this SparkSession instead of starting one when a statement first needs Spark.
    """
    ctx = HandlerContext(session, spark=spark)
    table: dict[type[c.Statement], Handler] = {
        c.CreateTable: run_create_table,
        c.DropTable: run_drop_table,
        c.DescribeTable: run_describe,
        c.ShowTblProperties: run_show_tblproperties,
        c.ShowCreateTable: run_show_create_table,
        c.Insert: run_insert,
        c.Delete: run_delete,
        c.Update: run_update,
        c.Merge: run_merge,
        c.Select: run_select,
        c.Explain: run_explain,
        c.Call: run_call,
        c.CreateView: run_create_view,
        c.DropView: run_drop_view,
        c.AlterViewProperties: run_alter_view,
        c.ShowViews: run_show_views,
    }
    table.update({form: run_alter for form in _ALTER_FORMS})
    for kind, fn in table.items():
        session.register(kind, _bind(ctx, fn))  # type: ignore[arg-type]
    session.spark_statements = lambda stmt: run_in_spark(ctx, stmt) if names_spark_tables_only(ctx, stmt) else None
    return ctx
