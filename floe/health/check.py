"""``floe.health``: one table's health from its metadata, manifest lists and manifests (no Spark).

Reads: the current snapshot's manifest list and its manifests (live entries, without column metrics),
up to ``GROWTH_SAMPLES`` older manifest lists for the manifest-growth plot, and, only with
``orphans=True``, a listing of the table folder plus every snapshot's manifests (as
``remove_orphan_files`` does). Everything else comes from the metadata file. The score is explained in
:mod:`floe.health.score`, the findings and their thresholds in :mod:`floe.health.findings`.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING

from floe.health.files import SMALL_FILE_FRACTION, count_files, live_entries, manifest_stats, size_bins
from floe.health.findings import ORPHAN_AGE_MS, FindingContext, find
from floe.health.report import HealthReport, PartitionHealth, SkewStats
from floe.health.score import score, score_parts
from floe.health.snapshots import manifest_growth, ref_health, snapshot_stats, timeline, writers
from floe.io.fileio import FileIO
from floe.io.manifest_reader import read_manifest_files
from floe.spec import properties as P
from floe.spec.table_metadata import TableMetadata

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["DEFAULT_RECENT_WINDOW_MS", "analyze", "health"]

DEFAULT_RECENT_WINDOW_MS = 15 * 60 * 1000


def _skew(parts: tuple[PartitionHealth, ...]) -> SkewStats:
    with_data = [p for p in parts if p.data_files]
    if not with_data:
        return SkewStats(0, None, 0, 0, 1.0, 0, 0, 1.0)
    rows = [p.data_rows for p in with_data]
    sizes = [p.data_bytes for p in with_data]
    largest = max(with_data, key=lambda p: p.data_bytes)
    median_rows = int(statistics.median(rows))
    median_bytes = int(statistics.median(sizes))
    return SkewStats(
        partitions=len(with_data),
        largest_partition=largest.partition,
        max_rows=max(rows),
        median_rows=median_rows,
        rows_ratio=max(rows) / median_rows if median_rows else 1.0,
        max_bytes=max(sizes),
        median_bytes=median_bytes,
        bytes_ratio=max(sizes) / median_bytes if median_bytes else 1.0,
    )


def _orphans(
    io: FileIO, metadata: TableMetadata, metadata_location: str | None, now_ms: int
) -> tuple[int, int]:
    """(unreferenced files older than three days, younger ones) under the table location."""
    # Imported here: only a health check asked to list the folder needs the orphan-file machinery.
    from floe.io.locations import join
    from floe.maintenance.orphan_files import find_orphans
    from floe.maintenance.reachable import content_files, metadata_files, snapshot_manifests
    from floe.table.paths import metadata_dir

    listed = list(io.list_prefix(metadata.location))
    manifests = snapshot_manifests(io, metadata.snapshots, missing_ok=True)
    referenced = {f.path for f in content_files(io, manifests.values(), live_only=False, missing_ok=True).values()}
    referenced |= set(manifests)
    referenced |= {s.manifest_list for s in metadata.snapshots if s.manifest_list}
    referenced |= set(metadata_files(metadata, metadata_location))
    referenced.add(join(metadata_dir(metadata), "version-hint.text"))
    every = find_orphans(listed, referenced, older_than_ms=now_ms + 1, prefix_mismatch_mode="IGNORE")
    old = find_orphans(listed, referenced, older_than_ms=now_ms - ORPHAN_AGE_MS, prefix_mismatch_mode="IGNORE")
    return len(old), len(every) - len(old)


def analyze(
    metadata: TableMetadata,
    io: FileIO,
    *,
    table: str,
    catalog: str = "",
    metadata_location: str | None = None,
    orphans: bool = False,
    now_ms: int | None = None,
    recent_window_ms: int = DEFAULT_RECENT_WINDOW_MS,
) -> HealthReport:
    """The health report of a table given its metadata and FileIO (the CLI's path: no Table handle).

    Args:
        table: the name statements use (``db.t``).
        catalog: the catalog name statements use (``CALL <catalog>.system...``); empty: ``system`` alone.
        metadata_location: the current metadata file (orphan detection keeps it).
        orphans: list the table folder and count files no metadata references.
        now_ms: the clock (default: now); ages and cut-offs are relative to it.
        recent_window_ms: how far back a commit makes its writer "recent" (see ``Finding.safe_now``).

    Raises:
        FileNotFoundError: the current snapshot's manifest list or a manifest is missing.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    target = P.property_int(metadata.properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT)
    small_below = int(target * SMALL_FILE_FRACTION)
    bins = size_bins(target)
    snap = metadata.current_snapshot()
    location_of = getattr(io, "location_of", None)
    manifests = read_manifest_files(io, snap, location_of) if snap is not None else []
    counts = count_files(metadata, live_entries(io, metadata, manifests), small_below=small_below, bins=bins)
    manifest_target = P.property_int(
        metadata.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT
    )
    m_stats = manifest_stats(manifests, manifest_target)
    current = [(snap, len(manifests), m_stats.total_bytes)] if snap is not None else []
    s_stats = snapshot_stats(metadata, now)
    refs = ref_health(metadata, now)
    recent = writers(metadata, now_ms=now, window_ms=recent_window_ms)
    orphan_counts = _orphans(io, metadata, metadata_location, now) if orphans else None
    parts = score_parts(counts.partitions, target, m_stats, s_stats)
    findings = find(
        FindingContext(
            metadata=metadata,
            catalog=catalog,
            table=table,
            now_ms=now,
            target=target,
            counts=counts,
            manifests=m_stats,
            snapshots=s_stats,
            refs=refs,
            writers=recent,
            window_ms=recent_window_ms,
            orphans_old=None if orphan_counts is None else orphan_counts[0],
            orphans_young=None if orphan_counts is None else orphan_counts[1],
            small_below=small_below,
        )
    )
    p = counts.partitions
    return HealthReport(
        table=table,
        catalog=catalog,
        location=metadata.location,
        format_version=metadata.format_version,
        snapshot_id=snap.snapshot_id if snap is not None else None,
        generated_at_ms=now,
        target_file_size_bytes=target,
        small_file_bytes=small_below,
        score=score(parts),
        score_parts=parts,
        data_files=sum(x.data_files for x in p),
        data_bytes=sum(x.data_bytes for x in p),
        data_rows=sum(x.data_rows for x in p),
        small_files=sum(x.small_files for x in p),
        small_bytes=sum(x.small_bytes for x in p),
        size_bins=bins,
        size_histogram=counts.histogram,
        partitions=p,
        deletes=counts.deletes,
        manifests=m_stats,
        manifest_growth=manifest_growth(io, metadata, current),
        snapshots=s_stats,
        timeline=timeline(metadata),
        refs=refs,
        skew=_skew(p),
        recent_writers=recent,
        recent_window_ms=recent_window_ms,
        orphan_candidates=None if orphan_counts is None else sum(orphan_counts),
        findings=findings,
    )


def _catalog_name(table: Table) -> str:
    catalog = table.catalog
    return catalog.name if catalog is not None else ""


def health(
    table: Table,
    *,
    orphans: bool = False,
    catalog: str | None = None,
    now_ms: int | None = None,
    recent_window_ms: int = DEFAULT_RECENT_WINDOW_MS,
) -> HealthReport:
    """The health report of ``table`` (its current metadata; call ``table.refresh()`` first for the newest).

    Args:
        orphans: also list the table folder and count orphan candidates (costs a full listing).
        catalog: the catalog name the CALL statements use (default: the table's catalog).
        now_ms: the clock for ages and cut-offs (default: now).
        recent_window_ms: commits this recent make their writers "recent" (``Finding.safe_now``).

    Raises:
        FileNotFoundError: the current snapshot's manifest list or a manifest is missing.
    """
    return analyze(
        table.metadata,
        table.io,
        table=table.name(),
        catalog=_catalog_name(table) if catalog is None else catalog,
        metadata_location=table.metadata_location,
        orphans=orphans,
        now_ms=now_ms,
        recent_window_ms=recent_window_ms,
    )
