"""The common part of every change that writes a snapshot (Java's ``SnapshotProducer``).

A producer keeps one snapshot id and commit uuid for all its attempts; each attempt writes a manifest
list ``snap-<id>-<attempt>-<uuid>.avro`` over the manifests its subclass returns, and yields the updates
``AddSnapshot`` + ``SetSnapshotRef(branch)``. Files written for attempts that did not commit are deleted
after the transaction ends; all of them after a final failure; none after an unknown outcome.
"""

from __future__ import annotations

import io as _io
import time
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.io.manifest_reader import read_entries, read_manifest_files
from floe.serde.manifest_avro import write_manifest_list
from floe.serde.manifest_writer import ManifestWriter
from floe.spec import properties as P
from floe.spec.manifest import DataFile, ManifestContent, ManifestEntry, ManifestFile
from floe.spec.refs import MAIN_BRANCH, SnapshotRef
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import AddSnapshot, SetSnapshotRef, TableUpdate
from floe.table.paths import manifest_list_location, manifest_location
from floe.table.pending import PendingUpdate
from floe.table.summary import SummaryBuilder

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["SnapshotProducer", "new_snapshot_id"]

_MAX_ID = (1 << 63) - 1


def new_snapshot_id() -> int:
    """A random positive 63-bit id, as Java derives it from a UUID."""
    u = uuid.uuid4().int
    return ((u >> 64) ^ (u & ((1 << 64) - 1))) & _MAX_ID


