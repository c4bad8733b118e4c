"""A row filter as the predicates a ManifestGroup prunes with (spec "Scan Planning").

Three levels, each built once per partition spec id and reused for every manifest of that spec:
1. manifests, by their partition field summaries;
2. entries, by partition tuple: the filter's inclusive projection onto the entry's own spec (so files
   written under older specs prune too), evaluated once per distinct tuple and cached;
3. entries, by column metrics (lower/upper bounds, null and NaN counts).
Residuals (what a reader still applies to a file's rows) come from the same per-spec state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from floe.errors import UnsupportedError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or
from floe.expressions.predicates import Predicate
from floe.io.manifest_group import ManifestGroup
from floe.scan import _filters
from floe.spec.manifest import DataFile, ManifestFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = ["RowFilterPruning", "referenced_field_ids"]

_T = TypeVar("_T")
Partition = tuple[object, ...]


@dataclass(slots=True)
class _SpecFilters:
    """Per-spec pruning state: manifest evaluator, partition evaluator with cache, residuals."""

    spec: PartitionSpec
    manifest_ok: Callable[[ManifestFile], bool]
    partition_ok: Callable[[Partition], bool]
    residual_for: Callable[[Partition], BooleanExpression]


class RowFilterPruning:
    """The pruning predicates of one row filter over a table's partition specs.

    Args:
        schema: the schema the row filter binds to.
        specs_by_id: every partition spec of the table.
        row_filter: an unbound filter expression.
        case_sensitive: whether column names in the filter match case-sensitively.
        partition_types: partition type per spec id (``TableMetadata.partition_type``), so specs whose
            source column was dropped still prune; specs left out are typed from ``schema``.
        table_name: names the table in errors.
    """

    def __init__(
        self,
        *,
        schema: Schema,
        specs_by_id: Mapping[int, PartitionSpec],
        row_filter: BooleanExpression,
        case_sensitive: bool = True,
        partition_types: Mapping[int, StructType] | None = None,
        table_name: str = "",
    ) -> None:
        self._schema = schema
        self._specs = specs_by_id
        self._filter = row_filter
        self._case_sensitive = case_sensitive
        self._partition_types = dict(partition_types or {})
        self._table = table_name
        self.bound = _filters.bind_filter(schema, row_filter, case_sensitive)
        self.trivial = isinstance(self.bound, AlwaysTrue)
        self._never = isinstance(self.bound, AlwaysFalse)
        metrics = None if self.trivial else _filters.metrics_evaluator(schema, row_filter, case_sensitive)
        self.file_filter: Callable[[DataFile], bool] | None = None if metrics is None else metrics.eval
        self._metrics_prefilter = None if metrics is None else metrics.prefilter
        self._by_spec: dict[int, _SpecFilters] = {}

    def _for_spec(self, spec_id: int) -> _SpecFilters:
        got = self._by_spec.get(spec_id)
        if got is not None:
            return got
        spec = self._specs.get(spec_id)
        if spec is None:
            raise UnsupportedError(f"Table {self._table}: manifest uses unknown partition spec id {spec_id}")
        if self.trivial:
            f = _SpecFilters(spec, lambda m: True, lambda p: True, lambda p: AlwaysTrue())
        else:
            args = (spec, self._schema, self._filter, self._case_sensitive)
            ptype = self._partition_types.get(spec_id)
            f = _SpecFilters(
                spec,
                _filters.manifest_evaluator(*args, partition_type=ptype),
                _cached(_filters.partition_evaluator(*args, partition_type=ptype)),
                _cached(_filters.residual_evaluator(*args, partition_type=ptype)),
            )
        self._by_spec[spec_id] = f
        return f

    def manifest_may_match(self, m: ManifestFile) -> bool:
        """Whether the manifest's partition summaries admit matching rows.

        Raises:
            UnsupportedError: the manifest's partition spec is not one of the table's.
        """
        return not self._never and self._for_spec(m.partition_spec_id).manifest_ok(m)

    def partition_filter(self, spec_id: int) -> Callable[[Partition], bool] | None:
        """Whether a partition tuple of this spec may hold matching rows (None: every tuple may)."""
        return None if self.trivial else self._for_spec(spec_id).partition_ok

    def residual_for(self, spec_id: int) -> Callable[[Partition], BooleanExpression]:
        """The filter still to apply to rows of a file of this spec, by partition tuple."""
        return self._for_spec(spec_id).residual_for

    def prune_entries(self, group: ManifestGroup) -> ManifestGroup:
        """``group`` keeping only entries whose partition tuple and column metrics may match."""
        if self.trivial:
            return group
        group = group.filter_partitions(self.partition_filter)
        if self.file_filter is None:
            return group
        return group.filter_files(self.file_filter).prefilter_metrics(self._metrics_prefilter)


def _cached(fn: Callable[[Partition], _T]) -> Callable[[Partition], _T]:
    """Memoise a function of a partition tuple (tables have far fewer partitions than files)."""
    cache: dict[Partition, _T] = {}

    def lookup(p: Partition) -> _T:
        try:
            return cache[p]
        except KeyError:
            v = cache[p] = fn(p)
            return v
        except TypeError:  # an unhashable partition value: evaluate directly
            return fn(p)

    return lookup


def referenced_field_ids(bound: BooleanExpression) -> set[int]:
    """Field ids the bound expression reads (every level of each referenced column's path)."""
    out: set[int] = set()
    stack: list[BooleanExpression] = [bound]
    while stack:
        e = stack.pop()
        if isinstance(e, (And, Or)):
            stack.extend((e.left, e.right))
        elif isinstance(e, Not):
            stack.append(e.child)
        elif isinstance(e, Predicate) and e.is_bound:
            out.update(e.ref.path_ids)
    return out
