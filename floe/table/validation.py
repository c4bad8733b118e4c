"""Conflict detection between a commit and the commits that landed since it started (Java ``validate*``).

A retried overwrite must not silently drop rows another writer added meanwhile: each check walks the
branch from its current head back to the starting snapshot and looks at the files those snapshots added
or removed, raising :class:`CommitConflictError` naming the snapshot and file that conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from floe.errors import CommitConflictError
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup
from floe.spec.manifest import DataFile, ManifestContent, ManifestEntry, ManifestEntryStatus
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata

__all__ = [
    "DATA_CHANGING",
    "DELETE_CHANGING",
    "changed_files_since",
    "snapshots_since",
    "validate_files_still_exist",
    "validate_no_conflicting_files",
]

# Snapshots that can add data files others might overwrite, and ones that add delete files / remove files.
DATA_CHANGING = frozenset({Operation.APPEND, Operation.OVERWRITE})
DELETE_CHANGING = frozenset({Operation.OVERWRITE, Operation.DELETE})
REMOVING = frozenset({Operation.OVERWRITE, Operation.DELETE, Operation.REPLACE})


def snapshots_since(
    base: TableMetadata, start_id: int | None, head: Snapshot | None, *, table: str
) -> list[Snapshot]:
    """Snapshots committed after ``start_id`` up to ``head`` (newest first).

    Raises:
        CommitConflictError: ``start_id`` is not an ancestor of ``head`` (history was rewritten or expired).
    """
    out: list[Snapshot] = []
    current = head
    while current is not None and current.snapshot_id != start_id:
        out.append(current)
        parent = current.parent_snapshot_id
        current = None if parent is None else base.snapshot_by_id(parent)
        if parent is not None and current is None:
            break
    if start_id is not None and (current is None or current.snapshot_id != start_id):
        raise CommitConflictError(
            f"Cannot validate commit to {table}: starting snapshot {start_id} is no longer an ancestor of "
            f"{None if head is None else head.snapshot_id}"
        )
    return out


def changed_files_since(
    io: FileIO,
    base: TableMetadata,
    snapshots: list[Snapshot],
    *,
    operations: frozenset[Operation],
    content: ManifestContent,
    status: ManifestEntryStatus,
) -> Iterator[tuple[Snapshot, ManifestEntry]]:
    """Entries with ``status`` that each snapshot itself wrote, in manifests of ``content``."""
    for s in snapshots:
        if s.operation not in operations:
            continue
        for e in _written_by(io, base, s, content, status).entries():
            yield s, e


def _written_by(
    io: FileIO, base: TableMetadata, s: Snapshot, content: ManifestContent, status: ManifestEntryStatus
) -> ManifestGroup:
    """Entries with ``status`` in the manifests ``s`` wrote (the group skips manifests whose counts show
    no entry of that status)."""
    sid = s.snapshot_id
    return (
        ManifestGroup.of_snapshot(io, s)
        .with_metadata(base)
        .with_content(content)
        .only_statuses(status)
        .filter_manifests(lambda m: m.added_snapshot_id == sid)
        .filter_entries(lambda e: e.snapshot_id == sid)
    )


def validate_no_conflicting_files(
    io: FileIO,
    base: TableMetadata,
    snapshots: list[Snapshot],
    matches: Callable[[DataFile], bool],
    *,
    content: ManifestContent,
    table: str,
    what: str,
) -> None:
    """Fail when a snapshot since the start added a file (data or delete) that ``matches``.

    Raises:
        CommitConflictError: naming the file and the snapshot that added it.
    """
    operations = DATA_CHANGING if content == ManifestContent.DATA else DELETE_CHANGING
    for s, e in changed_files_since(
        io, base, snapshots, operations=operations, content=content, status=ManifestEntryStatus.ADDED
    ):
        if matches(e.data_file):
            kind = "data" if content == ManifestContent.DATA else "delete"
            raise CommitConflictError(
                f"Found conflicting {kind} file {e.data_file.file_path} added by concurrent snapshot {s.snapshot_id} "
                f"({s.operation}) to {table}, which this commit would {what}"
            )


def validate_files_still_exist(
    io: FileIO, base: TableMetadata, snapshots: list[Snapshot], paths: set[str], *, table: str
) -> None:
    """Fail when a snapshot since the start removed one of ``paths``.

    Raises:
        CommitConflictError: naming the file and the snapshot that removed it.
    """
    if not paths:
        return
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        for s, e in changed_files_since(
            io, base, snapshots, operations=REMOVING, content=content, status=ManifestEntryStatus.DELETED
        ):
            if e.data_file.file_path in paths or e.data_file.file_key in paths:
                raise CommitConflictError(
                    f"File {e.data_file.file_path} of {table} was removed by concurrent snapshot {s.snapshot_id} "
                    f"({s.operation}); this commit depends on it"
                )
