"""Read-only lookups in a SQL catalog kept in a local SQLite file, through the stdlib ``sqlite3`` module.

The inspection commands (``floe tables | describe | history | snapshots | files``) only read a few rows;
opening the catalog through SQLAlchemy (:class:`floe.catalog.sql.SqlCatalog`) would cost each of them
~0.3 s of imports. :class:`SqliteCatalogReader` answers the same reads with the same statements, built from
the shared layout and rules in :mod:`floe.catalog.sql_layout` (``LIKE`` patterns, the ``iceberg_type``
filter, namespace nesting, error messages). It never writes: anything else goes through ``SqlCatalog``.

:func:`open_sqlite_reader` returns None whenever the reader cannot promise the SQL catalog's answer: another
database or driver, a URI with query options, SQL echo turned on, a database file or catalog tables that do
not exist yet (the SQL catalog creates them on open).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from urllib.parse import unquote

from floe.catalog import sql_layout as layout
from floe.catalog.base import TYPE, URI, WAREHOUSE
from floe.catalog.metadata_files import read_metadata
from floe.errors import NoSuchNamespaceError, NoSuchTableError, UnsupportedError
from floe.io.fileio import FileIO
from floe.spec.table_metadata import TableMetadata
from floe.table.identifiers import (
    Identifier,
    IdentifierLike,
    Namespace,
    namespace_to_string,
    to_identifier,
    to_namespace,
)
from floe.table.operations import TableOperations

__all__ = ["SqliteCatalogReader", "SqliteReadTableOperations", "open_sqlite_reader", "sqlite_database_path"]

_SQLITE_FILE_URI = "sqlite:///"  # SQLAlchemy's spelling of a SQLite file with the default (stdlib) driver


def sqlite_database_path(properties: Mapping[str, str]) -> str | None:
    """The absolute path of the SQLite file a ``sql`` catalog's properties name, as SQLAlchemy resolves it;
    None when the properties name anything else (another database, a driver, query options, memory)."""
    if properties.get(TYPE, "").lower() != "sql":
        return None
    uri = properties.get(URI, "")
    if not uri.startswith(_SQLITE_FILE_URI) or "?" in uri:
        return None
    database = unquote(uri[len(_SQLITE_FILE_URI) :])
    if not database or database == ":memory:":
        return None
    return os.path.abspath(database)  # relative to the working directory, as SQLAlchemy's pysqlite does


def open_sqlite_reader(name: str, properties: Mapping[str, str]) -> SqliteCatalogReader | None:
    """A reader for catalog ``name`` (complete, normalized properties), or None when the SQL catalog must
    be opened instead (see the module docstring)."""
    path = sqlite_database_path(properties)
    if path is None or properties.get("echo", "false").lower() == "true" or not os.path.isfile(path):
        return None
    timeout = float(properties.get("sqlite.busy-timeout-s", "60"))  # the SQL catalog's lock wait
    conn = sqlite3.connect(path, timeout=timeout)
    try:
        present = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                (layout.TABLES, layout.NAMESPACE_PROPERTIES),
            )
        }
        if present != {layout.TABLES, layout.NAMESPACE_PROPERTIES}:
            conn.close()
            return None
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({layout.TABLES})")}
    except sqlite3.Error:
        conn.close()
        return None  # not a database this reader understands: let the SQL catalog report it
    return SqliteCatalogReader(name, properties, conn, has_type=layout.ICEBERG_TYPE in columns)


class SqliteCatalogReader:
    """The read side of :class:`floe.catalog.sql.SqlCatalog` on one SQLite file: same answers and errors."""

    def __init__(
        self, name: str, properties: Mapping[str, str], conn: sqlite3.Connection, *, has_type: bool
    ) -> None:
        self.name = name
        # What SqlCatalog keeps: the catalog_from_properties arguments minus the type.
        self.properties: dict[str, str] = {k: str(v) for k, v in properties.items() if k != TYPE}
        self._conn = conn
        self._is_table = (
            f" AND ({layout.ICEBERG_TYPE} = '{layout.TABLE_TYPE}' OR {layout.ICEBERG_TYPE} IS NULL)"
            if has_type
            else ""
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def io(self, location: str | None = None) -> FileIO:
        """A FileIO configured with this catalog's properties (as ``Catalog.io``)."""
        return FileIO.for_location(location or self.properties.get(WAREHOUSE, "file:///"), self.properties)

    # -- lookups -------------------------------------------------------------------------------------
    def current_location(self, identifier: Identifier) -> str | None:
        """The table's metadata location, or None when the catalog has no such table."""
        row = self._conn.execute(
            f"SELECT {layout.METADATA_LOCATION} FROM {layout.TABLES} WHERE {layout.CATALOG_NAME} = ? "
            f"AND {layout.TABLE_NAMESPACE} = ? AND {layout.TABLE_NAME} = ?{self._is_table}",
            (self.name, namespace_to_string(identifier[:-1]), identifier[-1]),
        ).fetchone()
        return None if row is None else row[0]

    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        ns = namespace_to_string(to_namespace(namespace))
        prefix = layout.nested_prefix(ns)
        args = (self.name, ns, len(prefix), prefix)
        for table, column in (
            (layout.NAMESPACE_PROPERTIES, layout.NAMESPACE),
            (layout.TABLES, layout.TABLE_NAMESPACE),
        ):
            hit = self._conn.execute(
                f"SELECT 1 FROM {table} WHERE {layout.CATALOG_NAME} = ? AND ({column} = ? OR "
                f"substr({column}, 1, ?) = ?) LIMIT 1",
                args,
            ).fetchone()
            if hit is not None:
                return True
        return False

    def list_namespaces(self, namespace: IdentifierLike = ()) -> list[Namespace]:
        parent = to_namespace(namespace)
        if parent and not self.namespace_exists(parent):
            raise NoSuchNamespaceError(layout.no_such_namespace_message(namespace_to_string(parent)))
        stored: set[str] = set()
        for table, column in (
            (layout.NAMESPACE_PROPERTIES, layout.NAMESPACE),
            (layout.TABLES, layout.TABLE_NAMESPACE),
        ):
            stored |= {
                r[0]
                for r in self._conn.execute(
                    f"SELECT DISTINCT {column} FROM {table} WHERE {layout.CATALOG_NAME} = ?", (self.name,)
                )
            }
        return layout.child_namespaces(stored, parent)

    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(layout.no_such_namespace_message(namespace_to_string(ns)))
        rows = self._conn.execute(
            f"SELECT {layout.TABLE_NAME} FROM {layout.TABLES} WHERE {layout.CATALOG_NAME} = ? "
            f"AND {layout.TABLE_NAMESPACE} = ?{self._is_table}",
            (self.name, namespace_to_string(ns)),
        ).fetchall()
        return sorted(ns + (r[0],) for r in rows)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        return self.current_location(to_identifier(identifier)) is not None

    def table_operations(self, identifier: Identifier) -> SqliteReadTableOperations:
        return SqliteReadTableOperations(self, identifier)


class SqliteReadTableOperations(TableOperations):
    """Load one table of a :class:`SqliteCatalogReader` (as ``SqlTableOperations.load``); never commits."""

    def __init__(self, reader: SqliteCatalogReader, identifier: Identifier) -> None:
        super().__init__(identifier, reader.io())
        self.reader = reader

    def load(self) -> tuple[TableMetadata, str]:
        location = self.reader.current_location(self.identifier)
        if location is None:
            raise NoSuchTableError(layout.no_such_table_message(self.name, self.reader.name))
        return read_metadata(self.io, location), location

    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        raise UnsupportedError(
            f"Table {self.name} was opened read-only from catalog {self.reader.name}; "
            "load it through the catalog to commit"
        )
