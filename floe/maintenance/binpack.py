"""Bin-pack planning for data-file compaction (pure: planned scan tasks in, rewrite groups out; no IO).

Iceberg's ``rewrite_data_files`` with the ``binpack`` strategy, as the seed describes it: take the current
snapshot's data files, keep those worth rewriting (outside ``[min-file-size-bytes, max-file-size-bytes]``,
or with at least ``delete-file-threshold`` delete files, or all with ``rewrite-all``), group them by
partition, cut each partition into groups of at most ``max-file-group-size-bytes``, and rewrite a group
when it has enough files (``min-input-files``), more bytes than one output file, too many bytes for one
group, a file too large, or files with too many deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from floe.errors import ValidationError
from floe.scan.tasks import FileScanTask
from floe.spec import properties as P

__all__ = ["OPTION_NAMES", "RewriteGroup", "RewriteOptions", "plan_groups"]

TARGET_FILE_SIZE = "target-file-size-bytes"
MIN_FILE_SIZE = "min-file-size-bytes"
MAX_FILE_SIZE = "max-file-size-bytes"
MIN_INPUT_FILES = "min-input-files"
MAX_GROUP_SIZE = "max-file-group-size-bytes"
REWRITE_ALL = "rewrite-all"
DELETE_FILE_THRESHOLD = "delete-file-threshold"
PARTIAL_PROGRESS = "partial-progress.enabled"
PARTIAL_PROGRESS_MAX_COMMITS = "partial-progress.max-commits"
# Accepted for compatibility; Floe writes groups one after another on the driver's Spark session.
MAX_CONCURRENT_GROUPS = "max-concurrent-file-group-rewrites"

OPTION_NAMES = frozenset(
    {
        TARGET_FILE_SIZE,
        MIN_FILE_SIZE,
        MAX_FILE_SIZE,
        MIN_INPUT_FILES,
        MAX_GROUP_SIZE,
        REWRITE_ALL,
        DELETE_FILE_THRESHOLD,
        PARTIAL_PROGRESS,
        PARTIAL_PROGRESS_MAX_COMMITS,
        MAX_CONCURRENT_GROUPS,
    }
)


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"Option {key} must be an integer, got {raw!r}") from None


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValidationError(f"Option {key} must be true or false, got {raw!r}")
    return text == "true"


@dataclass(frozen=True, slots=True)
class RewriteOptions:
    """Validated compaction options (sizes in bytes)."""

    target_file_size_bytes: int
    min_file_size_bytes: int
    max_file_size_bytes: int
    min_input_files: int = 5
    max_file_group_size_bytes: int = 100 * 1024**3
    rewrite_all: bool = False
    delete_file_threshold: int = 2**31 - 1
    partial_progress_enabled: bool = False
    partial_progress_max_commits: int = 10

    @staticmethod
    def parse(options: Mapping[str, Any] | None, table_properties: Mapping[str, str]) -> RewriteOptions:
        """Options as ``rewrite_data_files`` takes them (strings), defaults from the table's properties.

        Defaults: target = ``write.target-file-size-bytes`` (512 MB), min = 75% and max = 180% of it.

        Raises:
            ValidationError: an unknown option, a malformed value or inconsistent sizes.
        """
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        unknown = sorted(set(opts) - OPTION_NAMES)
        if unknown:
            raise ValidationError(
                f"Unknown rewrite_data_files option(s) {', '.join(unknown)} (supported: {', '.join(sorted(OPTION_NAMES))})"
            )
        target = _int(
            opts,
            TARGET_FILE_SIZE,
            P.property_int(table_properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT),
        )
        out = RewriteOptions(
            target_file_size_bytes=target,
            min_file_size_bytes=_int(opts, MIN_FILE_SIZE, int(target * 0.75)),
            max_file_size_bytes=_int(opts, MAX_FILE_SIZE, int(target * 1.8)),
            min_input_files=_int(opts, MIN_INPUT_FILES, 5),
            max_file_group_size_bytes=_int(opts, MAX_GROUP_SIZE, 100 * 1024**3),
            rewrite_all=_bool(opts, REWRITE_ALL, False),
            delete_file_threshold=_int(opts, DELETE_FILE_THRESHOLD, 2**31 - 1),
            partial_progress_enabled=_bool(opts, PARTIAL_PROGRESS, False),
            partial_progress_max_commits=_int(opts, PARTIAL_PROGRESS_MAX_COMMITS, 10),
        )
        out._check()
        return out

    def _check(self) -> None:
        if self.target_file_size_bytes <= 0:
            raise ValidationError(f"{TARGET_FILE_SIZE} must be positive, got {self.target_file_size_bytes}")
        if not 0 <= self.min_file_size_bytes <= self.target_file_size_bytes <= self.max_file_size_bytes:
            raise ValidationError(
                f"Need {MIN_FILE_SIZE} ({self.min_file_size_bytes}) <= {TARGET_FILE_SIZE} "
                f"({self.target_file_size_bytes}) <= {MAX_FILE_SIZE} ({self.max_file_size_bytes})"
            )
        for key, value in (
            (MIN_INPUT_FILES, self.min_input_files),
            (MAX_GROUP_SIZE, self.max_file_group_size_bytes),
            (DELETE_FILE_THRESHOLD, self.delete_file_threshold),
            (PARTIAL_PROGRESS_MAX_COMMITS, self.partial_progress_max_commits),
        ):
            if value < 1:
                raise ValidationError(f"{key} must be at least 1, got {value}")


@dataclass(frozen=True, slots=True)
class RewriteGroup:
    """Files of one partition rewritten together into new files."""

    spec_id: int
    partition: tuple[Any, ...]
    tasks: tuple[FileScanTask, ...]

    @property
    def size_bytes(self) -> int:
        return sum(t.data_file.file_size_in_bytes for t in self.tasks)


def _partition_key(partition: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is not None, v if v is not None else 0) for v in partition)


def plan_groups(tasks: Iterable[FileScanTask], options: RewriteOptions) -> list[RewriteGroup]:
    """The groups worth rewriting, ordered by partition spec and partition (whole-file tasks expected)."""
    o = options

    def too_many_deletes(t: FileScanTask) -> bool:
        return len(t.deletes) >= o.delete_file_threshold

    def selected(t: FileScanTask) -> bool:
        size = t.data_file.file_size_in_bytes
        return o.rewrite_all or size < o.min_file_size_bytes or size > o.max_file_size_bytes or too_many_deletes(t)

    by_partition: dict[tuple[int, tuple[Any, ...]], list[FileScanTask]] = {}
    for t in tasks:
        if selected(t):
            by_partition.setdefault((t.data_file.spec_id, t.data_file.partition), []).append(t)

    groups: list[RewriteGroup] = []
    for (spec_id, partition), files in sorted(
        by_partition.items(), key=lambda kv: (kv[0][0], _partition_key(kv[0][1]))
    ):
        # Largest first into the first group with room: few groups, each under the group limit.
        bins: list[list[FileScanTask]] = []
        sizes: list[int] = []
        for t in sorted(files, key=lambda t: (-t.data_file.file_size_in_bytes, t.data_file.file_path)):
            size = t.data_file.file_size_in_bytes
            for i, used in enumerate(sizes):
                if used + size <= o.max_file_group_size_bytes:
                    bins[i].append(t)
                    sizes[i] += size
                    break
            else:
                bins.append([t])
                sizes.append(size)
        for b, total in zip(bins, sizes):
            many = len(b) > 1
            worth = (
                o.rewrite_all
                or (many and len(b) >= o.min_input_files)
                or (many and total > o.target_file_size_bytes)
                or total > o.max_file_group_size_bytes
                or any(t.data_file.file_size_in_bytes > o.max_file_size_bytes for t in b)
                or any(too_many_deletes(t) for t in b)
            )
            if worth:
                groups.append(RewriteGroup(spec_id, partition, tuple(b)))
    return groups
