"""File-group planning for data-file compaction (pure: planned scan tasks in, rewrite groups out; no IO).

Java's ``BinPackRewriteFilePlanner`` (``SizeBasedFileRewritePlanner``), which the sort and z-order
strategies share: files are grouped by partition of the table's current spec (files of another spec
count as one unpartitioned group), a file is a candidate when its size is outside
``[min-file-size-bytes, max-file-size-bytes]``, it has ``delete-file-threshold`` delete files or its
file-scoped deletes cover ``delete-ratio-threshold`` of its rows; candidates are packed in scan order into
groups of at most ``max-file-group-size-bytes``, and a group is rewritten when it has enough files
(``min-input-files``, more than one), more than one file and more bytes than one output file, more bytes
than ``max-file-size-bytes``, or a file with too many deletes. ``rewrite-all`` skips both filters.
Options are parsed in :mod:`floe.maintenance.rewrite_options`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from floe.maintenance.rewrite_options import RewriteOptions
from floe.scan.tasks import FileScanTask
from floe.spec.manifest import POSITION_DELETE_FILE_PATH_ID, DataFile, FileContent

__all__ = ["RewriteGroup", "RewriteOptions", "is_file_scoped", "plan_groups"]


@dataclass(frozen=True, slots=True)
class RewriteGroup:
    """Files of one partition rewritten together into ``expected_output_files`` new files."""

    spec_id: int
    partition: tuple[Any, ...]
    tasks: tuple[FileScanTask, ...]
    expected_output_files: int = 1

    @property
    def size_bytes(self) -> int:
        return sum(t.data_file.file_size_in_bytes for t in self.tasks)


def is_file_scoped(f: DataFile) -> bool:
    """Whether a delete file applies to one data file only (a DV, or position deletes naming one path)."""
    if f.referenced_data_file is not None:
        return True
    if f.content != FileContent.POSITION_DELETES:
        return False
    lower = (f.lower_bounds or {}).get(POSITION_DELETE_FILE_PATH_ID)
    upper = (f.upper_bounds or {}).get(POSITION_DELETE_FILE_PATH_ID)
    return lower is not None and lower == upper


def _partition_key(partition: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is not None, v if v is not None else 0) for v in partition)


def _pack(tasks: list[FileScanTask], max_group_bytes: int) -> list[list[FileScanTask]]:
    # Java's ListPacker(maxGroupSize, lookback 1): in scan order, one open group closed when the next
    # file does not fit; a file larger than the limit gets a group of its own.
    groups: list[list[FileScanTask]] = []
    size = 0
    for t in tasks:
        length = t.data_file.file_size_in_bytes
        if groups and size + length <= max_group_bytes:
            groups[-1].append(t)
            size += length
        else:
            groups.append([t])
            size = length
    return groups


def plan_groups(
    tasks: Iterable[FileScanTask], options: RewriteOptions, *, current_spec_id: int = 0, current_spec_fields: int = 0
) -> list[RewriteGroup]:
    """The groups worth rewriting, partitions in order, then ordered by ``rewrite-job-order``.

    ``current_spec_id`` / ``current_spec_fields``: the table's spec and its number of partition fields; a
    file of another spec is grouped with the current spec's all-null partition, as Java does.
    """
    o = options

    def too_many_deletes(t: FileScanTask) -> bool:
        return len(t.deletes) >= o.delete_file_threshold

    def too_high_delete_ratio(t: FileScanTask) -> bool:
        if not t.deletes or t.data_file.record_count <= 0:
            return False
        known = sum(e.data_file.record_count for e in t.deletes if is_file_scoped(e.data_file))
        return min(known, t.data_file.record_count) / t.data_file.record_count >= o.delete_ratio_threshold

    def candidate(t: FileScanTask) -> bool:
        size = t.data_file.file_size_in_bytes
        outside = size < o.min_file_size_bytes or size > o.max_file_size_bytes
        return outside or too_many_deletes(t) or too_high_delete_ratio(t)

    def worth(group: list[FileScanTask]) -> bool:
        size = sum(t.data_file.file_size_in_bytes for t in group)
        return (
            (len(group) > 1 and len(group) >= o.min_input_files)
            or (len(group) > 1 and size > o.target_file_size_bytes)
            or size > o.max_file_size_bytes
            or any(too_many_deletes(t) or too_high_delete_ratio(t) for t in group)
        )

    null_partition: tuple[Any, ...] = (None,) * current_spec_fields
    by_partition: dict[tuple[Any, ...], list[FileScanTask]] = {}
    for t in tasks:
        key = t.data_file.partition if t.data_file.spec_id == current_spec_id else null_partition
        by_partition.setdefault(key, []).append(t)

    groups: list[RewriteGroup] = []
    remaining = o.max_files_to_rewrite
    for partition in sorted(by_partition, key=_partition_key):
        files = by_partition[partition]
        chosen = files if o.rewrite_all else [t for t in files if candidate(t)]
        for group in _pack(chosen, o.max_file_group_size_bytes):
            if not (o.rewrite_all or worth(group)):
                continue
            expected = o.expected_output_files(sum(t.data_file.file_size_in_bytes for t in group))
            if remaining is not None:
                if remaining <= 0:
                    continue
                # Java cuts the group but keeps the output estimate of the whole group.
                group = group[:remaining]
                remaining -= len(group)
            spec_id = group[0].data_file.spec_id if partition != null_partition else current_spec_id
            groups.append(RewriteGroup(spec_id, partition, tuple(group), expected))
    return o.order_groups(groups)
