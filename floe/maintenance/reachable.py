"""Which files a set of snapshots references: manifest lists, manifests, data and delete files.

Maintenance decides what to delete by set difference over these, so every reader here is explicit about
missing files: a file already gone is fine for what is about to be deleted (``missing_ok=True``) but not
for what must be kept - if the kept side cannot be read completely, nothing may be deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from floe.io.fileio import FileIO
from floe.io.locations import comparison_key
from floe.io.manifest_group import ManifestGroup
from floe.spec.manifest import FileContent, ManifestFile
from floe.spec.snapshot import Snapshot
from floe.spec.table_metadata import TableMetadata

__all__ = ["ContentFile", "content_files", "metadata_files", "snapshot_manifests"]

_THREADS = 8


@dataclass(frozen=True, slots=True)
class ContentFile:
    """A data or delete file as a manifest names it."""

    path: str
    content: FileContent


def snapshot_manifests(
    io: FileIO, snapshots: Iterable[Snapshot], *, missing_ok: bool
) -> dict[str, ManifestFile]:
    """Every manifest the snapshots' manifest lists name, by path (remote lists read in parallel).

    Raises:
        FileNotFoundError: a manifest list is missing and ``missing_ok`` is False.
    """
    group = ManifestGroup.of_snapshots(io, snapshots, threads=_THREADS, missing_ok=missing_ok)
    return {m.manifest_path: m for m in group.manifests}


def content_files(
    io: FileIO, manifests: Iterable[ManifestFile], *, live_only: bool, missing_ok: bool
) -> dict[str, ContentFile]:
    """The data and delete files the manifests name, keyed by :func:`comparison_key` of their path.

    ``live_only`` skips DELETED entries: a snapshot needs only its live files, while a manifest about to
    be deleted may be the last record of a file its snapshot removed.

    Raises:
        FileNotFoundError: a manifest is missing and ``missing_ok`` is False.
    """
    group = ManifestGroup.of(io, manifests).select_stats(()).plan_with(_THREADS).skip_missing(missing_ok)
    if live_only:
        group = group.ignore_deleted()
    out: dict[str, ContentFile] = {}
    for e in group.entries():
        f = e.data_file
        key = comparison_key(f.file_path)
        if key not in out:
            out[key] = ContentFile(f.file_path, f.content)
    return out


def metadata_files(metadata: TableMetadata, metadata_location: str | None) -> list[str]:
    """Metadata JSON files (current and the metadata log) and statistics files the metadata names."""
    out = [e.metadata_file for e in metadata.metadata_log]
    if metadata_location:
        out.append(metadata_location)
    out += [f.statistics_path for f in metadata.statistics]
    out += [f.statistics_path for f in metadata.partition_statistics]
    return out
