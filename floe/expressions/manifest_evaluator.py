"""Manifest pruning: may a manifest hold files matching a row filter, judged by its partition summaries?

The row filter is projected inclusively onto the manifest's partition spec, then each projected
predicate is checked against the per-partition-field summary (contains_null, contains_nan, lower and
upper bound). Any doubt answers "may match".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.expressions.projection import bound_inclusive_projection
from floe.expressions.terms import BoundReference
from floe.expressions.visitors import BoundPredicateVisitor, visit
from floe.serde.single_value import from_bytes
from floe.spec.manifest import ManifestFile, PartitionFieldSummary
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = ["ManifestEvaluator"]

# Beyond this many literals, checking each against the bounds costs more than it saves.
_IN_LIMIT = 200


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


class _SummaryVisitor(BoundPredicateVisitor[bool]):
    def __init__(self, summaries: Sequence[PartitionFieldSummary]) -> None:
        self.summaries = summaries

    def _summary(self, term: BoundReference) -> PartitionFieldSummary:
        return self.summaries[term.positions[0]]

    def _bounds(self, term: BoundReference) -> tuple[object, object]:
        s = self._summary(term)
        ftype = term.field_type
        lower = None if s.lower_bound is None else from_bytes(ftype, s.lower_bound)
        upper = None if s.upper_bound is None else from_bytes(ftype, s.upper_bound)
        # a NaN bound (written by old writers) orders nothing
        return (None if _is_nan(lower) else lower), (None if _is_nan(upper) else upper)

    def _all_null(self, term: BoundReference) -> bool:
        s = self._summary(term)
        return s.contains_null and s.lower_bound is None and s.contains_nan is not True

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child_result: bool) -> bool:
        raise ValueError("manifest evaluation requires an expression without Not")

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def visit_is_null(self, term: BoundReference) -> bool:
        return self._summary(term).contains_null

    def visit_not_null(self, term: BoundReference) -> bool:
        return not self._all_null(term)

    def visit_is_nan(self, term: BoundReference) -> bool:
        return self._summary(term).contains_nan is not False

    def visit_not_nan(self, term: BoundReference) -> bool:
        s = self._summary(term)
        # only NaN values: NaN seen, no nulls, and no non-NaN value gave a bound
        return not (s.contains_nan is True and not s.contains_null and s.lower_bound is None)

    def visit_less_than(self, term: BoundReference, value: object) -> bool:
        lower, _ = self._bounds(term)
        if self._summary(term).lower_bound is None:
            return False
        return lower is None or lower < value  # type: ignore[operator]

    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> bool:
        lower, _ = self._bounds(term)
        if self._summary(term).lower_bound is None:
            return False
        return lower is None or lower <= value  # type: ignore[operator]

    def visit_greater_than(self, term: BoundReference, value: object) -> bool:
        _, upper = self._bounds(term)
        if self._summary(term).upper_bound is None:
            return False
        return upper is None or upper > value  # type: ignore[operator]

    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> bool:
        _, upper = self._bounds(term)
        if self._summary(term).upper_bound is None:
            return False
        return upper is None or upper >= value  # type: ignore[operator]

    def visit_equal(self, term: BoundReference, value: object) -> bool:
        if self._summary(term).lower_bound is None:
            return False
        lower, upper = self._bounds(term)
        if lower is not None and value < lower:  # type: ignore[operator]
            return False
        return not (upper is not None and value > upper)  # type: ignore[operator]

    def visit_not_equal(self, term: BoundReference, value: object) -> bool:
        return True

    def visit_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        if self._summary(term).lower_bound is None:
            return False
        if len(values) > _IN_LIMIT:
            return True
        lower, upper = self._bounds(term)
        return any(
            (lower is None or v >= lower) and (upper is None or v <= upper)  # type: ignore[operator]
            for v in values
        )

    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        return True

    def visit_starts_with(self, term: BoundReference, value: object) -> bool:
        s = self._summary(term)
        if s.lower_bound is None or s.upper_bound is None:
            return False
        lower, upper = self._bounds(term)
        assert isinstance(value, str) and isinstance(lower, str) and isinstance(upper, str)
        n = len(value)
        # every value lies in [lower, upper]; compare prefixes of the prefix's length
        return lower[:n] <= value <= upper[:n]

    def visit_not_starts_with(self, term: BoundReference, value: object) -> bool:
        s = self._summary(term)
        if s.contains_null or s.lower_bound is None or s.upper_bound is None:
            return True
        lower, upper = self._bounds(term)
        assert isinstance(value, str) and isinstance(lower, str) and isinstance(upper, str)
        # all values lie between two strings that both start with the prefix -> all start with it
        return not (lower.startswith(value) and upper.startswith(value))


class ManifestEvaluator:
    """Decides from partition summaries whether a manifest may hold files matching a row filter."""

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
        """Project and bind ``row_filter`` for manifests written with ``spec``.

        Args:
            spec: the manifests' partition spec (any of the table's specs).
            schema: the schema ``row_filter`` binds to (the scan's schema).
            row_filter: the row filter.
            case_sensitive: match column names case-sensitively.
            partition_type: ``spec``'s partition type; default ``spec.partition_type(schema)``. Pass
                ``TableMetadata.partition_type(spec.spec_id)`` for old specs whose source column was
                dropped (that call resolves it from the schema history; this default raises).

        Raises:
            ValidationError: the filter does not bind to ``schema``.
        """
        self.partition_filter = bound_inclusive_projection(
            schema, spec, row_filter, case_sensitive=case_sensitive, partition_type=partition_type
        )

    def eval(self, manifest: ManifestFile) -> bool:
        """True when ``manifest`` may contain matching files (False only when it certainly does not)."""
        if isinstance(self.partition_filter, AlwaysTrue) or not manifest.partitions:
            return True
        return visit(self.partition_filter, _SummaryVisitor(manifest.partitions))
