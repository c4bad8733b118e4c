"""The catalog contract: namespaces and tables, with the table lifecycle written once for every catalog kind.

The table layer (``floe.table.table`` and what it builds on: producers, expressions, scan planning) is
imported by the methods that hand out tables, not at module import, and the spec types appear only in
annotations: listing namespaces and tables (``floe tables``) or reading one table's metadata through
:meth:`Catalog.table_operations` (``floe history``) never pays for them.

A concrete catalog supplies storage primitives (namespace rows or folders, a :class:`TableOperations` per
table, entry removal and renaming); creating, replacing, loading, dropping and committing tables is shared
here so that every catalog behaves the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from floe.catalog.path_segments import check_identifier_segments
from floe.errors import (
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedError,
)
from floe.io.fileio import FileIO
from floe.io.locations import join
from floe.table.identifiers import (
    Identifier,
    IdentifierLike,
    Namespace,
    identifier_to_string,
    namespace_to_string,
    to_identifier,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from floe.spec.partitioning import PartitionSpec
    from floe.spec.schema import Schema
    from floe.spec.sort_order import SortOrder
    from floe.spec.table_metadata import TableMetadata
    from floe.spec.updates import TableRequirement, TableUpdate
    from floe.table.operations import TableOperations
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["TYPE", "URI", "WAREHOUSE", "Catalog", "PropertiesUpdateSummary"]

WAREHOUSE = "warehouse"
URI = "uri"
TYPE = "type"
LOCATION = "location"  # namespace property: where the namespace's tables go by default


@dataclass(frozen=True, slots=True)
class PropertiesUpdateSummary:
    """What :meth:`Catalog.update_namespace_properties` changed."""

    removed: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class Catalog(ABC):
    """A named catalog of namespaces and tables (method names follow PyIceberg where they fit)."""

    def __init__(self, name: str, **properties: str) -> None:
        self.name = name
        self.properties: dict[str, str] = {k: str(v) for k, v in properties.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # -- storage primitives every catalog supplies ---------------------------------------------------
    @abstractmethod
    def create_namespace(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace.

        Raises:
            ValidationError: a level cannot be a path segment (see :mod:`floe.catalog.path_segments`).
            NamespaceAlreadyExistsError: it exists.
        """

    @abstractmethod
    def list_namespaces(self, namespace: IdentifierLike = ()) -> list[Namespace]:
        """Namespaces directly under ``namespace`` (top-level ones by default).

        Raises:
            NoSuchNamespaceError: ``namespace`` is given and does not exist.
        """

    @abstractmethod
    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]:
        """A namespace's properties.

        Raises:
            NoSuchNamespaceError: it does not exist.
        """

    @abstractmethod
    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties.

        Raises:
            NoSuchNamespaceError: it does not exist.
        """

    @abstractmethod
    def drop_namespace(self, namespace: IdentifierLike) -> None:
        """Drop an empty namespace.

        Raises:
            NoSuchNamespaceError: it does not exist.
            NamespaceNotEmptyError: it still holds tables.
        """

    @abstractmethod
    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        """Identifiers of the tables in a namespace.

        Raises:
            NoSuchNamespaceError: it does not exist.
        """

    @abstractmethod
    def table_operations(self, identifier: Identifier) -> TableOperations:
        """The operations that load and commit one table (which may not exist yet)."""

    @abstractmethod
    def default_table_location(self, identifier: Identifier) -> str:
        """Where a new table goes when no location is given.

        Raises:
            ValidationError: a name that becomes a path segment cannot be one.
        """

    def table_location(self, identifier: Identifier, location: str | None) -> str:
        """The location a new table gets: ``location`` if given, else the default."""
        return (location or self.default_table_location(identifier)).rstrip("/")

    @abstractmethod
    def rename_table(self, from_identifier: IdentifierLike, to_identifier: IdentifierLike) -> Table:
        """Rename a table (its files stay where they are).

        Raises:
            ValidationError: a name of the target cannot be a path segment.
            NoSuchTableError: the source does not exist.
            TableAlreadyExistsError: the target exists.
            NoSuchNamespaceError: the target namespace does not exist.
        """

    @abstractmethod
    def _remove_table_entry(self, identifier: Identifier) -> None:
        """Forget a table (no files are deleted).

        Raises:
            NoSuchTableError: it does not exist.
        """

    @abstractmethod
    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        """Add an existing table by the location of one of its metadata files.

        Raises:
            ValidationError: a name cannot be a path segment.
            TableAlreadyExistsError: the identifier is taken.
            NoSuchNamespaceError: the namespace does not exist.
        """

    # -- shared behaviour ------------------------------------------------------------------------------
    def io(self, location: str | None = None) -> FileIO:
        """A FileIO configured with this catalog's properties."""
        return FileIO.for_location(location or self.properties.get(WAREHOUSE, "file:///"), self.properties)

    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        """Whether the namespace exists."""
        try:
            self.load_namespace_properties(namespace)
            return True
        except NoSuchNamespaceError:
            return False

    def create_namespace_if_not_exists(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace unless it exists."""
        try:
            self.create_namespace(namespace, properties)
        except NamespaceAlreadyExistsError:
            return

    def _check_namespace(self, namespace: Namespace) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(
                f"Namespace does not exist: {namespace_to_string(namespace)} (catalog {self.name})"
            )

    def load_table(self, identifier: IdentifierLike) -> Table:
        """Load a table.

        Raises:
            NoSuchTableError: it does not exist (the message names it).
        """
        from floe.table.table import Table

        ident = to_identifier(identifier)
        ops = self.table_operations(ident)
        metadata, location = ops.load()
        return Table(ident, metadata, location, ops, catalog=self)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        """Whether a table exists."""
        try:
            self.load_table(identifier)
            return True
        except NoSuchTableError:
            return False

    def create_table_transaction(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """A transaction that creates the table when committed (stage data, then commit once).

        Raises:
            ValidationError: a name cannot be a path segment (empty, ``.``, ``..``, ``/``, ``\\``, control
                characters), even with an explicit ``location``.
            TableAlreadyExistsError: the table exists (checked now and again at commit).
            NoSuchNamespaceError: the namespace does not exist.
        """
        from floe.table.create import create_table_metadata
        from floe.table.table import Table
        from floe.table.transaction import Transaction

        ident = to_identifier(identifier)
        # Every new name must be a safe path segment, whatever the location: engines derive default
        # locations from names (the next table in this namespace, another catalog over the same rows).
        check_identifier_segments(ident, catalog=self.name)
        self._check_namespace(ident[:-1])
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"Table already exists: {identifier_to_string(ident)}")
        metadata = create_table_metadata(
            schema,
            location=self.table_location(ident, location),
            partition_spec=partition_spec,
            sort_order=sort_order,
            properties=properties,
        )
        return Transaction.create(Table(ident, metadata, None, self.table_operations(ident), catalog=self))

    def create_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Create a table from a Floe or pyarrow schema (field ids are assigned afresh).

        Args:
            identifier: ``"ns.table"`` or ``("ns", "table")``.
            schema: a :class:`floe.spec.schema.Schema` or a ``pyarrow.Schema``.
            location: table location; default from the namespace or warehouse.
            partition_spec: default unpartitioned.
            sort_order: default unsorted.
            properties: table properties (``format-version`` picks the format, default 2).

        Raises:
            ValidationError: a name cannot be a path segment (see :mod:`floe.catalog.path_segments`).
            TableAlreadyExistsError: the table exists.
            NoSuchNamespaceError: the namespace does not exist.
        """
        txn = self.create_table_transaction(
            identifier,
            schema,
            location=location,
            partition_spec=partition_spec,
            sort_order=sort_order,
            properties=properties,
        )
        return txn.commit_transaction()

    def create_table_if_not_exists(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Create a table, or load it when it exists."""
        try:
            return self.create_table(
                identifier,
                schema,
                location=location,
                partition_spec=partition_spec,
                sort_order=sort_order,
                properties=properties,
            )
        except TableAlreadyExistsError:
            return self.load_table(identifier)

    def create_or_replace_table_transaction(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """A transaction that creates the table, or replaces an existing one keeping its history.

        A replacement keeps the table's uuid, snapshots and old schemas/specs (so time travel still works),
        sets the new schema, spec, sort order and properties as current, and leaves ``main`` without a
        current snapshot until data is added in the same transaction (Java's ``replaceTransaction``).
        """
        from floe.table.create import replacement_updates
        from floe.table.transaction import Transaction

        ident = to_identifier(identifier)
        try:
            table = self.load_table(ident)
        except NoSuchTableError:
            return self.create_table_transaction(
                ident,
                schema,
                location=location,
                partition_spec=partition_spec,
                sort_order=sort_order,
                properties=properties,
            )
        txn = Transaction(table)
        txn._stage_updates(
            replacement_updates(
                table.metadata,
                schema,
                location=location,
                partition_spec=partition_spec,
                sort_order=sort_order,
                properties=properties,
            ),
            description="replace table",
        )
        return txn

    def create_or_replace_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Create a table, or replace an existing one (see :meth:`create_or_replace_table_transaction`)."""
        return self.create_or_replace_table_transaction(
            identifier,
            schema,
            location=location,
            partition_spec=partition_spec,
            sort_order=sort_order,
            properties=properties,
        ).commit_transaction()

    def drop_table(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        """Drop a table; with ``purge=True`` also delete every file its metadata references.

        Raises:
            NoSuchTableError: it does not exist.
        """
        ident = to_identifier(identifier)
        if not purge:
            self._remove_table_entry(ident)
            return
        from floe.table.purge import purge_table_files, require_gc_enabled

        table = self.load_table(ident)
        require_gc_enabled(table.metadata, identifier_to_string(ident))
        self._remove_table_entry(ident)
        purge_table_files(table.io, table.metadata, table.metadata_location)

    def purge_table(self, identifier: IdentifierLike) -> None:
        """Drop a table and delete its files (PyIceberg's name for ``drop_table(purge=True)``)."""
        self.drop_table(identifier, purge=True)

    def commit_table(
        self,
        identifier: IdentifierLike,
        requirements: Iterable[TableRequirement],
        updates: Iterable[TableUpdate],
    ) -> Table:
        """Apply a commit given as data (requirements checked against the current metadata, then updates).

        This is the REST catalog's commit shape; Floe's own transactions use :class:`Transaction`.

        Raises:
            CommitFailedError: a requirement does not hold or the table changed meanwhile.
        """
        from floe.table.table import Table
        from floe.table.transaction import apply_commit

        ident = to_identifier(identifier)
        ops = self.table_operations(ident)
        base, base_location = ops.load()
        new = apply_commit(
            base,
            list(requirements),
            list(updates),
            name=identifier_to_string(ident),
            base_location=base_location,
        )
        location = ops.commit(base, base_location, new)
        return Table(ident, new, location, ops, catalog=self)

    @property
    def supports_multi_table_commits(self) -> bool:
        """Whether :meth:`commit_tables` can swap several tables atomically in this catalog."""
        return False

    def commit_tables(
        self, commits: Sequence[tuple[Identifier, TableMetadata, str, TableMetadata]]
    ) -> list[str]:
        """Swap several tables to new metadata atomically: all of them or none.

        Args:
            commits: ``(identifier, base, base_location, new)`` per table (distinct tables).

        Returns:
            The new metadata locations, in order.

        Raises:
            UnsupportedError: this catalog cannot (only the SQL catalog can: one database transaction).
            CommitFailedError: a table changed since its base was read; none was changed.
            CommitStateUnknownError: the outcome is unknown; nothing may be cleaned up.
        """
        raise UnsupportedError(f"Catalog {self.name} ({type(self).__name__}) cannot commit several tables atomically")

    def all_namespaces(self) -> list[Namespace]:
        """Every namespace of the catalog, at any depth, parents before children."""
        out: list[Namespace] = []
        pending = self.list_namespaces()
        while pending:
            ns = pending.pop(0)
            out.append(ns)
            try:
                pending.extend(self.list_namespaces(ns))
            except NoSuchNamespaceError:  # dropped meanwhile
                continue
        return out

    def namespace_locations(self) -> dict[Namespace, str]:
        """Every namespace with the folder its tables go to by default: its ``location`` property, else
        ``<warehouse>/<levels...>`` (namespaces with neither are left out).

        This default walks the namespaces; catalogs that keep them in one place answer at once.
        """
        warehouse = self.properties.get(WAREHOUSE)
        out: dict[Namespace, str] = {}
        for ns in self.all_namespaces():
            try:
                location = self.load_namespace_properties(ns).get(LOCATION)
            except NoSuchNamespaceError:
                continue
            if not location and warehouse:
                location = join(warehouse, *ns)
            if location:
                out[ns] = location
        return out

    def view_metadata_locations(self) -> dict[Identifier, str]:
        """Every view of the catalog with the location of its current metadata file (none by default:
        catalogs that store views say where)."""
        return {}

    def table_metadata_locations(self) -> dict[Identifier, str]:
        """Every table of the catalog with the location of its current metadata file.

        This default walks the namespaces; catalogs that keep the locations in one place answer at once.
        """
        out: dict[Identifier, str] = {}
        for ns in self.all_namespaces():
            try:
                tables = self.list_tables(ns)
            except NoSuchNamespaceError:
                continue
            for ident in tables:
                location = self.table_operations(ident).reload_location()
                if location is not None:
                    out[ident] = location
        return out

    def namespace_location(self, namespace: Namespace) -> str | None:
        """The ``location`` property of a namespace, if set."""
        try:
            return self.load_namespace_properties(namespace).get(LOCATION)
        except NoSuchNamespaceError:
            return None
