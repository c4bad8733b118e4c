"""A pending change to a table: recorded as an action, replayable on a fresh base after a lost race.

Every change API (snapshot producers, schema and partition evolution, snapshot management, properties)
is a :class:`PendingUpdate`. ``_apply(base)`` derives the metadata updates from a base; a transaction calls
it again on the refreshed metadata when a commit fails with :class:`CommitFailedError`, so the intent, not
a stale result, is what gets retried (iceberg-rust's actions, Java's ``PendingUpdate.apply``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import TableUpdate

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["PendingUpdate", "StaticUpdates"]


class PendingUpdate(ABC):
    """One change, committed alone (``commit()``) or as part of a :class:`Transaction`."""

    def __init__(self, table: Table, transaction: Transaction | None = None) -> None:
        self._table = table
        self._transaction = transaction
        self._committed = False

    @abstractmethod
    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        """The metadata updates this change makes on ``base`` (called again for every retry).

        Raises:
            CommitConflictError: the change cannot be made on this base (a concurrent change conflicts).
            ValidationError: the change is invalid.
        """

    def _cleanup(self, *, committed: bool) -> None:
        """Delete files written by attempts that were not committed (all of them when ``committed`` is False).

        The default writes no files, so there is nothing to remove.
        """
        return

    def commit(self) -> None:
        """Commit this change (or stage it in its transaction, which commits later).

        Raises:
            CommitFailedError: retries were exhausted; CommitConflictError: a concurrent change conflicts.
            CommitStateUnknownError: the outcome is unknown (no files were deleted).
        """
        if self._committed:
            return
        self._committed = True
        if self._transaction is not None:
            self._transaction._stage(self)
        else:
            self._table.transaction()._stage(self).commit_transaction()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()


class StaticUpdates(PendingUpdate):
    """A fixed list of updates (set/remove properties, replace-table metadata); replays unchanged."""

    def __init__(
        self, table: Table, updates: list[TableUpdate], *, transaction: Transaction | None = None
    ) -> None:
        super().__init__(table, transaction)
        self._updates = list(updates)

    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        return list(self._updates)
