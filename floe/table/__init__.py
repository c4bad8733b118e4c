"""Tables: the handle, transactions, snapshot producers, snapshot management and schema/spec evolution.

Exports load on first use (PEP 562): catalogs import ``floe.table.operations`` and ``floe.table.identifiers``
at start-up, and that must not drag in the producers, expressions and scan planning behind ``Table``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "DeleteFiles": "floe.table.producers",
    "FastAppend": "floe.table.producers",
    "ManageSnapshots": "floe.table.manage",
    "MergeAppend": "floe.table.producers",
    "Overwrite": "floe.table.producers",
    "ReplacePartitions": "floe.table.producers",
    "ReplaceSortOrder": "floe.table.sort_order_update",
    "RewriteFiles": "floe.table.producers",
    "RowDelta": "floe.table.producers",
    "Table": "floe.table.table",
    "TableOperations": "floe.table.operations",
    "Transaction": "floe.table.transaction",
    "UpdateSchema": "floe.table.update_schema",
    "UpdateSpec": "floe.table.update_spec",
}

__all__ = [
    "DeleteFiles",
    "FastAppend",
    "ManageSnapshots",
    "MergeAppend",
    "Overwrite",
    "ReplacePartitions",
    "ReplaceSortOrder",
    "RewriteFiles",
    "RowDelta",
    "Table",
    "TableOperations",
    "Transaction",
    "UpdateSchema",
    "UpdateSpec",
]

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    """Import an export's module on first access."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'floe.table' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
