"""``load_catalog``: a catalog by name and properties, with names configurable outside the code.

Properties come from, in increasing priority: the config file (``$FLOE_CONFIG`` or ``~/.floe.yaml``, a
``catalog:`` mapping of names to properties), environment variables ``FLOE_CATALOG__<NAME>__<KEY>``
(``__`` inside the key becomes ``.``, ``_`` becomes ``-``: ``FLOE_CATALOG__PROD__S3__ENDPOINT`` ->
``s3.endpoint``), and the keyword arguments. ``type`` picks the implementation; without it, a ``uri``
naming a database means ``sql``, an ``http(s)`` uri means ``rest``, and a bare ``warehouse`` means ``hadoop``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from floe.catalog.base import TYPE, URI, WAREHOUSE, Catalog
from floe.errors import UnsupportedError, ValidationError

__all__ = ["CATALOG_TYPES", "catalog_properties", "load_catalog", "register_catalog_type"]

# type name -> "module:Class"; imported on first use so optional backends cost nothing until used.
CATALOG_TYPES: dict[str, str] = {
    "sql": "floe.catalog.sql:SqlCatalog",
    "hadoop": "floe.catalog.hadoop:HadoopCatalog",
    "rest": "floe.catalog.rest:RestCatalog",
}

_ENV_PREFIX = "FLOE_CATALOG__"
_SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql")


def register_catalog_type(name: str, target: str) -> None:
    """Make ``type=<name>`` load ``target`` (``"package.module:ClassName"``)."""
    CATALOG_TYPES[name.lower()] = target


def _config_file() -> dict[str, dict[str, str]]:
    path = Path(os.environ.get("FLOE_CONFIG", Path.home() / ".floe.yaml"))
    if not path.is_file():
        return {}
    with path.open() as f:
        doc = yaml.safe_load(f) or {}
    catalogs = doc.get("catalog", {}) if isinstance(doc, dict) else {}
    return {str(k).lower(): {str(pk): str(pv) for pk, pv in (v or {}).items()} for k, v in catalogs.items()}


def _env(name: str) -> dict[str, str]:
    prefix = f"{_ENV_PREFIX}{name.upper()}__"
    out: dict[str, str] = {}
    for key, value in os.environ.items():
        if key.startswith(prefix):
            out[key[len(prefix) :].lower().replace("__", ".").replace("_", "-")] = value
    return out


def catalog_properties(name: str, properties: Mapping[str, str] | None = None) -> dict[str, str]:
    """The merged properties of catalog ``name`` (config file < environment < ``properties``)."""
    merged = dict(_config_file().get(name.lower(), {}))
    merged.update(_env(name))
    merged.update({k: str(v) for k, v in (properties or {}).items()})
    return merged


def _infer_type(props: Mapping[str, str]) -> str | None:
    if TYPE in props:
        return props[TYPE].lower()
    uri = props.get(URI, "")
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower() if uri else ""
    if scheme in _SQL_SCHEMES:
        return "sql"
    if scheme in ("http", "https"):
        return "rest"
    if WAREHOUSE in props and not uri:
        return "hadoop"
    return None


def load_catalog(name: str = "default", **properties: str) -> Catalog:
    """A catalog named ``name``; ``properties`` override configured ones.

    Example: ``load_catalog("local", type="sql", uri="sqlite:////tmp/cat.db", warehouse="/tmp/wh")``.

    Raises:
        ValidationError: no properties say which kind of catalog this is (the message lists the options).
        UnsupportedError: the ``type`` is unknown or its module is not installed.
    """
    props = catalog_properties(name, properties)
    kind = _infer_type(props)
    if kind is None:
        raise ValidationError(
            f"Cannot load catalog {name!r}: no 'type', 'uri' or 'warehouse' property. Pass them as keyword "
            f"arguments, set {_ENV_PREFIX}{name.upper()}__TYPE=..., or add it under 'catalog:' in ~/.floe.yaml"
        )
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
    cls = getattr(module, cls_name)
    props.pop(TYPE, None)
    catalog: Catalog = cls(name, **props)
    return catalog
