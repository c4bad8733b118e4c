"""Execute parsed SQL commands: a session holding the current catalog, namespace and settings.

This module runs the statements that need neither Spark nor table data: ``USE``, ``SET``, ``SHOW
CATALOGS``, and the namespace statements (through the catalog contract in :mod:`floe.catalog`). Every
other command is dispatched through :attr:`SqlSession.handlers`, where the table and Spark paths
register their handlers; a command with no handler raises ``UnsupportedError`` naming the statement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, cast

from floe.catalog.loader import open_catalog
from floe.config import FloeConfig, normalize_catalog_properties
from floe.errors import (
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NotFoundError,
    UnsupportedError,
    ValidationError,
)
from floe.sql import commands as c
from floe.sql.identifiers import Name, format_name, resolve_namespace, resolve_use
from floe.sql.lexer import split_statements
from floe.sql.parse_common import short_sql
from floe.sql.parser import parse_statement
from floe.sql.result import ResultSet

__all__ = ["CatalogLoader", "NamespaceCatalog", "SqlSession", "show_pattern_matches"]


class NamespaceCatalog(Protocol):
    """The part of floe.catalog.Catalog this module uses."""

    name: str
    properties: dict[str, str]

    def create_namespace(
        self, namespace: Sequence[str], properties: Mapping[str, str] | None = None
    ) -> None: ...

    def list_namespaces(self, namespace: Sequence[str] = ()) -> list[tuple[str, ...]]: ...

    def drop_namespace(self, namespace: Sequence[str]) -> None: ...

    def list_tables(self, namespace: Sequence[str]) -> list[tuple[str, ...]]: ...

    def namespace_exists(self, namespace: Sequence[str]) -> bool: ...

    def drop_table(self, identifier: Sequence[str], *, purge: bool = False) -> None: ...

    def load_namespace_properties(self, namespace: Sequence[str]) -> dict[str, str]: ...

    def update_namespace_properties(
        self, namespace: Sequence[str], removals: set[str] | None = None, updates: Mapping[str, str] | None = None
    ) -> object: ...


CatalogLoader = Callable[..., NamespaceCatalog]
Handler = Callable[["SqlSession", c.Statement], ResultSet]

_DEFAULT_NAMESPACE = ("default",)


def _default_loader(name: str, **properties: str) -> NamespaceCatalog:
    return open_catalog(name, properties)


def show_pattern_matches(pattern: str | None, value: str) -> bool:
    """Spark's SHOW ... LIKE pattern: ``*`` any characters, ``|`` alternatives, case-insensitive."""
    if pattern is None:
        return True
    for alt in pattern.split("|"):
        regex = ".*".join(re.escape(part) for part in alt.strip().split("*"))
        if re.fullmatch(regex, value, flags=re.IGNORECASE):
            return True
    return False


class SqlSession:
    """One SQL session: current catalog and namespace, settings, and loaded catalogs.

    Args:
        config: the resolved configuration (catalogs, default catalog, Spark settings).
        catalog_loader: ``loader(name, **properties) -> catalog``; default ``floe.catalog.load_catalog``.
    """

    def __init__(self, config: FloeConfig, *, catalog_loader: CatalogLoader | None = None) -> None:
        self.config = config
        self.catalog_properties: dict[str, dict[str, str]] = {k: dict(v) for k, v in config.catalogs.items()}
        self.conf: dict[str, str] = dict(config.spark_conf)
        self.current_catalog: str = config.default_catalog
        self.current_namespace: Name | None = None  # None: the catalog's default namespace
        self._loader = catalog_loader or _default_loader
        self._catalogs: dict[str, NamespaceCatalog] = {}
        self._pending_catalog_keys: dict[str, dict[str, str]] = {}
        self.handlers: dict[type[c.Statement], Handler] = {}
        # statements on Spark's own tables, run by Spark when handlers are registered (None: not Floe's)
        self.spark_statements: Callable[[c.Statement], ResultSet | None] | None = None

    def register(self, statement_type: type[c.Statement], handler: Handler) -> None:
        """Run ``handler(session, stmt)`` for statements of ``statement_type`` (overrides a built-in)."""
        self.handlers[statement_type] = handler

    # -- catalogs ------------------------------------------------------------------------------------
    @property
    def catalog_names(self) -> list[str]:
        return sorted(self.catalog_properties)

    def catalog(self, name: str | None = None) -> NamespaceCatalog:
        """The loaded catalog ``name`` (default: the current one).

        Raises:
            NotFoundError: no such catalog is configured.
        """
        name = name or self.current_catalog
        if name not in self._catalogs:
            if name not in self.catalog_properties:
                raise NotFoundError(f"Unknown catalog {name!r} (configured: {', '.join(self.catalog_names)})")
            self._catalogs[name] = self._loader(name, **self.catalog_properties[name])
        return self._catalogs[name]

    def namespace(self) -> Name:
        """The current namespace: the one set by USE, else the catalog's ``default-namespace`` or ``default``."""
        if self.current_namespace is not None:
            return self.current_namespace
        props = self.catalog_properties.get(self.current_catalog, {})
        default = props.get("default-namespace")
        return tuple(default.split(".")) if default else _DEFAULT_NAMESPACE

    # -- running -------------------------------------------------------------------------------------
    def execute(self, stmt: c.Statement) -> ResultSet:
        """Run one command.

        Raises:
            UnsupportedError: no handler for this kind of statement.
            FloeError: whatever the statement's handler raises (no such table, ...).
        """
        if self.spark_statements is not None:
            result = self.spark_statements(stmt)
            if result is not None:
                return result
        handler = self.handlers.get(type(stmt)) or _BUILTIN.get(type(stmt))
        if handler is None:
            raise UnsupportedError(f"Not supported yet: {short_sql(stmt.sql) or type(stmt).__name__}")
        return handler(self, stmt)

    def sql(self, text: str) -> list[ResultSet]:
        """Parse and run every statement of a script in order; stops at the first error."""
        return [self.execute(parse_statement(s.sql, line=s.line, col=s.col)) for s in split_statements(text)]


