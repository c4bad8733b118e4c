"""Expression visitors: a post-order visitor over boolean structure, a per-operation visitor for bound
predicates, and ``rewrite_not`` (push every Not down into the predicates)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from floe.errors import ValidationError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or, and_, or_
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
    Predicate,
    StartsWith,
)
from floe.expressions.terms import BoundReference

__all__ = ["BooleanExpressionVisitor", "BoundPredicateVisitor", "rewrite_not", "visit"]

T = TypeVar("T")


class BooleanExpressionVisitor(ABC, Generic[T]):
    """Visits an expression bottom-up; children are visited before their parent."""

    @abstractmethod
    def visit_true(self) -> T: ...

    @abstractmethod
    def visit_false(self) -> T: ...

    @abstractmethod
    def visit_not(self, child_result: T) -> T: ...

    @abstractmethod
    def visit_and(self, left_result: T, right_result: T) -> T: ...

    @abstractmethod
    def visit_or(self, left_result: T, right_result: T) -> T: ...

    @abstractmethod
    def visit_predicate(self, predicate: Predicate) -> T: ...


def visit(expr: BooleanExpression, visitor: BooleanExpressionVisitor[T]) -> T:
    """Apply ``visitor`` to ``expr`` bottom-up and return the root's result."""
    if isinstance(expr, AlwaysTrue):
        return visitor.visit_true()
    if isinstance(expr, AlwaysFalse):
        return visitor.visit_false()
    if isinstance(expr, Not):
        return visitor.visit_not(visit(expr.child, visitor))
    if isinstance(expr, And):
        return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Predicate):
        return visitor.visit_predicate(expr)
    raise TypeError(f"not a boolean expression: {expr!r}")


class BoundPredicateVisitor(BooleanExpressionVisitor[T]):
    """A visitor with one method per operation on bound predicates."""

    def visit_predicate(self, predicate: Predicate) -> T:
        term = predicate.term
        if not isinstance(term, BoundReference):
            raise ValidationError(f"predicate {predicate} must be bound before evaluation")
        p = predicate
        if isinstance(p, IsNull):
            return self.visit_is_null(term)
        if isinstance(p, NotNull):
            return self.visit_not_null(term)
        if isinstance(p, IsNaN):
            return self.visit_is_nan(term)
        if isinstance(p, NotNaN):
            return self.visit_not_nan(term)
        if isinstance(p, LessThan):
            return self.visit_less_than(term, p.value)
        if isinstance(p, LessThanOrEqual):
            return self.visit_less_than_or_equal(term, p.value)
        if isinstance(p, GreaterThan):
            return self.visit_greater_than(term, p.value)
        if isinstance(p, GreaterThanOrEqual):
            return self.visit_greater_than_or_equal(term, p.value)
        if isinstance(p, EqualTo):
            return self.visit_equal(term, p.value)
        if isinstance(p, NotEqualTo):
            return self.visit_not_equal(term, p.value)
        if isinstance(p, StartsWith):
            return self.visit_starts_with(term, p.value)
        if isinstance(p, NotStartsWith):
            return self.visit_not_starts_with(term, p.value)
        if isinstance(p, In):
            return self.visit_in(term, p.values)
        if isinstance(p, NotIn):
            return self.visit_not_in(term, p.values)
        raise TypeError(f"unknown predicate {p!r}")

    @abstractmethod
    def visit_is_null(self, term: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_null(self, term: BoundReference) -> T: ...

    @abstractmethod
    def visit_is_nan(self, term: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_nan(self, term: BoundReference) -> T: ...

    @abstractmethod
    def visit_less_than(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_greater_than(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_equal(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_not_equal(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_starts_with(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_not_starts_with(self, term: BoundReference, value: object) -> T: ...

    @abstractmethod
    def visit_in(self, term: BoundReference, values: frozenset[object]) -> T: ...

    @abstractmethod
    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> T: ...


class _RewriteNot(BooleanExpressionVisitor[BooleanExpression]):
    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        return child_result.negate()

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        return predicate


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """An equivalent expression without Not nodes (each Not is folded into its child via ``negate``).

    Children are rewritten first, so ``negate`` only ever sees Not-free subtrees.
    """
    return visit(expr, _RewriteNot())
