"""SQL catalog on SQLAlchemy (SQLite, PostgreSQL, MySQL/MariaDB), in Iceberg's JDBC catalog layout.

Tables (the layout of Java's ``JdbcCatalog`` and PyIceberg's ``SqlCatalog``, so all of them open the same
catalog):

- ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location, iceberg_type)``
- ``iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)``

A commit writes a new ``NNNNN-<uuid>.metadata.json`` and swaps the row with a compare-and-set:
``UPDATE ... WHERE metadata_location = :expected``; no row updated means another writer won.
``iceberg_type`` (Java's V1 schema) is used when present; catalogs created without it (PyIceberg) work as is.
Names and lookup rules live in :mod:`floe.catalog.sql_layout`, shared with the read-only SQLite reader
(:mod:`floe.catalog.sqlite_reader`) the inspection commands use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from floe.catalog import sql_layout as layout
from floe.catalog.base import LOCATION, WAREHOUSE, Catalog, PropertiesUpdateSummary
from floe.catalog.metadata_files import (
    delete_removed_metadata_files,
    next_metadata_location,
    read_metadata,
    write_metadata,
)
from floe.catalog.path_segments import check_identifier_segments, check_namespace_segments, check_path_segment
from floe.catalog.sql_layout import (
    NAMESPACE_EXISTS_PROPERTY,
    TABLE_TYPE,
    VIEW_TYPE,
    child_namespaces,
    nested_prefix,
    no_such_namespace_message,
    no_such_table_message,
)
from floe.catalog.views import read_view_metadata, write_view_metadata
from floe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.io.locations import join
from floe.spec.table_metadata import TableMetadata
from floe.spec.view_metadata import ViewMetadata
from floe.table.identifiers import (
    Identifier,
    IdentifierLike,
    Namespace,
    identifier_to_string,
    namespace_to_string,
    to_identifier,
    to_namespace,
)
from floe.table.operations import TableOperations

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["NAMESPACE_EXISTS_PROPERTY", "TABLE_TYPE", "SqlCatalog"]


def _schema(with_type: bool) -> tuple[sa.MetaData, sa.Table, sa.Table]:
    md = sa.MetaData()
    cols: list[Any] = [
        sa.Column(layout.CATALOG_NAME, sa.String(255), primary_key=True, nullable=False),
        sa.Column(layout.TABLE_NAMESPACE, sa.String(255), primary_key=True, nullable=False),
        sa.Column(layout.TABLE_NAME, sa.String(255), primary_key=True, nullable=False),
        sa.Column(layout.METADATA_LOCATION, sa.String(1000), nullable=True),
        sa.Column(layout.PREVIOUS_METADATA_LOCATION, sa.String(1000), nullable=True),
    ]
    if with_type:
        cols.append(sa.Column(layout.ICEBERG_TYPE, sa.String(5), nullable=True))
    tables = sa.Table(layout.TABLES, md, *cols)
    props = sa.Table(
        layout.NAMESPACE_PROPERTIES,
        md,
        sa.Column(layout.CATALOG_NAME, sa.String(255), primary_key=True, nullable=False),
        sa.Column(layout.NAMESPACE, sa.String(255), primary_key=True, nullable=False),
        sa.Column(layout.PROPERTY_KEY, sa.String(255), primary_key=True, nullable=False),
        sa.Column(layout.PROPERTY_VALUE, sa.String(1000), nullable=True),
    )
    return md, tables, props


class SqlCatalog(Catalog):
    """An Iceberg catalog stored in a SQL database.

    Properties: ``uri`` (SQLAlchemy URL, e.g. ``sqlite:////tmp/cat.db``,
    ``postgresql+psycopg2://user@127.0.0.1:5432/test``, ``mysql+pymysql://root@127.0.0.1:3306/test``),
    ``warehouse`` (default root of new tables), ``init_catalog_tables`` (default true), FileIO properties.
    """

    def __init__(self, name: str, **properties: str) -> None:
        """Connect and create the catalog tables if needed.

        Raises:
            ValidationError: ``uri`` is missing.
        """
        super().__init__(name, **properties)
        uri = self.properties.get("uri")
        if not uri:
            raise ValidationError(f"SQL catalog {name!r} needs a 'uri' property (a SQLAlchemy database URL)")
        self.engine = _make_engine(uri, self.properties)
        if self.properties.get("init_catalog_tables", "true").lower() != "false":
            self._create_tables()
        inspector = sa.inspect(self.engine)
        with_type = layout.ICEBERG_TYPE in {c["name"] for c in inspector.get_columns(layout.TABLES)}
        _, self._tables, self._props = _schema(with_type)
        self._has_type = with_type

    def _create_tables(self) -> None:
        md, _, _ = _schema(True)
        try:
            md.create_all(self.engine, checkfirst=True)
        except (OperationalError, IntegrityError, DBAPIError):
            # Another process created them between the check and the CREATE: fine if they now exist.
            names = set(sa.inspect(self.engine).get_table_names())
            if not {layout.TABLES, layout.NAMESPACE_PROPERTIES} <= names:
                raise

    def close(self) -> None:
        """Release the idle connections of the catalog's pool (on a database server, the pool every catalog
        of this process on that server shares: they connect again when next used)."""
        self.engine.dispose()

    # -- SQL helpers ---------------------------------------------------------------------------------
    def _is_table(self) -> Any:
        t = self._tables
        return (
            sa.or_(t.c.iceberg_type == TABLE_TYPE, t.c.iceberg_type.is_(None))
            if self._has_type
            else sa.true()
        )

    def _table_row(self, identifier: Identifier) -> Any:
        t = self._tables
        return sa.and_(
            t.c.catalog_name == self.name,
            t.c.table_namespace == namespace_to_string(identifier[:-1]),
            t.c.table_name == identifier[-1],
        )

    def _current_location(self, identifier: Identifier) -> str | None:
        t = self._tables
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(t.c.metadata_location).where(self._table_row(identifier), self._is_table())
            ).first()
        return None if row is None else row[0]

    # -- namespaces ----------------------------------------------------------------------------------
    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        ns = namespace_to_string(to_namespace(namespace))
        p, t = self._props, self._tables
        prefix = nested_prefix(ns)

        def same_or_nested(column: Any) -> Any:
            return sa.or_(column == ns, sa.func.substr(column, 1, len(prefix)) == prefix)

        with self.engine.connect() as conn:
            hit = conn.execute(
                sa.select(sa.literal(1)).where(p.c.catalog_name == self.name, same_or_nested(p.c.namespace)).limit(1)
            ).first()
            if hit is None:
                hit = conn.execute(
                    sa.select(sa.literal(1))
                    .where(t.c.catalog_name == self.name, same_or_nested(t.c.table_namespace))
                    .limit(1)
                ).first()
        return hit is not None

    def create_namespace(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None:
        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("Cannot create the root namespace")
        check_namespace_segments(ns, catalog=self.name)
        _refuse_reserved(properties or {})
        _check_widths(namespace=ns, properties=properties)
        if self.namespace_exists(ns):
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {namespace_to_string(ns)}")
        # As Java's JdbcCatalog: the marker row keeps the namespace when every other property is removed.
        props = {**(properties or {}), NAMESPACE_EXISTS_PROPERTY: "true"}
        rows = [
            {
                "catalog_name": self.name,
                "namespace": namespace_to_string(ns),
                "property_key": k,
                "property_value": v,
            }
            for k, v in props.items()
        ]
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(self._props), rows)
        except IntegrityError as e:
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {namespace_to_string(ns)}") from e

    def list_namespaces(self, namespace: IdentifierLike = ()) -> list[Namespace]:
        parent = to_namespace(namespace)
        if parent and not self.namespace_exists(parent):
            raise NoSuchNamespaceError(no_such_namespace_message(namespace_to_string(parent)))
        p, t = self._props, self._tables
        with self.engine.connect() as conn:
            names = {
                r[0]
                for r in conn.execute(
                    sa.select(p.c.namespace).where(p.c.catalog_name == self.name).distinct()
                )
            }
            names |= {
                r[0]
                for r in conn.execute(
                    sa.select(t.c.table_namespace).where(t.c.catalog_name == self.name).distinct()
                )
            }
        return child_namespaces(names, parent)

    def _stored_properties(self, ns: Namespace) -> dict[str, str]:
        """The namespace's property rows as stored (the ``exists`` marker included)."""
        p = self._props
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(p.c.property_key, p.c.property_value).where(
                    p.c.catalog_name == self.name, p.c.namespace == namespace_to_string(ns)
                )
            ).all()
        if not rows and not self.namespace_exists(ns):
            raise NoSuchNamespaceError(no_such_namespace_message(namespace_to_string(ns)))
        return {k: v for k, v in rows}

    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]:
        """The namespace's properties as Java's ``JdbcCatalog.loadNamespaceMetadata`` returns them: without
        the internal ``exists`` marker, with ``location`` (``<warehouse>/<levels...>`` unless set).

        Raises:
            NoSuchNamespaceError: it does not exist.
        """
        ns = to_namespace(namespace)
        props = self._stored_properties(ns)
        props.pop(NAMESPACE_EXISTS_PROPERTY, None)
        warehouse = self.properties.get(WAREHOUSE)
        if LOCATION not in props and warehouse and ns:
            props[LOCATION] = join(warehouse, *ns)
        return props

    def namespace_location(self, namespace: Namespace) -> str | None:
        try:
            return self._stored_properties(namespace).get(LOCATION)
        except NoSuchNamespaceError:
            return None

    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        ns = to_namespace(namespace)
        removals = list(removals or [])
        updates = dict(updates or {})
        overlap = set(removals) & set(updates)
        if overlap:
            raise ValidationError(f"Properties both removed and updated: {sorted(overlap)}")
        _refuse_reserved(updates)
        _check_widths(properties=updates)
        current = self._stored_properties(ns)
        current.pop(NAMESPACE_EXISTS_PROPERTY, None)  # never shown, so never removed: reported missing
        p = self._props
        key = sa.and_(p.c.catalog_name == self.name, p.c.namespace == namespace_to_string(ns))
        with self.engine.begin() as conn:
            present = [r for r in removals if r in current]
            if present:
                conn.execute(sa.delete(p).where(key, p.c.property_key.in_(present)))
            for k, v in updates.items():
                if k in current:
                    conn.execute(sa.update(p).where(key, p.c.property_key == k).values(property_value=v))
                else:
                    conn.execute(
                        sa.insert(p).values(
                            catalog_name=self.name,
                            namespace=namespace_to_string(ns),
                            property_key=k,
                            property_value=v,
                        )
                    )
        return PropertiesUpdateSummary(
            removed=present, updated=list(updates), missing=[r for r in removals if r not in current]
        )

    def drop_namespace(self, namespace: IdentifierLike) -> None:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(no_such_namespace_message(namespace_to_string(ns)))
        tables = self.list_tables(ns)
        if tables:
            raise NamespaceNotEmptyError(
                f"Namespace {namespace_to_string(ns)} is not empty: {len(tables)} table(s), e.g. "
                f"{identifier_to_string(tables[0])}"
            )
        views = self.list_views(ns)
        if views:  # as Java's JDBC catalog: a namespace holding views is not empty either
            raise NamespaceNotEmptyError(
                f"Namespace {namespace_to_string(ns)} is not empty: {len(views)} view(s), e.g. "
                f"{identifier_to_string(views[0])}"
            )
        p = self._props
        with self.engine.begin() as conn:
            conn.execute(
                sa.delete(p).where(p.c.catalog_name == self.name, p.c.namespace == namespace_to_string(ns))
            )

    # -- tables --------------------------------------------------------------------------------------
    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(no_such_namespace_message(namespace_to_string(ns)))
        t = self._tables
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.table_name).where(
                    t.c.catalog_name == self.name,
                    t.c.table_namespace == namespace_to_string(ns),
                    self._is_table(),
                )
            ).all()
        return sorted(ns + (r[0],) for r in rows)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        return self._current_location(to_identifier(identifier)) is not None

    def all_namespaces(self) -> list[Namespace]:
        p, t = self._props, self._tables
        with self.engine.connect() as conn:
            stored = {r[0] for r in conn.execute(sa.select(p.c.namespace).where(p.c.catalog_name == self.name).distinct())}
            stored |= {
                r[0]
                for r in conn.execute(sa.select(t.c.table_namespace).where(t.c.catalog_name == self.name).distinct())
            }
        levels = {tuple(n.split(layout.NS_SEP)) for n in stored}
        # a namespace exists when it or a namespace below it has rows: every prefix of a stored one
        return sorted({ns[:i] for ns in levels for i in range(1, len(ns) + 1)}, key=lambda ns: (len(ns), ns))

    def namespace_locations(self) -> dict[Namespace, str]:
        p = self._props
        with self.engine.connect() as conn:
            custom = {
                tuple(ns.split(layout.NS_SEP)): location
                for ns, location in conn.execute(
                    sa.select(p.c.namespace, p.c.property_value).where(
                        p.c.catalog_name == self.name, p.c.property_key == LOCATION
                    )
                )
                if location
            }
        warehouse = self.properties.get(WAREHOUSE)
        out: dict[Namespace, str] = {}
        for ns in self.all_namespaces():
            location = custom.get(ns) or (join(warehouse, *ns) if warehouse else None)
            if location:
                out[ns] = location
        return out

    def table_metadata_locations(self) -> dict[Identifier, str]:
        t = self._tables
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.table_namespace, t.c.table_name, t.c.metadata_location).where(
                    t.c.catalog_name == self.name, self._is_table(), t.c.metadata_location.is_not(None)
                )
            ).all()
        return {(*ns.split(layout.NS_SEP), name): location for ns, name, location in rows}

    def table_operations(self, identifier: Identifier) -> TableOperations:
        return SqlTableOperations(self, identifier)

    def default_table_location(self, identifier: Identifier) -> str:
        ns_location = self.namespace_location(identifier[:-1])
        if ns_location:
            check_path_segment(identifier[-1], kind="table", catalog=self.name)
            return join(ns_location, identifier[-1])
        warehouse = self.properties.get(WAREHOUSE)
        if not warehouse:
            raise ValidationError(
                f"Cannot choose a location for {identifier_to_string(identifier)}: set the catalog's 'warehouse' "
                f"property, the namespace's '{LOCATION}' property, or pass location="
            )
        check_identifier_segments(identifier, catalog=self.name)
        return join(warehouse, *identifier)

    def rename_table(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> Table:
        src, dst = to_identifier(from_identifier), to_identifier(to_identifier_)
        # Only the new name is checked: an odd name stored earlier (by another engine) can be renamed away.
        check_identifier_segments(dst, catalog=self.name)
        _check_widths(identifier=dst)
        self._check_namespace(dst[:-1])
        if self.table_exists(dst):
            raise TableAlreadyExistsError(f"Table already exists: {identifier_to_string(dst)}")
        t = self._tables
        try:
            with self.engine.begin() as conn:
                res = conn.execute(
                    sa.update(t)
                    .where(self._table_row(src), self._is_table())
                    .values(table_namespace=namespace_to_string(dst[:-1]), table_name=dst[-1])
                )
        except IntegrityError as e:
            raise TableAlreadyExistsError(f"Table already exists: {identifier_to_string(dst)}") from e
        if res.rowcount == 0:
            raise NoSuchTableError(f"Table does not exist: {identifier_to_string(src)}")
        return self.load_table(dst)

    def _remove_table_entry(self, identifier: Identifier) -> None:
        with self.engine.begin() as conn:
            res = conn.execute(sa.delete(self._tables).where(self._table_row(identifier), self._is_table()))
        if res.rowcount == 0:
            raise NoSuchTableError(f"Table does not exist: {identifier_to_string(identifier)}")

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        from floe.table.table import Table

        ident = to_identifier(identifier)
        check_identifier_segments(ident, catalog=self.name)
        _check_widths(identifier=ident, metadata_location=metadata_location)
        self._check_namespace(ident[:-1])
        metadata = read_metadata(self.io(metadata_location), metadata_location)  # validates the file
        self._insert(ident, metadata_location)
        return Table(ident, metadata, metadata_location, self.table_operations(ident), catalog=self)

    def _insert(self, identifier: Identifier, metadata_location: str, *, iceberg_type: str = TABLE_TYPE) -> None:
        values: dict[str, Any] = {
            "catalog_name": self.name,
            "table_namespace": namespace_to_string(identifier[:-1]),
            "table_name": identifier[-1],
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self._has_type:
            values[layout.ICEBERG_TYPE] = iceberg_type
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(self._tables).values(**values))
        except IntegrityError as e:
            raise TableAlreadyExistsError(f"Table already exists: {identifier_to_string(identifier)}") from e

    # -- views (Java's V1 layout: rows with iceberg_type VIEW) -----------------------------------------------
    def _require_view_layout(self) -> None:
        if not self._has_type:
            raise UnsupportedError(
                f"Catalog {self.name} stores no views: its {layout.TABLES} table has no {layout.ICEBERG_TYPE} "
                "column (Iceberg Java adds it with jdbc.schema-version=V1)"
            )

    def _view_location(self, identifier: Identifier) -> str | None:
        if not self._has_type:
            return None
        t = self._tables
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(t.c.metadata_location).where(self._table_row(identifier), t.c.iceberg_type == VIEW_TYPE)
            ).first()
        return None if row is None else row[0]

    def view_exists(self, identifier: IdentifierLike) -> bool:
        return self._view_location(to_identifier(identifier)) is not None

    def list_views(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(no_such_namespace_message(namespace_to_string(ns)))
        if not self._has_type:
            return []
        t = self._tables
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.table_name).where(
                    t.c.catalog_name == self.name, t.c.table_namespace == namespace_to_string(ns),
                    t.c.iceberg_type == VIEW_TYPE,
                )
            ).all()
        return sorted(ns + (r[0],) for r in rows)

    def load_view(self, identifier: IdentifierLike) -> tuple[ViewMetadata, str]:
        """The view's current metadata and its file's location.

        Raises:
            NoSuchViewError: no such view.
        """
        ident = to_identifier(identifier)
        location = self._view_location(ident)
        if location is None:
            raise NoSuchViewError(f"View not found: {self.name}.{identifier_to_string(ident)}")
        return read_view_metadata(self.io(location), location), location

    def create_view(self, identifier: IdentifierLike, metadata: ViewMetadata) -> str:
        """Write the view's first metadata file and add it to the catalog; returns the file's location.

        Raises:
            TableAlreadyExistsError: a table or view has that name.
            NoSuchNamespaceError: the namespace does not exist.
        """
        self._require_view_layout()
        ident = to_identifier(identifier)
        check_identifier_segments(ident, catalog=self.name)
        _check_widths(identifier=ident)
        self._check_namespace(ident[:-1])
        if self._current_location(ident) is not None or self.view_exists(ident):
            raise TableAlreadyExistsError(f"Table or view already exists: {identifier_to_string(ident)}")
        location = write_view_metadata(self.io(metadata.location), metadata, None)
        try:
            self._insert(ident, location, iceberg_type=VIEW_TYPE)
        except TableAlreadyExistsError:
            self.io(location).delete(location)
            raise
        return location

    def replace_view(self, identifier: IdentifierLike, base_location: str, metadata: ViewMetadata) -> str:
        """Swap in a new metadata file of a view (compare-and-set on ``base_location``).

        Raises:
            CommitFailedError: the view changed since ``base_location`` was read (nothing is left behind).
        """
        ident = to_identifier(identifier)
        location = write_view_metadata(self.io(metadata.location), metadata, base_location)
        if not self._swap(ident, base_location, location):
            self.io(location).delete(location)
            raise CommitFailedError(f"View {identifier_to_string(ident)} changed concurrently; retry")
        return location

    def drop_view(self, identifier: IdentifierLike) -> None:
        """Remove the view from the catalog (its metadata files stay, as Iceberg Java leaves them).

        Raises:
            NoSuchViewError: no such view.
        """
        ident = to_identifier(identifier)
        t = self._tables
        with self.engine.begin() as conn:
            res = conn.execute(sa.delete(t).where(self._table_row(ident), t.c.iceberg_type == VIEW_TYPE))
        if res.rowcount != 1:
            raise NoSuchViewError(f"View not found: {self.name}.{identifier_to_string(ident)}")

    def rename_view(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> None:
        """Rename a view (its files stay where they are).

        Raises:
            NoSuchViewError: the source is not a view.
            TableAlreadyExistsError: a table or view has the new name.
            NoSuchNamespaceError: the target namespace does not exist.
        """
        src, dst = to_identifier(from_identifier), to_identifier(to_identifier_)
        check_identifier_segments(dst, catalog=self.name)
        _check_widths(identifier=dst)
        if not self.view_exists(src):
            raise NoSuchViewError(f"View not found: {self.name}.{identifier_to_string(src)}")
        self._check_namespace(dst[:-1])
        if self._current_location(dst) is not None or self.view_exists(dst):
            raise TableAlreadyExistsError(f"Table or view already exists: {identifier_to_string(dst)}")
        t = self._tables
        try:
            with self.engine.begin() as conn:
                res = conn.execute(
                    sa.update(t)
                    .where(self._table_row(src), t.c.iceberg_type == VIEW_TYPE)
                    .values(table_namespace=namespace_to_string(dst[:-1]), table_name=dst[-1])
                )
        except IntegrityError as e:
            raise TableAlreadyExistsError(f"Table or view already exists: {identifier_to_string(dst)}") from e
        if res.rowcount == 0:
            raise NoSuchViewError(f"View not found: {self.name}.{identifier_to_string(src)}")

    def view_metadata_locations(self) -> dict[Identifier, str]:
        if not self._has_type:
            return {}
        t = self._tables
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.table_namespace, t.c.table_name, t.c.metadata_location).where(
                    t.c.catalog_name == self.name, t.c.iceberg_type == VIEW_TYPE, t.c.metadata_location.is_not(None)
                )
            ).all()
        return {(*ns.split(layout.NS_SEP), name): location for ns, name, location in rows}

    def _swap(self, identifier: Identifier, expected: str, new: str) -> bool:
        """Compare-and-set the metadata location; False when ``expected`` is no longer current."""
        t = self._tables
        with self.engine.begin() as conn:
            res = conn.execute(
                sa.update(t)
                .where(self._table_row(identifier), t.c.metadata_location == expected)
                .values(metadata_location=new, previous_metadata_location=expected)
            )
        return bool(res.rowcount == 1)


    @property
    def supports_multi_table_commits(self) -> bool:
        return True

    def commit_tables(
        self, commits: Sequence[tuple[Identifier, TableMetadata, str, TableMetadata]]
    ) -> list[str]:
        """Swap several tables in one database transaction (every compare-and-set or none)."""
        io = self.io()
        written = []
        for _, _, base_location, new in commits:
            location = next_metadata_location(new, base_location)
            _check_widths(metadata_location=location)
            write_metadata(io, new, location, exclusive=False)
            written.append(location)
        t = self._tables
        try:
            with self.engine.begin() as conn:
                for (ident, _, base_location, _), location in zip(commits, written):
                    res = conn.execute(
                        sa.update(t)
                        .where(self._table_row(ident), t.c.metadata_location == base_location)
                        .values(metadata_location=location, previous_metadata_location=base_location)
                    )
                    if res.rowcount != 1:
                        raise CommitFailedError(
                            f"Table {identifier_to_string(ident)} was changed concurrently: expected metadata "
                            f"{base_location}; no table of this multi-table commit was changed"
                        )
        except CommitFailedError:
            io.delete_many(written)
            raise
        except DBAPIError as e:
            # One transaction: the first table's row tells whether all of them were swapped or none.
            current = SqlTableOperations(self, commits[0][0]).reload_location()
            if current == written[0]:
                return written
            if current == commits[0][2]:
                io.delete_many(written)
                raise CommitFailedError(f"Multi-table commit failed: {e}") from e
            raise CommitStateUnknownError(f"Multi-table commit has an unknown outcome: {e}") from e
        return written


