"""Boolean expressions: AlwaysTrue, AlwaysFalse, And, Or, Not and the simplifying combinators.

Expressions are frozen, hashable values. The constructors build exactly what they are given; the
combinators ``and_`` / ``or_`` / ``not_`` fold constants (``And(x, AlwaysTrue) -> x``) and are what the
rest of Floe uses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

__all__ = ["AlwaysFalse", "AlwaysTrue", "And", "BooleanExpression", "Not", "Or", "and_", "not_", "or_"]


class BooleanExpression(ABC):
    """A boolean expression over a row."""

    __slots__ = ()

    @abstractmethod
    def negate(self) -> BooleanExpression:
        """The logical negation, with Not pushed into the expression (Iceberg's ``negate``)."""

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return and_(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return or_(self, other)

    def __invert__(self) -> BooleanExpression:
        return not_(self)


@dataclass(frozen=True, slots=True)
class AlwaysTrue(BooleanExpression):
    """Matches every row."""

    def negate(self) -> BooleanExpression:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "true"

    def __repr__(self) -> str:
        return "AlwaysTrue()"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(BooleanExpression):
    """Matches no row."""

    def negate(self) -> BooleanExpression:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "false"

    def __repr__(self) -> str:
        return "AlwaysFalse()"


@dataclass(frozen=True, slots=True)
class And(BooleanExpression):
    """Both children match."""

    left: BooleanExpression
    right: BooleanExpression

    def negate(self) -> BooleanExpression:
        return Or(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} and {self.right})"

    def __repr__(self) -> str:
        return f"And({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True)
class Or(BooleanExpression):
    """Either child matches."""

    left: BooleanExpression
    right: BooleanExpression

    def negate(self) -> BooleanExpression:
        return And(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} or {self.right})"

    def __repr__(self) -> str:
        return f"Or({self.left!r}, {self.right!r})"


@dataclass(frozen=True, slots=True)
class Not(BooleanExpression):
    """The child does not match."""

    child: BooleanExpression

    def negate(self) -> BooleanExpression:
        return self.child

    def __str__(self) -> str:
        return f"not {self.child}"

    def __repr__(self) -> str:
        return f"Not({self.child!r})"


def and_(*exprs: BooleanExpression) -> BooleanExpression:
    """All of ``exprs``, folding AlwaysTrue/AlwaysFalse (no arguments -> AlwaysTrue)."""
    result: BooleanExpression = AlwaysTrue()
    for e in exprs:
        if isinstance(e, AlwaysFalse) or isinstance(result, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(e, AlwaysTrue):
            continue
        result = e if isinstance(result, AlwaysTrue) else And(result, e)
    return result


def or_(*exprs: BooleanExpression) -> BooleanExpression:
    """Any of ``exprs``, folding AlwaysTrue/AlwaysFalse (no arguments -> AlwaysFalse)."""
    result: BooleanExpression = AlwaysFalse()
    for e in exprs:
        if isinstance(e, AlwaysTrue) or isinstance(result, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(e, AlwaysFalse):
            continue
        result = e if isinstance(result, AlwaysFalse) else Or(result, e)
    return result


def not_(expr: BooleanExpression) -> BooleanExpression:
    """The negation of ``expr``, folding constants and double negation."""
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return expr.negate()
    if isinstance(expr, Not):
        return expr.child
    return Not(expr)
