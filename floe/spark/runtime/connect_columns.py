"""Spark Connect Columns as Spark SQL text: what Floe's SQL and partition DDL take where a classic session
would ask the JVM for an expression's SQL (``partitionedBy(...)``, ``overwrite(condition)``, SQL-built
transforms over a source column)."""

from __future__ import annotations

from typing import Any

from floe.spark.runtime.connect import refuse

__all__ = ["column_sql", "is_connect_column"]


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
