"""Equality deletes converted into position deletes, the metadata half (``rewrite_equality_deletes``).

Spec "Scan Planning": an equality delete applies to the data files whose data sequence number is strictly
lower than its own, in the same spec and partition, or to every such file when it was written with an
unpartitioned spec (a global delete). Converting one therefore means finding, in exactly those files, the
rows its key matches (null-safe), and naming them by position; the delete file is then removed in the same
row delta. The new position deletes (or deletion vectors on v3) name rows by file and position, so their
own sequence number (the new snapshot's, above every file they name) never reaches rows of files added
later: rows written at or after the equality delete stay untouched because they are never named.

This module plans (which delete files, which data files, in batches of partitions per key) and commits;
:mod:`floe.spark.procedures.rewrite_equality_deletes` finds the positions with Spark. A ``where`` filter
selects partitions: it may name only partition source columns, and global deletes (which apply to every
partition) are converted only without one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from floe.errors import CommitConflictError, ValidationError
from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.expressions.binding import bind
from floe.expressions.parser import parse_filter
from floe.expressions.residual import PartitionEvaluator
from floe.maintenance.dangling_deletes import live_entries
from floe.scan.delete_index import DeleteFileIndex
from floe.scan.pruning import referenced_field_ids
from floe.scan.tasks import FileScanTask
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
)
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.table.producers import RowDelta
from floe.table.table import Table
from floe.table.validation import changed_files_since, snapshots_since

__all__ = [
    "CONVERSION_SUMMARY_KEY",
    "MAX_GROUP_SIZE",
    "ConversionBatch",
    "EqualityConversionPlan",
    "RewriteEqualityDeletesResult",
    "commit_conversion",
    "plan_equality_conversion",
]

MAX_GROUP_SIZE = "max-file-group-size-bytes"  # data bytes read by one batch (one Spark job)
_MAX_GROUP_SIZE_DEFAULT = 100 * 1024**3  # Java's default group size for rewrites
OPTION_NAMES = frozenset({MAX_GROUP_SIZE})
# Marks the snapshots this procedure commits (a schedule counts commits since the last one).
CONVERSION_SUMMARY_KEY = "floe.rewrite-equality-deletes"
_ALL_OPERATIONS = frozenset({Operation.APPEND, Operation.OVERWRITE, Operation.REPLACE, Operation.DELETE})


@dataclass(frozen=True, slots=True)
class RewriteEqualityDeletesResult:
    """The procedure's output columns."""

    rewritten_delete_files_count: int  # equality delete files removed
    added_delete_files_count: int  # position delete files or deletion vectors added
    removed_delete_files_count: int  # earlier position deletes / vectors merged into the added ones
    rewritten_bytes_count: int  # bytes of the equality delete files removed


@dataclass(frozen=True, slots=True)
class ConversionBatch:
    """Equality delete files of one key (``equality_ids``) and the data files they apply to.

    Each task's ``deletes`` hold the data file's position deletes (or vector) and the batch's equality
    deletes that apply to it, nothing else: the read keeps the rows those match, minus rows already deleted.
    """

    equality_ids: tuple[int, ...]
    deletes: tuple[ManifestEntry, ...]
    tasks: tuple[FileScanTask, ...]


@dataclass(frozen=True, slots=True)
class EqualityConversionPlan:
    """The snapshot planned from and its batches (each converted and committed on its own)."""

    snapshot_id: int | None
    batches: tuple[ConversionBatch, ...]


def _options(table: Table, options: Mapping[str, Any] | None) -> int:
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    unknown = sorted(set(opts) - OPTION_NAMES)
    if unknown:
        raise ValidationError(
            f"Cannot use options [{', '.join(unknown)}] for rewrite_equality_deletes of table {table.name()}: "
            f"they are not supported (supported: {', '.join(sorted(OPTION_NAMES))})"
        )
    raw = opts.get(MAX_GROUP_SIZE)
    if raw is None:
        return _MAX_GROUP_SIZE_DEFAULT
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValidationError(
            f"rewrite_equality_deletes of table {table.name()}: {MAX_GROUP_SIZE} must be a positive integer, got {raw!r}"
        )
    return value


