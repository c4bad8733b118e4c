"""Spark Connect sessions (``SparkSession.builder.remote(...)``): what differs from a session with a JVM.

A Connect session has no Py4J gateway: no ``sparkContext``, ``_jvm``, ``_jsparkSession``, ``_jdf`` or
``_jc``. Floe's planning and commits already run in the client's Python; the data path uses only the public
DataFrame API (``spark.read.parquet`` of the planned files, joins on ``_metadata.file_path`` /
``_metadata.row_index``, Parquet writes with the partition values as expressions), which Connect
serializes. The few places that reach into the JVM ask :func:`is_connect` and take a public-API way
instead, or refuse with :func:`refuse` (one line naming the feature).

What needs Python in the server's workers (Arrow UDFs and ``mapInArrow`` tasks that import Floe, the
``iceberg`` Python data source) is refused on Connect: the server is assumed to have nothing of Floe's.
"""

from __future__ import annotations

from typing import Any

from floe.errors import UnsupportedError

__all__ = ["application_id", "column_sql", "is_connect", "is_connect_column", "refuse", "require_python_workers"]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its class lives in ``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def application_id(spark: Any) -> str:
    """The Spark application id, from the SparkContext or, on Connect, from the server's conf."""
    if is_connect(spark):
        return str(spark.conf.get("spark.app.id", "connect"))
    return str(spark.sparkContext.applicationId)


def refuse(feature: str) -> UnsupportedError:
    """The one-line refusal for ``feature`` on a Spark Connect session (raise it)."""
    return UnsupportedError(
        f"{feature} is not supported on a Spark Connect session (it needs Floe in the server's JVM or Python "
        "workers); use a classic SparkSession for it (README, Spark Connect)"
    )


_INFIX = {
    "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>", "+": "+", "-": "-",
    "*": "*", "/": "/", "%": "%", "and": "AND", "or": "OR", "&": "&", "|": "|", "^": "^",
}
_POSTFIX = {"isNull": "IS NULL", "isNotNull": "IS NOT NULL"}
_UNIT_FIRST = ("timestampdiff", "timestamp_diff", "timestampadd", "timestamp_add")


def column_sql(col: Any) -> str:
    """A Spark Connect Column as Spark SQL text (what Floe's SQL and partition DDL take).

    Covers column references, struct fields, literals, casts, SQL expressions, operators and function
    calls (``bucket(4, id)``, ``days(ts)``, ``level = 'ERROR'``).

    Raises:
        UnsupportedError: an expression kind without a SQL spelling here (a Python UDF, a lambda ...).
    """
    from pyspark.sql.connect import expressions as E  # Connect's client modules need grpc: imported on use

    def sql(e: Any) -> str:
        if isinstance(e, E.ColumnReference):
            return str(e.name())
        if isinstance(e, E.ColumnAlias):
            return sql(e._child)
        if isinstance(e, E.SQLExpression):
            return f"({e._expr})"
        if isinstance(e, E.LiteralExpression):
            return _literal_sql(e._value, e._dataType)
        if isinstance(e, E.CastExpression):
            target = e._data_type if isinstance(e._data_type, str) else e._data_type.simpleString()
            return f"CAST({sql(e._expr)} AS {target})"
        if isinstance(e, E.UnresolvedExtractValue):
            return f"{sql(e._child)}[{sql(e._extraction)}]"
        if isinstance(e, E.UnresolvedFunction):
            args = [sql(a) for a in e._args]
            if e._name in _INFIX and len(args) == 2:
                return f"({args[0]} {_INFIX[e._name]} {args[1]})"
            if e._name in _POSTFIX and len(args) == 1:
                return f"({args[0]} {_POSTFIX[e._name]})"
            if e._name == "not" and len(args) == 1:
                return f"(NOT {args[0]})"
            if e._name in _UNIT_FIRST and args:
                args[0] = args[0].strip("'")
            return f"{e._name}({', '.join(args)})"
        raise refuse(f"A column expression of kind {type(e).__name__} ({e!r}) where Floe needs its SQL")

    top = col._expr
    return str(top._expr) if isinstance(top, E.SQLExpression) else sql(top)  # no parentheses at the top


def _literal_sql(value: Any, data_type: Any) -> str:
    import datetime as dt

    if value is None:
        return f"CAST(NULL AS {data_type.simpleString()})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise refuse(f"A literal of type {type(value).__name__} where Floe needs its SQL")


def is_connect_column(col: Any) -> bool:
    """Whether ``col`` is a Spark Connect Column (an expression tree in Python, no JVM object)."""
    return type(col).__module__.startswith("pyspark.sql.connect")


def require_python_workers(spark: Any, feature: str) -> None:
    """Refuse ``feature`` on a Spark Connect session: it runs Floe in Spark's Python workers, which are the
    server's there (and need not have Floe)."""
    if is_connect(spark):
        raise refuse(f"{feature} (Floe code in Spark's Python workers)")
