"""Table health: scores, findings and the CALL statements that fix them, from metadata alone (no Spark).

``floe.health(table)`` returns a :class:`HealthReport`; ``floe health TABLE`` prints one, ``floe serve``
shows them under ``/ui``, and :func:`floe.health.history.record` appends a report's summary to an Iceberg
table so trends can be plotted.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from floe.health.check import DEFAULT_RECENT_WINDOW_MS, analyze, health
from floe.health.report import (
    DeleteStats,
    Finding,
    HealthReport,
    ManifestPoint,
    ManifestStats,
    PartitionHealth,
    RefHealth,
    ScoreParts,
    SizeBin,
    SkewStats,
    SnapshotPoint,
    SnapshotStats,
    WriterActivity,
)

__all__ = [
    "DEFAULT_RECENT_WINDOW_MS",
    "DeleteStats",
    "Finding",
    "HealthReport",
    "ManifestPoint",
    "ManifestStats",
    "PartitionHealth",
    "RefHealth",
    "ScoreParts",
    "SizeBin",
    "SkewStats",
    "SnapshotPoint",
    "SnapshotStats",
    "WriterActivity",
    "analyze",
    "health",
]


class _CallableModule(types.ModuleType):
    """``floe.health(table)`` keeps working after ``import floe.health`` binds the package to that name."""

    def __call__(self, table: Any, **options: Any) -> HealthReport:
        return health(table, **options)


sys.modules[__name__].__class__ = _CallableModule