class SqlTableOperations(TableOperations):
    """Load and commit one table of a :class:`SqlCatalog`."""

    def __init__(self, catalog: SqlCatalog, identifier: Identifier) -> None:
        super().__init__(identifier, catalog.io())
        self.catalog = catalog

    def load(self) -> tuple[TableMetadata, str]:
        location = self.catalog._current_location(self.identifier)
        if location is None:
            raise NoSuchTableError(no_such_table_message(self.name, self.catalog.name))
        return read_metadata(self.io, location), location

    def reload_location(self) -> str | None:
        try:
            return self.catalog._current_location(self.identifier)
        except DBAPIError:
            return None

    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        location = next_metadata_location(new, base_location)
        _check_widths(identifier=self.identifier if base is None else None, metadata_location=location)
        write_metadata(self.io, new, location, exclusive=False)
        if base is None or base_location is None:
            try:
                self.catalog._insert(self.identifier, location)
            except TableAlreadyExistsError:
                self.io.delete(location)
                raise
            return location
        try:
            swapped = self.catalog._swap(self.identifier, base_location, location)
        except DBAPIError as e:
            # The statement may or may not have been applied: look before cleaning anything up.
            current = self.reload_location()
            if current == location:
                swapped = True
            elif current is None:
                raise CommitStateUnknownError(
                    f"Commit of table {self.name} to {location} has an unknown outcome: {e}"
                ) from e
            else:
                self.io.delete(location)
                raise CommitFailedError(f"Commit of table {self.name} failed: {e}") from e
        if not swapped:
            self.io.delete(location)
            current = self.catalog._current_location(self.identifier)
            if current is None:
                raise NoSuchTableError(f"Table does not exist: {self.name} (dropped during commit)")
            raise CommitFailedError(
                f"Table {self.name} was changed concurrently: expected metadata {base_location}, found {current}"
            )
        delete_removed_metadata_files(self.io, base, new)
        return location


