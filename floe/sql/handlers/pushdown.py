"""WHERE conjuncts of a query pushed into Floe's scan of one of its tables, so manifests and metrics prune files.

A query's Floe tables become views of Floe's native read (floe.sql.handlers.query); without a filter that read
plans every file of the table, and only Spark's Parquet reader skips row groups. Here each table gets the
conjuncts of the WHERE of the SELECT that reads it which name only that table's columns; Floe's planner prunes
manifests, partitions and files with them, and ``floe.spark.read`` applies them to rows.

Spark still applies the whole WHERE afterwards, so a pushed conjunct may only drop rows Spark would drop:

- the table must not be on the null-supplying side of an outer join (``WHERE r.x IS NULL`` after a LEFT JOIN
  keeps left rows whose match a pushed filter would have removed);
- a conjunct is pushed only when both engines read it alike: comparisons of a column with a literal of its
  own kind (numbers with integer and decimal columns, strings with string and date columns, ``DATE`` with
  dates, ``TIMESTAMP`` with ``timestamp with time zone`` columns, converted in the session's time zone),
  ``IN`` lists, ``BETWEEN``, ``IS [NOT] NULL``, ``LIKE 'prefix%'``, and AND/OR/NOT of those. Floating-point
  columns are left out (Spark orders NaN above every number; file metrics do not count NaN in bounds).
- anything else (functions, subqueries, other columns, casts) stays with Spark alone.
"""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

from floe.errors import FloeError
from floe.expressions.base import BooleanExpression, and_
from floe.expressions.binding import bind
from floe.expressions.parser import parse_filter
from floe.spec.schema import Schema
from floe.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestamptzType,
)
from floe.sql.query_tables import catalog_tables

__all__ = ["scan_filter"]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_CONNECTIVES = (exp.And, exp.Or, exp.Not, exp.Paren)
_NUMBER_COLUMNS = (IntegerType, LongType, DecimalType)


class _NotPushable(Exception):
    """A conjunct Floe does not push (kept by Spark alone)."""


def scan_filter(
    node: exp.Expression, index: int, schema: Schema, time_zone: dt.tzinfo | None
) -> BooleanExpression | None:
    """The filter Floe's scan of table reference ``index`` of query ``node`` may apply, or None.

    ``schema``: that table's schema; ``time_zone``: Spark's session time zone (TIMESTAMP literals; None: none is pushed).
    """
    tables = catalog_tables(node)
    table = tables[index] if index < len(tables) else None
    select = _reading_select(table) if table is not None else None
    where = select.args.get("where") if select is not None else None
    if table is None or select is None or where is None:
        return None
    names = {(table.alias or table.name).lower()}
    alone = not select.args.get("joins")
    pushed = []
    condition: exp.Expression = where.this
    conjuncts = [e for e in condition.flatten() if isinstance(e, exp.Expression)] if isinstance(condition, exp.And) else [condition]
    for conjunct in conjuncts:
        try:
            expr = parse_filter(_pushable_sql(conjunct, names, alone, schema, time_zone))
            bind(schema, expr, False)
        except (_NotPushable, FloeError, ValueError):
            continue
        pushed.append(expr)
    if not pushed:
        return None
    return and_(*pushed) if len(pushed) > 1 else pushed[0]


def _reading_select(table: exp.Table) -> exp.Select | None:
    """The SELECT whose FROM or JOIN reads ``table`` directly, unless the table may be null-extended there."""
    holder = table.parent
    select = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select):
        return None
    joins: list[exp.Join] = select.args.get("joins") or []
    for join in joins:
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if kind in ("SEMI", "ANTI") and join is holder:
            return None  # the right side of a semi/anti join is only tested for existence
        if join is holder and side in ("LEFT", "FULL"):
            return None
        if isinstance(holder, exp.From) and side in ("RIGHT", "FULL"):
            return None
        if join is not holder and isinstance(holder, exp.Join) and side in ("RIGHT", "FULL"):
            return None  # a later right/full join null-extends every table before it
    return select


