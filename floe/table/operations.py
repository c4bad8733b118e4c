"""The contract between a table and the catalog that stores it: read the current metadata, swap in a new one.

Every catalog kind implements :class:`TableOperations` (Java's ``TableOperations``): the SQL catalog swaps a
row with compare-and-set, the Hadoop catalog exclusively creates ``v<N+1>.metadata.json``. Transactions and
snapshot producers only ever talk to this interface, so commit logic is written once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from floe.errors import UnsupportedError
from floe.io.fileio import FileIO
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import TableRequirement, TableUpdate
from floe.table.identifiers import Identifier, identifier_to_string

__all__ = ["ReadOnlyTableOperations", "TableOperations"]


class TableOperations(ABC):
    """Load and commit one table's metadata."""

    def __init__(self, identifier: Identifier, io: FileIO) -> None:
        self.identifier = identifier
        self.io = io

    @property
    def name(self) -> str:
        """The table's name for messages (``ns.table`` or its location)."""
        return identifier_to_string(self.identifier)

    @abstractmethod
    def load(self) -> tuple[TableMetadata, str]:
        """The current metadata and the location of its file.

        Raises:
            NoSuchTableError: the table does not exist.
        """

    @abstractmethod
    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        """Atomically replace ``base`` (None: create the table) by ``new``; returns the new metadata location.

        Raises:
            CommitFailedError: the table changed since ``base`` was read; nothing was changed and the
                metadata file this call wrote was removed. Retry after refreshing.
            TableAlreadyExistsError: creating (``base`` is None) a table that exists.
            CommitStateUnknownError: the outcome is unknown; the caller must not delete anything the new
                metadata references.
        """

    def commit_changes(
        self,
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
        new: TableMetadata,
    ) -> tuple[TableMetadata, str]:
        """Commit a change given both as data (``requirements`` + ``updates`` on ``base``) and as its result.

        Catalogs that write metadata files themselves swap in ``new`` with :meth:`commit` (their
        compare-and-set on the metadata location is at least as strict as the requirements); the REST
        catalog sends the requirements and updates and returns the metadata the server stored. When
        ``base`` is None the updates create the table from nothing.

        Returns:
            The committed metadata and the location of its file.

        Raises:
            The errors of :meth:`commit`.
        """
        return new, self.commit(base, base_location, new)

    def reload_location(self) -> str | None:
        """The current metadata location, or None when it cannot be read (used to resolve unknown outcomes)."""
        try:
            return self.load()[1]
        except Exception:  # noqa: BLE001 - any failure means "still unknown"; the caller reports it
            return None


class ReadOnlyTableOperations(TableOperations):
    """A table opened from one metadata file: readable, never committed to."""

    def __init__(self, identifier: Identifier, io: FileIO, metadata: TableMetadata, location: str) -> None:
        super().__init__(identifier, io)
        self._metadata = metadata
        self._location = location

    def load(self) -> tuple[TableMetadata, str]:
        return self._metadata, self._location

    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        raise UnsupportedError(
            f"Table {self.name} was opened from the metadata file {self._location} without a catalog and is "
            "read-only; load it through a catalog (or a version-hinted Hadoop folder) to commit"
        )
