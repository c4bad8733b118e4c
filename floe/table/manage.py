"""Snapshot management: branches, tags, rollback, set-current and cherry-pick (Java ``ManageSnapshots``).

Calls are recorded and replayed on the fresh metadata when a commit is retried, so ``rollback_to_snapshot(s)``
still checks ancestry against the table as it is at commit time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.io.manifest_reader import read_manifest_files
from floe.spec.manifest import ManifestContent, ManifestEntryStatus, ManifestFile
from floe.spec.metadata_builder import apply_updates
from floe.spec.refs import MAIN_BRANCH, SnapshotRef
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata, format_timestamp_ms
from floe.spec.updates import RemoveSnapshotRef, SetSnapshotRef, TableUpdate
from floe.table.pending import PendingUpdate
from floe.table.snapshot_producer import SnapshotProducer
from floe.table.summary import SummaryBuilder

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["SOURCE_SNAPSHOT_ID", "CherryPick", "ManageSnapshots"]

SOURCE_SNAPSHOT_ID = "source-snapshot-id"  # summary key Java writes on cherry-picked snapshots

_Step = Callable[[TableMetadata], list[TableUpdate]]


def _snapshot(base: TableMetadata, snapshot_id: int, table: str) -> Snapshot:
    s = base.snapshot_by_id(snapshot_id)
    if s is None:
        raise NoSuchSnapshotError(f"Cannot find snapshot {snapshot_id} in table {table}")
    return s


def _check_order(method: str, snapshot_id: object, name: object) -> None:
    if isinstance(snapshot_id, str) or not isinstance(name, str):
        raise TypeError(
            f"{method} takes (snapshot_id, name) as PyIceberg's does, e.g. {method}(snapshot_id, 'v1'); "
            f"snapshot_id None means the current snapshot"
        )


def _ref_target(base: TableMetadata, snapshot_id: int | None, table: str) -> int:
    if snapshot_id is not None:
        return _snapshot(base, snapshot_id, table).snapshot_id
    if base.current_snapshot_id is None:
        raise NoSuchSnapshotError(f"Table {table} has no current snapshot to point a ref at")
    return base.current_snapshot_id


class ManageSnapshots(PendingUpdate):
    """Chain ref and snapshot operations, then ``commit()``."""

    def __init__(self, table: Table, transaction: Transaction | None = None) -> None:
        super().__init__(table, transaction)
        self._steps: list[_Step] = []
        self._picks: list[CherryPick] = []

    @property
    def _name(self) -> str:
        return self._table.name()

    # -- refs ------------------------------------------------------------------------------------
    def create_branch(
        self,
        snapshot_id: int | None,
        branch_name: str,
        max_ref_age_ms: int | None = None,
        max_snapshot_age_ms: int | None = None,
        min_snapshots_to_keep: int | None = None,
    ) -> Self:
        """Create a branch at ``snapshot_id`` (None: the current snapshot); PyIceberg's argument order.

        Raises:
            TypeError: the arguments are in the older (name, snapshot id) order.
            ValidationError (at commit): a ref with that name exists.
        """
        _check_order("create_branch", snapshot_id, branch_name)
        name = branch_name

        def step(base: TableMetadata) -> list[TableUpdate]:
            if name in base.refs:
                raise ValidationError(f"Ref {name} already exists in table {self._name}")
            ref = SnapshotRef.branch(
                _ref_target(base, snapshot_id, self._name),
                min_snapshots_to_keep=min_snapshots_to_keep,
                max_snapshot_age_ms=max_snapshot_age_ms,
                max_ref_age_ms=max_ref_age_ms,
            )
            return [SetSnapshotRef(name, ref)]

        self._steps.append(step)
        return self

    def create_tag(self, snapshot_id: int | None, tag_name: str, max_ref_age_ms: int | None = None) -> Self:
        """Create a tag at ``snapshot_id`` (None: the current snapshot); PyIceberg's argument order.

        Raises:
            TypeError: the arguments are in the older (name, snapshot id) order.
            ValidationError (at commit): a ref with that name exists.
        """
        _check_order("create_tag", snapshot_id, tag_name)
        name = tag_name

        def step(base: TableMetadata) -> list[TableUpdate]:
            if name in base.refs:
                raise ValidationError(f"Ref {name} already exists in table {self._name}")
            ref = SnapshotRef.tag(_ref_target(base, snapshot_id, self._name), max_ref_age_ms=max_ref_age_ms)
            return [SetSnapshotRef(name, ref)]

        self._steps.append(step)
        return self

    def _replace(self, name: str, snapshot_id: int, *, branch: bool, retention: dict[str, int | None]) -> Self:
        def step(base: TableMetadata) -> list[TableUpdate]:
            ref = base.refs.get(name)
            if ref is None:
                raise ValidationError(f"Ref {name} does not exist in table {self._name}")
            if ref.is_branch != branch:
                raise ValidationError(
                    f"Ref {name} in table {self._name} is a {ref.type}, not a {'branch' if branch else 'tag'}"
                )
            target = _snapshot(base, snapshot_id, self._name).snapshot_id
            new = replace(ref, snapshot_id=target)
            for key, value in retention.items():
                if value is not None:
                    new = replace(new, **{key: value})  # type: ignore[arg-type]
            return [SetSnapshotRef(name, new)]

        self._steps.append(step)
        return self

    def replace_branch(
        self,
        name: str,
        snapshot_id: int,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> Self:
        """Point an existing branch at another snapshot; retention settings given replace the branch's own,
        the others are kept."""
        return self._replace(name, snapshot_id, branch=True, retention={
            "min_snapshots_to_keep": min_snapshots_to_keep, "max_snapshot_age_ms": max_snapshot_age_ms,
            "max_ref_age_ms": max_ref_age_ms,
        })

    def replace_tag(self, name: str, snapshot_id: int, *, max_ref_age_ms: int | None = None) -> Self:
        """Point an existing tag at another snapshot (and set its retention, if given)."""
        return self._replace(name, snapshot_id, branch=False, retention={"max_ref_age_ms": max_ref_age_ms})

    def _remove(self, name: str, *, branch: bool) -> Self:
        def step(base: TableMetadata) -> list[TableUpdate]:
            ref = base.refs.get(name)
            if ref is None or ref.is_branch != branch:
                raise ValidationError(
                    f"{'Branch' if branch else 'Tag'} {name} does not exist in table {self._name}"
                )
            if name == MAIN_BRANCH:
                raise ValidationError(f"Cannot remove the main branch of table {self._name}")
            return [RemoveSnapshotRef(name)]

        self._steps.append(step)
        return self

    def remove_branch(self, branch_name: str) -> Self:
        """Remove a branch (never ``main``)."""
        return self._remove(branch_name, branch=True)

    def remove_tag(self, tag_name: str) -> Self:
        """Remove a tag."""
        return self._remove(tag_name, branch=False)

    def rename_branch(self, name: str, new_name: str) -> Self:
        """Rename a branch (never ``main``)."""

        def step(base: TableMetadata) -> list[TableUpdate]:
            ref = base.refs.get(name)
            if ref is None or not ref.is_branch:
                raise ValidationError(f"Branch {name} does not exist in table {self._name}")
            if name == MAIN_BRANCH:
                raise ValidationError(f"Cannot rename the main branch of table {self._name}")
            if new_name in base.refs:
                raise ValidationError(f"Ref {new_name} already exists in table {self._name}")
            return [SetSnapshotRef(new_name, ref), RemoveSnapshotRef(name)]

        self._steps.append(step)
        return self

    def fast_forward(self, branch: str, to: str) -> Self:
        """Move ``branch`` to the head of ``to`` when ``branch``'s head is an ancestor of it."""

        def step(base: TableMetadata) -> list[TableUpdate]:
            src, dst = base.refs.get(branch), base.refs.get(to)
            if dst is None:
                raise ValidationError(f"Ref {to} does not exist in table {self._name}")
            if src is None:
                return [SetSnapshotRef(branch, SnapshotRef.branch(dst.snapshot_id))]
            if src.snapshot_id not in {s.snapshot_id for s in base.ancestors_of(dst.snapshot_id)}:
                raise ValidationError(
                    f"Cannot fast-forward {branch} of table {self._name}: its head {src.snapshot_id} is not an "
                    f"ancestor of {to} ({dst.snapshot_id})"
                )
            return [SetSnapshotRef(branch, replace(src, snapshot_id=dst.snapshot_id))]

        self._steps.append(step)
        return self

    # -- current snapshot ------------------------------------------------------------------------
    def _set_main(self, base: TableMetadata, snapshot_id: int) -> list[TableUpdate]:
        ref = base.refs.get(MAIN_BRANCH)
        new = SnapshotRef.branch(snapshot_id) if ref is None else replace(ref, snapshot_id=snapshot_id)
        return [SetSnapshotRef(MAIN_BRANCH, new)]

    def set_current_snapshot(self, snapshot_id: int | None = None, ref_name: str | None = None) -> Self:
        """Make any snapshot of the table current: by id, or the one a branch or tag names (PyIceberg's).

        Raises:
            ValidationError: neither or both of ``snapshot_id`` and ``ref_name`` are given;
                (at commit) ``ref_name`` names no ref.
        """
        if snapshot_id is not None and ref_name is None:
            target = snapshot_id
            self._steps.append(lambda base: self._set_main(base, _snapshot(base, target, self._name).snapshot_id))
        elif ref_name is not None and snapshot_id is None:
            name = ref_name

            def by_ref(base: TableMetadata) -> list[TableUpdate]:
                ref = base.refs.get(name)
                if ref is None:
                    raise ValidationError(f"Ref {name} does not exist in table {self._name}")
                return self._set_main(base, ref.snapshot_id)

            self._steps.append(by_ref)
        else:
            raise ValidationError("set_current_snapshot: give either snapshot_id or ref_name, not both")
        return self

    def rollback_to_snapshot(self, snapshot_id: int) -> Self:
        """Make an ancestor of the current snapshot current.

        Raises (at commit):
            ValidationError: the snapshot is not an ancestor of the current one.
        """

        def step(base: TableMetadata) -> list[TableUpdate]:
            target = _snapshot(base, snapshot_id, self._name)
            if target.snapshot_id not in {s.snapshot_id for s in base.ancestors_of(base.current_snapshot_id)}:
                raise ValidationError(
                    f"Cannot roll back table {self._name} to {snapshot_id}: not an ancestor of the current snapshot "
                    f"{base.current_snapshot_id}"
                )
            return self._set_main(base, target.snapshot_id)

        self._steps.append(step)
        return self

    def rollback_to_timestamp(self, timestamp_ms: int) -> Self:
        """Make current the newest ancestor of the current snapshot created before ``timestamp_ms``."""

        def step(base: TableMetadata) -> list[TableUpdate]:
            for s in base.ancestors_of(base.current_snapshot_id):
                if s.timestamp_ms < timestamp_ms:
                    return self._set_main(base, s.snapshot_id)
            raise NoSuchSnapshotError(
                f"Table {self._name} has no ancestor snapshot older than {format_timestamp_ms(timestamp_ms)}"
            )

        self._steps.append(step)
        return self

    def cherry_pick(self, snapshot_id: int) -> Self:
        """Apply a snapshot's changes to ``main``: fast-forward when its parent is current, else re-append its files."""
        pick = CherryPick(self._table, snapshot_id)
        self._picks.append(pick)
        self._steps.append(pick._apply)
        return self

    # -- PendingUpdate ---------------------------------------------------------------------------
    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        current, out = base, []
        for step in self._steps:
            updates = step(current)
            current = apply_updates(current, updates)
            out += updates
        return out

    def _cleanup(self, *, committed: bool) -> None:
        for pick in self._picks:
            pick._cleanup(committed=committed)


