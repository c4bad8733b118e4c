"""The SQL catalog's storage layout and lookup rules, shared by every reader of it (no database driver here).

Iceberg's JDBC catalog layout (Java's ``JdbcCatalog``, PyIceberg's ``SqlCatalog``):

- ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location[, iceberg_type])``
- ``iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)``

:mod:`floe.catalog.sql` (SQLAlchemy: every database, reads and writes) and
:mod:`floe.catalog.sqlite_reader` (stdlib ``sqlite3``: read-only, for the inspection commands) both build
their statements and answers from the names and rules below, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable

from floe.table.identifiers import Namespace

__all__ = [
    "NAMESPACE_EXISTS_PROPERTY",
    "NAMESPACE_PROPERTIES",
    "NS_SEP",
    "TABLES",
    "TABLE_TYPE",
    "child_namespaces",
    "nested_prefix",
    "no_such_namespace_message",
    "no_such_table_message",
]

TABLES = "iceberg_tables"
NAMESPACE_PROPERTIES = "iceberg_namespace_properties"
# iceberg_tables columns
CATALOG_NAME = "catalog_name"
TABLE_NAMESPACE = "table_namespace"
TABLE_NAME = "table_name"
METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
ICEBERG_TYPE = "iceberg_type"  # Java's V1 schema; absent in catalogs PyIceberg created
# iceberg_namespace_properties columns (besides catalog_name)
NAMESPACE = "namespace"
PROPERTY_KEY = "property_key"
PROPERTY_VALUE = "property_value"

# written when a namespace is created (Java always, PyIceberg without other properties); never shown
NAMESPACE_EXISTS_PROPERTY = "exists"
TABLE_TYPE = "TABLE"  # iceberg_type of tables (views share the table when the column exists)
VIEW_TYPE = "VIEW"
NS_SEP = "."


def nested_prefix(namespace: str) -> str:
    """What every namespace nested under ``namespace`` starts with.

    Compared with ``substr(column, 1, len(prefix)) = prefix`` rather than ``LIKE``: no escaping, and no
    pattern-length limit (SQLite refuses ``LIKE`` patterns over 50,000 bytes as "too complex").
    """
    return namespace + NS_SEP


def child_namespaces(stored: Iterable[str], parent: Namespace) -> list[Namespace]:
    """The direct children of ``parent`` among stored namespace strings (any depth below it), sorted."""
    out: set[Namespace] = set()
    for n in stored:
        levels = tuple(n.split(NS_SEP))
        if len(levels) > len(parent) and levels[: len(parent)] == parent:
            out.add(levels[: len(parent) + 1])
    return sorted(out)


def no_such_namespace_message(namespace: str) -> str:
    """What listing or reading a namespace that has no rows says."""
    return f"Namespace does not exist: {namespace}"


def no_such_table_message(table: str, catalog: str) -> str:
    """What loading a table that has no row says."""
    return f"Table does not exist: {table} (catalog {catalog})"
