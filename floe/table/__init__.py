"""Tables: the handle, transactions, snapshot producers, snapshot management and schema/spec evolution."""

from floe.table.manage import ManageSnapshots
from floe.table.operations import TableOperations
from floe.table.producers import (
    DeleteFiles,
    FastAppend,
    MergeAppend,
    Overwrite,
    ReplacePartitions,
    RewriteFiles,
    RowDelta,
)
from floe.table.sort_order_update import ReplaceSortOrder
from floe.table.table import Table
from floe.table.transaction import Transaction
from floe.table.update_schema import UpdateSchema
from floe.table.update_spec import UpdateSpec

__all__ = [
    "Table",
    "Transaction",
    "TableOperations",
    "FastAppend",
    "MergeAppend",
    "Overwrite",
    "ReplacePartitions",
    "DeleteFiles",
    "RewriteFiles",
    "RowDelta",
    "ManageSnapshots",
    "UpdateSchema",
    "UpdateSpec",
    "ReplaceSortOrder",
]
