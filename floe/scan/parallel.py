"""Manifest reading in worker processes, for plans over many manifests.

Decoding Avro manifests and building entries is CPU work under the GIL, which threads cannot spread over cores. For large
plans the planner hands batches of manifests to a process pool: each worker decodes and prunes its
manifests (partition and metrics filters) and returns the surviving entries as plain tuples *without*
column statistics (Iceberg's planFiles also drops them unless asked), which pickle cheaply; the parent
rebuilds ManifestEntry values. Workers start with ``spawn`` so a parent holding JVM gateway threads
(PySpark) is never forked.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from floe.expressions.base import BooleanExpression
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup
from floe.scan.pruning import RowFilterPruning, referenced_field_ids
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = ["MIN_MANIFESTS_FOR_PROCESSES", "PlanJob", "plan_in_processes"]

# Below this many manifests, process start-up (~0.3 s per worker) costs more than it saves.
MIN_MANIFESTS_FOR_PROCESSES = 64
_BATCH = 8

_Row = tuple[Any, ...]


@dataclass(frozen=True)
class PlanJob:
    """What a worker needs to prune manifests (everything picklable)."""

    io_properties: Mapping[str, str]
    schema: Schema
    specs_by_id: Mapping[int, PartitionSpec]
    row_filter: BooleanExpression
    case_sensitive: bool
    partition_types: Mapping[int, StructType] | None = None


def _to_row(e: ManifestEntry) -> _Row:
    f = e.data_file
    return (
        int(e.status), e.snapshot_id, e.sequence_number, e.file_sequence_number,
        int(f.content), f.file_path, f.file_format.value, f.partition, f.record_count, f.file_size_in_bytes,
        f.key_metadata, f.split_offsets, f.equality_ids, f.sort_order_id, f.spec_id, f.first_row_id,
        f.referenced_data_file, f.content_offset, f.content_size_in_bytes,
    )


_STATUS = {int(s): s for s in ManifestEntryStatus}
_CONTENT = {int(c): c for c in FileContent}
_FORMATS = {f.value: f for f in FileFormat}


def _from_row(r: _Row) -> ManifestEntry:
    f = DataFile(
        _CONTENT[r[4]], r[5], _FORMATS[r[6]], r[7], r[8], r[9], None, None, None, None, None, None,
        r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[17], r[18],
    )
    return ManifestEntry(_STATUS[r[0]], r[1], r[2], r[3], f)


def _work(job: PlanJob, batch: Sequence[tuple[ManifestFile, str]]) -> list[_Row]:
    """Runs in a worker: decode and prune a batch of (manifest, readable location)."""
    locations = {m.manifest_path: loc for m, loc in batch}
    pruning = RowFilterPruning(
        schema=job.schema,
        specs_by_id=job.specs_by_id,
        row_filter=job.row_filter,
        case_sensitive=job.case_sensitive,
        partition_types=job.partition_types,
    )
    group = ManifestGroup(
        io=FileIO(job.io_properties),
        manifests=tuple(m for m, _ in batch),
        specs_by_id=job.specs_by_id,
        schema=job.schema,
        location_of=lambda p: locations.get(p, p),
        use_cache=False,  # a worker reads each manifest once; uncached, the decoder prefilters its entries
    )
    # Rows carry no column statistics: decode only the metrics the filter prunes with.
    group = pruning.prune_entries(group.ignore_deleted().select_stats(referenced_field_ids(pruning.bound)))
    return [_to_row(e) for e in group.entries()]


def plan_in_processes(
    job: PlanJob, manifests: Sequence[tuple[ManifestFile, str]], *, processes: int
) -> Iterator[ManifestEntry]:
    """Live, filter-matching entries of ``manifests`` decoded by ``processes`` workers, in manifest order."""
    batches = [manifests[i : i + _BATCH] for i in range(0, len(manifests), _BATCH)]
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(processes, mp_context=ctx) as pool:
        window = processes * 2
        pending: list[Future[list[_Row]]] = []
        it = iter(batches)
        for b in it:
            pending.append(pool.submit(_work, job, b))
            if len(pending) >= window:
                break
        while pending:
            rows = pending.pop(0).result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(_work, job, nxt))
            for r in rows:
                yield _from_row(r)