_NAME_WIDTH = 255  # VARCHAR(255): namespace, table name, property key (Java's JdbcUtil, PyIceberg)
_VALUE_WIDTH = 1000  # VARCHAR(1000): metadata locations, property values


def _check_widths(
    *,
    identifier: Identifier | None = None,
    namespace: Namespace | None = None,
    properties: Mapping[str, str] | None = None,
    metadata_location: str | None = None,
) -> None:
    """Refuse values longer than the catalog's columns hold (PostgreSQL and MySQL would fail the statement).

    Raises:
        ValidationError: names the value, its length and the column.
    """
    checks: list[tuple[str, str, int]] = []
    if identifier is not None:
        namespace = identifier[:-1]
        checks.append(("table name", identifier[-1], _NAME_WIDTH))
    if namespace is not None:
        checks.append(("namespace", namespace_to_string(namespace), _NAME_WIDTH))
    for key, value in (properties or {}).items():
        checks += [("property key", key, _NAME_WIDTH), (f"value of property {key[:60]!r}", value, _VALUE_WIDTH)]
    if metadata_location is not None:
        checks.append(("metadata location", metadata_location, _VALUE_WIDTH))
    for what, value, width in checks:
        if len(value) > width:
            raise ValidationError(
                f"The SQL catalog cannot store this {what} ({len(value)} characters, {value[:60]!r}...): "
                f"its column holds {width}"
            )


