"""Convert a bound expression to a Spark SQL boolean expression string (the Spark read path).

Columns are backquoted (```point`.`x```); literals carry their type (``DATE '2021-12-01'``,
``TIMESTAMP_NTZ '2021-12-01 00:00:00'`` for ``timestamp``, ``TIMESTAMP '... +00:00'`` for
``timestamptz``, ``X'0102'`` for binary/fixed/uuid, ``1.50BD`` for decimals). The string selects exactly
the rows for which ``evaluate(rewrite_not(expr), row)`` is true: negative predicates keep null rows
(``x IS NULL OR x != 3``) and, because Spark orders NaN above every number, ``>``/``>=`` on floating
columns exclude NaN explicitly.
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal

from floe.errors import UnsupportedError
from floe.expressions.base import BooleanExpression
from floe.expressions.literals import days_to_date, micros_to_datetime
from floe.expressions.terms import BoundReference
from floe.expressions.visitors import BoundPredicateVisitor, rewrite_not, visit
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

__all__ = ["quote_column", "spark_literal", "spark_string", "to_spark_sql"]


def quote_column(parts: tuple[str, ...] | list[str]) -> str:
    """Backquote each name part: ``("a b", "c")`` -> ```a b`.`c```."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def spark_string(text: str) -> str:
    """A Spark SQL string literal (backslash is an escape character there)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ts_text(micros: int) -> str:
    return micros_to_datetime(micros).isoformat(sep=" ")


def spark_literal(value: object, t: IcebergType) -> str:
    """A typed Spark SQL literal for ``value`` of Iceberg type ``t``.

    Raises:
        UnsupportedError: the type has no Spark SQL literal (time, nanosecond timestamps, nested).
    """
    if isinstance(t, BooleanType):
        return "true" if value else "false"
    if isinstance(t, IntegerType):
        return str(int(value))  # type: ignore[call-overload]
    if isinstance(t, LongType):
        return f"{int(value)}L"  # type: ignore[call-overload]
    if isinstance(t, (FloatType, DoubleType)):
        f = float(value)  # type: ignore[arg-type]
        text = (
            "NaN" if math.isnan(f) else ("Infinity" if f > 0 else "-Infinity") if math.isinf(f) else repr(f)
        )
        return f"CAST('{text}' AS {'FLOAT' if isinstance(t, FloatType) else 'DOUBLE'})"
    if isinstance(t, DecimalType):
        assert isinstance(value, Decimal)
        return f"{value:f}BD"
    if isinstance(t, DateType):
        return f"DATE '{days_to_date(int(value)).isoformat()}'"  # type: ignore[call-overload]
    if isinstance(t, TimestampType):
        return f"TIMESTAMP_NTZ '{_ts_text(int(value))}'"  # type: ignore[call-overload]
    if isinstance(t, TimestamptzType):
        return f"TIMESTAMP '{_ts_text(int(value))}+00:00'"  # type: ignore[call-overload]
    if isinstance(t, StringType):
        return spark_string(str(value))
    if isinstance(t, UUIDType):
        raw = value.bytes if isinstance(value, uuid.UUID) else value
        if isinstance(raw, bytes):
            return f"X'{raw.hex().upper()}'"
    if isinstance(t, (BinaryType, FixedType)) and isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    raise UnsupportedError(f"no Spark SQL literal for Iceberg type {t}")


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return spark_string(escaped + "%")


class _ToSpark(BoundPredicateVisitor[str]):
    def visit_true(self) -> str:
        return "true"

    def visit_false(self) -> str:
        return "false"

    def visit_not(self, child_result: str) -> str:
        return f"NOT {child_result}"

    def visit_and(self, left_result: str, right_result: str) -> str:
        return f"({left_result} AND {right_result})"

    def visit_or(self, left_result: str, right_result: str) -> str:
        return f"({left_result} OR {right_result})"

    @staticmethod
    def _col(term: BoundReference) -> str:
        return quote_column(term.name_parts)

    def _keep_nulls(self, term: BoundReference, cond: str) -> str:
        return cond if term.field.required else f"({self._col(term)} IS NULL OR {cond})"

    def _no_nan(self, term: BoundReference, cond: str) -> str:
        if isinstance(term.field_type, (FloatType, DoubleType)):
            return f"({cond} AND NOT isnan({self._col(term)}))"
        return cond

    def visit_is_null(self, term: BoundReference) -> str:
        return f"{self._col(term)} IS NULL"

    def visit_not_null(self, term: BoundReference) -> str:
        return f"{self._col(term)} IS NOT NULL"

    def visit_is_nan(self, term: BoundReference) -> str:
        return f"isnan({self._col(term)})"

    def visit_not_nan(self, term: BoundReference) -> str:
        return f"({self._col(term)} IS NULL OR NOT isnan({self._col(term)}))"

    def _cmp(self, term: BoundReference, op: str, value: object) -> str:
        return f"{self._col(term)} {op} {spark_literal(value, term.field_type)}"

    def visit_less_than(self, term: BoundReference, value: object) -> str:
        return self._cmp(term, "<", value)

    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> str:
        return self._cmp(term, "<=", value)

    def visit_greater_than(self, term: BoundReference, value: object) -> str:
        return self._no_nan(term, self._cmp(term, ">", value))

    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> str:
        return self._no_nan(term, self._cmp(term, ">=", value))

    def visit_equal(self, term: BoundReference, value: object) -> str:
        return self._cmp(term, "=", value)

    def visit_not_equal(self, term: BoundReference, value: object) -> str:
        return self._keep_nulls(term, self._cmp(term, "!=", value))

    def visit_starts_with(self, term: BoundReference, value: object) -> str:
        return f"{self._col(term)} LIKE {_like_prefix(str(value))}"

    def visit_not_starts_with(self, term: BoundReference, value: object) -> str:
        return self._keep_nulls(term, f"{self._col(term)} NOT LIKE {_like_prefix(str(value))}")

    def _list(self, term: BoundReference, values: frozenset[object]) -> str:
        literals = sorted(spark_literal(v, term.field_type) for v in values)
        return ", ".join(literals)

    def visit_in(self, term: BoundReference, values: frozenset[object]) -> str:
        return f"{self._col(term)} IN ({self._list(term, values)})"

    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> str:
        return self._keep_nulls(term, f"{self._col(term)} NOT IN ({self._list(term, values)})")


def to_spark_sql(expr: BooleanExpression) -> str:
    """A Spark SQL boolean expression selecting the rows matching the bound ``expr``.

    Raises:
        UnsupportedError: a column type without a Spark SQL literal (time, timestamp_ns).
        ValidationError: ``expr`` is not bound.
    """
    return visit(rewrite_not(expr), _ToSpark())
