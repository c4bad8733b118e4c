"""Transactions: stage several changes, commit them as one new metadata version, retry lost races.

A transaction keeps its changes as actions (:class:`PendingUpdate`). Each is applied once when staged (so
errors surface early and later changes see earlier ones) and replayed on the refreshed metadata whenever
the commit loses a race (:class:`CommitFailedError`), with exponential backoff from the table's
``commit.retry.*`` properties. After the final failure every action deletes the files it wrote; after an
unknown outcome (:class:`CommitStateUnknownError`) nothing is deleted, since a commit that may have
succeeded can reference them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from floe.errors import CommitFailedError, CommitStateUnknownError, ValidationError
from floe.spec import properties as P
from floe.spec.metadata_builder import apply_updates
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import (
    RemoveProperties,
    SetProperties,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
    requirements_for_create,
    requirements_for_update,
    validate_requirements,
)
from floe.table.create import creation_updates, validate_writer_properties
from floe.table.manage import ManageSnapshots
from floe.table.operations import TableOperations
from floe.table.pending import PendingUpdate, StaticUpdates
from floe.table.producers import (
    DeleteFiles,
    FastAppend,
    MergeAppend,
    Overwrite,
    ReplacePartitions,
    RewriteFiles,
    RowDelta,
)
from floe.table.retry import RetryPolicy, run_with_retries
from floe.table.sort_order_update import ReplaceSortOrder
from floe.table.update_schema import UpdateSchema
from floe.table.update_spec import UpdateSpec

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table

__all__ = ["Transaction", "apply_commit"]


def apply_commit(
    base: TableMetadata,
    requirements: list[TableRequirement],
    updates: list[TableUpdate],
    *,
    name: str,
    base_location: str | None = None,
) -> TableMetadata:
    """Check ``requirements`` against ``base`` and apply ``updates`` (the REST commit shape).

    Raises:
        CommitFailedError: a requirement does not hold (the message names the table and requirement).
    """
    try:
        validate_requirements(base, requirements)
    except CommitFailedError as e:
        raise CommitFailedError(f"Commit to table {name} rejected: {e}") from e
    return apply_updates(base, updates, previous_metadata_location=base_location)


class Transaction:
    """Changes to one table that commit together or not at all."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._ops: TableOperations = table.ops
        self._base: TableMetadata | None = table.metadata
        self._base_location: str | None = table.metadata_location
        self._initial: TableMetadata | None = None  # the new table's metadata for a create transaction
        self._current: TableMetadata = table.metadata
        self._actions: list[PendingUpdate] = []
        self._updates: list[TableUpdate] = []  # what the staged actions produced on the first base
        self._done = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """``with table.transaction() as tx:`` commits on leaving the block, as PyIceberg's does; an
        exception inside the block commits nothing and deletes what the staged actions wrote."""
        if self._done:
            return
        if exc_type is None:
            self.commit_transaction()
        else:
            self.settle(committed=False)

    @classmethod
    def create(cls, table: Table) -> Transaction:
        """A transaction that creates ``table`` (a handle on the new table's metadata, not yet stored)."""
        txn = cls(table)
        txn._base, txn._base_location, txn._initial = None, None, table.metadata
        return txn

    # -- reading inside the transaction ---------------------------------------------------------
    @property
    def table_metadata(self) -> TableMetadata:
        """The metadata with every staged change applied."""
        return self._current

    @property
    def table(self) -> Table:
        """The table this transaction changes (its state before the transaction)."""
        return self._table

    # -- staging --------------------------------------------------------------------------------
    def _stage(self, action: PendingUpdate) -> Transaction:
        if self._done:
            raise ValidationError(f"Transaction on table {self._table.name()} is already committed")
        updates = action._apply(self._current)
        self._current = apply_updates(self._current, updates)
        self._updates += updates
        self._actions.append(action)
        return self

    def _stage_updates(self, updates: list[TableUpdate], *, description: str = "") -> Transaction:
        return self._stage(StaticUpdates(self._table, updates, transaction=self))

    def set_properties(self, properties: Mapping[str, str] | None = None, **kwargs: str) -> Transaction:
        """Set table properties (``properties`` and keyword arguments are merged).

        ``format-version`` is not stored: as in Iceberg on Spark, it upgrades the table.

        Raises:
            ValidationError: ``format-version`` is not an integer or would downgrade the table.
            UnsupportedError: an unknown format version.
        """
        updates = {**dict(properties or {}), **kwargs}
        staged: list[TableUpdate] = []
        raw = updates.pop(P.FORMAT_VERSION, None)
        if raw is not None:
            try:
                version = int(str(raw).strip())
            except ValueError:
                raise ValidationError(f"Table {self._table.name()}: format-version must be an integer, got {raw!r}") from None
            staged.append(UpgradeFormatVersion(version))
        if updates:
            merged = {**self._current.properties, **updates}
            validate_writer_properties(self._current.schema(), merged, self._table.name(), changed=updates)
            staged.append(SetProperties(updates))
        return self._stage_updates(staged) if staged else self

    def remove_properties(self, *keys: str) -> Transaction:
        """Remove table properties (missing keys are ignored)."""
        return self._stage_updates([RemoveProperties(tuple(keys))])

    def _view(self) -> Table:
        """A table handle reflecting the staged changes, for builders created inside the transaction."""
        return self._table._with_metadata(self._current)

    def update_schema(
        self, *, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """Schema evolution inside this transaction (see :class:`floe.table.update_schema.UpdateSchema`)."""
        return UpdateSchema(
            self._view(),
            self,
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """Partition evolution inside this transaction."""
        return UpdateSpec(self._view(), self, case_sensitive=case_sensitive)

    def replace_sort_order(self, *, case_sensitive: bool = True) -> ReplaceSortOrder:
        """Replace the default sort order inside this transaction."""
        return ReplaceSortOrder(self._view(), self, case_sensitive=case_sensitive)

    def update_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """PyIceberg's spelling of :meth:`replace_sort_order`."""
        return self.replace_sort_order(case_sensitive=case_sensitive)

    def upgrade_table_version(self, format_version: int) -> Transaction:
        """Upgrade the table's format version (PyIceberg's spelling of ``set_properties(format-version=...)``).

        Raises:
            ValidationError: a downgrade. UnsupportedError: an unknown format version.
        """
        return self.set_properties({P.FORMAT_VERSION: str(format_version)})

    def manage_snapshots(self) -> ManageSnapshots:
        """Branches, tags, rollback and cherry-pick inside this transaction."""
        return ManageSnapshots(self._view(), self)

    def new_append(self, *, branch: str | None = None) -> MergeAppend:
        """Append files, merging manifests per ``commit.manifest.*`` properties."""
        return MergeAppend(self._view(), self, branch=branch)

    def new_fast_append(self, *, branch: str | None = None) -> FastAppend:
        """Append files with a new manifest, never rewriting existing ones."""
        return FastAppend(self._view(), self, branch=branch)

    def new_overwrite(self, *, branch: str | None = None) -> Overwrite:
        """Delete files by filter or by name and add files (``overwrite`` snapshots)."""
        return Overwrite(self._view(), self, branch=branch)

    def new_replace_partitions(self, *, branch: str | None = None) -> ReplacePartitions:
        """Replace every partition the added files touch (dynamic overwrite)."""
        return ReplacePartitions(self._view(), self, branch=branch)

    def new_delete(self, *, branch: str | None = None) -> DeleteFiles:
        """Delete whole data files by filter or name."""
        return DeleteFiles(self._view(), self, branch=branch)

    def new_rewrite(self, *, branch: str | None = None) -> RewriteFiles:
        """Replace files with files holding the same rows (compaction)."""
        return RewriteFiles(self._view(), self, branch=branch)

    def new_row_delta(self, *, branch: str | None = None) -> RowDelta:
        """Add data files and delete files together (merge-on-read)."""
        return RowDelta(self._view(), self, branch=branch)

    # -- committing ------------------------------------------------------------------------------
    def _replay(self, base: TableMetadata) -> list[TableUpdate]:
        """Every action applied again on ``base``: the updates of this attempt."""
        current, updates = base, []
        for action in self._actions:
            step = action._apply(current)
            current = apply_updates(current, step)
            updates += step
        return updates

    def staged_commit(self) -> tuple[tuple[TableRequirement, ...], tuple[TableUpdate, ...]]:
        """The staged changes as a commit given as data: requirements on this transaction's base, updates.

        Used by multi-table commits (:meth:`floe.catalog.rest.RestCatalog.commit_transactions`), which
        send several of these at once and are not replayed on conflict.

        Raises:
            ValidationError: the transaction is committed already, or creates its table.
        """
        if self._done or self._base is None:
            raise ValidationError(
                f"Transaction on table {self._table.name()} is committed or creates its table; it cannot join a "
                "multi-table commit"
            )
        return requirements_for_update(self._base, self._updates), tuple(self._updates)

    def settle(self, *, committed: bool) -> None:
        """End a transaction committed by someone else (a multi-table commit): delete what its actions
        wrote unless ``committed``, and refuse further use. Never call it after an unknown outcome."""
        self._done = True
        for action in self._actions:
            action._cleanup(committed=committed)

    def commit_transaction(self) -> Table:
        """Write one new metadata version with every staged change.

        Returns:
            The table, refreshed to the committed metadata.

        Raises:
            CommitFailedError: lost every retry (files this transaction wrote were deleted).
            CommitConflictError: a concurrent commit conflicts with a staged change.
            CommitStateUnknownError: the outcome is unknown; nothing was deleted.
            TableAlreadyExistsError: a create transaction found the table created meanwhile.
        """
        if self._done:
            raise ValidationError(f"Transaction on table {self._table.name()} is already committed")
        self._done = True

        def attempt(n: int) -> tuple[TableMetadata, str]:
            if self._initial is not None:  # creating: the staged metadata is the whole table
                staged = self._updates if n == 0 else self._replay(self._initial)
                new = self._current if n == 0 else apply_updates(self._initial, staged)
                created = [*creation_updates(self._initial), *staged]
                return self._ops.commit_changes(None, None, requirements_for_create(), created, new)
            if n == 0:
                base, base_location, updates = self._base, self._base_location, self._updates
            else:
                base, base_location = self._ops.load()
                updates = self._replay(base)
            assert base is not None and base_location is not None
            if not updates:
                return base, base_location  # nothing to change: no new metadata version
            # One build from the base records the replaced file in metadata-log (spec "Table Metadata").
            new = apply_updates(base, updates, previous_metadata_location=base_location)
            # The commit as data (REST's shape): each change asserts the part of the base it depends on.
            requirements = requirements_for_update(base, updates)
            return self._ops.commit_changes(base, base_location, requirements, updates, new)

        def policy() -> RetryPolicy:
            return RetryPolicy.from_properties(self._current.properties)

        try:
            new, location = run_with_retries(attempt, policy)
        except CommitStateUnknownError:
            raise
        except BaseException:
            for action in self._actions:
                action._cleanup(committed=False)
            raise
        for action in self._actions:
            action._cleanup(committed=True)
        self._table._refresh_from(new, location)
        return self._table
