"""Scan tasks: one data file (or a byte range of it) with the deletes that apply, and bin-packed groups.

Splitting and combining follow Iceberg's read properties (``read.split.target-size``,
``read.split.open-file-cost``, ``read.split.planning-lookback``): a large file is cut at its
``split_offsets`` (row-group starts, spec "Manifests" field 132) or, without offsets, at fixed-size
boundaries; small pieces are then packed into groups whose weight approaches the target size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.spec.fast_new import positional_constructor
from floe.spec.manifest import DataFile, FileFormat, ManifestEntry
from floe.spec.partitioning import PartitionSpec

__all__ = ["CombinedScanTask", "FileScanTask", "new_file_scan_task", "pack_tasks", "split_task", "split_tasks"]

# Java also splits ORC and Avro; Floe's driver-side readers can read byte ranges of Parquet only, so
# other formats stay whole (Spark's native Parquet scan does its own splitting anyway).
_SPLITTABLE = frozenset({FileFormat.PARQUET})


@dataclass(frozen=True, slots=True, eq=False)
class FileScanTask:
    """Read ``length`` bytes of ``data_file`` from ``start``, applying ``deletes`` and ``residual``.

    ``deletes`` are the manifest entries of the delete files that apply (their ``sequence_number`` is the
    delete's data sequence number, which decides which equality-deleted rows a reader drops). A v3
    deletion vector is a position delete entry whose bytes are one blob of a Puffin file
    (``content_offset``/``content_size_in_bytes``); when present it is the only position delete.
    """

    data_file: DataFile
    data_sequence_number: int
    deletes: tuple[ManifestEntry, ...] = ()
    residual: BooleanExpression = field(default_factory=AlwaysTrue)
    start: int = 0
    length: int = -1
    spec: PartitionSpec | None = None

    @property
    def delete_files(self) -> tuple[DataFile, ...]:
        """The delete files that apply to this task's rows."""
        return tuple(e.data_file for e in self.deletes)

    @property
    def file_path(self) -> str:
        return self.data_file.file_path

    @property
    def is_whole_file(self) -> bool:
        return self.start == 0 and (self.length < 0 or self.length >= self.data_file.file_size_in_bytes)

    @property
    def size_bytes(self) -> int:
        """Bytes this task reads from the data file."""
        return self.data_file.file_size_in_bytes if self.length < 0 else self.length

    def weight(self, open_file_cost: int) -> int:
        """Planning weight: bytes read including delete files, at least the cost of opening each file."""
        deletes = sum(_delete_bytes(e.data_file) for e in self.deletes)
        return max(self.size_bytes + deletes, (1 + len(self.deletes)) * open_file_cost)

    def with_range(self, start: int, length: int) -> FileScanTask:
        return FileScanTask(
            self.data_file, self.data_sequence_number, self.deletes, self.residual, start, length, self.spec
        )

    def __repr__(self) -> str:
        return (
            f"FileScanTask({self.data_file.file_path!r}, start={self.start}, length={self.length}, "
            f"deletes={len(self.deletes)}, residual={self.residual})"
        )


# FileScanTask(data_file, data_sequence_number, deletes, residual, start, length, spec) for planning's
# loops: a task refers to files, entries, an expression and a spec, none of which refer back to it.
new_file_scan_task: Callable[
    [DataFile, int, tuple[ManifestEntry, ...], BooleanExpression, int, int, PartitionSpec | None], FileScanTask
] = positional_constructor(FileScanTask, acyclic=True)


def _delete_bytes(f: DataFile) -> int:
    """Bytes a reader fetches for one delete: a deletion vector's blob, not its whole Puffin file."""
    return f.content_size_in_bytes if f.content_size_in_bytes is not None else f.file_size_in_bytes


@dataclass(frozen=True, slots=True, eq=False)
class CombinedScanTask:
    """A group of file scan tasks one reader processes together."""

    tasks: tuple[FileScanTask, ...]

    @property
    def files(self) -> tuple[FileScanTask, ...]:
        return self.tasks

    @property
    def size_bytes(self) -> int:
        return sum(t.size_bytes for t in self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)


def _valid_offsets(task: FileScanTask) -> tuple[int, ...] | None:
    offsets = task.data_file.split_offsets
    size = task.data_file.file_size_in_bytes
    if not offsets:
        return None
    prev = -1
    for o in offsets:
        # Offsets must be ascending and inside the file; writers have produced bad ones, ignore those.
        if o <= prev or o >= size:
            return None
        prev = o
    return offsets


def split_task(task: FileScanTask, target_size: int) -> Iterator[FileScanTask]:
    """Cut a whole-file task into byte ranges of about ``target_size``.

    With split offsets, ranges start at offsets (consecutive row groups are merged while they stay
    under the target); without them, splittable formats are cut at fixed ``target_size`` boundaries.
    """
    df = task.data_file
    size = df.file_size_in_bytes
    if not task.is_whole_file or df.file_format not in _SPLITTABLE or size <= target_size:
        yield task
        return
    offsets = _valid_offsets(task)
    if offsets is None:
        pos = 0
        while pos < size:
            length = min(target_size, size - pos)
            yield task.with_range(pos, length)
            pos += length
        return
    bounds = list(offsets) + [size]
    begin = bounds[0] if bounds[0] == 0 else 0
    i = 1
    while i < len(bounds):
        end = bounds[i]
        # Grow the range over following row groups while it stays within the target.
        while i + 1 < len(bounds) and bounds[i + 1] - begin <= target_size:
            i += 1
            end = bounds[i]
        yield task.with_range(begin, end - begin)
        begin = end
        i += 1


def split_tasks(tasks: Iterable[FileScanTask], target_size: int) -> Iterator[FileScanTask]:
    """Split every task of ``tasks`` (see :func:`split_task`)."""
    for t in tasks:
        yield from split_task(t, target_size)


def pack_tasks(
    tasks: Iterable[FileScanTask], *, target_size: int, open_file_cost: int, lookback: int
) -> Iterator[CombinedScanTask]:
    """Bin-pack tasks into groups of about ``target_size`` weight, keeping at most ``lookback`` groups open.

    Each task goes into the first open group it fits in; when none fits and ``lookback`` groups are open,
    the fullest group is emitted to make room. Streaming: memory is bounded by the open groups.
    """
    lookback = max(1, lookback)
    open_bins: list[tuple[list[FileScanTask], list[int]]] = []
    for task in tasks:
        w = task.weight(open_file_cost)
        for items, weight in open_bins:
            if weight[0] + w <= target_size:
                items.append(task)
                weight[0] += w
                break
        else:
            if len(open_bins) >= lookback:
                fullest = max(range(len(open_bins)), key=lambda i: open_bins[i][1][0])
                yield CombinedScanTask(tuple(open_bins.pop(fullest)[0]))
            open_bins.append(([task], [w]))
    for items, _ in open_bins:
        yield CombinedScanTask(tuple(items))
