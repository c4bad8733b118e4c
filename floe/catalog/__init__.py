"""Catalogs: the contract, the SQL and Hadoop implementations, loading by name and opening tables by path."""

from floe.catalog.base import Catalog, PropertiesUpdateSummary
from floe.catalog.hadoop import HadoopCatalog
from floe.catalog.loader import load_catalog, register_catalog_type
from floe.catalog.location import load_table
from floe.catalog.sql import SqlCatalog

__all__ = [
    "Catalog",
    "HadoopCatalog",
    "PropertiesUpdateSummary",
    "SqlCatalog",
    "load_catalog",
    "load_table",
    "register_catalog_type",
]