# -- built-in handlers -----------------------------------------------------------------------------------


def _use(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.UseStmt)
    catalog, ns = resolve_use(
        stmt.name,
        target=stmt.target,
        current_catalog=session.current_catalog,
        catalogs=session.catalog_properties,
    )
    cat = session.catalog(catalog)
    if ns is not None and not cat.namespace_exists(ns):
        raise NoSuchNamespaceError(f"Namespace {format_name(ns)} does not exist in catalog {catalog}")
    session.current_catalog = catalog
    session.current_namespace = ns
    return ResultSet.empty()


def _set(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.SetConf)
    if stmt.key is None:
        return ResultSet(columns=["key", "value"], rows=sorted(session.conf.items()))
    if stmt.value is None:
        return ResultSet(
            columns=["key", "value"], rows=[(stmt.key, session.conf.get(stmt.key, "<undefined>"))]
        )
    for prefix in ("spark.sql.catalog.", "iceberg.catalog."):
        if stmt.key.startswith(prefix):
            name, _, key = stmt.key[len(prefix) :].partition(".")
            _set_catalog_key(session, name, key, stmt.value)
            return ResultSet(columns=["key", "value"], rows=[(stmt.key, stmt.value)])
    session.conf[stmt.key] = stmt.value
    return ResultSet(columns=["key", "value"], rows=[(stmt.key, stmt.value)])


def _alter_namespace(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.AlterNamespaceProperties)
    catalog, ns = _namespace_of(session, stmt.namespace)
    cat = session.catalog(catalog)
    if not cat.namespace_exists(ns):
        raise NoSuchNamespaceError(f"Namespace {format_name(ns)} does not exist in catalog {catalog}")
    cat.update_namespace_properties(ns, removals=set(stmt.removals), updates=stmt.updates)
    return ResultSet.empty()


def _describe_namespace(session: SqlSession, stmt: c.Statement) -> ResultSet:
    """Spark's rows: Catalog Name, Namespace Name, Comment, Location, Owner (+ Properties when EXTENDED)."""
    assert isinstance(stmt, c.DescribeNamespace)
    catalog, ns = _namespace_of(session, stmt.namespace)
    cat = session.catalog(catalog)
    if not cat.namespace_exists(ns):
        raise NoSuchNamespaceError(f"Namespace {format_name(ns)} does not exist in catalog {catalog}")
    props = dict(cat.load_namespace_properties(ns))
    rows: list[tuple[object, ...]] = [("Catalog Name", catalog), ("Namespace Name", format_name(ns))]
    for label, key in (("Comment", "comment"), ("Location", "location"), ("Owner", "owner")):
        if key in props:
            rows.append((label, props[key]))
    if stmt.extended:
        rest = {k: v for k, v in sorted(props.items()) if k not in ("comment", "location", "owner")}
        rows.append(("Properties", "(" + ",".join(f"({k},{v})" for k, v in rest.items()) + ")" if rest else ""))
    return ResultSet(columns=["info_name", "info_value"], rows=rows)


