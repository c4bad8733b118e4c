"""Equality deletes converted on a schedule by the writers that produce them (changelogs, upserts, streams).

A table fed by changes gains equality delete files with every commit, and each one makes reads join. With
the write option ``rewrite-equality-deletes.commit-count`` (or the table property
``write.rewrite-equality-deletes.commit-count``) set to N > 0, a change or upsert commit is followed by
``rewrite_equality_deletes`` once N commits that added equality deletes have landed on main since the
last conversion (Flink's table maintenance schedules on a commit count the same way). The count is read
from the table's history (conversions are marked in their summaries), so it survives restarts and is
shared by every writer of the table. The writer's own commit is never undone by the conversion: a
conversion that keeps conflicting with concurrent commits is logged and tried again after the next commit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pyspark.sql import SparkSession

from floe.errors import CommitConflictError, ValidationError
from floe.maintenance.equality_delete_conversion import CONVERSION_SUMMARY_KEY
from floe.spark.procedures.rewrite_equality_deletes import rewrite_equality_deletes
from floe.spec import properties as P
from floe.table.table import Table

__all__ = ["SCHEDULE_OPTION", "commits_since_conversion", "run_scheduled_conversion", "schedule_commit_count"]

SCHEDULE_OPTION = "rewrite-equality-deletes.commit-count"
_LOG = logging.getLogger("floe.spark.streaming")


def schedule_commit_count(table: Table, options: Mapping[str, str] | None = None, *, branch: str | None = None) -> int:
    """N from the write option, else the table property (0: no schedule).

    Raises:
        ValidationError: not an integer >= 0, or a schedule on a write to a branch (conversions commit to
            main only).
    """
    source, raw = next(
        ((f"write option {k}", v) for k, v in (options or {}).items() if k.lower() == SCHEDULE_OPTION),
        (f"table property {P.REWRITE_EQUALITY_DELETES_COMMIT_COUNT}", table.properties.get(P.REWRITE_EQUALITY_DELETES_COMMIT_COUNT)),
    )
    if raw is None:
        return 0
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValidationError(
            f"Write to table {table.name()}: {source} must be an integer >= 0 (commits between conversions of "
            f"equality deletes; 0 turns them off), got {raw!r}"
        )
    if value and branch is not None:
        raise ValidationError(
            f"Write to table {table.name()} branch {branch}: {source} converts equality deletes on main only; "
            "unset it for writes to a branch"
        )
    return value


def commits_since_conversion(table: Table, limit: int) -> int:
    """Commits on main's history that added equality delete files since the newest conversion (counted up
    to ``limit``)."""
    count = 0
    snapshot = table.current_snapshot()
    while snapshot is not None and count < limit:
        summary: Mapping[str, str] = snapshot.summary or {}
        if summary.get(CONVERSION_SUMMARY_KEY) == "true":
            break
        if int(summary.get("added-equality-delete-files", "0") or 0) > 0:
            count += 1
        parent = snapshot.parent_snapshot_id
        snapshot = None if parent is None else table.metadata.snapshot_by_id(parent)
    return count


def run_scheduled_conversion(table: Table, spark: SparkSession, every: int) -> bool:
    """Convert ``table``'s equality deletes when ``every`` > 0 commits with equality deletes have landed since
    the last conversion; whether it ran. A conversion still conflicting after its retries is logged (the
    next commit tries again); other errors are raised."""
    if every <= 0:
        return False
    table.refresh()
    if commits_since_conversion(table, every) < every:
        return False
    try:
        rewrite_equality_deletes(table, spark=spark)
    except CommitConflictError as e:
        _LOG.warning("Scheduled rewrite_equality_deletes of %s conflicted; it runs again after the next commit: %s", table.name(), e)
        return False
    return True
