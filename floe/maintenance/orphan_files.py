"""Remove orphan files: files under the table location that no metadata references.

Referenced = every file any snapshot reaches (manifest lists, manifests, data and delete files of any
entry status), the current metadata file and its metadata log, statistics files, the Hadoop version hint
and commit lock. As in Java, files are joined on their paths (``file:/x``, ``file:///x`` and ``/x`` are
one path) and then their schemes and authorities are compared, after mapping the ones declared equal. Only files older than the cut-off are removed: a file written by a
commit still in progress is unreferenced until that commit lands (default cut-off: 3 days ago).
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from floe.errors import ValidationError
from floe.io.fileio import FileEntry
from floe.io.locations import basename, join, scheme_of, to_local_path
from floe.maintenance.reachable import content_files, metadata_files, snapshot_manifests
from floe.spec import properties as P
from floe.table.paths import metadata_dir
from floe.table.table import Table

__all__ = [
    "DEFAULT_ORPHAN_AGE_MS",
    "PREFIX_MISMATCH_MODES",
    "OrphanFilesResult",
    "file_uri",
    "find_orphans",
    "remove_orphan_files",
]

DEFAULT_ORPHAN_AGE_MS = 3 * 24 * 60 * 60 * 1000
# Never orphans even when unreferenced: the Hadoop catalog's pointer and lock (floe.catalog.hadoop).
_PROTECTED_NAMES = frozenset({"version-hint.text", ".floe-commit.lock"})


@dataclass(frozen=True, slots=True)
class OrphanFilesResult:
    """The orphan files found (and deleted unless ``dry_run``)."""

    orphan_file_locations: tuple[str, ...]
    dry_run: bool


PREFIX_MISMATCH_MODES = ("ERROR", "IGNORE", "DELETE")
# Java's DeleteOrphanFilesSparkAction.EQUAL_SCHEMES_DEFAULT; a key may list several schemes.
_EQUAL_SCHEMES_DEFAULT = {"s3n,s3a": "s3"}

Uri = tuple[str | None, str | None, str]


def _flatten(mapping: Mapping[str, str] | None) -> dict[str, str]:
    return {k.strip(): v.strip() for key, v in (mapping or {}).items() for k in key.split(",")}


def file_uri(location: str, equal_schemes: Mapping[str, str], equal_authorities: Mapping[str, str]) -> Uri:
    """(scheme, authority, path) of a location, scheme and authority mapped to their declared equals."""
    scheme = scheme_of(location)
    if scheme in ("", "file"):
        # file:/x, file:///x and /x are one path; a bare path has no scheme (it matches any scheme)
        path, authority = posixpath.normpath(to_local_path(location)), None
    else:
        split = urlsplit(location)
        path, authority = split.path, split.netloc or None
    mapped_scheme = equal_schemes.get(scheme, scheme) if scheme else None
    mapped_authority = None if authority is None else equal_authorities.get(authority, authority)
    return mapped_scheme, mapped_authority, path


def _matches(valid: str | None, actual: str | None) -> bool:
    # Java's FileURI.uriComponentMatch: a reference without scheme/authority matches any.
    return not valid or (actual is not None and valid.lower() == actual.lower())


def find_orphans(
    listed: Iterable[FileEntry],
    referenced: Iterable[str],
    *,
    older_than_ms: int,
    prefix_mismatch_mode: str = "ERROR",
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
) -> list[str]:
    """Listed files older than the cut-off that no referenced location names (pure).

    Files are joined on their paths; a path referenced only with another scheme or authority is a prefix
    mismatch, which ``prefix_mismatch_mode`` settles as Java does: ERROR fails, IGNORE keeps the file,
    DELETE treats it as an orphan.

    Raises:
        ValidationError: a prefix mismatch in ERROR mode, or an unknown mode.
    """
    mode = prefix_mismatch_mode.strip().upper()
    if mode not in PREFIX_MISMATCH_MODES:
        raise ValidationError(
            f"Invalid prefix_mismatch_mode {prefix_mismatch_mode!r}: expected one of {', '.join(PREFIX_MISMATCH_MODES)}"
        )
    schemes = _flatten(_EQUAL_SCHEMES_DEFAULT) | _flatten(equal_schemes)
    authorities = _flatten(equal_authorities)
    by_path: dict[str, list[tuple[str | None, str | None]]] = {}
    for location in referenced:
        scheme, authority, path = file_uri(location, schemes, authorities)
        by_path.setdefault(path, []).append((scheme, authority))
    orphans: list[str] = []
    conflicts: set[tuple[str | None, str | None]] = set()
    for e in listed:
        if e.mtime_ms >= older_than_ms or basename(e.location) in _PROTECTED_NAMES:
            continue
        scheme, authority, path = file_uri(e.location, schemes, authorities)
        valid = by_path.get(path)
        if valid is None:
            orphans.append(e.location)
            continue
        if any(_matches(s, scheme) and _matches(a, authority) for s, a in valid):
            continue
        if mode == "DELETE":
            orphans.append(e.location)
            continue
        for s, a in valid:
            if not _matches(s, scheme):
                conflicts.add((s, scheme))
            if not _matches(a, authority):
                conflicts.add((a, authority))
    if conflicts and mode == "ERROR":
        listed_conflicts = ", ".join(f"({v}, {a})" for v, a in sorted(conflicts, key=str))
        raise ValidationError(
            "Unable to determine whether certain files are orphan: metadata references files that match listed "
            "files except for authority/scheme; declare equal ones with equal_schemes / equal_authorities, or set "
            "prefix_mismatch_mode to IGNORE or DELETE. Conflicting authorities/schemes: " + listed_conflicts
        )
    return sorted(orphans)


def referenced_files(table: Table) -> set[str]:
    """Every location ``table``'s metadata references (all snapshots, all entries), as written.

    Raises:
        FileNotFoundError: a manifest list or manifest is missing (orphan detection would be unsafe).
    """
    md = table.metadata
    manifests = snapshot_manifests(table.io, md.snapshots, missing_ok=False)
    out = {f.path for f in content_files(table.io, manifests.values(), live_only=False, missing_ok=False).values()}
    out |= set(manifests)
    out |= {s.manifest_list for s in md.snapshots if s.manifest_list}
    out |= set(metadata_files(md, table.metadata_location))
    out.add(join(metadata_dir(md), "version-hint.text"))
    return out


def remove_orphan_files(
    table: Table,
    *,
    older_than_ms: int | None = None,
    location: str | None = None,
    dry_run: bool = False,
    max_concurrent_deletes: int | None = None,
    prefix_mismatch_mode: str = "ERROR",
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    listed: Iterable[FileEntry] | None = None,
) -> OrphanFilesResult:
    """Find (and unless ``dry_run`` delete) files under ``location`` that ``table`` does not reference.

    Args:
        older_than_ms: only files last modified before this (default: 3 days ago).
        location: where to look (default: the table location).
        dry_run: report without deleting.
        max_concurrent_deletes: threads deleting files (default 8).
        prefix_mismatch_mode: ERROR, IGNORE or DELETE (see :func:`find_orphans`).
        equal_schemes / equal_authorities: schemes or authorities to treat as equal (``{"s3a,s3n": "s3"}``).
        listed: the files to check instead of listing ``location`` (Java's ``file_list_view``).

    Raises:
        ValidationError: ``gc.enabled`` is false (the files may belong to another table sharing them), or
            a prefix mismatch in ERROR mode.
    """
    if not P.property_bool(table.properties, P.GC_ENABLED, P.GC_ENABLED_DEFAULT):
        raise ValidationError(f"Cannot remove orphan files of table {table.name()}: gc.enabled is false")
    if max_concurrent_deletes is not None and max_concurrent_deletes < 1:
        raise ValidationError(f"max_concurrent_deletes must be positive, got {max_concurrent_deletes}")
    cutoff = time.time_ns() // 1_000_000 - DEFAULT_ORPHAN_AGE_MS if older_than_ms is None else older_than_ms
    # List first, then load what is referenced: a file committed in between is referenced, not orphaned.
    files = list(table.io.list_prefix(location or table.location()) if listed is None else listed)
    table.refresh()
    orphans = find_orphans(
        files,
        referenced_files(table),
        older_than_ms=cutoff,
        prefix_mismatch_mode=prefix_mismatch_mode,
        equal_schemes=equal_schemes,
        equal_authorities=equal_authorities,
    )
    if not dry_run and orphans:
        table.io.delete_many(orphans, max_workers=max_concurrent_deletes or 8)
    return OrphanFilesResult(tuple(orphans), dry_run)