def _refuse_reserved(properties: Mapping[str, str]) -> None:
    if NAMESPACE_EXISTS_PROPERTY in properties:
        raise ValidationError(
            f"Cannot set namespace property {NAMESPACE_EXISTS_PROPERTY!r}: it is reserved (the SQL catalog's "
            "marker of a namespace without other properties)"
        )


# One engine (connection pool) per database server URL in a process, shared by every SqlCatalog opened on it.
# A catalog used to make its own pool and keep a connection for as long as it lived: 20 tables loaded by name
# held 20 PostgreSQL connections, released only when the cyclic garbage collector ran. SQLite files keep an
# engine per catalog: a file deleted and created again under the same name would otherwise be written through
# a pooled connection to the deleted one.
_SHARED_ENGINES: dict[tuple[str, bool], sa.Engine] = {}
_SHARED_ENGINES_LOCK = threading.Lock()


def _forget_shared_engines() -> None:
    """In a forked child: the parent's pooled connections are not this process's to use or close."""
    global _SHARED_ENGINES_LOCK
    _SHARED_ENGINES_LOCK = threading.Lock()  # another thread of the parent may have held it at the fork
    for engine in _SHARED_ENGINES.values():
        engine.dispose(close=False)
    _SHARED_ENGINES.clear()


os.register_at_fork(after_in_child=_forget_shared_engines)


