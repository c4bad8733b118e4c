"""Table maintenance: expire snapshots, remove orphan files, rewrite manifests, plan data-file compaction.

The Spark half of compaction (reading groups, writing files) is :mod:`floe.spark.procedures.rewrite_data_files`;
everything here is metadata: planning, commits and file cleanup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Exports load on first use (PEP 562): pure planners such as floe.maintenance.expire_plan are imported by the
# health check on the CLI's fast path, which must not pay for the table layer the commit helpers bring.
_EXPORTS: dict[str, str] = {
    "DataRewritePlan": "floe.maintenance.rewrite_data_files",
    "ExpireSnapshotsResult": "floe.maintenance.expire_snapshots",
    "ExpiryPlan": "floe.maintenance.expire_plan",
    "OrphanFilesResult": "floe.maintenance.orphan_files",
    "RewriteDataFilesResult": "floe.maintenance.rewrite_data_files",
    "RewriteManifestsResult": "floe.maintenance.rewrite_manifests",
    "commit_rewrite": "floe.maintenance.rewrite_data_files",
    "expire_snapshots": "floe.maintenance.expire_snapshots",
    "plan_expiry": "floe.maintenance.expire_plan",
    "plan_rewrite": "floe.maintenance.rewrite_data_files",
    "remove_orphan_files": "floe.maintenance.orphan_files",
    "rewrite_manifests": "floe.maintenance.rewrite_manifests",
}

if TYPE_CHECKING:
    from floe.maintenance.expire_plan import ExpiryPlan, plan_expiry
    from floe.maintenance.expire_snapshots import ExpireSnapshotsResult, expire_snapshots
    from floe.maintenance.orphan_files import OrphanFilesResult, remove_orphan_files
    from floe.maintenance.rewrite_data_files import (
        DataRewritePlan,
        RewriteDataFilesResult,
        commit_rewrite,
        plan_rewrite,
    )
    from floe.maintenance.rewrite_manifests import RewriteManifestsResult, rewrite_manifests


def __getattr__(name: str) -> Any:
    """Import an export on first access (``from floe.maintenance import expire_snapshots``)."""
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'floe.maintenance' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "DataRewritePlan",
    "ExpireSnapshotsResult",
    "ExpiryPlan",
    "OrphanFilesResult",
    "RewriteDataFilesResult",
    "RewriteManifestsResult",
    "commit_rewrite",
    "expire_snapshots",
    "plan_expiry",
    "plan_rewrite",
    "remove_orphan_files",
    "rewrite_manifests",
]
