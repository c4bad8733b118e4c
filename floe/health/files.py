"""Live data and delete files of a snapshot, summed per partition (one pass over its manifests).

Small files: a data file below ``SMALL_FILE_FRACTION`` (75%) of ``write.target-file-size-bytes`` is small.
That is the lower bound ``rewrite_data_files`` itself uses (``min-file-size-bytes`` defaults to 75% of the
target, as in Iceberg Java's size-based planner) and Amoro's ``min-target-size-ratio`` default, so the
files counted here are exactly those a default ``rewrite_data_files`` picks up.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from floe.errors import FloeError
from floe.health.report import DeleteStats, ManifestStats, PartitionHealth, SizeBin
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup
from floe.spec.manifest import FileContent, FileFormat, ManifestContent, ManifestEntry, ManifestFile
from floe.spec.table_metadata import TableMetadata

__all__ = ["SMALL_FILE_FRACTION", "FileCounts", "count_files", "human_bytes", "manifest_stats", "size_bins"]

SMALL_FILE_FRACTION = 0.75
# Histogram edges as fractions of the target size: the small-file threshold and the target are edges, and
# the last finite edge is rewrite_data_files' max-file-size-bytes default (180% of the target).
_EDGES = (0.0, 1 / 1024, 1 / 256, 1 / 64, 1 / 16, 1 / 4, 0.5, SMALL_FILE_FRACTION, 1.0, 1.8)
_READERS = 8  # threads fetching remote manifests


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            text = f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"
            return f"{text} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def size_bins(target: int) -> tuple[SizeBin, ...]:
    """The histogram's bins for a target file size (edges rounded to bytes)."""
    edges = [int(target * f) for f in _EDGES]
    bins = [
        SizeBin(low, high, f"{human_bytes(low)}-{human_bytes(high)}") for low, high in itertools.pairwise(edges)
    ]
    bins.append(SizeBin(edges[-1], None, f">= {human_bytes(edges[-1])}"))
    return tuple(bins)


def _bin_of(size: int, bins: tuple[SizeBin, ...]) -> int:
    for i, b in enumerate(bins):
        if b.high_bytes is None or size < b.high_bytes:
            return i
    return len(bins) - 1


@dataclass(slots=True)
class _Acc:
    spec_id: int
    partition: tuple[object, ...]
    data_files: int = 0
    data_bytes: int = 0
    data_rows: int = 0
    small_files: int = 0
    small_bytes: int = 0
    pos_files: int = 0
    pos_rows: int = 0
    dv_count: int = 0
    dv_rows: int = 0
    eq_files: int = 0
    eq_rows: int = 0
    histogram: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FileCounts:
    """Per-partition sums plus the table-wide delete summary."""

    partitions: tuple[PartitionHealth, ...]
    raw_partitions: tuple[tuple[int, tuple[object, ...]], ...]  # (spec id, tuple), parallel to partitions
    deletes: DeleteStats
    histogram: tuple[int, ...]


def partition_text(metadata: TableMetadata, spec_id: int, values: tuple[object, ...]) -> str:
    """``name=value/...`` with Iceberg's human strings (not URL-encoded: it is shown, not used as a path)."""
    spec = metadata.spec_by_id(spec_id)
    if spec is None or not spec.fields or not values:
        return "(unpartitioned)"
    try:
        ptype = spec.partition_type(metadata.schema())
        parts = [
            f"{f.name}={f.transform.to_human_string(pf.field_type, v)}"
            for f, pf, v in zip(spec.fields, ptype.fields, values)
        ]
    except (ValueError, KeyError, TypeError, NotImplementedError, FloeError):  # e.g. a dropped source column
        parts = [f"{f.name}={v}" for f, v in zip(spec.fields, values)]
    return "/".join(parts)


def live_entries(io: FileIO, metadata: TableMetadata, manifests: Iterable[ManifestFile]) -> Iterable[ManifestEntry]:
    """Live entries of these manifests, without column metrics (which are most of the decode time)."""
    location_of: Callable[[str], str] | None = getattr(io, "location_of", None)
    group = ManifestGroup.of(io, manifests, location_of=location_of).with_metadata(metadata)
    return group.ignore_deleted().select_stats(()).plan_with(_READERS).entries()