def _make_engine(uri: str, properties: Mapping[str, str]) -> sa.Engine:
    if uri.startswith("sqlite"):
        return _new_engine(uri, properties)
    key = (uri, _echo(properties))
    with _SHARED_ENGINES_LOCK:
        engine = _SHARED_ENGINES.get(key)
        if engine is None:
            engine = _SHARED_ENGINES[key] = _new_engine(uri, properties)
        return engine


def _echo(properties: Mapping[str, str]) -> bool:
    """The catalog's ``echo`` property: log every SQL statement (part of what makes an engine)."""
    return properties.get("echo", "false").lower() == "true"


def _new_engine(uri: str, properties: Mapping[str, str]) -> sa.Engine:
    kwargs: dict[str, Any] = {}
    sqlite = uri.startswith("sqlite")
    if sqlite:
        # Several processes commit to one SQLite file: wait for the lock instead of failing at once.
        kwargs["connect_args"] = {"timeout": float(properties.get("sqlite.busy-timeout-s", "60"))}
    else:
        kwargs["pool_pre_ping"] = True
    if _echo(properties):
        kwargs["echo"] = True
    engine = sa.create_engine(uri, **kwargs)
    journal = properties.get("sqlite.journal-mode", "wal").upper()
    if sqlite and ":memory:" not in uri and uri not in ("sqlite://", "sqlite:///"):

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            # WAL: readers never block the writer, and a commit appends to the log instead of syncing the
            # whole database twice. synchronous=NORMAL keeps every commit atomic and durable across process
            # crashes (only an OS crash may lose the last commits), the trade-off SQLite documents for WAL.
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA journal_mode={journal}")
            if journal == "WAL":
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

    return engine
