"""Convert a bound expression to a ``pyarrow.compute.Expression`` (local reads, residual filtering).

The result selects exactly the rows for which ``evaluate(rewrite_not(expr), row)`` is true: every
predicate is built so it is never null (null and NaN handled as Floe's evaluator does), so Arrow's
three-valued logic cannot change the answer. Columns are referenced by name (``pc.field("point", "x")``).
"""

from __future__ import annotations

import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import UnsupportedError
from floe.expressions.base import BooleanExpression
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
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["arrow_literal_type", "to_arrow_expression"]


def arrow_literal_type(t: IcebergType) -> pa.DataType:
    """The Arrow type used for literals of Iceberg type ``t``.

    Raises:
        UnsupportedError: ``t`` has no Arrow literal form.
    """
    simple: dict[type, pa.DataType] = {
        BooleanType: pa.bool_(),
        IntegerType: pa.int32(),
        LongType: pa.int64(),
        FloatType: pa.float32(),
        DoubleType: pa.float64(),
        DateType: pa.date32(),
        TimeType: pa.time64("us"),
        TimestampType: pa.timestamp("us"),
        TimestamptzType: pa.timestamp("us", tz="UTC"),
        TimestampNanoType: pa.timestamp("ns"),
        TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),
        StringType: pa.string(),
        BinaryType: pa.binary(),
        UUIDType: pa.binary(16),
    }
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    raise UnsupportedError(f"no Arrow literal for Iceberg type {t}")


def _scalar(value: object, t: IcebergType) -> pa.Scalar:
    if isinstance(value, uuid.UUID):
        value = value.bytes
    if isinstance(value, Decimal) and isinstance(t, DecimalType):
        return pa.scalar(value, pa.decimal128(t.precision, t.scale))
    return pa.scalar(value, arrow_literal_type(t))


def _field(term: BoundReference) -> pc.Expression:
    return pc.field(*term.name_parts)


class _ToArrow(BoundPredicateVisitor[pc.Expression]):
    def visit_true(self) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self) -> pc.Expression:
        return pc.scalar(False)

    def visit_not(self, child_result: pc.Expression) -> pc.Expression:
        return ~child_result

    def visit_and(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result & right_result

    def visit_or(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result | right_result

    # Positive predicates are guarded with is_valid() so a null row gives false rather than null
    # (false & null is false in Arrow's Kleene logic); negative ones are their exact negation.
    def _guard(self, term: BoundReference, cond: pc.Expression) -> pc.Expression:
        return cond if term.field.required else _field(term).is_valid() & cond

    def visit_is_null(self, term: BoundReference) -> pc.Expression:
        return _field(term).is_null()

    def visit_not_null(self, term: BoundReference) -> pc.Expression:
        return _field(term).is_valid()

    def visit_is_nan(self, term: BoundReference) -> pc.Expression:
        return self._guard(term, pc.is_nan(_field(term)))

    def visit_not_nan(self, term: BoundReference) -> pc.Expression:
        return ~self.visit_is_nan(term)

    def visit_less_than(self, term: BoundReference, value: object) -> pc.Expression:
        return self._guard(term, _field(term) < _scalar(value, term.field_type))

    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> pc.Expression:
        return self._guard(term, _field(term) <= _scalar(value, term.field_type))

    def visit_greater_than(self, term: BoundReference, value: object) -> pc.Expression:
        return self._guard(term, _field(term) > _scalar(value, term.field_type))

    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> pc.Expression:
        return self._guard(term, _field(term) >= _scalar(value, term.field_type))

    def visit_equal(self, term: BoundReference, value: object) -> pc.Expression:
        return self._guard(term, _field(term) == _scalar(value, term.field_type))

    def visit_not_equal(self, term: BoundReference, value: object) -> pc.Expression:
        return ~self.visit_equal(term, value)

    def visit_starts_with(self, term: BoundReference, value: object) -> pc.Expression:
        return self._guard(term, pc.starts_with(_field(term), pattern=str(value)))

    def visit_not_starts_with(self, term: BoundReference, value: object) -> pc.Expression:
        return ~self.visit_starts_with(term, value)

    def visit_in(self, term: BoundReference, values: frozenset[object]) -> pc.Expression:
        t = term.field_type
        items = [v.bytes if isinstance(v, uuid.UUID) else v for v in values]
        value_set = pa.array(items, type=arrow_literal_type(t))
        return self._guard(term, pc.is_in(_field(term), value_set=value_set))

    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> pc.Expression:
        return ~self.visit_in(term, values)


def to_arrow_expression(expr: BooleanExpression) -> pc.Expression:
    """A pyarrow compute expression selecting the rows matching the bound ``expr``.

    Raises:
        UnsupportedError: a literal type Arrow cannot express.
        ValidationError: ``expr`` is not bound.
    """
    return visit(rewrite_not(expr), _ToArrow())
