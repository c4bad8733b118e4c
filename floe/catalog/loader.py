"""``load_catalog``: a catalog by name, configured in :mod:`floe.config`, with keyword overrides.

Named catalogs resolve through Floe's one configuration (:func:`floe.config.resolve_catalog_properties`):
environment variables ``FLOE_CATALOG__<NAME>__<KEY>`` over the TOML file (``$FLOE_HOME/floe.toml``,
``~/.floe/floe.toml``, ``./floe.toml``) over the embedded SQLite catalog ``floe``; keyword arguments win
over all of them. ``type`` picks the implementation from :data:`CATALOG_TYPES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path

from floe.catalog.base import TYPE, URI, Catalog
from floe.config import resolve_catalog_properties
from floe.errors import UnsupportedError, ValidationError

__all__ = ["CATALOG_TYPES", "catalog_from_properties", "load_catalog", "open_catalog", "register_catalog_type"]

# type name -> "module:Class"; imported on first use so optional backends cost nothing until used.
CATALOG_TYPES: dict[str, str] = {
    "sql": "floe.catalog.sql:SqlCatalog",
    "hadoop": "floe.catalog.hadoop:HadoopCatalog",
    "rest": "floe.catalog.rest:RestCatalog",
}

_SQLITE_FILE = "sqlite:///"


def register_catalog_type(name: str, target: str) -> None:
    """Make ``type=<name>`` load ``target`` (``"package.module:ClassName"``)."""
    CATALOG_TYPES[name.lower()] = target


def _ensure_sqlite_folder(props: Mapping[str, str]) -> None:
    # SQLite creates the database file but not its folder; the embedded catalog lives in $FLOE_HOME,
    # which does not exist before the first command in a fresh directory.
    uri = props.get(URI, "")
    if props.get(TYPE) == "sql" and uri.startswith(_SQLITE_FILE):
        db = uri[len(_SQLITE_FILE) :].split("?", 1)[0]
        if db and db != ":memory:":
            Path(db).parent.mkdir(parents=True, exist_ok=True)


def catalog_from_properties(name: str, properties: Mapping[str, str]) -> Catalog:
    """The catalog ``name`` built from complete, normalized ``properties`` (no configuration is read).

    Raises:
        ValidationError: ``type`` is missing.
        UnsupportedError: the ``type`` is unknown or its module is not installed.
    """
    props = {k: str(v) for k, v in properties.items()}
    kind = props.pop(TYPE, "").lower()
    if not kind:
        raise ValidationError(f"Catalog {name!r} has no type (set {name}.type to hadoop, sql, jdbc or rest)")
    target = CATALOG_TYPES.get(kind)
    if target is None:
        raise UnsupportedError(
            f"Unknown catalog type {kind!r} for {name!r} (known: {', '.join(sorted(CATALOG_TYPES))})"
        )
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        raise UnsupportedError(
            f"Catalog type {kind!r} is not available: {module_name} is not installed"
        ) from e
    _ensure_sqlite_folder({TYPE: kind, **props})
    cls = getattr(module, cls_name)
    catalog: Catalog = cls(name, **props)
    return catalog


def load_catalog(name: str | None = None, **properties: str) -> Catalog:
    """The catalog ``name`` from Floe's configuration; ``properties`` override configured ones.

    ``load_catalog()`` is the default catalog (the embedded SQLite catalog ``floe`` in ``$FLOE_HOME``
    unless the configuration names another). Example:
    ``load_catalog("local", type="sql", uri="sqlite:////tmp/cat.db", warehouse="/tmp/wh")``.

    Raises:
        ValidationError: the catalog is not configured and no properties say which kind it is (the
            message lists the ways to configure it), or its properties are malformed.
        UnsupportedError: the ``type`` is unknown or its module is not installed.
    """
    resolved, props = resolve_catalog_properties(name, properties)
    return catalog_from_properties(resolved, props)


def open_catalog(name: str, properties: Mapping[str, str]) -> Catalog:
    """The catalog ``name`` built from already-resolved ``properties`` (e.g. ``FloeConfig.catalogs``).

    Unlike :func:`load_catalog` this reads no configuration: the properties are complete. A local SQLite
    catalog's folder is created first. Importing this module is cheap: the implementation a ``type`` names
    (SQLAlchemy for ``sql``) is imported on first use.
    """
    return catalog_from_properties(name, properties)
