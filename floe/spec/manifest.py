"""The manifest model (spec "Manifests" and "Manifest Lists"): data/delete file descriptors, manifest
entries and manifest-list entries. Frozen values, no IO; Avro encoding lives in floe.serde.manifest_avro.

Partition tuples hold values in Floe's value representation (floe.spec.transforms.base), ordered as the
partition spec's fields. Column bounds stay as raw single-value bytes (decoded by
floe.serde.single_value.decode_bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from typing import Any

from floe.spec.fast_new import positional_constructor

__all__ = [
    "POSITION_DELETE_FILE_PATH_ID",
    "POSITION_DELETE_POS_ID",
    "DataFile",
    "FileContent",
    "FileFormat",
    "ManifestContent",
    "ManifestEntry",
    "ManifestEntryStatus",
    "ManifestFile",
    "PartitionFieldSummary",
]

# Reserved field ids of the columns of position delete files (spec "Reserved Field IDs").
POSITION_DELETE_FILE_PATH_ID = 2147483546
POSITION_DELETE_POS_ID = 2147483545


class FileContent(IntEnum):
    """What a content file holds (data_file.content, field 134)."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class FileFormat(str, Enum):
    """A content file's format; manifests store it case-insensitively (field 101)."""

    PARQUET = "PARQUET"
    AVRO = "AVRO"
    ORC = "ORC"
    PUFFIN = "PUFFIN"

    @classmethod
    def _missing_(cls, value: object) -> FileFormat | None:
        if isinstance(value, str):
            return cls.__members__.get(value.upper())
        return None

    def __str__(self) -> str:
        return self.value


class ManifestEntryStatus(IntEnum):
    """Manifest entry status (field 0)."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2


class ManifestContent(IntEnum):
    """Whether a manifest tracks data files or delete files (field 517)."""

    DATA = 0
    DELETES = 1


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data or delete file as a manifest's data_file struct describes it (field 2).

    The six column-metrics maps may be partial when read for scan planning (see
    ``TableScan.include_column_stats``): None means "not loaded" (or not written), and a map may then hold
    only the columns planning needed. Readers of full metrics (metadata tables, ``floe files``) decode
    manifests with every metric.
    """

    content: FileContent
    file_path: str
    file_format: FileFormat
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    spec_id: int = 0
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None

    @property
    def file_key(self) -> str:
        """What identifies this content file among live entries: its path, plus the blob offset for a
        deletion vector (one Puffin file holds the vectors of many data files)."""
        if self.file_format == FileFormat.PUFFIN and self.content_offset is not None:
            return f"{self.file_path}#{self.content_offset}"
        return self.file_path

    @property
    def is_delete(self) -> bool:
        return self.content != FileContent.DATA

    def with_changes(self, **changes: Any) -> DataFile:
        """A copy with some attributes replaced."""
        return replace(self, **changes)

    def __hash__(self) -> int:
        # Maps are unhashable; the path identifies a file within a table.
        return hash((self.content, self.file_path))


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One row of a manifest: a file plus its status and (possibly inherited) sequence numbers."""

    status: ManifestEntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile

    @property
    def is_live(self) -> bool:
        return self.status != ManifestEntryStatus.DELETED

    def with_changes(self, **changes: Any) -> ManifestEntry:
        """A copy with some attributes replaced."""
        return replace(self, **changes)


# Positional constructors for manifest decoding (every field, in declaration order): entries and files hold
# values only (numbers, strings, bytes, tuples and maps of them), so no cycle can pass through them.
new_data_file: Callable[..., DataFile] = positional_constructor(DataFile, acyclic=True)
new_manifest_entry: Callable[
    [ManifestEntryStatus, int | None, int | None, int | None, DataFile], ManifestEntry
] = positional_constructor(ManifestEntry, acyclic=True)


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    """Per-partition-field summary stored in a manifest list (field 508)."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """One row of a manifest list: where a manifest is and what it holds.

    ``sequence_number``/``min_sequence_number`` are None for a manifest not yet committed (the manifest
    list writer assigns the snapshot's sequence number); v1 manifest lists read as 0.
    """

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent
    sequence_number: int | None
    min_sequence_number: int | None
    added_snapshot_id: int | None
    added_files_count: int | None
    existing_files_count: int | None
    deleted_files_count: int | None
    added_rows_count: int | None
    existing_rows_count: int | None
    deleted_rows_count: int | None
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_added_files(self) -> bool:
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0

    def has_deleted_files(self) -> bool:
        return self.deleted_files_count is None or self.deleted_files_count > 0

    def with_changes(self, **changes: Any) -> ManifestFile:
        """A copy with some attributes replaced."""
        return replace(self, **changes)
