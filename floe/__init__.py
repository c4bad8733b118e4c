"""Floe: Apache Iceberg tables in Python, with Apache Spark moving the data.

Start with :func:`load_catalog` (``type=sql|hadoop``, ``uri``, ``warehouse``) or open a table folder with
:func:`load_table`; schemas are :class:`Schema` of :mod:`floe.types` fields (or pyarrow schemas).
"""

from typing import TYPE_CHECKING, Any

# Exports load on first use (PEP 562): ``import floe`` stays cheap for the CLI, which needs only a few
# modules per command; ``floe.Table`` etc. import their module when first touched.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "errors": ("floe.errors", None),
    "types": ("floe.spec.types", None),
    "Catalog": ("floe.catalog", "Catalog"),
    "HadoopCatalog": ("floe.catalog", "HadoopCatalog"),
    "SqlCatalog": ("floe.catalog", "SqlCatalog"),
    "load_catalog": ("floe.catalog", "load_catalog"),
    "load_table": ("floe.catalog", "load_table"),
    "health": ("floe.health", "health"),
    "DataFile": ("floe.spec.manifest", "DataFile"),
    "FileContent": ("floe.spec.manifest", "FileContent"),
    "FileFormat": ("floe.spec.manifest", "FileFormat"),
    "PartitionField": ("floe.spec.partitioning", "PartitionField"),
    "PartitionSpec": ("floe.spec.partitioning", "PartitionSpec"),
    "PartitionSpecBuilder": ("floe.spec.partitioning", "PartitionSpecBuilder"),
    "Schema": ("floe.spec.schema", "Schema"),
    "SortOrder": ("floe.spec.sort_order", "SortOrder"),
    "SortOrderBuilder": ("floe.spec.sort_order", "SortOrderBuilder"),
    "NestedField": ("floe.spec.types", "NestedField"),
    "Table": ("floe.table", "Table"),
    "Transaction": ("floe.table", "Transaction"),
}

if TYPE_CHECKING:
    from floe import errors
    from floe.catalog import Catalog, HadoopCatalog, SqlCatalog, load_catalog, load_table
    from floe.health import health
    from floe.spec import types
    from floe.spec.manifest import DataFile, FileContent, FileFormat
    from floe.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
    from floe.spec.schema import Schema
    from floe.spec.sort_order import SortOrder, SortOrderBuilder
    from floe.spec.types import NestedField
    from floe.table import Table, Transaction


def __getattr__(name: str) -> Any:
    """Import an export on first access (``floe.Table``, ``from floe import load_catalog``)."""
    try:
        module_name, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'floe' has no attribute {name!r}") from None
    import importlib

    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__version__ = "0.1.0"

__all__ = [
    "Catalog",
    "DataFile",
    "FileContent",
    "FileFormat",
    "HadoopCatalog",
    "NestedField",
    "PartitionField",
    "PartitionSpec",
    "PartitionSpecBuilder",
    "Schema",
    "SortOrder",
    "SortOrderBuilder",
    "SqlCatalog",
    "Table",
    "Transaction",
    "__version__",
    "errors",
    "health",
    "load_catalog",
    "load_table",
    "types",
]
