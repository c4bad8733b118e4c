"""Floe's SQL inside a user's SparkSession: ``floe.spark.sql(spark, text)`` returns Spark DataFrames.

Each SparkSession gets one Floe SQL session (current catalog and namespace, handlers), built from the
session's catalogs (floe.spark.runtime.configure.session_config) and kept on the SparkSession object. Queries
return the lazy native DataFrame of Floe's query path (Floe tables as views over native Parquet scans,
Spark temporary views and Spark's own tables resolved by Spark); every other statement returns a small
DataFrame of its result rows (CALL output columns, SHOW/DESCRIBE rows, nothing for DDL).

:func:`routes_to_floe` decides which statements are Floe's when ``spark.sql`` is routed (floe.sql.
transparent): those naming a table, namespace, procedure or catalog of a Floe catalog. A three-part (or
longer) name whose first part is a Floe catalog is Floe's; shorter names are Floe's only while a Floe
catalog is the current one (``USE <floe catalog>``, or ``spark.sql.defaultCatalog`` naming one), so
Spark's own tables keep resolving as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from floe.errors import ParseError
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import attach, session_config, session_default_catalog
from floe.spark.runtime.connect import is_connect
from floe.spark.runtime.py4j_sockets import send_py4j_without_delay
from floe.spark.scan.driver_rows import empty_frame
from floe.sql import commands as c
from floe.sql.engine import SqlSession
from floe.sql.handlers import register_handlers
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.query import query_dataframe
from floe.sql.identifiers import Name
from floe.sql.lexer import split_statements
from floe.sql.parse_common import short_sql
from floe.sql.parser import parse_statement
from floe.sql.result import ResultSet
from floe.sql.statement_names import statement_names

__all__ = [
    "FloeSqlState",
    "floe_sql_state",
    "inside_floe",
    "is_floe_name",
    "is_inside_floe",
    "routes_to_floe",
    "run_statement",
    "sql",
]

_LOCAL = threading.local()


@contextmanager
def inside_floe() -> Iterator[None]:
    """While Floe runs a statement, its own ``spark.sql`` calls go to Spark untouched."""
    depth = getattr(_LOCAL, "depth", 0)
    _LOCAL.depth = depth + 1
    try:
        yield
    finally:
        _LOCAL.depth = depth


def is_inside_floe() -> bool:
    """Whether this thread is running a statement for Floe (its own Spark calls then bypass routing)."""
    return getattr(_LOCAL, "depth", 0) > 0


@dataclass
class FloeSqlState:
    """One SparkSession's Floe SQL session, and whether a Floe catalog is the current one by choice."""

    config_key: object
    session: SqlSession
    context: HandlerContext
    floe_current: bool = False
    catalogs_lower: dict[str, str] = field(default_factory=dict)

    def floe_catalog(self, part: str) -> str | None:
        return self.catalogs_lower.get(part.lower())


def floe_sql_state(spark: SparkSession) -> FloeSqlState:
    """The Floe SQL session of ``spark`` (rebuilt, keeping USE, when the session's catalogs change)."""
    if getattr(spark, "_floe_config", None) is None:
        attach(spark)
    config = session_config(spark)
    key = (tuple(sorted(config.catalogs)), config.default_catalog, id(config))
    state: FloeSqlState | None = getattr(spark, "_floe_sql_state", None)
    if state is not None and state.config_key == key:
        return state
    session = SqlSession(config)
    context = register_handlers(session, spark=spark)
    fresh = FloeSqlState(key, session, context, catalogs_lower={n.lower(): n for n in config.catalogs})
    default_conf = session_default_catalog(spark)
    fresh.floe_current = default_conf is not None and fresh.floe_catalog(default_conf) is not None
    if state is not None and state.floe_current and state.session.current_catalog in config.catalogs:
        session.current_catalog = state.session.current_catalog
        session.current_namespace = state.session.current_namespace
        fresh.floe_current = True
    spark._floe_sql_state = fresh  # type: ignore[attr-defined]
    return fresh


# -- which statements are Floe's ------------------------------------------------------------------------
def is_floe_name(state: FloeSqlState, kind: str, name: Name, spark: SparkSession) -> bool:
    """Whether a ``table``/``namespace``/``procedure``/``catalog`` name belongs to a Floe catalog."""
    qualified = {"table": 3, "namespace": 2, "procedure": 3, "catalog": 1, "function": 3}[kind]
    if len(name) >= qualified and state.floe_catalog(name[0]) is not None:
        return True
    if kind == "table" and len(name) == 1 and _is_temp_view(spark, name[0]):
        return False
    return state.floe_current and kind != "catalog"


