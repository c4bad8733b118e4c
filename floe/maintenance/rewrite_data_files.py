"""Data-file compaction, the metadata half: plan rewrite groups from the current snapshot, commit results.

The data half (reading each group's rows with their deletes applied, writing new files) needs an engine
and lives in :mod:`floe.spark.procedures.rewrite_data_files`. The commit is a ``replace`` snapshot from
:class:`floe.table.producers.RewriteFiles` validated from the planned snapshot: it fails if a rewritten
file is gone or if delete files that apply to the rewritten files were committed meanwhile (their rows
would come back). As in Java (``RewriteDataFilesCommitManager``): new files keep the planned snapshot's
data sequence number unless ``use-starting-sequence-number`` is false, so equality deletes committed after
it still apply to them; deletion vectors of rewritten files go with them (counted as removed delete
files); and delete files older than every remaining data file are dropped, as Java's merging commits do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from floe.errors import UnsupportedError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.maintenance.binpack import RewriteGroup, plan_groups
from floe.maintenance.dangling_deletes import live_entries
from floe.maintenance.rewrite_options import STRATEGIES, RewriteOptions
from floe.scan.table_scan import TableScan
from floe.spec.manifest import DataFile, FileContent, FileFormat
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
    strategy: str = "binpack",
) -> DataRewritePlan:
    """Plan compaction of ``table``'s current snapshot (files that may match ``where``, default all).

    Raises:
        ValidationError: invalid options, an unknown strategy or a filter that does not bind to the schema.
        UnsupportedError: ``output-spec-id`` names a spec other than the table's current one.
    """
    if strategy not in STRATEGIES:
        raise ValidationError(f"Unsupported strategy {strategy!r} for table {table.name()}: expected binpack or sort")
    opts = RewriteOptions.parse(options, table.properties, strategy=strategy)
    spec = table.metadata.spec()
    if opts.output_spec_id is not None:
        if table.metadata.spec_by_id(opts.output_spec_id) is None:
            raise ValidationError(
                f"Cannot use output spec id {opts.output_spec_id} because table {table.name()} does not "
                "contain a reference to this spec-id"
            )
        if opts.output_spec_id != spec.spec_id:
            # Floe's writer partitions new files by the current spec only.
            raise UnsupportedError(
                f"rewrite_data_files of table {table.name()} cannot write output-spec-id {opts.output_spec_id}: "
                f"only the current spec {spec.spec_id} is supported"
            )
    snap = table.metadata.current_snapshot()
    read_scan = TableScan.of(table, snapshot_id=None if snap is None else snap.snapshot_id)
    if snap is None:
        return DataRewritePlan(table.name(), None, None, opts, (), read_scan)
    # Planning honours the filter; reading must not (a chosen file is rewritten with all its rows).
    planning = TableScan.of(table, row_filter=where, snapshot_id=snap.snapshot_id)
    groups = plan_groups(
        planning.plan_files(), opts, current_spec_id=spec.spec_id, current_spec_fields=len(spec.fields)
    )
    seq = snap.sequence_number if table.format_version >= 2 else None
    return DataRewritePlan(table.name(), snap.snapshot_id, seq, opts, tuple(groups), read_scan)


def _obsolete_deletes(table: Table, rewritten: set[str], new_sequence_number: int | None) -> list[DataFile]:
    # Java's MergingSnapshotProducer.dropDeleteFilesOlderThan: a delete older than every live data file
    # after this commit applies to nothing.
    snap = table.metadata.current_snapshot()
    if snap is None or table.format_version < 2:
        return []
    entries = live_entries(table, snap)
    seqs = [
        e.sequence_number or 0
        for e in entries
        if e.data_file.content == FileContent.DATA and e.data_file.file_path not in rewritten
    ]
    seqs.append(table.metadata.next_sequence_number if new_sequence_number is None else new_sequence_number)
    lowest = min(seqs)
    return [
        e.data_file
        for e in entries
        if e.data_file.content != FileContent.DATA and (e.sequence_number or 0) < lowest
    ]


def commit_rewrite(
    table: Table, plan: DataRewritePlan, done: Sequence[tuple[RewriteGroup, Sequence[DataFile]]]
) -> int:
    """Commit the rewritten groups as one ``replace`` snapshot (nothing to commit: no snapshot).

    Returns:
        How many deletion vectors went with their rewritten data files (``removed_delete_files_count``).

    Raises:
        CommitConflictError: a rewritten file was removed, or deletes for it were added, since the plan.
        CommitFailedError / CommitStateUnknownError: the commit failed (the caller owns the new files).
    """
    if not done:
        return 0
    seq = plan.sequence_number if plan.options.use_starting_sequence_number else None
    rewritten = [t.data_file for group, _ in done for t in group.tasks]
    dvs = {
        e.data_file.file_path: e.data_file
        for group, _ in done
        for t in group.tasks
        for e in t.deletes
        if e.data_file.file_format == FileFormat.PUFFIN
    }
    op = table.new_rewrite()
    op.validate_from_snapshot(plan.snapshot_id)
    op.rewrite_files(rewritten, [f for _, files in done for f in files], data_sequence_number=seq)
    for dv in dvs.values():
        op.delete_file(dv)
    for f in _obsolete_deletes(table, {f.file_path for f in rewritten}, seq):
        if f.file_path not in dvs:
            op.delete_file(f)
    op.commit()
    return len(dvs)