def _show_current_namespace(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.ShowCurrentNamespace)
    return ResultSet(columns=["catalog", "namespace"],
                     rows=[(session.current_catalog, format_name(session.namespace()))])


def _reset(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.ResetConf)
    if stmt.key is None:
        session.conf = dict(session.config.spark_conf)
    elif stmt.key in session.config.spark_conf:
        session.conf[stmt.key] = session.config.spark_conf[stmt.key]
    else:
        session.conf.pop(stmt.key, None)
    return ResultSet.empty()


def _set_catalog_key(session: SqlSession, name: str, key: str, value: str) -> None:
    """Define or change a catalog from SQL (``SET iceberg.catalog.c.type=hadoop``, seed chapter 6)."""
    pending = session._pending_catalog_keys.setdefault(name, dict(session.catalog_properties.get(name, {})))
    if key:
        pending[key] = value
    try:
        props = normalize_catalog_properties(name, pending)
    except ValidationError:  # incomplete until its type/warehouse arrive; keep collecting keys
        return
    session.catalog_properties[name] = props
    session._catalogs.pop(name, None)


def _namespace_of(session: SqlSession, name: Name) -> tuple[str, Name]:
    return resolve_namespace(
        name, current_catalog=session.current_catalog, catalogs=session.catalog_properties
    )


def _create_namespace(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.CreateNamespace)
    catalog, ns = _namespace_of(session, stmt.namespace)
    cat = session.catalog(catalog)
    try:
        cat.create_namespace(ns, stmt.properties)
    except NamespaceAlreadyExistsError:
        if not stmt.if_not_exists:
            raise
    return ResultSet.empty()


def _drop_namespace(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.DropNamespace)
    catalog, ns = _namespace_of(session, stmt.namespace)
    cat = session.catalog(catalog)
    if not cat.namespace_exists(ns):
        if stmt.if_exists:
            return ResultSet.empty()
        raise NoSuchNamespaceError(f"Namespace {format_name(ns)} does not exist in catalog {catalog}")
    if stmt.cascade:
        _drop_contents(cat, ns)
    cat.drop_namespace(ns)
    if session.current_catalog == catalog and session.current_namespace == ns:
        session.current_namespace = None
    return ResultSet.empty()


def _drop_contents(cat: NamespaceCatalog, ns: Name) -> None:
    for child in cat.list_namespaces(ns):
        _drop_contents(cat, tuple(child))
        cat.drop_namespace(tuple(child))
    for ident in cat.list_tables(ns):
        cat.drop_table(ident)


def _show_namespaces(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.ShowNamespaces)
    catalog, parent = session.current_catalog, cast(Name, ())
    if stmt.parent is not None:
        if len(stmt.parent) == 1 and stmt.parent[0] in session.catalog_properties:
            catalog = stmt.parent[0]
        else:
            catalog, parent = _namespace_of(session, stmt.parent)
    rows: list[tuple[object, ...]] = [
        (".".join(ns),)
        for ns in session.catalog(catalog).list_namespaces(parent)
        if show_pattern_matches(stmt.pattern, ns[-1] if ns else "")
    ]
    return ResultSet(columns=["namespace"], rows=sorted(rows))


def _show_tables(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.ShowTables)
    if stmt.namespace is None:
        catalog, ns = session.current_catalog, session.namespace()
    else:
        catalog, ns = _namespace_of(session, stmt.namespace)
    rows: list[tuple[object, ...]] = [
        (".".join(ident[:-1]), ident[-1], False)
        for ident in session.catalog(catalog).list_tables(ns)
        if show_pattern_matches(stmt.pattern, ident[-1])
    ]
    return ResultSet(columns=["namespace", "tableName", "isTemporary"], rows=sorted(rows))


def _show_catalogs(session: SqlSession, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.ShowCatalogs)
    rows: list[tuple[object, ...]] = [
        (n,) for n in session.catalog_names if show_pattern_matches(stmt.pattern, n)
    ]
    return ResultSet(columns=["catalog"], rows=rows)


_BUILTIN: dict[type[c.Statement], Handler] = {
    c.UseStmt: _use,
    c.SetConf: _set,
    c.ResetConf: _reset,
    c.ShowCurrentNamespace: _show_current_namespace,
    c.AlterNamespaceProperties: _alter_namespace,
    c.DescribeNamespace: _describe_namespace,
    c.CreateNamespace: _create_namespace,
    c.DropNamespace: _drop_namespace,
    c.ShowNamespaces: _show_namespaces,
    c.ShowTables: _show_tables,
    c.ShowCatalogs: _show_catalogs,
}