def _partition_filter(table: Table, where: BooleanExpression | str | None) -> Callable[[DataFile], bool] | None:
    """Whether a partitioned equality delete's partition may match ``where`` (None: no filter).

    Raises:
        ValidationError: the filter names a column no partition spec is built on (it could not select
            partitions, and a delete applies to whole partitions).
    """
    if where is None:
        return None
    expr = parse_filter(where) if isinstance(where, str) else where
    if isinstance(expr, AlwaysTrue):
        return None
    meta, schema = table.metadata, table.schema()
    sources = {s for spec in meta.partition_specs for f in spec.fields for s in f.source_ids}
    named = referenced_field_ids(bind(schema, expr, False))
    outside = sorted(named - sources)
    if outside:
        column = schema.find_column_name(outside[0]) or str(outside[0])
        raise ValidationError(
            f"rewrite_equality_deletes of table {table.name()}: where may name only partition source columns "
            f"(equality deletes apply to whole partitions); {column} is not one"
        )
    evaluators: dict[int, PartitionEvaluator] = {}

    def matches(f: DataFile) -> bool:
        ev = evaluators.get(f.spec_id)
        if ev is None:
            spec = meta.spec_by_id(f.spec_id)
            assert spec is not None
            ev = PartitionEvaluator(spec, schema, expr, case_sensitive=False, partition_type=meta.partition_type(f.spec_id))
            evaluators[f.spec_id] = ev
        return ev.eval(f.partition)

    return matches


def plan_equality_conversion(
    table: Table,
    *,
    where: BooleanExpression | str | None = None,
    options: Mapping[str, Any] | None = None,
    snapshot: Snapshot | None = None,
) -> EqualityConversionPlan:
    """Plan the conversion of the live equality deletes of ``table``'s current snapshot (or ``snapshot``).

    Raises:
        ValidationError: an unknown or invalid option, or a ``where`` naming a column that is not a
            partition source.
    """
    max_bytes = _options(table, options)
    in_scope = _partition_filter(table, where)
    snap = snapshot or table.metadata.current_snapshot()
    if snap is None or table.format_version < 2:
        return EqualityConversionPlan(None if snap is None else snap.snapshot_id, ())
    specs = dict(table.metadata.specs_by_id())
    entries = live_entries(table, snap)

    def is_global(f: DataFile) -> bool:
        spec = specs.get(f.spec_id)
        return spec is None or spec.is_unpartitioned

    chosen: dict[str, ManifestEntry] = {}
    for e in entries:
        f = e.data_file
        if f.content != FileContent.EQUALITY_DELETES:
            continue
        if in_scope is not None and (is_global(f) or not in_scope(f)):
            continue  # a where selects partitions; a global delete belongs to all of them
        if not f.equality_ids:
            raise ValidationError(f"Table {table.name()}: equality delete file {f.file_path} has no equality_ids")
        chosen[f.file_path] = e
    if not chosen:
        return EqualityConversionPlan(snap.snapshot_id, ())
    index = DeleteFileIndex((e for e in entries if e.data_file.content != FileContent.DATA), specs, table.name())
    # data file -> its task (position deletes + chosen equality deletes that apply), per key
    by_key: dict[tuple[int, ...], dict[str, FileScanTask]] = {}
    for e in entries:
        f = e.data_file
        if f.content != FileContent.DATA:
            continue
        seq = e.sequence_number or 0
        applying = index.for_data_file(seq, f.spec_id, f.partition, f.file_path)
        positional = tuple(d for d in applying if d.data_file.content == FileContent.POSITION_DELETES)
        keys: dict[tuple[int, ...], list[ManifestEntry]] = {}
        for d in applying:
            if d.data_file.file_path in chosen:
                keys.setdefault(tuple(d.data_file.equality_ids or ()), []).append(d)
        for key, eq in keys.items():
            by_key.setdefault(key, {})[f.file_path] = FileScanTask(
                f, seq, positional + tuple(eq), spec=specs.get(f.spec_id)
            )
    batches: list[ConversionBatch] = []
    for key in sorted({tuple(e.data_file.equality_ids or ()) for e in chosen.values()}):
        deletes = [e for e in chosen.values() if tuple(e.data_file.equality_ids or ()) == key]
        tasks = list(by_key.get(key, {}).values())
        batches += _batches(key, deletes, tasks, is_global, max_bytes)
    return EqualityConversionPlan(snap.snapshot_id, tuple(batches))


def _batches(
    key: tuple[int, ...],
    deletes: list[ManifestEntry],
    tasks: list[FileScanTask],
    is_global: Callable[[DataFile], bool],
    max_bytes: int,
) -> list[ConversionBatch]:
    """One key's deletes in batches of whole partitions, up to ``max_bytes`` of data files each (a partition
    larger than that is a batch of its own); a global delete reaches every partition, so it makes one batch."""
    if any(is_global(e.data_file) for e in deletes):
        return [ConversionBatch(key, tuple(deletes), tuple(tasks))]
    parts: dict[tuple[int, tuple[object, ...]], tuple[list[ManifestEntry], list[FileScanTask]]] = {}
    for e in deletes:
        parts.setdefault((e.data_file.spec_id, tuple(e.data_file.partition)), ([], []))[0].append(e)
    for t in tasks:
        parts[(t.data_file.spec_id, tuple(t.data_file.partition))][1].append(t)
    out: list[ConversionBatch] = []
    size = 0
    batch_deletes: list[ManifestEntry] = []
    batch_tasks: list[FileScanTask] = []
    for dels, part_tasks in parts.values():
        part_size = sum(t.data_file.file_size_in_bytes for t in part_tasks)
        if batch_deletes and size + part_size > max_bytes:
            out.append(ConversionBatch(key, tuple(batch_deletes), tuple(batch_tasks)))
            size, batch_deletes, batch_tasks = 0, [], []
        size += part_size
        batch_deletes += dels
        batch_tasks += part_tasks
    if batch_deletes:
        out.append(ConversionBatch(key, tuple(batch_deletes), tuple(batch_tasks)))
    return out


