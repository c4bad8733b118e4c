"""Catalogs: the contract, the SQL and Hadoop implementations, loading by name and opening tables by path.

Exports load on first use (PEP 562): ``from floe.catalog import HadoopCatalog`` must not import SQLAlchemy
(the SQL catalog's driver), and ``load_catalog`` imports only the implementation its ``type`` names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Catalog": "floe.catalog.base",
    "HadoopCatalog": "floe.catalog.hadoop",
    "PropertiesUpdateSummary": "floe.catalog.base",
    "SqlCatalog": "floe.catalog.sql",
    "load_catalog": "floe.catalog.loader",
    "load_table": "floe.catalog.location",
    "register_catalog_type": "floe.catalog.loader",
}

__all__ = [
    "Catalog",
    "HadoopCatalog",
    "PropertiesUpdateSummary",
    "SqlCatalog",
    "load_catalog",
    "load_table",
    "register_catalog_type",
]

if TYPE_CHECKING:
    from floe.catalog.base import Catalog, PropertiesUpdateSummary
    from floe.catalog.hadoop import HadoopCatalog
    from floe.catalog.loader import load_catalog, register_catalog_type
    from floe.catalog.location import load_table
    from floe.catalog.sql import SqlCatalog


def __getattr__(name: str) -> Any:
    """Import an export's module on first access."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'floe.catalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
