"""Remove orphan files: files under the table location that no metadata references.

Referenced = every file any snapshot reaches (manifest lists, manifests, data and delete files of any
entry status), the current metadata file and its metadata log, statistics files, the Hadoop version hint
and commit lock. Paths are compared by :func:`floe.io.locations.comparison_key`, so ``file:/x``,
``file:///x`` and ``/x`` are one file. Only files older than the cut-off are removed: a file written by a
commit still in progress is unreferenced until that commit lands (default cut-off: 3 days ago).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from floe.errors import ValidationError
from floe.io.fileio import FileEntry
from floe.io.locations import basename, comparison_key, join
from floe.maintenance.reachable import content_files, metadata_files, snapshot_manifests
from floe.spec import properties as P
from floe.table.paths import metadata_dir
from floe.table.table import Table

__all__ = ["DEFAULT_ORPHAN_AGE_MS", "OrphanFilesResult", "find_orphans", "remove_orphan_files"]

DEFAULT_ORPHAN_AGE_MS = 3 * 24 * 60 * 60 * 1000
# Never orphans even when unreferenced: the Hadoop catalog's pointer and lock (floe.catalog.hadoop).
_PROTECTED_NAMES = frozenset({"version-hint.text", ".floe-commit.lock"})


@dataclass(frozen=True, slots=True)
class OrphanFilesResult:
    """The orphan files found (and deleted unless ``dry_run``)."""

    orphan_file_locations: tuple[str, ...]
    dry_run: bool


def find_orphans(listed: Iterable[FileEntry], referenced: set[str], *, older_than_ms: int) -> list[str]:
    """Listed files older than the cut-off whose comparison key is not in ``referenced`` (pure).

    ``referenced`` holds :func:`comparison_key` values of every referenced location.
    """
    return sorted(
        e.location
        for e in listed
        if e.mtime_ms < older_than_ms
        and basename(e.location) not in _PROTECTED_NAMES
        and comparison_key(e.location) not in referenced
    )


def referenced_files(table: Table) -> set[str]:
    """Comparison keys of every file ``table``'s metadata references (all snapshots, all entries).

    Raises:
        FileNotFoundError: a manifest list or manifest is missing (orphan detection would be unsafe).
    """
    md = table.metadata
    manifests = snapshot_manifests(table.io, md.snapshots, missing_ok=False)
    keys = set(content_files(table.io, manifests.values(), live_only=False, missing_ok=False))
    keys |= {comparison_key(p) for p in manifests}
    keys |= {comparison_key(s.manifest_list) for s in md.snapshots if s.manifest_list}
    keys |= {comparison_key(p) for p in metadata_files(md, table.metadata_location)}
    keys.add(comparison_key(join(metadata_dir(md), "version-hint.text")))
    return keys


def remove_orphan_files(
    table: Table,
    *,
    older_than_ms: int | None = None,
    location: str | None = None,
    dry_run: bool = False,
    max_concurrent_deletes: int | None = None,
) -> OrphanFilesResult:
    """Find (and unless ``dry_run`` delete) files under ``location`` that ``table`` does not reference.

    Args:
        older_than_ms: only files last modified before this (default: 3 days ago).
        location: where to look (default: the table location).
        dry_run: report without deleting.
        max_concurrent_deletes: threads deleting files (default 8).

    Raises:
        ValidationError: ``gc.enabled`` is false (the files may belong to another table sharing them).
    """
    if not P.property_bool(table.properties, P.GC_ENABLED, P.GC_ENABLED_DEFAULT):
        raise ValidationError(f"Cannot remove orphan files of table {table.name()}: gc.enabled is false")
    if max_concurrent_deletes is not None and max_concurrent_deletes < 1:
        raise ValidationError(f"max_concurrent_deletes must be positive, got {max_concurrent_deletes}")
    cutoff = time.time_ns() // 1_000_000 - DEFAULT_ORPHAN_AGE_MS if older_than_ms is None else older_than_ms
    # List first, then load what is referenced: a file committed in between is referenced, not orphaned.
    listed = list(table.io.list_prefix(location or table.location()))
    table.refresh()
    orphans = find_orphans(listed, referenced_files(table), older_than_ms=cutoff)
    if not dry_run and orphans:
        table.io.delete_many(orphans, max_workers=max_concurrent_deletes or 8)
    return OrphanFilesResult(tuple(orphans), dry_run)
