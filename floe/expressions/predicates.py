"""Predicates on one term: unary (null/NaN checks), comparisons with a literal, and set membership.

A predicate is unbound while its term is a ``Reference`` (values are the user's Python values) and bound
once its term is a ``BoundReference`` (values are converted to the column type's value representation,
see floe/spec/transforms/base.py). One class per operation serves both forms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from floe.expressions.base import BooleanExpression
from floe.expressions.literals import format_literal
from floe.expressions.terms import BoundReference, Term

__all__ = [
    "EqualTo",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNaN",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "NotEqualTo",
    "NotIn",
    "NotNaN",
    "NotNull",
    "NotStartsWith",
    "Predicate",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
]


def _fmt(term: Term, value: object) -> str:
    if isinstance(term, BoundReference):
        return format_literal(value, term.field_type)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    return str(value)


class Predicate(BooleanExpression):
    """A predicate on one term."""

    __slots__ = ()
    term: Term

    @property
    def is_bound(self) -> bool:
        return isinstance(self.term, BoundReference)

    @property
    def ref(self) -> BoundReference:
        """The bound term (raises on an unbound predicate)."""
        if not isinstance(self.term, BoundReference):
            raise TypeError(f"predicate {self} is not bound")
        return self.term


@dataclass(frozen=True, slots=True)
class UnaryPredicate(Predicate):
    """A predicate with no literal."""

    term: Term
    op: ClassVar[str] = "?"

    def __str__(self) -> str:
        return f"{self.term} {self.op}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r})"

    def negate(self) -> BooleanExpression:
        return _UNARY_NEGATION[type(self)](self.term)


class IsNull(UnaryPredicate):
    """The value is null."""

    __slots__ = ()
    op = "is null"


class NotNull(UnaryPredicate):
    """The value is not null."""

    __slots__ = ()
    op = "is not null"


class IsNaN(UnaryPredicate):
    """The (floating-point) value is NaN."""

    __slots__ = ()
    op = "is nan"


class NotNaN(UnaryPredicate):
    """The value is not NaN (nulls and non-float values included)."""

    __slots__ = ()
    op = "is not nan"


_UNARY_NEGATION: dict[type, type[UnaryPredicate]] = {
    IsNull: NotNull,
    NotNull: IsNull,
    IsNaN: NotNaN,
    NotNaN: IsNaN,
}


@dataclass(frozen=True, slots=True)
class LiteralPredicate(Predicate):
    """A comparison of the term with one literal value."""

    term: Term
    value: object
    op: ClassVar[str] = "?"

    def __str__(self) -> str:
        return f"{self.term} {self.op} {_fmt(self.term, self.value)}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {self.value!r})"

    def negate(self) -> BooleanExpression:
        return _LITERAL_NEGATION[type(self)](self.term, self.value)


class LessThan(LiteralPredicate):
    __slots__ = ()
    op = "<"


class LessThanOrEqual(LiteralPredicate):
    __slots__ = ()
    op = "<="


class GreaterThan(LiteralPredicate):
    __slots__ = ()
    op = ">"


class GreaterThanOrEqual(LiteralPredicate):
    __slots__ = ()
    op = ">="


class EqualTo(LiteralPredicate):
    __slots__ = ()
    op = "="


class NotEqualTo(LiteralPredicate):
    __slots__ = ()
    op = "!="


class StartsWith(LiteralPredicate):
    """A string value starts with the literal prefix."""

    __slots__ = ()
    op = "starts with"


class NotStartsWith(LiteralPredicate):
    """A string value does not start with the literal prefix (nulls included)."""

    __slots__ = ()
    op = "not starts with"


_LITERAL_NEGATION: dict[type, type[LiteralPredicate]] = {
    LessThan: GreaterThanOrEqual,
    LessThanOrEqual: GreaterThan,
    GreaterThan: LessThanOrEqual,
    GreaterThanOrEqual: LessThan,
    EqualTo: NotEqualTo,
    NotEqualTo: EqualTo,
    StartsWith: NotStartsWith,
    NotStartsWith: StartsWith,
}


def _sorted(values: frozenset[object]) -> list[object]:
    try:
        return sorted(values)  # type: ignore[type-var]
    except TypeError:
        return sorted(values, key=repr)


@dataclass(frozen=True, slots=True)
class SetPredicate(Predicate):
    """Membership of the term's value in a set of literals."""

    term: Term
    values: frozenset[object]
    op: ClassVar[str] = "?"

    def __init__(self, term: Term, values: Iterable[object]) -> None:
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "values", frozenset(values))

    def __str__(self) -> str:
        items = ", ".join(_fmt(self.term, v) for v in _sorted(self.values))
        return f"{self.term} {self.op} ({items})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.term!r}, {_sorted(self.values)!r})"

    def negate(self) -> BooleanExpression:
        return (NotIn if isinstance(self, In) else In)(self.term, self.values)


class In(SetPredicate):
    __slots__ = ()
    op = "in"


class NotIn(SetPredicate):
    """The value is not in the set (nulls included)."""

    __slots__ = ()
    op = "not in"
