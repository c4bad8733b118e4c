"""Snapshot producers in pure Python: append (fast and merging), overwrite, replace partitions, delete,
rewrite and row delta (Java's ``FastAppend``, ``MergeAppend``, ``BaseOverwriteFiles``,
``BaseReplacePartitions``, ``StreamingDelete``, ``BaseRewriteFiles``, ``BaseRowDelta``).

All but the fast append share :class:`_MergingProducer`: it filters the parent's manifests (rewriting only
manifests that lose files), writes manifests for new files (cached across retries), merges small
manifests per ``commit.manifest.*`` and runs conflict validation against commits since the start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from floe.errors import CommitConflictError, ValidationError
from floe.expressions.base import BooleanExpression, or_
from floe.expressions.binding import bind
from floe.expressions.evaluator import evaluate
from floe.expressions.metrics_evaluator import InclusiveMetricsEvaluator, StrictMetricsEvaluator
from floe.expressions.parser import parse_filter
from floe.expressions.projection import strict_projection
from floe.expressions.residual import PartitionEvaluator
from floe.serde.manifest_writer import ManifestWriter
from floe.spec import properties as P
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.table.manifest_merge import merge_manifests
from floe.table.snapshot_producer import SnapshotProducer
from floe.table.summary import SummaryBuilder
from floe.table.validation import snapshots_since, validate_files_still_exist, validate_no_conflicting_files

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = [
    "DeleteFiles",
    "FastAppend",
    "MergeAppend",
    "Overwrite",
    "ReplacePartitions",
    "RewriteFiles",
    "RowDelta",
]

_DATA, _DELETES = ManifestContent.DATA, ManifestContent.DELETES


def _expr(value: BooleanExpression | str) -> BooleanExpression:
    return parse_filter(value) if isinstance(value, str) else value


def _path(f: DataFile | str) -> str:
    return f if isinstance(f, str) else f.file_key


class FastAppend(SnapshotProducer):
    """Append files in new manifests; existing manifests are kept as they are."""

    def __init__(
        self, table: Table, transaction: Transaction | None = None, *, branch: str | None = None
    ) -> None:
        super().__init__(table, transaction, branch=branch)
        self._files: list[DataFile] = []
        self._new: list[ManifestFile] | None = None

    def append_file(self, data_file: DataFile) -> Self:
        """Add a data file (its ``spec_id`` names the partition spec it was written with)."""
        if data_file.content != FileContent.DATA:
            raise ValidationError(f"Cannot append delete file {data_file.file_path}; use a row delta")
        self._files.append(data_file)
        self._new = None
        return self

    def append_files(self, data_files: Iterable[DataFile]) -> Self:
        for f in data_files:
            self.append_file(f)
        return self

    def _operation(self) -> Operation:
        return Operation.APPEND

    def _manifests(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        current: list[ManifestFile],
        summary: SummaryBuilder,
    ) -> list[ManifestFile]:
        _check_specs(base, self._files)
        if self._new is None:
            self._new = self._write_new_files(base, self._files, _DATA)
        for f in self._files:
            summary.added(f)
        return self._new + current


def _check_specs(base: TableMetadata, files: Iterable[DataFile]) -> None:
    for f in files:
        if base.spec_by_id(f.spec_id) is None:
            raise ValidationError(
                f"File {f.file_path} names partition spec {f.spec_id}, which the table does not have"
            )


class _FilterEvaluators:
    """Per-spec evaluators deciding whether a file certainly, possibly or never matches a row filter."""

    def __init__(self, base: TableMetadata, expr: BooleanExpression, case_sensitive: bool) -> None:
        self.base, self.expr, self.case_sensitive = base, expr, case_sensitive
        schema = base.schema()
        self._inclusive_metrics = InclusiveMetricsEvaluator(schema, expr, case_sensitive=case_sensitive)
        self._strict_metrics = StrictMetricsEvaluator(schema, expr, case_sensitive=case_sensitive)
        self._by_spec: dict[
            int, tuple[Callable[[tuple[object, ...]], bool], Callable[[tuple[object, ...]], bool]]
        ] = {}

    def _spec(
        self, spec_id: int
    ) -> tuple[Callable[[tuple[object, ...]], bool], Callable[[tuple[object, ...]], bool]]:
        found = self._by_spec.get(spec_id)
        if found is None:
            schema, spec = self.base.schema(), self.base.spec_by_id(spec_id)
            assert spec is not None
            # the spec's type from the schema history: its source column may since have been dropped
            ptype = self.base.partition_type(spec_id)
            inclusive = PartitionEvaluator(
                spec, schema, self.expr, case_sensitive=self.case_sensitive, partition_type=ptype
            ).eval
            strict_expr = bind(
                ptype,
                strict_projection(schema, spec, self.expr, case_sensitive=self.case_sensitive),
                True,
            )
            found = (inclusive, lambda p, e=strict_expr: evaluate(e, p))
            self._by_spec[spec_id] = found
        return found

    def may_match(self, f: DataFile) -> bool:
        inclusive, _ = self._spec(f.spec_id)
        return inclusive(f.partition) and (f.content != FileContent.DATA or self._inclusive_metrics.eval(f))

    def all_match(self, f: DataFile) -> bool:
        _, strict = self._spec(f.spec_id)
        return strict(f.partition) or (f.content == FileContent.DATA and self._strict_metrics.eval(f))


class _MergingProducer(SnapshotProducer):
    """Shared machinery: added files, removed files (by path, filter or partition), merging, validation."""

    # Serializable isolation by default (Overwrite, ReplacePartitions); others opt in per operation.
    _checks_conflicts_by_default = False

    def __init__(
        self, table: Table, transaction: Transaction | None = None, *, branch: str | None = None
    ) -> None:
        super().__init__(table, transaction, branch=branch)
        self._added_data: list[DataFile] = []
        self._added_deletes: list[DataFile] = []
        self._data_sequence_number: int | None = None
        self._delete_paths: set[str] = set()
        self._required_paths: set[str] = set()  # must be live in the parent, else the commit conflicts
        self._delete_filter: BooleanExpression | None = None
        self._case_sensitive = True
        self._replace_partitions = False
        self._validate_data_exist: set[str] = set()
        self._conflict_filter: BooleanExpression | None = None
        self._check_conflicting_data = self._checks_conflicts_by_default
        self._check_conflicting_deletes = self._checks_conflicts_by_default
        self._check_deleted_still_exist = True
        self._new_manifests: list[ManifestFile] | None = None
        self._filtered: dict[str, tuple[ManifestFile, list[ManifestEntry]]] = {}
        self._merged: dict[tuple[str, ...], ManifestFile] = {}

    # -- building blocks used by the public subclasses -------------------------------------------
    def _add(self, f: DataFile) -> None:
        (self._added_data if f.content == FileContent.DATA else self._added_deletes).append(f)
        self._new_manifests = None

    def _remove(self, f: DataFile | str) -> None:
        self._delete_paths.add(_path(f))
        self._required_paths.add(_path(f))
        self._filtered.clear()

    def _remove_by_filter(self, expr: BooleanExpression | str) -> None:
        e = _expr(expr)
        self._delete_filter = e if self._delete_filter is None else or_(self._delete_filter, e)
        self._filtered.clear()

    def set(self, key: str, value: str) -> Self:
        super().set(key, value)
        return self

    def case_sensitive(self, case_sensitive: bool) -> Self:
        """Whether filter column names match case-sensitively (default True)."""
        self._case_sensitive = case_sensitive
        self._filtered.clear()
        return self

    def validate_from_snapshot(self, snapshot_id: int | None) -> Self:
        """Check for conflicts with every commit after ``snapshot_id`` (default: the branch head at creation)."""
        self._starting_snapshot_id = snapshot_id
        return self

    def conflict_detection_filter(self, expr: BooleanExpression | str) -> Self:
        """Only files that may match ``expr`` count as conflicts."""
        self._conflict_filter = _expr(expr)
        return self

    def validate_no_conflicting_data(self) -> Self:
        """Fail if a concurrent commit added data files matching the conflict filter."""
        self._check_conflicting_data = True
        return self

    def validate_no_conflicting_deletes(self) -> Self:
        """Fail if a concurrent commit added delete files matching the conflict filter."""
        self._check_conflicting_deletes = True
        return self

    def skip_validation(self) -> Self:
        """Commit without any conflict checks (last writer wins; only for single-writer tables)."""
        self._check_conflicting_data = self._check_conflicting_deletes = False
        self._check_deleted_still_exist = False
        self._validate_data_exist.clear()
        return self

    # -- validation -----------------------------------------------------------------------------
    def _conflict_matcher(self, base: TableMetadata) -> Callable[[DataFile], bool]:
        expr = self._conflict_filter if self._conflict_filter is not None else self._delete_filter
        partitions = self._replaced_partitions() if self._replace_partitions else None
        evaluators = None if expr is None else _FilterEvaluators(base, expr, self._case_sensitive)

        def matches(f: DataFile) -> bool:
            if partitions is not None and (f.spec_id, f.partition) not in partitions:
                return False
            return evaluators is None or evaluators.may_match(f)

        return matches

    def _validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        if parent is None or parent.snapshot_id == self._starting_snapshot_id:
            return  # nothing was committed since this change was planned
        wants = self._check_conflicting_data or self._check_conflicting_deletes
        wants = (
            wants
            or (self._check_deleted_still_exist and bool(self._required_paths))
            or bool(self._validate_data_exist)
        )
        if not wants:
            return
        name = self._table.name()
        history = snapshots_since(base, self._starting_snapshot_id, parent, table=name)
        io = self._table.io
        if self._check_deleted_still_exist and self._required_paths:
            validate_files_still_exist(io, base, history, self._required_paths, table=name)
        if self._validate_data_exist:
            validate_files_still_exist(io, base, history, self._validate_data_exist, table=name)
        matcher = self._conflict_matcher(base)
        if self._check_conflicting_data:
            validate_no_conflicting_files(
                io, base, history, matcher, content=_DATA, table=name, what="overwrite"
            )
        if self._check_conflicting_deletes:
            validate_no_conflicting_files(
                io, base, history, matcher, content=_DELETES, table=name, what="overwrite"
            )

    # -- manifests ------------------------------------------------------------------------------
    def _replaced_partitions(self) -> AbstractSet[tuple[int, tuple[object, ...]]]:
        return {(f.spec_id, f.partition) for f in self._added_data}

    def _has_removals(self) -> bool:
        return bool(self._delete_paths) or self._delete_filter is not None or self._replace_partitions

    def _should_remove(
        self,
        f: DataFile,
        evaluators: _FilterEvaluators | None,
        partitions: AbstractSet[tuple[int, tuple[object, ...]]],
    ) -> bool:
        if f.file_path in self._delete_paths or f.file_key in self._delete_paths:
            return True
        if f.content == FileContent.DATA and (f.spec_id, f.partition) in partitions:
            return True
        if evaluators is None:
            return False
        if f.content != FileContent.DATA:
            return evaluators.all_match(f)  # delete files go only with whole partitions
        if not evaluators.may_match(f):
            return False
        if evaluators.all_match(f):
            return True
        raise ValidationError(
            f"Cannot delete file where some, but not all, rows match filter {evaluators.expr}: {f.file_path}"
        )

    def _filter_manifest(
        self,
        base: TableMetadata,
        m: ManifestFile,
        evaluators: _FilterEvaluators | None,
        partitions: AbstractSet[tuple[int, tuple[object, ...]]],
        removed: list[ManifestEntry],
    ) -> ManifestFile:
        if not (m.has_added_files() or m.has_existing_files()):
            return m
        cached = self._filtered.get(m.manifest_path)
        if cached is None:
            entries = self._read_entries(base, m)
            doomed = [
                e
                for e in entries
                if e.status != ManifestEntryStatus.DELETED
                and self._should_remove(e.data_file, evaluators, partitions)
            ]
            if not doomed:
                cached = (m, [])
            else:
                doomed_keys = {e.data_file.file_key for e in doomed}  # a Puffin file holds many vectors

                def fill(w: ManifestWriter) -> None:
                    for e in entries:
                        if e.status == ManifestEntryStatus.DELETED:
                            continue  # removed by an earlier snapshot: not carried forward
                        if e.data_file.file_key in doomed_keys:
                            w.delete(e)
                        else:
                            w.existing(e)

                cached = (self._write_manifest(base, m.partition_spec_id, m.content, fill), doomed)
            self._filtered[m.manifest_path] = cached
        removed.extend(cached[1])
        return cached[0]

    def _merge_bin(self, base: TableMetadata, spec_id: int, group: list[ManifestFile]) -> ManifestFile:
        key = tuple(m.manifest_path for m in group)
        found = self._merged.get(key)
        if found is not None:
            return found
        sid = self._snapshot_id

        def fill(w: ManifestWriter) -> None:
            for m in group:
                for e in self._read_entries(base, m):
                    if e.status == ManifestEntryStatus.DELETED:
                        if e.snapshot_id == sid:
                            w.delete(e)
                    elif e.status == ManifestEntryStatus.ADDED and e.snapshot_id == sid:
                        w.add(e.data_file, data_sequence_number=e.sequence_number)
                    else:
                        w.existing(e)

        found = self._write_manifest(base, spec_id, group[0].content, fill)
        self._merged[key] = found
        return found

    def _merge_enabled(self, base: TableMetadata) -> bool:
        return P.property_bool(base.properties, P.MANIFEST_MERGE_ENABLED, P.MANIFEST_MERGE_ENABLED_DEFAULT)

    def _maybe_merge(self, base: TableMetadata, manifests: list[ManifestFile]) -> list[ManifestFile]:
        if not self._merge_enabled(base) or len(manifests) < 2:
            return manifests
        return merge_manifests(
            manifests,
            target_size=P.property_int(
                base.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT
            ),
            min_count=P.property_int(
                base.properties, P.MANIFEST_MIN_MERGE_COUNT, P.MANIFEST_MIN_MERGE_COUNT_DEFAULT
            ),
            merge=lambda spec_id, group: self._merge_bin(base, spec_id, group),
        )

    def _manifests(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        current: list[ManifestFile],
        summary: SummaryBuilder,
    ) -> list[ManifestFile]:
        _check_specs(base, self._added_data + self._added_deletes)
        if self._added_deletes and base.format_version < 2:
            raise ValidationError(
                f"Cannot add delete files to {self._table.name()}: format version 1 has no deletes"
            )
        if base.format_version >= 3:  # spec: position delete files must not be added to v3 tables
            legacy = next((f for f in self._added_deletes if f.content == FileContent.POSITION_DELETES
                           and f.file_format != FileFormat.PUFFIN), None)
            if legacy is not None:
                raise ValidationError(
                    f"Cannot add position delete file {legacy.file_path} to {self._table.name()}: format version "
                    f"{base.format_version} takes deletion vectors, not position delete files"
                )
        data = [m for m in current if m.content == _DATA]
        deletes = [m for m in current if m.content == _DELETES]
        removed: list[ManifestEntry] = []
        if self._has_removals():
            evaluators = (
                None
                if self._delete_filter is None
                else _FilterEvaluators(base, self._delete_filter, self._case_sensitive)
            )
            partitions = self._replaced_partitions() if self._replace_partitions else set()
            data = [self._filter_manifest(base, m, evaluators, partitions, removed) for m in data]
            deletes = [self._filter_manifest(base, m, evaluators, partitions, removed) for m in deletes]
            found = {e.data_file.file_path for e in removed} | {e.data_file.file_key for e in removed}
            missing = self._required_paths - found
            if missing and self._check_deleted_still_exist:
                raise CommitConflictError(
                    f"Missing required files to delete from {self._table.name()}: {', '.join(sorted(missing))}"
                )
        for e in removed:
            summary.removed(e.data_file)
        if self._new_manifests is None:
            self._new_manifests = self._write_new_files(
                base, self._added_data, _DATA, data_sequence_number=self._data_sequence_number
            ) + self._write_new_files(base, self._added_deletes, _DELETES)
        for f in self._added_data + self._added_deletes:
            summary.added(f)
        new_data = [m for m in self._new_manifests if m.content == _DATA]
        new_deletes = [m for m in self._new_manifests if m.content == _DELETES]
        return (self._maybe_merge(base, self._live(new_data + data))
                + self._maybe_merge(base, self._live(new_deletes + deletes)))

    def _live(self, manifests: list[ManifestFile]) -> list[ManifestFile]:
        """The manifests the new snapshot lists: those with live (added or existing) entries, and those this
        commit wrote. A manifest left with only entries an earlier commit deleted is dropped, as in Java, so
        it is not kept alive by later snapshots (expiry then deletes it with the snapshots that listed it)."""
        return [m for m in manifests
                if m.has_added_files() or m.has_existing_files() or m.added_snapshot_id == self._snapshot_id]


class MergeAppend(_MergingProducer):
    """Append files, merging small manifests (``commit.manifest-merge.enabled``, default true)."""

    def append_file(self, data_file: DataFile) -> Self:
        """Add a data file."""
        if data_file.content != FileContent.DATA:
            raise ValidationError(f"Cannot append delete file {data_file.file_path}; use a row delta")
        self._add(data_file)
        return self

    def append_files(self, data_files: Iterable[DataFile]) -> Self:
        for f in data_files:
            self.append_file(f)
        return self

    def _operation(self) -> Operation:
        return Operation.APPEND


class Overwrite(_MergingProducer):
    """Delete files (by row filter or by file) and add files; conflicts with concurrent writes are checked.

    By default a retried overwrite fails with :class:`CommitConflictError` when a commit since it started
    added data or delete files its filter matches (serializable isolation), or removed a file it deletes.
    """

    _checks_conflicts_by_default = True

    def overwrite_by_filter(self, expr: BooleanExpression | str) -> Self:
        """Delete every file whose rows all match ``expr`` (a file only partly matching is an error)."""
        self._remove_by_filter(expr)
        return self

    def add_file(self, data_file: DataFile) -> Self:
        self._add(data_file)
        return self

    def delete_file(self, data_file: DataFile | str) -> Self:
        self._remove(data_file)
        return self

    def _conflict_matcher(self, base: TableMetadata) -> Callable[[DataFile], bool]:
        if self._conflict_filter is None and self._delete_filter is None:
            # Deleting named files only: conflicts are new files in the partitions those files came from.
            return lambda f: False
        return super()._conflict_matcher(base)

    def _operation(self) -> Operation:
        # As Java's OverwriteFiles: only deletes is a delete, only adds an append, anything else (an empty
        # copy-on-write rewrite too) an overwrite.
        deletes = bool(self._delete_paths) or self._delete_filter is not None
        if deletes and not self._added_data:
            return Operation.DELETE
        if self._added_data and not deletes:
            return Operation.APPEND
        return Operation.OVERWRITE


class ReplacePartitions(_MergingProducer):
    """Dynamic overwrite: every partition an added file belongs to is replaced by the added files."""

    _checks_conflicts_by_default = True

    def __init__(
        self, table: Table, transaction: Transaction | None = None, *, branch: str | None = None
    ) -> None:
        super().__init__(table, transaction, branch=branch)
        self._replace_partitions = True

    def add_file(self, data_file: DataFile) -> Self:
        if data_file.content != FileContent.DATA:
            raise ValidationError(f"Cannot replace partitions with delete file {data_file.file_path}")
        self._add(data_file)
        self._filtered.clear()
        return self

    def _operation(self) -> Operation:
        return Operation.OVERWRITE


class DeleteFiles(_MergingProducer):
    """Delete whole files by name or by a row filter every row of a file must match."""

    def delete_file(self, data_file: DataFile | str) -> Self:
        """Delete a file (conflict if a concurrent commit removed it first)."""
        self._remove(data_file)
        return self

    def delete_from_row_filter(self, expr: BooleanExpression | str) -> Self:
        """Delete every file whose rows all match ``expr``; files added concurrently that match conflict."""
        self._remove_by_filter(expr)
        self._check_conflicting_data = True
        return self

    def _operation(self) -> Operation:
        return Operation.DELETE


class RewriteFiles(_MergingProducer):
    """Replace files by files holding the same rows (compaction); fails if a replaced file is gone."""

    def rewrite_files(
        self,
        deleted: Iterable[DataFile | str],
        added: Iterable[DataFile],
        *,
        data_sequence_number: int | None = None,
    ) -> Self:
        """Swap ``deleted`` for ``added``; ``data_sequence_number`` keeps older deletes applying to new files."""
        for f in deleted:
            self._remove(f)
        for f in added:
            self._add(f)
        if data_sequence_number is not None:
            self._data_sequence_number = data_sequence_number
        return self

    def delete_file(self, data_file: DataFile | str) -> Self:
        self._remove(data_file)
        return self

    def add_file(self, data_file: DataFile) -> Self:
        self._add(data_file)
        return self

    def _validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        super()._validate(base, parent)
        if parent is None or parent.snapshot_id == self._starting_snapshot_id:
            return
        # Deletes committed meanwhile against the rewritten files would be lost along with those files.
        rewritten = set(self._delete_paths)
        partitions = {(f.spec_id, f.partition) for f in self._added_data}

        def applies(f: DataFile) -> bool:
            if f.referenced_data_file is not None:
                return f.referenced_data_file in rewritten
            return (f.spec_id, f.partition) in partitions or not partitions

        history = snapshots_since(base, self._starting_snapshot_id, parent, table=self._table.name())
        validate_no_conflicting_files(
            self._table.io, base, history, applies, content=_DELETES, table=self._table.name(), what="rewrite"
        )

    def _operation(self) -> Operation:
        return Operation.REPLACE


class RowDelta(_MergingProducer):
    """Add data files and delete files together (merge-on-read updates, deletes and merges)."""

    def add_rows(self, data_file: DataFile) -> Self:
        """Add a data file."""
        if data_file.content != FileContent.DATA:
            raise ValidationError(f"{data_file.file_path} is a delete file; use add_deletes")
        self._add(data_file)
        return self

    def add_deletes(self, delete_file: DataFile) -> Self:
        """Add a position or equality delete file."""
        if delete_file.content == FileContent.DATA:
            raise ValidationError(f"{delete_file.file_path} is a data file; use add_rows")
        self._add(delete_file)
        return self

    def remove_deletes(self, delete_file: DataFile | str) -> Self:
        """Remove a delete file (e.g. one replaced by a newer deletion vector)."""
        self._remove(delete_file)
        return self

    def validate_data_files_exist(self, paths: Iterable[str]) -> Self:
        """Fail if a concurrent commit removed one of these data files (the new deletes reference them)."""
        self._validate_data_exist |= set(paths)
        return self

    def validate_no_conflicting_data_files(self) -> Self:
        """Fail if a concurrent commit added data files matching the conflict filter."""
        self._check_conflicting_data = True
        return self

    def validate_no_conflicting_delete_files(self) -> Self:
        """Fail if a concurrent commit added delete files matching the conflict filter."""
        self._check_conflicting_deletes = True
        return self

    def _conflict_matcher(self, base: TableMetadata) -> Callable[[DataFile], bool]:
        if self._conflict_filter is None:
            return lambda f: True  # no filter: any concurrent file conflicts (Java's default AlwaysTrue)
        return super()._conflict_matcher(base)

    def _operation(self) -> Operation:
        adds_data, adds_deletes = bool(self._added_data), bool(self._added_deletes)
        if adds_data and not adds_deletes and not self._delete_paths:
            return Operation.APPEND
        if adds_deletes and not adds_data:
            return Operation.DELETE
        return Operation.OVERWRITE
