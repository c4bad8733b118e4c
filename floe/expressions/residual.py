"""Partition-level evaluation: does a partition tuple match a row filter, and what filter is left to
apply to the rows of a file in that partition (the residual)?"""

from __future__ import annotations

from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression, and_, or_
from floe.expressions.binding import bind
from floe.expressions.evaluator import evaluate
from floe.expressions.predicates import Predicate
from floe.expressions.projection import bound_inclusive_projection, project_predicate
from floe.expressions.terms import Row
from floe.expressions.visitors import BooleanExpressionVisitor, rewrite_not, visit
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = ["PartitionEvaluator", "ResidualEvaluator"]


class PartitionEvaluator:
    """Does a partition tuple match the inclusive projection of a row filter?

    False means no row of that partition can match the filter.
    """

    __slots__ = ("partition_filter",)

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
        partition_type: StructType | None = None,
    ) -> None:
        """Project ``row_filter`` onto ``spec`` and bind it to the partition type.

        Args:
            spec: the partition spec of the tuples to evaluate.
            schema: the schema ``row_filter`` binds to.
            row_filter: the row filter.
            case_sensitive: match column names case-sensitively.
            partition_type: ``spec``'s partition type; default ``spec.partition_type(schema)`` (see
                ``TableMetadata.partition_type`` for specs whose source column was dropped).

        Raises:
            ValidationError: the filter does not bind to ``schema``.
        """
        self.partition_filter = bound_inclusive_projection(
            schema, spec, row_filter, case_sensitive=case_sensitive, partition_type=partition_type
        )

    def eval(self, partition: Row) -> bool:
        """Whether ``partition`` (a tuple in spec field order, or a mapping by field id/name) may match."""
        return evaluate(self.partition_filter, partition)


class _PredicateProjections:
    """Per predicate: its strict and inclusive projections bound to the partition type."""

    __slots__ = ("inclusive", "strict")

    def __init__(self, strict: BooleanExpression, inclusive: BooleanExpression) -> None:
        self.strict = strict
        self.inclusive = inclusive


class _Residual(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, projections: dict[Predicate, _PredicateProjections], partition: Row) -> None:
        self.projections = projections
        self.partition = partition

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        raise ValueError("residuals require an expression without Not")

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        p = self.projections.get(predicate)
        if p is None:
            return predicate
        if evaluate(p.strict, self.partition):
            return AlwaysTrue()  # every row of this partition satisfies the predicate
        if not evaluate(p.inclusive, self.partition):
            return AlwaysFalse()  # no row of this partition can satisfy it
        return predicate


class ResidualEvaluator:
    """Computes, per partition tuple, the part of a row filter the partition does not already decide."""

    __slots__ = ("_projections", "expr")

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
        partition_type: StructType | None = None,
    ) -> None:
        """Bind ``row_filter`` to ``schema`` and project each predicate onto ``spec`` once.

        Args:
            spec: the partition spec of the tuples to evaluate.
            schema: the schema ``row_filter`` binds to.
            row_filter: the row filter.
            case_sensitive: match column names case-sensitively.
            partition_type: ``spec``'s partition type; default ``spec.partition_type(schema)`` (see
                ``TableMetadata.partition_type`` for specs whose source column was dropped).

        Raises:
            ValidationError: the filter does not bind to ``schema``.
        """
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        if partition_type is not None:
            part_type = partition_type
        else:
            part_type = spec.partition_type(schema) if spec.fields else StructType()
        self._projections: dict[Predicate, _PredicateProjections] = {}
        for pred in _predicates(self.expr):
            fields = [f for f in spec.fields if f.source_ids == (pred.ref.field_id,)]
            if not fields:
                continue
            strict = or_(*(self._project(pred, f, part_type, strict=True) for f in fields))
            inclusive = and_(*(self._project(pred, f, part_type, strict=False) for f in fields))
            self._projections[pred] = _PredicateProjections(strict, inclusive)

    @staticmethod
    def _project(
        pred: Predicate, field: PartitionField, part_type: StructType, *, strict: bool
    ) -> BooleanExpression:
        projected = project_predicate(pred, field.transform, pred.ref.field_type, field.name, strict=strict)
        if projected is None:
            return AlwaysFalse() if strict else AlwaysTrue()
        return bind(part_type, projected, True)

    def residual_for(self, partition: Row) -> BooleanExpression:
        """The bound row filter still to apply to rows of a file with this partition tuple.

        AlwaysTrue: the partition guarantees every row matches; AlwaysFalse: no row can match.
        """
        if not self._projections:
            return self.expr
        return visit(self.expr, _Residual(self._projections, partition))


class _Collect(BooleanExpressionVisitor[None]):
    def __init__(self) -> None:
        self.found: list[Predicate] = []

    def visit_true(self) -> None:
        return None

    def visit_false(self) -> None:
        return None

    def visit_not(self, child_result: None) -> None:
        return None

    def visit_and(self, left_result: None, right_result: None) -> None:
        return None

    def visit_or(self, left_result: None, right_result: None) -> None:
        return None

    def visit_predicate(self, predicate: Predicate) -> None:
        self.found.append(predicate)


def _predicates(expr: BooleanExpression) -> list[Predicate]:
    collector = _Collect()
    visit(expr, collector)
    return collector.found