def count_files(
    metadata: TableMetadata, entries: Iterable[ManifestEntry], *, small_below: int, bins: tuple[SizeBin, ...]
) -> FileCounts:
    """Sum live entries per (spec id, partition tuple)."""
    accs: dict[tuple[int, tuple[object, ...]], _Acc] = {}
    referenced_by_dv: set[str] = set()
    table_histogram = [0] * len(bins)
    for e in entries:
        f = e.data_file
        key = (f.spec_id, f.partition)
        acc = accs.get(key)
        if acc is None:
            acc = accs[key] = _Acc(f.spec_id, f.partition, histogram=[0] * len(bins))
        if f.content == FileContent.DATA:
            acc.data_files += 1
            acc.data_bytes += f.file_size_in_bytes
            acc.data_rows += f.record_count
            if f.file_size_in_bytes < small_below:
                acc.small_files += 1
                acc.small_bytes += f.file_size_in_bytes
            b = _bin_of(f.file_size_in_bytes, bins)
            acc.histogram[b] += 1
            table_histogram[b] += 1
        elif f.content == FileContent.POSITION_DELETES:
            if f.file_format == FileFormat.PUFFIN:
                acc.dv_count += 1
                acc.dv_rows += f.record_count
                if f.referenced_data_file:
                    referenced_by_dv.add(f.referenced_data_file)
            else:
                acc.pos_files += 1
                acc.pos_rows += f.record_count
        else:
            acc.eq_files += 1
            acc.eq_rows += f.record_count
    ordered = sorted(accs.values(), key=lambda a: (a.spec_id, repr(a.partition)))
    partitions = tuple(
        PartitionHealth(
            spec_id=a.spec_id,
            partition=partition_text(metadata, a.spec_id, a.partition),
            data_files=a.data_files,
            data_bytes=a.data_bytes,
            data_rows=a.data_rows,
            small_files=a.small_files,
            small_bytes=a.small_bytes,
            position_delete_files=a.pos_files,
            position_delete_rows=a.pos_rows,
            dv_count=a.dv_count,
            dv_rows=a.dv_rows,
            equality_delete_files=a.eq_files,
            equality_delete_rows=a.eq_rows,
            histogram=tuple(a.histogram),
        )
        for a in ordered
    )
    with_pos = sum(a.data_files for a in ordered if a.pos_files)
    with_dv = len(referenced_by_dv)
    covered = with_pos + with_dv
    deletes = DeleteStats(
        position_delete_files=sum(a.pos_files for a in ordered),
        position_delete_rows=sum(a.pos_rows for a in ordered),
        dv_count=sum(a.dv_count for a in ordered),
        dv_rows=sum(a.dv_rows for a in ordered),
        equality_delete_files=sum(a.eq_files for a in ordered),
        equality_delete_rows=sum(a.eq_rows for a in ordered),
        data_files_with_position_deletes=with_pos,
        data_files_with_dv=with_dv,
        dv_coverage=with_dv / covered if covered else 1.0,
    )
    return FileCounts(partitions, tuple((a.spec_id, a.partition) for a in ordered), deletes, tuple(table_histogram))


def manifest_stats(manifests: list[ManifestFile], target: int) -> ManifestStats:
    """Counts and size spread of a snapshot's manifests; ``ideal_count`` per content as rewrite_manifests packs."""
    sizes = sorted(m.manifest_length for m in manifests)
    by_content: dict[ManifestContent, int] = {}
    for m in manifests:
        by_content[m.content] = by_content.get(m.content, 0) + m.manifest_length
    ideal = sum(max(1, math.ceil(total / target)) for total in by_content.values())
    return ManifestStats(
        count=len(manifests),
        data_manifests=sum(1 for m in manifests if m.content == ManifestContent.DATA),
        delete_manifests=sum(1 for m in manifests if m.content == ManifestContent.DELETES),
        total_bytes=sum(sizes),
        min_bytes=sizes[0] if sizes else 0,
        median_bytes=sizes[len(sizes) // 2] if sizes else 0,
        max_bytes=sizes[-1] if sizes else 0,
        target_bytes=target,
        small_count=sum(1 for s in sizes if s < target / 4),
        ideal_count=ideal,
    )
