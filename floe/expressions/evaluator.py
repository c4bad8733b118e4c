"""Row evaluator: does one row match a bound expression?

Semantics follow Iceberg's evaluator: comparisons (<, <=, >, >=, =, in, starts with) are false for a
null value and for NaN; their negations (!=, not in, not starts with) are true there. ``not_nan`` holds
for nulls.
"""

from __future__ import annotations

import math

from floe.expressions.base import BooleanExpression
from floe.expressions.binding import bind
from floe.expressions.terms import BoundReference, Row
from floe.expressions.visitors import BoundPredicateVisitor, visit
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = ["Evaluator", "evaluate"]


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _comparable(v: object) -> bool:
    return v is not None and not _is_nan(v)


class _RowVisitor(BoundPredicateVisitor[bool]):
    def __init__(self, row: Row) -> None:
        self.row = row

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child_result: bool) -> bool:
        return not child_result

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_is_null(self, term: BoundReference) -> bool:
        return term.get(self.row) is None

    def visit_not_null(self, term: BoundReference) -> bool:
        return term.get(self.row) is not None

    def visit_is_nan(self, term: BoundReference) -> bool:
        return _is_nan(term.get(self.row))

    def visit_not_nan(self, term: BoundReference) -> bool:
        return not _is_nan(term.get(self.row))

    def visit_less_than(self, term: BoundReference, value: object) -> bool:
        v = term.get(self.row)
        return _comparable(v) and v < value  # type: ignore[operator]

    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> bool:
        v = term.get(self.row)
        return _comparable(v) and v <= value  # type: ignore[operator]

    def visit_greater_than(self, term: BoundReference, value: object) -> bool:
        v = term.get(self.row)
        return _comparable(v) and v > value  # type: ignore[operator]

    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> bool:
        v = term.get(self.row)
        return _comparable(v) and v >= value  # type: ignore[operator]

    def visit_equal(self, term: BoundReference, value: object) -> bool:
        v = term.get(self.row)
        return _comparable(v) and v == value

    def visit_not_equal(self, term: BoundReference, value: object) -> bool:
        return not self.visit_equal(term, value)

    def visit_starts_with(self, term: BoundReference, value: object) -> bool:
        v = term.get(self.row)
        return isinstance(v, str) and isinstance(value, str) and v.startswith(value)

    def visit_not_starts_with(self, term: BoundReference, value: object) -> bool:
        return not self.visit_starts_with(term, value)

    def visit_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        v = term.get(self.row)
        return _comparable(v) and v in values

    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        return not self.visit_in(term, values)


def evaluate(expr: BooleanExpression, row: Row) -> bool:
    """Whether ``row`` matches the bound expression ``expr``.

    Args:
        expr: a bound expression (see ``bind``).
        row: a tuple in schema field order (structs as nested tuples) or a mapping by field id or name.
    """
    return visit(expr, _RowVisitor(row))


class Evaluator:
    """Binds an expression once and evaluates it against many rows."""

    __slots__ = ("expr",)

    def __init__(
        self, schema: Schema | StructType, expr: BooleanExpression, *, case_sensitive: bool = True
    ) -> None:
        self.expr = bind(schema, expr, case_sensitive)

    def eval(self, row: Row) -> bool:
        """Whether ``row`` matches."""
        return evaluate(self.expr, row)
