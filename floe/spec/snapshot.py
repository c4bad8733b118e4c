"""Snapshots and the metadata logs (spec "Snapshots", "Table Statistics", "Encryption Keys"). No IO."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum

from floe.errors import ValidationError

__all__ = [
    "INITIAL_SEQUENCE_NUMBER",
    "BlobMetadata",
    "EncryptedKey",
    "MetadataLogEntry",
    "Operation",
    "PartitionStatisticsFile",
    "Snapshot",
    "SnapshotLogEntry",
    "StatisticsFile",
    "Summary",
]

# Spec "Sequence Numbers": v1 tables and snapshots written before the upgrade to v2 use 0.
INITIAL_SEQUENCE_NUMBER = 0


class Operation(str, Enum):
    """The kind of change a snapshot made (spec "Snapshots", summary ``operation``)."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> Operation:
        """The operation named ``text`` (case-insensitive).

        Raises:
            ValidationError: not one of append, replace, overwrite, delete.
        """
        try:
            return cls(text.lower())
        except ValueError:
            raise ValidationError(f"Invalid snapshot operation: {text!r}") from None


@dataclass(frozen=True, slots=True)
class Summary(Mapping[str, str]):
    """A snapshot summary: the operation plus free-form string properties (counts, engine info)."""

    operation: Operation
    properties: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(operation: Operation | str, properties: Mapping[str, str] | None = None) -> Summary:
        """Build a summary from an operation and a string map (``operation`` in the map is ignored)."""
        op = operation if isinstance(operation, Operation) else Operation.parse(operation)
        props = tuple((str(k), str(v)) for k, v in (properties or {}).items() if k != "operation")
        return Summary(op, props)

    def __getitem__(self, key: str) -> str:
        if key == "operation":
            return self.operation.value
        for k, v in self.properties:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        yield "operation"
        for k, _ in self.properties:
            yield k

    def __len__(self) -> int:
        return 1 + len(self.properties)

    def as_dict(self) -> dict[str, str]:
        """Operation first, then the other properties in their original order (as Java writes them)."""
        return {"operation": self.operation.value, **dict(self.properties)}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state of a table at one time: a manifest list plus lineage and a summary."""

    snapshot_id: int
    timestamp_ms: int
    summary: Summary | None = None
    manifest_list: str | None = None
    parent_snapshot_id: int | None = None
    sequence_number: int = INITIAL_SEQUENCE_NUMBER
    schema_id: int | None = None
    # v1 only: a list of manifest paths instead of a manifest list (spec "Snapshots", v1 column).
    manifests: tuple[str, ...] | None = None
    # v3 row lineage: first row id assigned to this snapshot's new rows, and how many rows it added.
    first_row_id: int | None = None
    added_rows: int | None = None
    # v3 encryption: id of the key that encrypts the manifest list's key metadata.
    key_id: str | None = None

    @property
    def operation(self) -> Operation | None:
        return self.summary.operation if self.summary is not None else None

    def __str__(self) -> str:
        op = f"{self.operation}: " if self.operation else ""
        parent = f", parent_id={self.parent_snapshot_id}" if self.parent_snapshot_id is not None else ""
        return f"{op}id={self.snapshot_id}{parent}, schema_id={self.schema_id}"


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    """One entry of ``snapshot-log``: when the current snapshot (main) changed."""

    snapshot_id: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    """One entry of ``metadata-log``: a previous metadata file and when it was current."""

    metadata_file: str
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """A blob inside a Puffin statistics file (spec "Table Statistics")."""

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: Mapping[str, str] | None = None

    def __hash__(self) -> int:
        return hash((self.type, self.snapshot_id, self.sequence_number, self.fields))


@dataclass(frozen=True, slots=True)
class StatisticsFile:
    """A Puffin file of table statistics for one snapshot."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: str | None = None  # base64, as in the JSON


@dataclass(frozen=True, slots=True)
class PartitionStatisticsFile:
    """A file of per-partition statistics for one snapshot (spec "Partition Statistics")."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int


@dataclass(frozen=True, slots=True)
class EncryptedKey:
    """A v3 ``encryption-keys`` entry: key metadata encrypted by another key."""

    key_id: str
    encrypted_key_metadata: str  # base64, as in the JSON
    encrypted_by_id: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.key_id, self.encrypted_key_metadata, self.encrypted_by_id))
