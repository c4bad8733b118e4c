"""Table maintenance: expire snapshots, remove orphan files, rewrite manifests, plan data-file compaction.

The Spark half of compaction (reading groups, writing files) is :mod:`floe.spark.procedures.rewrite_data_files`;
everything here is metadata: planning, commits and file cleanup.
"""

from __future__ import annotations

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
