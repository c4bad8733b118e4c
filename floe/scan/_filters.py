"""Thin glue between the planner and floe.expressions: builds the per-spec pruning callables.

Kept apart so the planner reads as the algorithm (manifests -> entries -> tasks) and this module as the
single place that knows which evaluator implements each pruning level.
"""

from __future__ import annotations

from collections.abc import Callable

from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.expressions.binding import bind
from floe.expressions.manifest_evaluator import ManifestEvaluator
from floe.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from floe.expressions.parser import parse_filter
from floe.expressions.residual import PartitionEvaluator, ResidualEvaluator
from floe.spec.manifest import ManifestFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = [
    "bind_filter",
    "manifest_evaluator",
    "metrics_evaluator",
    "partition_evaluator",
    "residual_evaluator",
    "to_expression",
]


def to_expression(row_filter: BooleanExpression | str | None) -> BooleanExpression:
    """An unbound expression from a filter string, an expression or None (everything)."""
    if row_filter is None:
        return AlwaysTrue()
    if isinstance(row_filter, str):
        return parse_filter(row_filter)
    return row_filter


def bind_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool) -> BooleanExpression:
    """``expr`` bound to ``schema`` (constants folded, so AlwaysTrue/AlwaysFalse come back as such)."""
    return bind(schema, expr, case_sensitive)


def manifest_evaluator(
    spec: PartitionSpec,
    schema: Schema,
    expr: BooleanExpression,
    case_sensitive: bool,
    *,
    partition_type: StructType | None = None,
) -> Callable[[ManifestFile], bool]:
    """Whether a manifest's partition summaries admit rows matching ``expr``.

    ``partition_type`` (``TableMetadata.partition_type(spec_id)``) types specs whose source column was
    dropped; without it the type comes from ``schema``.
    """
    ev = ManifestEvaluator(spec, schema, expr, case_sensitive=case_sensitive, partition_type=partition_type)
    return ev.eval


def partition_evaluator(
    spec: PartitionSpec,
    schema: Schema,
    expr: BooleanExpression,
    case_sensitive: bool,
    *,
    partition_type: StructType | None = None,
) -> Callable[[tuple[object, ...]], bool]:
    """Whether a partition tuple of ``spec`` may hold rows matching ``expr`` (inclusive projection)."""
    ev = PartitionEvaluator(spec, schema, expr, case_sensitive=case_sensitive, partition_type=partition_type)
    if isinstance(ev.partition_filter, AlwaysTrue):
        return lambda partition: True
    return ev.eval


def metrics_evaluator(schema: Schema, expr: BooleanExpression, case_sensitive: bool) -> InclusiveMetricsEvaluator:
    """Whether a file's column metrics admit rows matching ``expr`` (``eval``), and what of that the manifest
    decoder tests itself (``prefilter``)."""
    return InclusiveMetricsEvaluator(schema, expr, case_sensitive=case_sensitive)


def residual_evaluator(
    spec: PartitionSpec,
    schema: Schema,
    expr: BooleanExpression,
    case_sensitive: bool,
    *,
    partition_type: StructType | None = None,
) -> Callable[[tuple[object, ...]], BooleanExpression]:
    """The part of ``expr`` still to evaluate on the rows of a file with a given partition tuple."""
    ev = ResidualEvaluator(spec, schema, expr, case_sensitive=case_sensitive, partition_type=partition_type)
    return ev.residual_for
