"""Data-file compaction, the metadata half: plan rewrite groups from the current snapshot, commit results.

The data half (reading each group's rows with their deletes applied, writing new files) needs an engine
and lives in :mod:`floe.spark.rewrite_data_files`. The commit is a ``replace`` snapshot from
:class:`floe.table.producers.RewriteFiles` validated from the planned snapshot: it fails if a rewritten
file is gone or if delete files that apply to the rewritten files were committed meanwhile (their rows
would come back). New files keep the planned snapshot's data sequence number, so equality deletes
committed after it still apply to them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from floe.expressions.base import BooleanExpression
from floe.maintenance.binpack import RewriteGroup, RewriteOptions, plan_groups
from floe.scan.table_scan import TableScan
from floe.spec.manifest import DataFile
from floe.table.table import Table

__all__ = ["DataRewritePlan", "RewriteDataFilesResult", "commit_rewrite", "plan_rewrite"]


@dataclass(frozen=True, slots=True)
class RewriteDataFilesResult:
    """Iceberg's ``rewrite_data_files`` output columns."""

    rewritten_data_files_count: int
    added_data_files_count: int
    rewritten_bytes_count: int
    failed_data_files_count: int
    removed_delete_files_count: int = 0


@dataclass(frozen=True, slots=True)
class DataRewritePlan:
    """Groups to rewrite, planned on one snapshot; ``read_scan`` reads their rows (no filter)."""

    table_name: str
    snapshot_id: int | None
    sequence_number: int | None
    options: RewriteOptions
    groups: tuple[RewriteGroup, ...]
    read_scan: TableScan


def plan_rewrite(
    table: Table,
    *,
    where: BooleanExpression | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> DataRewritePlan:
    """Plan compaction of ``table``'s current snapshot (files that may match ``where``, default all).

    Raises:
        ValidationError: invalid options or a filter that does not bind to the schema.
    """
    opts = RewriteOptions.parse(options, table.properties)
    snap = table.metadata.current_snapshot()
    read_scan = TableScan.of(table, snapshot_id=None if snap is None else snap.snapshot_id)
    if snap is None:
        return DataRewritePlan(table.name(), None, None, opts, (), read_scan)
    # Planning honours the filter; reading must not (a chosen file is rewritten with all its rows).
    planning = TableScan.of(table, row_filter=where, snapshot_id=snap.snapshot_id)
    groups = plan_groups(planning.plan_files(), opts)
    seq = snap.sequence_number if table.format_version >= 2 else None
    return DataRewritePlan(table.name(), snap.snapshot_id, seq, opts, tuple(groups), read_scan)


def commit_rewrite(
    table: Table, plan: DataRewritePlan, done: Sequence[tuple[RewriteGroup, Sequence[DataFile]]]
) -> None:
    """Commit the rewritten groups as one ``replace`` snapshot (nothing to commit: no snapshot).

    Raises:
        CommitConflictError: a rewritten file was removed, or deletes for it were added, since the plan.
        CommitFailedError / CommitStateUnknownError: the commit failed (the caller owns the new files).
    """
    if not done:
        return
    op = table.new_rewrite()
    op.validate_from_snapshot(plan.snapshot_id)
    op.rewrite_files(
        [t.data_file for group, _ in done for t in group.tasks],
        [f for _, files in done for f in files],
        data_sequence_number=plan.sequence_number,
    )
    op.commit()
