"""Replace a table's default sort order (Java ``ReplaceSortOrder``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.spec.sort_order import NullOrder, SortDirection, SortOrder, SortOrderBuilder
from floe.spec.table_metadata import TableMetadata
from floe.spec.transforms import Transform
from floe.spec.updates import LAST_ADDED, AddSortOrder, SetDefaultSortOrder, TableUpdate
from floe.table.pending import PendingUpdate

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["ReplaceSortOrder"]


class ReplaceSortOrder(PendingUpdate):
    """Chain ``asc``/``desc`` keys (an empty chain means unsorted), then ``commit()``."""

    def __init__(
        self, table: Table, transaction: Transaction | None = None, *, case_sensitive: bool = True
    ) -> None:
        super().__init__(table, transaction)
        self._case_sensitive = case_sensitive
        self._keys: list[tuple[str, Transform | None, SortDirection, NullOrder | None]] = []

    def asc(
        self, column: str, transform: Transform | None = None, null_order: NullOrder = NullOrder.NULLS_FIRST
    ) -> Self:
        """Sort ascending by ``transform(column)`` (identity by default)."""
        self._keys.append((column, transform, SortDirection.ASC, null_order))
        return self

    def desc(
        self, column: str, transform: Transform | None = None, null_order: NullOrder = NullOrder.NULLS_LAST
    ) -> Self:
        """Sort descending by ``transform(column)``."""
        self._keys.append((column, transform, SortDirection.DESC, null_order))
        return self

    def apply(self, base: TableMetadata | None = None) -> SortOrder:
        """The order these keys produce against the current schema."""
        md = base or self._table.metadata
        builder = SortOrderBuilder(
            md.schema(),
            order_id=max(o.order_id for o in md.sort_orders) + 1,
            case_sensitive=self._case_sensitive,
        )
        for column, transform, direction, nulls in self._keys:
            builder.add(column, transform, direction, nulls)
        return builder.build()

    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        order = self.apply(base)
        if order.same_order(base.sort_order()):
            return []
        for existing in base.sort_orders:
            if existing.same_order(order):
                return [SetDefaultSortOrder(existing.order_id)]
        return [AddSortOrder(order), SetDefaultSortOrder(LAST_ADDED)]