def _pushable_sql(
    conjunct: exp.Expression, names: set[str], alone: bool, schema: Schema, time_zone: dt.tzinfo | None
) -> str:
    """The conjunct as filter text over the table's own column names; raises _NotPushable otherwise."""
    copy = conjunct.copy()
    for node in list(copy.walk()):
        if isinstance(node, (exp.Subquery, exp.Select)):
            raise _NotPushable
        if isinstance(node, exp.Column):
            qualifier = node.table.lower() if node.table else None
            if node.args.get("db") or (qualifier is None and not alone) or (qualifier and qualifier not in names):
                raise _NotPushable
            node.replace(exp.column(exp.to_identifier(node.name, quoted=True)))
    _check(copy, schema, time_zone)
    return copy.sql(dialect="spark")


def _check(node: exp.Expression, schema: Schema, time_zone: dt.tzinfo | None) -> None:
    """Refuse (``_NotPushable``) any part both engines would not read alike; rewrite TIMESTAMP literals to UTC."""
    if isinstance(node, _CONNECTIVES):
        for child in (node.this, node.expression) if isinstance(node, (exp.And, exp.Or)) else (node.this,):
            _check(child, schema, time_zone)
        return
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        _column_type(node.this, schema)
        return
    if isinstance(node, _COMPARISONS):
        column, literal = (node.this, node.expression) if isinstance(node.this, exp.Column) else (
            node.expression, node.this)
        _literal_fits(literal, _column_type(column, schema), time_zone)
        return
    if isinstance(node, exp.In) and not node.args.get("query") and not node.args.get("unnest"):
        t = _column_type(node.this, schema)
        for value in node.expressions:
            _literal_fits(value, t, time_zone)
        return
    if isinstance(node, exp.Between):
        t = _column_type(node.this, schema)
        _literal_fits(node.args["low"], t, time_zone)
        _literal_fits(node.args["high"], t, time_zone)
        return
    if isinstance(node, exp.Like) and isinstance(node.expression, exp.Literal) and node.expression.is_string:
        if not isinstance(_column_type(node.this, schema), StringType):
            raise _NotPushable
        pattern = node.expression.this
        if not pattern.endswith("%") or any(ch in pattern[:-1] for ch in "%_\\"):
            raise _NotPushable  # only a plain prefix reads as starts-with in both engines
        return
    raise _NotPushable


def _column_type(node: exp.Expression, schema: Schema) -> IcebergType:
    if not isinstance(node, exp.Column):
        raise _NotPushable
    field = schema.find_field_or_none(node.name, False)
    if field is None or not field.field_type.is_primitive:
        raise _NotPushable
    return field.field_type


def _literal_fits(node: exp.Expression, t: IcebergType, time_zone: dt.tzinfo | None) -> None:
    if isinstance(node, exp.Neg):
        node = node.this
    if isinstance(node, exp.Boolean):
        if not isinstance(t, BooleanType):
            raise _NotPushable
        return
    if isinstance(node, exp.Literal):
        fits = isinstance(t, (StringType, DateType)) if node.is_string else isinstance(t, _NUMBER_COLUMNS)
        if not fits:
            raise _NotPushable
        return
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        target = node.to.this
        if target == exp.DataType.Type.DATE and isinstance(t, DateType):
            return
        zoned = target in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPLTZ, exp.DataType.Type.TIMESTAMPTZ)
        if zoned and isinstance(t, TimestamptzType) and time_zone is not None:
            node.replace(exp.Literal.string(_utc(node.this.this, time_zone)))
            return
    raise _NotPushable


def _utc(text: str, time_zone: dt.tzinfo) -> str:
    """A Spark ``TIMESTAMP '...'`` literal (local to the session's time zone unless it names one) in UTC."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError as e:
        raise _NotPushable from e
    if value.tzinfo is None:
        value = value.replace(tzinfo=time_zone)
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