def _is_temp_view(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` is a temporary view of the session (Spark's own rule for a one-part name, case
    included). Asked of the session's catalog in a few py4j calls: listing the tables brought every table
    and view over one attribute at a time (0.12 s a statement with a few views, growing with their number)."""
    try:
        if is_connect(spark):
            return any(t.name == name and t.isTemporary for t in spark.catalog.listTables())
        return bool(spark._jsparkSession.sessionState().catalog().getRawTempView(name).isDefined())
    except Exception:  # noqa: BLE001 - a failing lookup means "not a view Spark knows"
        return False


# Statements about the current catalog/namespace when they name none.
_CURRENT_NAMESPACE_STATEMENTS = (c.ShowTables, c.ShowNamespaces, c.ShowCurrentNamespace, c.ShowViews)


def routes_to_floe(spark: SparkSession, stmt: c.Statement) -> bool:
    """Whether ``stmt`` names anything in a Floe catalog (rules in the module docstring)."""
    state = floe_sql_state(spark)
    if isinstance(stmt, c.UseStmt):
        first = stmt.name[0]
        if state.floe_catalog(first) is not None:
            return True
        spark_catalog = first.lower() == "spark_catalog" or spark.conf.get(f"spark.sql.catalog.{first}", None)
        return state.floe_current and stmt.target != "catalog" and not spark_catalog
    names = list(statement_names(stmt))
    if not names and isinstance(stmt, _CURRENT_NAMESPACE_STATEMENTS):
        return state.floe_current  # SHOW TABLES / SHOW NAMESPACES ... of the current catalog and namespace
    return any(is_floe_name(state, kind, name, spark) for kind, name in names)


# -- running ------------------------------------------------------------------------------------------
def _frame(spark: SparkSession, result: ResultSet) -> DataFrame:
    """A ResultSet as a DataFrame (types inferred by Arrow; no columns for DDL and DML).

    Both are local relations, collected without a Spark job; an empty list would become an RDD whose
    collect runs a job (0.1-0.2 s after every statement).
    """
    if not result.columns:
        return empty_frame(spark, T.StructType([]))
    columns = list(zip(*result.rows)) if result.rows else [() for _ in result.columns]
    table = pa.table({name: pa.array(list(values)) for name, values in zip(result.columns, columns)})
    return spark.createDataFrame(table)


# The Spark settings Floe's handlers read from their session (overwrite mode, time zone), mirrored live.
_MIRRORED_CONFS = (
    "spark.sql.sources.partitionOverwriteMode", "spark.sql.session.timeZone", "spark.wap.id", "spark.wap.branch",
)


def _sync_spark_conf(state: FloeSqlState, spark: SparkSession) -> None:
    for key in _MIRRORED_CONFS:
        value = spark.conf.get(key, None)
        if value is not None:
            state.session.conf[key] = value
        else:
            state.session.conf.pop(key, None)  # RESET or unset in Spark


def run_statement(spark: SparkSession, stmt: c.Statement) -> DataFrame:
    """Run one parsed statement with Floe; queries lazily, others eagerly."""
    state = floe_sql_state(spark)
    _sync_spark_conf(state, spark)
    send_py4j_without_delay(spark)  # this thread's connection, if attach ran on another
    with inside_floe(), without_call_sites():
        if isinstance(stmt, c.Select):
            return query_dataframe(state.context, stmt.query, what=short_sql(stmt.sql) or "SELECT")
        result = state.session.execute(stmt)
        if isinstance(stmt, c.UseStmt):
            state.floe_current = True
        return _frame(spark, result)


def sql(spark: SparkSession, text: str) -> DataFrame:
    """Run Floe SQL statements in ``spark``; the last statement's result as a DataFrame.

    Queries return a lazy native DataFrame (it composes with further DataFrame code); DDL, DML and
    CALL return their result rows (none for DDL). Statements run in order; the first error stops.

    Raises:
        ParseError: a statement Floe cannot parse (names it).
        FloeError: whatever a statement raises.
    """
    parts = split_statements(text)
    if not parts:
        raise ParseError("No SQL statement to run")
    out: DataFrame | None = None
    for part in parts:
        out = run_statement(spark, parse_statement(part.sql, line=part.line, col=part.col))
    assert out is not None
    return out