def commit_conversion(
    table: Table,
    snapshot_id: int | None,
    batch: ConversionBatch,
    added: Sequence[DataFile],
    replaced: Sequence[DataFile],
    *,
    snapshot_properties: Mapping[str, str] | None = None,
) -> None:
    """Commit one batch: remove its equality delete files and the position deletes ``replaced`` (merged into
    ``added``), add ``added``; one row delta validated against every commit since ``snapshot_id``.

    Raises:
        CommitConflictError: a removed delete file or a named data file was removed meanwhile, or a data file
            the removed equality deletes apply to was added meanwhile (e.g. a compaction keeping an older
            sequence number): the batch must be planned again.
    """
    op = _Conversion(table, list(batch.deletes), added)
    op.case_sensitive(False)
    for e in batch.deletes:
        op.remove_deletes(e.data_file)
    for f in replaced:
        op.remove_deletes(f)
    for f in added:
        op.add_deletes(f)
    op.validate_from_snapshot(snapshot_id)
    named = {f.referenced_data_file for f in added if f.referenced_data_file is not None}
    if any(f.referenced_data_file is None for f in added):
        named |= {t.data_file.file_path for t in batch.tasks}  # partition-scoped files may name any of them
    op.validate_data_files_exist(sorted(named))
    op.set(CONVERSION_SUMMARY_KEY, "true")
    for k, v in (snapshot_properties or {}).items():
        op.set(k, v)
    op.commit()


class _Conversion(RowDelta):
    """A row delta that also fails when a data file the removed equality deletes apply to was added since
    the plan (its rows matching them would come back: no position names them), or when a concurrent commit
    gave a data file this commit writes a deletion vector for a vector of its own (a data file has at most
    one)."""

    def __init__(self, table: Table, removed: list[ManifestEntry], added: Sequence[DataFile]) -> None:
        super().__init__(table)
        self._vector_owners = {f.referenced_data_file for f in added if f.file_format == FileFormat.PUFFIN}
        specs = dict(table.metadata.specs_by_id())
        # the newest removed delete that reaches every partition, and the newest per (spec, partition)
        self._global = 0
        self._by_partition: dict[tuple[int, tuple[object, ...]], int] = {}
        for e in removed:
            seq, spec = e.sequence_number or 0, specs.get(e.data_file.spec_id)
            if spec is None or spec.is_unpartitioned:
                self._global = max(self._global, seq)
            else:
                key = (e.data_file.spec_id, tuple(e.data_file.partition))
                self._by_partition[key] = max(self._by_partition.get(key, 0), seq)

    def _validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        super()._validate(base, parent)
        if parent is None or parent.snapshot_id == self._starting_snapshot_id:
            return
        name = self._table.name()
        history = snapshots_since(base, self._starting_snapshot_id, parent, table=name)
        for s, e in changed_files_since(
            self._table.io, base, history, operations=_ALL_OPERATIONS, content=ManifestContent.DATA,
            status=ManifestEntryStatus.ADDED,
        ):
            seq = e.sequence_number or 0
            limit = max(self._global, self._by_partition.get((e.data_file.spec_id, tuple(e.data_file.partition)), 0))
            if seq < limit:
                raise CommitConflictError(
                    f"Found data file {e.data_file.file_path} added by concurrent snapshot {s.snapshot_id} "
                    f"({s.operation}) to {name} with sequence number {seq}, to which the equality deletes this "
                    "commit converts apply"
                )
        if not self._vector_owners:
            return
        for s, e in changed_files_since(
            self._table.io, base, history, operations=_ALL_OPERATIONS, content=ManifestContent.DELETES,
            status=ManifestEntryStatus.ADDED,
        ):
            f = e.data_file
            if f.file_format == FileFormat.PUFFIN and f.referenced_data_file in self._vector_owners:
                raise CommitConflictError(
                    f"Found deletion vector for data file {f.referenced_data_file} added by concurrent snapshot "
                    f"{s.snapshot_id} ({s.operation}) to {name}, which this commit also writes a vector for"
                )

