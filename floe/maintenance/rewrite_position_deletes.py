"""Position delete compaction, the metadata half (Java's ``RewritePositionDeleteFilesSparkAction``).

The current snapshot's position delete files (deletion vectors excluded) are planned like data files
(:func:`floe.maintenance.binpack.plan_groups`, Java's ``BinPackRewritePositionDeletePlanner`` rules:
size outside ``[min, max]`` picks a file, enough files or bytes picks a group; ``rewrite-all`` takes all)
with ``write.delete.target-file-size-bytes`` (64 MB) as the default target. The data half rewrites each
group's rows without those whose data file is gone (:mod:`floe.spark.procedures.rewrite_position_deletes`), one
delete file per data file at ``write.delete.granularity=file`` (as Java's rewrite writes them), else per
partition; the commit is one ``replace`` snapshot validated from the planned snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.errors import ValidationError
from floe.maintenance.binpack import RewriteGroup, plan_groups
from floe.maintenance.dangling_deletes import live_entries
from floe.maintenance.rewrite_options import (
    MAX_CONCURRENT_GROUPS,
    MAX_FILE_SIZE,
    MAX_GROUP_SIZE,
    MIN_FILE_SIZE,
    MIN_INPUT_FILES,
    PARTIAL_PROGRESS,
    PARTIAL_PROGRESS_MAX_COMMITS,
    REWRITE_ALL,
    REWRITE_JOB_ORDER,
    TARGET_FILE_SIZE,
    RewriteOptions,
)
from floe.scan.tasks import FileScanTask
from floe.spec import properties as P
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestContent, ManifestFile
from floe.spec.table_metadata import TableMetadata
from floe.table.producers import RewriteFiles
from floe.table.table import Table

__all__ = [
    "OPTION_NAMES",
    "PositionDeleteRewritePlan",
    "RewritePositionDeletesResult",
    "commit_position_delete_rewrite",
    "partition_key",
    "plan_position_delete_rewrite",
]

OPTION_NAMES = frozenset(
    {
        TARGET_FILE_SIZE, MIN_FILE_SIZE, MAX_FILE_SIZE, MIN_INPUT_FILES, REWRITE_ALL, MAX_GROUP_SIZE,
        PARTIAL_PROGRESS, PARTIAL_PROGRESS_MAX_COMMITS, REWRITE_JOB_ORDER, MAX_CONCURRENT_GROUPS,
    }
)
_DELETE_TARGET = "write.delete.target-file-size-bytes"
_DELETE_TARGET_DEFAULT = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RewritePositionDeletesResult:
    """Iceberg's ``rewrite_position_delete_files`` output columns."""

    rewritten_delete_files_count: int
    added_delete_files_count: int
    rewritten_bytes_count: int
    added_bytes_count: int


@dataclass(frozen=True, slots=True)
class PositionDeleteRewritePlan:
    """Groups of delete files (as tasks whose ``data_file`` is the delete file), the live data paths, and the
    live data files of each (spec id, partition) holding a delete file (a file-granularity rewrite writes
    one delete file per data file of its group's partition)."""

    snapshot_id: int | None
    options: RewriteOptions
    groups: tuple[RewriteGroup, ...]
    live_data_paths: frozenset[str]
    data_files_by_partition: Mapping[tuple[int, tuple[Any, ...]], tuple[DataFile, ...]] = field(default_factory=dict)


def plan_position_delete_rewrite(table: Table, *, options: Mapping[str, Any] | None = None) -> PositionDeleteRewritePlan:
    """Plan the rewrite of ``table``'s position delete files.

    Raises:
        ValidationError: an option Java does not take for this action, or an invalid value.
    """
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    unknown = sorted(set(opts) - OPTION_NAMES)
    if unknown:
        raise ValidationError(
            f"Cannot use options [{', '.join(unknown)}] for rewrite_position_delete_files of table "
            f"{table.name()}: they are not supported (supported: {', '.join(sorted(OPTION_NAMES))})"
        )
    target = P.property_int(table.properties, _DELETE_TARGET, _DELETE_TARGET_DEFAULT)
    parsed = RewriteOptions.parse(opts, {P.WRITE_TARGET_FILE_SIZE_BYTES: str(target)})
    snap = table.metadata.current_snapshot()
    if snap is None:
        return PositionDeleteRewritePlan(None, parsed, (), frozenset())
    entries = live_entries(table, snap)
    live = frozenset(e.data_file.file_path for e in entries if e.data_file.content == FileContent.DATA)
    tasks = [
        FileScanTask(e.data_file, e.sequence_number or 0)
        for e in entries
        if e.data_file.content == FileContent.POSITION_DELETES and e.data_file.file_format != FileFormat.PUFFIN
    ]
    spec = table.metadata.spec()
    groups = plan_groups(tasks, parsed, current_spec_id=spec.spec_id, current_spec_fields=len(spec.fields))
    with_deletes = {partition_key(t.data_file) for g in groups for t in g.tasks}
    by_partition: dict[tuple[int, tuple[Any, ...]], list[DataFile]] = {}
    for e in entries:
        if e.data_file.content == FileContent.DATA and partition_key(e.data_file) in with_deletes:
            by_partition.setdefault(partition_key(e.data_file), []).append(e.data_file)
    return PositionDeleteRewritePlan(
        snap.snapshot_id, parsed, tuple(groups), live, {k: tuple(v) for k, v in by_partition.items()}
    )


def partition_key(f: DataFile) -> tuple[int, tuple[Any, ...]]:
    """The (spec id, partition) by which a position delete file applies to data files (spec "Scan Planning")."""
    return (f.spec_id, tuple(f.partition))


def commit_position_delete_rewrite(
    table: Table, plan: PositionDeleteRewritePlan, done: Sequence[tuple[RewriteGroup, Sequence[DataFile]]]
) -> None:
    """Swap the groups' delete files for the rewritten ones in one ``replace`` snapshot.

    Raises:
        CommitConflictError: a rewritten delete file was removed since the plan.
    """
    if not done:
        return
    op = _DeleteRewrite(table)
    op.validate_from_snapshot(plan.snapshot_id)
    for group, files in done:
        # Java keeps the group's highest rewritten sequence number, so a later data compaction can still
        # drop these deletes as older than every data file (a fresh number would keep them alive).
        seq = max(t.data_sequence_number for t in group.tasks)
        for t in group.tasks:
            op.delete_file(t.data_file)
        for f in files:
            op.add_file(f)
            op.sequence_numbers[f.file_path] = seq
    op.commit()


class _DeleteRewrite(RewriteFiles):
    """A rewrite whose added delete files keep given data sequence numbers (Java's ``addFile(file, seq)``)."""

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self.sequence_numbers: dict[str, int] = {}

    def _write_new_files(
        self,
        base: TableMetadata,
        files: Iterable[DataFile],
        content: ManifestContent,
        *,
        data_sequence_number: int | None = None,
    ) -> list[ManifestFile]:
        if content != ManifestContent.DELETES:
            return super()._write_new_files(base, files, content, data_sequence_number=data_sequence_number)
        by_seq: dict[int | None, list[DataFile]] = {}
        for f in files:
            by_seq.setdefault(self.sequence_numbers.get(f.file_path), []).append(f)
        out: list[ManifestFile] = []
        for seq, group in by_seq.items():  # a loop, not a comprehension: zero-argument super() needs it
            out += super()._write_new_files(base, group, content, data_sequence_number=seq)
        return out
