"""``rewrite_data_files`` options: the names Java accepts per strategy, their defaults and checks.

Java validates the option keys against the action's own options plus those of the planner and the
rewriter chosen by the strategy (``RewriteDataFilesSparkAction.validateAndInitOptions``), so e.g.
``compression-factor`` is refused for binpack and accepted for sort. Size defaults follow
``SizeBasedFileRewritePlanner``: target = ``write.target-file-size-bytes``, min = 75% and max = 180% of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from floe.errors import ValidationError
from floe.spec import properties as P

__all__ = ["JOB_ORDERS", "STRATEGIES", "RewriteOptions", "option_names"]

TARGET_FILE_SIZE = "target-file-size-bytes"
MIN_FILE_SIZE = "min-file-size-bytes"
MAX_FILE_SIZE = "max-file-size-bytes"
MIN_INPUT_FILES = "min-input-files"
MAX_GROUP_SIZE = "max-file-group-size-bytes"
REWRITE_ALL = "rewrite-all"
DELETE_FILE_THRESHOLD = "delete-file-threshold"
DELETE_RATIO_THRESHOLD = "delete-ratio-threshold"
PARTIAL_PROGRESS = "partial-progress.enabled"
PARTIAL_PROGRESS_MAX_COMMITS = "partial-progress.max-commits"
PARTIAL_PROGRESS_MAX_FAILED = "partial-progress.max-failed-commits"
MAX_CONCURRENT_GROUPS = "max-concurrent-file-group-rewrites"
USE_STARTING_SEQUENCE_NUMBER = "use-starting-sequence-number"
REWRITE_JOB_ORDER = "rewrite-job-order"
OUTPUT_SPEC_ID = "output-spec-id"
REMOVE_DANGLING_DELETES = "remove-dangling-deletes"
MAX_FILES_TO_REWRITE = "max-files-to-rewrite"
COMPRESSION_FACTOR = "compression-factor"
SHUFFLE_PARTITIONS_PER_FILE = "shuffle-partitions-per-file"
MAX_OUTPUT_SIZE = "max-output-size"
VAR_LENGTH_CONTRIBUTION = "var-length-contribution"

# Java's rewriter names (RewriteDataFilesSparkAction's runners' description()).
STRATEGIES = {"binpack": "BIN-PACK", "sort": "SORT", "zorder": "Z-ORDER"}
JOB_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")
_SPLIT_OVERHEAD = 5 * 1024  # Java's SizeBasedFileRewritePlanner.SPLIT_OVERHEAD

_COMMON = frozenset(
    {
        MAX_CONCURRENT_GROUPS, MAX_GROUP_SIZE, PARTIAL_PROGRESS, PARTIAL_PROGRESS_MAX_COMMITS,
        PARTIAL_PROGRESS_MAX_FAILED, TARGET_FILE_SIZE, USE_STARTING_SEQUENCE_NUMBER, REWRITE_JOB_ORDER,
        OUTPUT_SPEC_ID, REMOVE_DANGLING_DELETES, MAX_FILES_TO_REWRITE,
        MIN_FILE_SIZE, MAX_FILE_SIZE, MIN_INPUT_FILES, REWRITE_ALL, DELETE_FILE_THRESHOLD, DELETE_RATIO_THRESHOLD,
    }
)
_SHUFFLING = _COMMON | {COMPRESSION_FACTOR, SHUFFLE_PARTITIONS_PER_FILE}
_BY_STRATEGY = {"binpack": _COMMON, "sort": _SHUFFLING, "zorder": _SHUFFLING | {MAX_OUTPUT_SIZE, VAR_LENGTH_CONTRIBUTION}}


def option_names(strategy: str = "binpack") -> frozenset[str]:
    """The option keys ``rewrite_data_files`` accepts with ``strategy`` (binpack, sort or zorder)."""
    return _BY_STRATEGY[strategy]


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"Option {key} must be an integer, got {raw!r}") from None


def _float(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return float(str(raw).strip())
    except ValueError:
        raise ValidationError(f"Option {key} must be a number, got {raw!r}") from None


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValidationError(f"Option {key} must be true or false, got {raw!r}")
    return text == "true"


class _Sized(Protocol):
    @property
    def size_bytes(self) -> int: ...

    @property
    def tasks(self) -> Sequence[Any]: ...


_G = TypeVar("_G", bound=_Sized)


@dataclass(frozen=True, slots=True)
class RewriteOptions:
    """Validated compaction options (sizes in bytes); None means Java's "unset"."""

    target_file_size_bytes: int
    min_file_size_bytes: int
    max_file_size_bytes: int
    strategy: str = "binpack"
    min_input_files: int = 5
    max_file_group_size_bytes: int = 100 * 1024**3
    rewrite_all: bool = False
    delete_file_threshold: int = 2**31 - 1
    delete_ratio_threshold: float = 0.3
    partial_progress_enabled: bool = False
    partial_progress_max_commits: int = 10
    partial_progress_max_failed_commits: int | None = None
    max_concurrent_file_group_rewrites: int = 5
    use_starting_sequence_number: bool = True
    remove_dangling_deletes: bool = False
    rewrite_job_order: str = "none"
    output_spec_id: int | None = None
    max_files_to_rewrite: int | None = None
    compression_factor: float = 1.0
    shuffle_partitions_per_file: int = 1
    max_output_size: int = 2**31 - 1
    var_length_contribution: int = 8

    @staticmethod
    def parse(
        options: Mapping[str, Any] | None, table_properties: Mapping[str, str], *, strategy: str = "binpack"
    ) -> RewriteOptions:
        """Options as ``rewrite_data_files`` takes them (strings), defaults from the table's properties.

        Raises:
            ValidationError: an option the strategy does not take, a malformed value or inconsistent sizes.
        """
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        valid = option_names(strategy)
        unknown = sorted(set(opts) - valid)
        if unknown:
            raise ValidationError(
                f"Unknown rewrite_data_files option(s) {', '.join(unknown)} for the {STRATEGIES[strategy]} "
                f"rewriter (supported: {', '.join(sorted(valid))})"
            )
        target = _int(
            opts,
            TARGET_FILE_SIZE,
            P.property_int(table_properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT),
        )
        order = opts.get(REWRITE_JOB_ORDER, "none").strip().lower()
        out = RewriteOptions(
            target_file_size_bytes=target,
            min_file_size_bytes=_int(opts, MIN_FILE_SIZE, int(target * 0.75)),
            max_file_size_bytes=_int(opts, MAX_FILE_SIZE, int(target * 1.8)),
            strategy=strategy,
            min_input_files=_int(opts, MIN_INPUT_FILES, 5),
            max_file_group_size_bytes=_int(opts, MAX_GROUP_SIZE, 100 * 1024**3),
            rewrite_all=_bool(opts, REWRITE_ALL, False),
            delete_file_threshold=_int(opts, DELETE_FILE_THRESHOLD, 2**31 - 1),
            delete_ratio_threshold=_float(opts, DELETE_RATIO_THRESHOLD, 0.3),
            partial_progress_enabled=_bool(opts, PARTIAL_PROGRESS, False),
            partial_progress_max_commits=_int(opts, PARTIAL_PROGRESS_MAX_COMMITS, 10),
            partial_progress_max_failed_commits=(
                None if PARTIAL_PROGRESS_MAX_FAILED not in opts else _int(opts, PARTIAL_PROGRESS_MAX_FAILED, 0)
            ),
            max_concurrent_file_group_rewrites=_int(opts, MAX_CONCURRENT_GROUPS, 5),
            use_starting_sequence_number=_bool(opts, USE_STARTING_SEQUENCE_NUMBER, True),
            remove_dangling_deletes=_bool(opts, REMOVE_DANGLING_DELETES, False),
            rewrite_job_order=order,
            output_spec_id=None if OUTPUT_SPEC_ID not in opts else _int(opts, OUTPUT_SPEC_ID, 0),
            max_files_to_rewrite=None if MAX_FILES_TO_REWRITE not in opts else _int(opts, MAX_FILES_TO_REWRITE, 0),
            compression_factor=_float(opts, COMPRESSION_FACTOR, 1.0),
            shuffle_partitions_per_file=_int(opts, SHUFFLE_PARTITIONS_PER_FILE, 1),
            max_output_size=_int(opts, MAX_OUTPUT_SIZE, 2**31 - 1),
            var_length_contribution=_int(opts, VAR_LENGTH_CONTRIBUTION, 8),
        )
        out._check()
        return out

    def _check(self) -> None:
        # Java's checks and bounds (SizeBasedFileRewritePlanner, BinPackRewriteFilePlanner, the action).
        target, lo, hi = self.target_file_size_bytes, self.min_file_size_bytes, self.max_file_size_bytes
        if target <= 0:
            raise ValidationError(f"'{TARGET_FILE_SIZE}' is set to {target} but must be > 0")
        if lo < 0:
            raise ValidationError(f"'{MIN_FILE_SIZE}' is set to {lo} but must be >= 0")
        if not target > lo:
            raise ValidationError(f"'{TARGET_FILE_SIZE}' ({target}) must be > '{MIN_FILE_SIZE}' ({lo})")
        if not target < hi:
            raise ValidationError(f"'{TARGET_FILE_SIZE}' ({target}) must be < '{MAX_FILE_SIZE}' ({hi})")
        for key, value in (
            (MIN_INPUT_FILES, self.min_input_files),
            (MAX_GROUP_SIZE, self.max_file_group_size_bytes),
            (PARTIAL_PROGRESS_MAX_COMMITS, self.partial_progress_max_commits),
            (MAX_CONCURRENT_GROUPS, self.max_concurrent_file_group_rewrites),
            (SHUFFLE_PARTITIONS_PER_FILE, self.shuffle_partitions_per_file),
            (MAX_OUTPUT_SIZE, self.max_output_size),
            (VAR_LENGTH_CONTRIBUTION, self.var_length_contribution),
            (MAX_FILES_TO_REWRITE, 1 if self.max_files_to_rewrite is None else self.max_files_to_rewrite),
        ):
            if value < 1:
                raise ValidationError(f"'{key}' is set to {value} but must be > 0")
        if self.delete_file_threshold < 0:
            raise ValidationError(f"'{DELETE_FILE_THRESHOLD}' is set to {self.delete_file_threshold} but must be >= 0")
        if not 0 < self.delete_ratio_threshold <= 1:
            raise ValidationError(
                f"'{DELETE_RATIO_THRESHOLD}' is set to {self.delete_ratio_threshold} but must be > 0 and <= 1"
            )
        if self.compression_factor <= 0:
            raise ValidationError(f"'{COMPRESSION_FACTOR}' is set to {self.compression_factor} but must be > 0")
        if self.rewrite_job_order not in JOB_ORDERS:
            raise ValidationError(
                f"Invalid rewrite job order name: {self.rewrite_job_order} (expected one of {', '.join(JOB_ORDERS)})"
            )

    # -- derived sizes (Java's SizeBasedFileRewritePlanner) ----------------------------------------
    @property
    def max_failed_commits(self) -> int:
        """Failed partial-progress commits tolerated before the call fails (default: all of them)."""
        failed = self.partial_progress_max_failed_commits
        return self.partial_progress_max_commits if failed is None else failed

    @property
    def write_max_file_size(self) -> int:
        """The size new files are cut at: halfway between the target and the maximum."""
        return int(self.target_file_size_bytes + (self.max_file_size_bytes - self.target_file_size_bytes) * 0.5)

    def expected_output_files(self, input_size: int) -> int:
        """How many files a group of ``input_size`` bytes becomes (sort and z-order scale by compression)."""
        if self.strategy != "binpack":
            input_size = int(input_size * self.compression_factor)
        target = self.target_file_size_bytes
        if input_size < target:
            return 1
        with_remainder, without_remainder = math.ceil(input_size / target), input_size // target
        if input_size % target > self.min_file_size_bytes:
            return with_remainder  # the remainder is a file of valid size: keep it
        if input_size / without_remainder < min(1.1 * target, float(self.write_max_file_size)):
            return without_remainder  # spreading the remainder keeps files within 10% of the target
        return with_remainder

    def input_split_size(self, input_size: int) -> int:
        """The read split size that makes each split one output file."""
        estimated = input_size // self.expected_output_files(input_size) + _SPLIT_OVERHEAD
        if estimated < self.target_file_size_bytes:
            return self.target_file_size_bytes
        return min(estimated, self.write_max_file_size)

    def order_groups(self, groups: list[_G]) -> list[_G]:
        """Groups in ``rewrite-job-order`` (a stable sort; ``none`` keeps the planned order)."""
        order = self.rewrite_job_order
        if order == "none":
            return groups
        by_bytes = order.startswith("bytes")
        reverse = order.endswith("desc")
        return sorted(groups, key=lambda g: g.size_bytes if by_bytes else len(g.tasks), reverse=reverse)
