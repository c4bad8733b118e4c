"""Table metadata (spec "Table Metadata"): one frozen value holding a table's full state. No IO.

Build new versions with :class:`floe.spec.metadata_builder.MetadataBuilder`; read and write JSON with
:mod:`floe.serde.metadata_json`. Construction validates the spec's cross-field rules and raises
:class:`InvalidMetadataError` naming the broken rule.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from floe.errors import InvalidMetadataError, NoSuchSnapshotError, ValidationError
from floe.spec.partitioning import PartitionSpec
from floe.spec.refs import MAIN_BRANCH, SnapshotRef
from floe.spec.schema import Schema
from floe.spec.snapshot import (
    EncryptedKey,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    StatisticsFile,
)
from floe.spec.sort_order import SortOrder
from floe.spec.types import StructType

__all__ = [
    "INITIAL_SORT_ORDER_ID",
    "INITIAL_SPEC_ID",
    "SUPPORTED_TABLE_FORMAT_VERSIONS",
    "TableMetadata",
    "format_timestamp_ms",
]

SUPPORTED_TABLE_FORMAT_VERSIONS = (1, 2, 3)
INITIAL_SPEC_ID = 0
INITIAL_SORT_ORDER_ID = 1  # order id 0 is reserved for the unsorted order


def format_timestamp_ms(timestamp_ms: int) -> str:
    """Milliseconds since the epoch as ISO-8601 in UTC, as Iceberg Java prints times in messages
    (``1986-10-26T01:21:00+00:00``; milliseconds only when there are some)."""
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds" if timestamp_ms % 1000 else "seconds")

@dataclass(frozen=True, eq=True)
class TableMetadata:
    """Every field of the spec's table metadata, for format versions 1, 2 and 3.

    Collections are tuples (in file order) except ``properties`` and ``refs`` (read-only mappings).
    ``current_snapshot_id`` is None for a table without snapshots (JSON writes -1).
    Not slotted so that lookup indexes can be cached on first use.
    """

    format_version: int
    table_uuid: uuid.UUID | None
    location: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...]
    default_sort_order_id: int
    properties: Mapping[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: Mapping[str, SnapshotRef] = field(default_factory=dict)
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    last_sequence_number: int = 0
    next_row_id: int | None = None
    encryption_keys: tuple[EncryptedKey, ...] = ()

    def __post_init__(self) -> None:
        # Freeze the mappings: a TableMetadata is shared between transactions and retries.
        object.__setattr__(self, "properties", dict(self.properties))
        object.__setattr__(self, "refs", dict(self.refs))
        self._validate()

    def __hash__(self) -> int:
        return hash((self.table_uuid, self.location, self.last_updated_ms, self.current_snapshot_id))

    # -- validation (spec "Table Metadata" field requirements; Java TableMetadata constructor checks) --
    def _validate(self) -> None:
        v = self.format_version
        if v not in SUPPORTED_TABLE_FORMAT_VERSIONS:
            raise InvalidMetadataError(
                f"Unsupported format version {v} (supported: {', '.join(map(str, SUPPORTED_TABLE_FORMAT_VERSIONS))})"
            )
        if not self.location:
            raise InvalidMetadataError("Table metadata location must be set")
        if v >= 2 and self.table_uuid is None:
            raise InvalidMetadataError(f"table-uuid must exist in format v{v}")
        if v == 1 and self.last_sequence_number != 0:
            raise InvalidMetadataError(f"Sequence number must be 0 in v1: {self.last_sequence_number}")
        if self.last_sequence_number < 0:
            raise InvalidMetadataError(
                f"Invalid last-sequence-number {self.last_sequence_number}: must be >= 0"
            )
        if v >= 3 and (self.next_row_id is None or self.next_row_id < 0):
            raise InvalidMetadataError(
                f"next-row-id must exist and be >= 0 in format v{v}, got {self.next_row_id}"
            )
        self._validate_unique("schema", [s.schema_id for s in self.schemas])
        self._validate_unique("partition spec", [s.spec_id for s in self.partition_specs])
        self._validate_unique("sort order", [o.order_id for o in self.sort_orders])
        self._validate_unique("snapshot", [s.snapshot_id for s in self.snapshots])
        if not self.schemas:
            raise InvalidMetadataError("Table metadata must have at least one schema")
        if self.current_schema_id not in self._schemas_by_id:
            raise InvalidMetadataError(
                f"Cannot find schema with current-schema-id={self.current_schema_id} from schemas "
                f"(ids: {sorted(self._schemas_by_id)})"
            )
        if self.default_spec_id not in self._specs_by_id:
            raise InvalidMetadataError(
                f"Cannot find spec with default-spec-id={self.default_spec_id} from partition-specs "
                f"(ids: {sorted(self._specs_by_id)})"
            )
        if self.default_sort_order_id not in self._orders_by_id:
            raise InvalidMetadataError(
                f"Cannot find sort order with default-sort-order-id={self.default_sort_order_id} from sort-orders "
                f"(ids: {sorted(self._orders_by_id)})"
            )
        # last-column-id >= every schema's highest field id is NOT checked here: Java does not check it on
        # read and real Java-written files break it (impala iceberg_uppercase_col: 1 < 17). The builder
        # guarantees it for every version Floe writes (MetadataBuilder.add_schema).
        highest_pid = max((f.field_id for s in self.partition_specs for f in s.fields), default=None)
        if v >= 2 and highest_pid is not None and self.last_partition_id < highest_pid:
            raise InvalidMetadataError(
                f"Invalid last-partition-id {self.last_partition_id}: lower than the highest partition field id "
                f"{highest_pid}"
            )
        if self.current_snapshot_id is not None and self.current_snapshot_id not in self._snapshots_by_id:
            raise InvalidMetadataError(
                f"Cannot find current snapshot with current-snapshot-id={self.current_snapshot_id} in snapshots"
            )
        for name, ref in self.refs.items():
            if ref.snapshot_id not in self._snapshots_by_id:
                raise InvalidMetadataError(
                    f"Snapshot ref {name!r} points at snapshot {ref.snapshot_id}, which is not in snapshots"
                )
        main = self.refs.get(MAIN_BRANCH)
        if main is not None and main.snapshot_id != self.current_snapshot_id:
            raise InvalidMetadataError(
                f"Current snapshot ID does not match main branch ({self.current_snapshot_id} != {main.snapshot_id})"
            )
        if main is not None and not main.is_branch:
            raise InvalidMetadataError("Snapshot ref 'main' must be a branch, not a tag")
        if v >= 2:
            for s in self.snapshots:
                if s.sequence_number > self.last_sequence_number:
                    raise InvalidMetadataError(
                        f"Snapshot {s.snapshot_id} has sequence number {s.sequence_number}, greater than "
                        f"last-sequence-number {self.last_sequence_number}"
                    )
        for s in self.snapshots:
            if s.schema_id is not None and s.schema_id not in self._schemas_by_id:
                # Java tolerates this after schema removal is not allowed; the spec says schema-id refers
                # to an existing schema, and RemoveSchemas refuses to drop one a snapshot uses.
                raise InvalidMetadataError(
                    f"Snapshot {s.snapshot_id} refers to schema-id {s.schema_id}, which is not in schemas"
                )

    @staticmethod
    def _validate_unique(what: str, ids: list[int]) -> None:
        seen: set[int] = set()
        for i in ids:
            if i in seen:
                raise InvalidMetadataError(f"Duplicate {what} id {i}")
            seen.add(i)

    # -- indexes -----------------------------------------------------------------------------------
    @cached_property
    def _schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @cached_property
    def _specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    @cached_property
    def _orders_by_id(self) -> dict[int, SortOrder]:
        return {o.order_id: o for o in self.sort_orders}

    @cached_property
    def _snapshots_by_id(self) -> dict[int, Snapshot]:
        return {s.snapshot_id: s for s in self.snapshots}

    # -- accessors ---------------------------------------------------------------------------------
    def schema(self) -> Schema:
        """The current schema."""
        return self._schemas_by_id[self.current_schema_id]

    def schema_by_id(self, schema_id: int) -> Schema | None:
        """The schema with this id, or None."""
        return self._schemas_by_id.get(schema_id)

    def schemas_by_id(self) -> Mapping[int, Schema]:
        """Every schema keyed by id."""
        return dict(self._schemas_by_id)

    def spec(self) -> PartitionSpec:
        """The default partition spec (the one new data files are written with)."""
        return self._specs_by_id[self.default_spec_id]

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        """The partition spec with this id, or None."""
        return self._specs_by_id.get(spec_id)

    def specs_by_id(self) -> Mapping[int, PartitionSpec]:
        """Every partition spec keyed by id (manifests name the spec they were written with)."""
        return dict(self._specs_by_id)

    def partition_type(self, spec_id: int | None = None) -> StructType:
        """The partition tuple type of spec ``spec_id`` (default: the current spec), valid for old specs.

        Source columns are looked up in the current schema first, then in older schemas newest first, so
        a spec whose (non-void) source column was dropped after files were written still has a type:
        use this, not ``spec.partition_type(schema())``, to plan or rewrite manifests of any spec.

        Raises:
            ValidationError: no such spec, or a source column is in no schema of the table.
        """
        spec = self.spec() if spec_id is None else self.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"Table {self.location} has no partition spec with id {spec_id}")
        current = self.schema()
        history = sorted(
            (s for s in self.schemas if s.schema_id != current.schema_id), key=lambda s: -s.schema_id
        )
        return spec.partition_type(current, history=history)

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        return self._orders_by_id[self.default_sort_order_id]

    def sort_order_by_id(self, order_id: int) -> SortOrder | None:
        """The sort order with this id, or None."""
        return self._orders_by_id.get(order_id)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot with this id, or None (for example after it expired)."""
        return self._snapshots_by_id.get(snapshot_id)

    def current_snapshot(self) -> Snapshot | None:
        """The snapshot ``main`` points at, or None for a table without data."""
        if self.current_snapshot_id is None:
            return None
        return self._snapshots_by_id.get(self.current_snapshot_id)

    def snapshot_by_name(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points at, or None when there is no such ref."""
        ref = self.refs.get(name)
        return None if ref is None else self._snapshots_by_id.get(ref.snapshot_id)

    def ancestors_of(self, snapshot_id: int | None) -> Iterator[Snapshot]:
        """The snapshot and then its parents, newest first, stopping where history was expired."""
        current = None if snapshot_id is None else self._snapshots_by_id.get(snapshot_id)
        seen: set[int] = set()
        while current is not None and current.snapshot_id not in seen:
            seen.add(current.snapshot_id)
            yield current
            parent = current.parent_snapshot_id
            current = None if parent is None else self._snapshots_by_id.get(parent)

    def snapshot_as_of_timestamp(self, timestamp_ms: int) -> Snapshot:
        """The snapshot that was current at ``timestamp_ms``, from the snapshot log (Java's ``asOfTime``).

        Raises:
            NoSuchSnapshotError: the table had no current snapshot at that time (message names it).
        """
        found: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                found = entry.snapshot_id
        if found is None or found not in self._snapshots_by_id:
            raise NoSuchSnapshotError(
                f"Cannot find a snapshot older than {format_timestamp_ms(timestamp_ms)} in table {self.location}"
            )
        return self._snapshots_by_id[found]

    @property
    def next_sequence_number(self) -> int:
        """Sequence number for the next snapshot: 0 in v1, else last + 1 (spec "Sequence Numbers")."""
        return self.last_sequence_number + 1 if self.format_version > 1 else 0

    def __repr__(self) -> str:
        return (
            f"TableMetadata(v{self.format_version}, uuid={self.table_uuid}, location={self.location!r}, "
            f"schema={self.current_schema_id}, spec={self.default_spec_id}, snapshots={len(self.snapshots)}, "
            f"current_snapshot_id={self.current_snapshot_id})"
        )

    # Defined last: the name shadows the ``property`` builtin for the rest of the class body.
    def property(self, key: str, default: str | None = None) -> str | None:
        """A table property, or ``default``."""
        return self.properties.get(key, default)