class CherryPick(SnapshotProducer):
    """A new snapshot on ``main`` adding the files another (staged) append snapshot added."""

    def __init__(self, table: Table, snapshot_id: int) -> None:
        super().__init__(table)
        self._source = snapshot_id
        self._new: list[ManifestFile] | None = None
        self.set(SOURCE_SNAPSHOT_ID, str(snapshot_id))

    def _operation(self) -> Operation:
        return Operation.APPEND

    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        source = _snapshot(base, self._source, self._table.name())
        current = base.current_snapshot()
        if source.parent_snapshot_id == base.current_snapshot_id or (
            current is None and source.parent_snapshot_id is None
        ):
            ref = base.refs.get(MAIN_BRANCH)
            new = (
                SnapshotRef.branch(source.snapshot_id)
                if ref is None
                else replace(ref, snapshot_id=source.snapshot_id)
            )
            return [SetSnapshotRef(MAIN_BRANCH, new)]  # fast-forward: the snapshot applies as it is
        for s in base.ancestors_of(base.current_snapshot_id):
            if s.snapshot_id == source.snapshot_id or (
                s.summary is not None and s.summary.get(SOURCE_SNAPSHOT_ID) == str(self._source)
            ):
                raise ValidationError(
                    f"Duplicate request to cherry pick snapshot {self._source} in table {self._table.name()}"
                )
        if source.operation != Operation.APPEND:
            raise UnsupportedError(
                f"Cannot cherry-pick snapshot {self._source} ({source.operation}) onto a different parent; only appends"
            )
        return super()._apply(base)

    def _manifests(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        current: list[ManifestFile],
        summary: SummaryBuilder,
    ) -> list[ManifestFile]:
        source = _snapshot(base, self._source, self._table.name())
        added = []
        for m in read_manifest_files(self._table.io, source):
            if m.content == ManifestContent.DATA and m.added_snapshot_id == source.snapshot_id:
                added += [
                    e.data_file
                    for e in self._read_entries(base, m)
                    if e.status == ManifestEntryStatus.ADDED and e.snapshot_id == source.snapshot_id
                ]
        if self._new is None:
            self._new = self._write_new_files(base, added, ManifestContent.DATA)
        for f in added:
            summary.added(f)
        return self._new + current
