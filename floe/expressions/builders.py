"""Builder functions for unbound expressions: ``equal_to("id", 5)``, ``in_("dt", [...])`` ...

A term is a column name (dotted for struct fields) or a Reference.
"""

from __future__ import annotations

from collections.abc import Iterable

from floe.errors import ValidationError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from floe.expressions.predicates import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    StartsWith,
)
from floe.expressions.terms import Reference

__all__ = [
    "always_false",
    "always_true",
    "equal_to",
    "greater_than",
    "greater_than_or_equal",
    "in_",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_equal_to",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "ref",
    "starts_with",
]

TermLike = str | Reference


def ref(term: TermLike) -> Reference:
    """A Reference from a column name (or the Reference itself)."""
    if isinstance(term, Reference):
        return term
    if isinstance(term, str) and term:
        return Reference(term)
    raise ValidationError(f"a column reference must be a non-empty name, got {term!r}")


def _value(value: object) -> object:
    if value is None:
        raise ValidationError("null is not a literal; use is_null / not_null")
    if isinstance(value, (list, dict, set)):
        raise ValidationError(f"a comparison literal must be a single value, got {value!r}")
    return value


def always_true() -> BooleanExpression:
    return AlwaysTrue()


def always_false() -> BooleanExpression:
    return AlwaysFalse()


def is_null(term: TermLike) -> BooleanExpression:
    return IsNull(ref(term))


def not_null(term: TermLike) -> BooleanExpression:
    return NotNull(ref(term))


def is_nan(term: TermLike) -> BooleanExpression:
    return IsNaN(ref(term))


def not_nan(term: TermLike) -> BooleanExpression:
    return NotNaN(ref(term))


def less_than(term: TermLike, value: object) -> BooleanExpression:
    return LessThan(ref(term), _value(value))


def less_than_or_equal(term: TermLike, value: object) -> BooleanExpression:
    return LessThanOrEqual(ref(term), _value(value))


def greater_than(term: TermLike, value: object) -> BooleanExpression:
    return GreaterThan(ref(term), _value(value))


def greater_than_or_equal(term: TermLike, value: object) -> BooleanExpression:
    return GreaterThanOrEqual(ref(term), _value(value))


def equal_to(term: TermLike, value: object) -> BooleanExpression:
    return EqualTo(ref(term), _value(value))


def not_equal_to(term: TermLike, value: object) -> BooleanExpression:
    return NotEqualTo(ref(term), _value(value))


def starts_with(term: TermLike, prefix: str) -> BooleanExpression:
    return StartsWith(ref(term), _value(prefix))


def not_starts_with(term: TermLike, prefix: str) -> BooleanExpression:
    return NotStartsWith(ref(term), _value(prefix))


def in_(term: TermLike, values: Iterable[object]) -> BooleanExpression:
    """The value is one of ``values`` (an empty set matches nothing)."""
    vals = [_value(v) for v in values]
    return In(ref(term), vals) if vals else AlwaysFalse()


def not_in(term: TermLike, values: Iterable[object]) -> BooleanExpression:
    """The value is none of ``values`` (an empty set matches everything)."""
    vals = [_value(v) for v in values]
    return NotIn(ref(term), vals) if vals else AlwaysTrue()