class SnapshotProducer(PendingUpdate):
    """Writes manifests and a manifest list, and adds the resulting snapshot to a branch."""

    def __init__(
        self, table: Table, transaction: Transaction | None = None, *, branch: str | None = None
    ) -> None:
        super().__init__(table, transaction)
        self._branch = branch or MAIN_BRANCH
        self._snapshot_id = new_snapshot_id()
        self._commit_uuid = uuid.uuid4()
        self._manifest_counter = 0
        self._attempt = 0
        self._extra: dict[str, str] = {}
        self._stage_only = False
        self._written: list[str] = []  # every manifest and manifest list written, in order
        self._last_used: set[str] = set()  # files the latest attempt's snapshot references
        start = table.metadata.snapshot_by_name(self._branch)
        self._starting_snapshot_id: int | None = None if start is None else start.snapshot_id

    # -- options -----------------------------------------------------------------------------------
    @property
    def snapshot_id(self) -> int:
        """The id the new snapshot will have."""
        return self._snapshot_id

    def set(self, key: str, value: str) -> Self:
        """Add a property to the snapshot summary; ``wap.id`` also stages the snapshot (write-audit-publish:
        it is added without moving the branch, to be published later by its id)."""
        self._extra[str(key)] = str(value)
        if key == P.WAP_ID:
            self.stage_only()
        return self

    def stage_only(self) -> Self:
        """Add the snapshot without moving the branch (write-audit-publish; cherry-pick it later)."""
        self._stage_only = True
        return self

    # -- subclass hooks ----------------------------------------------------------------------------
    @abstractmethod
    def _operation(self) -> Operation:
        """The snapshot's operation (append, overwrite, delete, replace)."""

    @abstractmethod
    def _manifests(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        current: list[ManifestFile],
        summary: SummaryBuilder,
    ) -> list[ManifestFile]:
        """The new snapshot's manifests given the parent's ``current`` ones; count changes into ``summary``."""

    def _validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        """Check that concurrent commits since the starting snapshot do not conflict (none by default).

        Raises:
            CommitConflictError: they do.
        """
        return

    # -- helpers for subclasses --------------------------------------------------------------------
    def _read_entries(self, base: TableMetadata, manifest: ManifestFile) -> list[ManifestEntry]:
        spec = base.spec_by_id(manifest.partition_spec_id)
        return read_entries(self._table.io, manifest, spec=spec, schema=base.schema())

    def _write_manifest(
        self,
        base: TableMetadata,
        spec_id: int,
        content: ManifestContent,
        fill: Callable[[ManifestWriter], None],
    ) -> ManifestFile:
        spec = base.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(
                f"Cannot write a manifest for unknown partition spec {spec_id} of {self._table.name()}"
            )
        self._manifest_counter += 1
        location = manifest_location(base, self._commit_uuid, self._manifest_counter)
        buf = _io.BytesIO()
        writer = ManifestWriter(
            buf,
            spec=spec,
            schema=base.schema(),
            partition_type=base.partition_type(spec_id),
            format_version=base.format_version,
            snapshot_id=self._snapshot_id,
            content=content,
            manifest_path=location,
        )
        fill(writer)
        manifest = writer.close()
        # Unique name (commit uuid + counter): no other writer can collide, so no exclusive create needed.
        self._table.io.new_output(location).write_bytes(buf.getvalue(), overwrite=True)
        self._written.append(location)
        return manifest

    def _write_new_files(
        self,
        base: TableMetadata,
        files: Iterable[DataFile],
        content: ManifestContent,
        *,
        data_sequence_number: int | None = None,
    ) -> list[ManifestFile]:
        """One manifest per partition spec holding ``files`` as ADDED entries."""
        by_spec: dict[int, list[DataFile]] = {}
        for f in files:
            by_spec.setdefault(f.spec_id, []).append(f)
        out = []
        for spec_id, group in by_spec.items():

            def fill(w: ManifestWriter, group: list[DataFile] = group) -> None:
                for f in group:
                    w.add(f, data_sequence_number=data_sequence_number)

            out.append(self._write_manifest(base, spec_id, content, fill))
        return out

    # -- PendingUpdate -----------------------------------------------------------------------------
    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        ref = base.refs.get(self._branch)
        if ref is not None and not ref.is_branch:
            raise ValidationError(
                f"Cannot commit to {self._branch} of {self._table.name()}: it is a tag, not a branch"
            )
        parent = base.snapshot_by_id(ref.snapshot_id) if ref is not None else None
        if base.snapshot_by_id(self._snapshot_id) is not None:
            raise ValidationError(f"Snapshot id {self._snapshot_id} already exists in {self._table.name()}")
        self._validate(base, parent)
        current = read_manifest_files(self._table.io, parent) if parent is not None else []
        summary = SummaryBuilder()
        manifests = self._manifests(base, parent, current, summary)
        before = {m.manifest_path for m in current}
        after = {m.manifest_path for m in manifests}
        summary.manifest_counts = {
            "manifests-created": len(after - before),
            "manifests-kept": len(after & before),
            "manifests-replaced": len(before - after),
        }
        sequence_number = base.next_sequence_number
        list_location = manifest_list_location(base, self._snapshot_id, self._attempt, self._commit_uuid)
        self._attempt += 1
        buf = _io.BytesIO()
        v3 = base.format_version >= 3
        written = write_manifest_list(
            buf,
            manifests,
            format_version=base.format_version,
            snapshot_id=self._snapshot_id,
            parent_snapshot_id=None if parent is None else parent.snapshot_id,
            sequence_number=sequence_number,
            first_row_id=base.next_row_id if v3 else None,
        )
        self._table.io.new_output(list_location).write_bytes(buf.getvalue(), overwrite=True)
        self._written.append(list_location)
        self._last_used = after | {list_location}
        added_rows = None
        if v3:
            fresh = {
                m.manifest_path
                for m in manifests
                if m.content == ManifestContent.DATA and m.first_row_id is None
            }
            added_rows = sum(
                (m.added_rows_count or 0) + (m.existing_rows_count or 0)
                for m in written
                if m.manifest_path in fresh
            )
        snapshot = Snapshot(
            snapshot_id=self._snapshot_id,
            timestamp_ms=time.time_ns() // 1_000_000,
            summary=summary.build(self._operation(), parent, self._extra),
            manifest_list=list_location,
            parent_snapshot_id=None if parent is None else parent.snapshot_id,
            sequence_number=sequence_number,
            schema_id=base.current_schema_id,
            first_row_id=base.next_row_id if v3 else None,
            added_rows=added_rows,
        )
        updates: list[TableUpdate] = [AddSnapshot(snapshot)]
        if not self._stage_only:
            new_ref = (
                SnapshotRef.branch(self._snapshot_id)
                if ref is None
                else replace(ref, snapshot_id=self._snapshot_id)
            )
            updates.append(SetSnapshotRef(self._branch, new_ref))
        return updates

    def _cleanup(self, *, committed: bool) -> None:
        keep = self._last_used if committed else set()
        doomed = [loc for loc in self._written if loc not in keep]
        if doomed:
            # Best effort: a file left behind is an orphan for remove_orphan_files, never a correctness issue.
            self._table.io.delete_many(doomed)
        self._written = [loc for loc in self._written if loc in keep]
