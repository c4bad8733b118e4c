"""Floe: Apache Iceberg tables in Python, with Apache Spark moving the data.

Start with :func:`load_catalog` (``type=sql|hadoop``, ``uri``, ``warehouse``) or open a table folder with
:func:`load_table`; schemas are :class:`Schema` of :mod:`floe.types` fields (or pyarrow schemas).
"""

from floe import errors
from floe.catalog import Catalog, HadoopCatalog, SqlCatalog, load_catalog, load_table
from floe.spec import types
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionField, PartitionSpec, PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.sort_order import SortOrder, SortOrderBuilder
from floe.spec.types import NestedField
from floe.table import Table, Transaction

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "errors",
    "types",
    "load_catalog",
    "load_table",
    "Catalog",
    "SqlCatalog",
    "HadoopCatalog",
    "Table",
    "Transaction",
    "Schema",
    "NestedField",
    "PartitionSpec",
    "PartitionField",
    "PartitionSpecBuilder",
    "SortOrder",
    "SortOrderBuilder",
    "DataFile",
    "FileContent",
    "FileFormat",
]
