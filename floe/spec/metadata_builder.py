"""Build new table metadata from a base, recording every change as a TableUpdate. No IO.

``MetadataBuilder`` applies changes and keeps the list of updates it made (what a REST commit sends);
``apply_updates`` replays such a list on a base (what a catalog or a retried transaction does);
``new_table_metadata`` creates the first version of a table with fresh column / partition field ids.
Rules follow the spec ("Table Metadata", "Sequence Numbers", "Snapshot References", "Row Lineage").
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from floe.errors import UnsupportedError, ValidationError
from floe.spec import properties as props
from floe.spec.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from floe.spec.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from floe.spec.schema import Schema, assign_fresh_ids, walk_fields
from floe.spec.snapshot import (
    EncryptedKey,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    StatisticsFile,
)
from floe.spec.sort_order import UNSORTED_ORDER_ID, SortField, SortOrder
from floe.spec.table_metadata import SUPPORTED_TABLE_FORMAT_VERSIONS, TableMetadata
from floe.spec.types import (
    GeographyType,
    GeometryType,
    TimestampNanoType,
    TimestamptzNanoType,
    UnknownType,
    VariantType,
)
from floe.spec.updates import (
    LAST_ADDED,
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableUpdate,
    UpgradeFormatVersion,
)

__all__ = ["MetadataBuilder", "apply_update", "apply_updates", "new_table_builder", "new_table_metadata"]

_Change = Callable[[Any], TableUpdate]  # builds the update a builder change records
_V3_ONLY_TYPES = (
    TimestampNanoType,
    TimestamptzNanoType,
    UnknownType,
    VariantType,
    GeometryType,
    GeographyType,
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MetadataBuilder:
    """Applies changes to a base TableMetadata (or builds a new table) and records them as TableUpdates.

    Every mutator returns ``self`` except the ``add_*`` methods that return the id they assigned.
    ``build()`` returns the base unchanged when nothing changed.
    """

    def __init__(
        self, base: TableMetadata | None = None, *, format_version: int = props.DEFAULT_FORMAT_VERSION
    ) -> None:
        """Start from ``base``, or from an empty table of ``format_version`` when ``base`` is None."""
        self._base = base
        self._changes: list[TableUpdate] = []
        self._last_added_schema_id: int | None = None
        self._last_added_spec_id: int | None = None
        self._last_added_order_id: int | None = None
        self._added_snapshot_ids: set[int] = set()
        self._previous_file: MetadataLogEntry | None = None
        self._last_updated_ms: int | None = None
        if base is None:
            if format_version not in SUPPORTED_TABLE_FORMAT_VERSIONS:
                raise UnsupportedError(f"Unsupported format version {format_version}")
            self.format_version = format_version
            self.table_uuid: uuid.UUID | None = None
            self.location: str | None = None
            self.last_column_id = 0
            self.schemas: dict[int, Schema] = {}
            self.current_schema_id = -1
            self.specs: dict[int, PartitionSpec] = {}
            self.default_spec_id = -1
            self.last_partition_id = PARTITION_FIELD_ID_START - 1
            self.sort_orders: dict[int, SortOrder] = {}
            self.default_sort_order_id = -1
            self.properties: dict[str, str] = {}
            self.current_snapshot_id: int | None = None
            self.snapshots: dict[int, Snapshot] = {}
            self.snapshot_log: list[SnapshotLogEntry] = []
            self.metadata_log: list[MetadataLogEntry] = []
            self.refs: dict[str, SnapshotRef] = {}
            self.statistics: dict[int, StatisticsFile] = {}
            self.partition_statistics: dict[int, PartitionStatisticsFile] = {}
            self.last_sequence_number = 0
            self.next_row_id: int | None = 0 if format_version >= 3 else None
            self.encryption_keys: dict[str, EncryptedKey] = {}
            # A create is replayable from its changes alone (REST create-table sends this first).
            self._changes.append(UpgradeFormatVersion(format_version))
        else:
            self.format_version = base.format_version
            self.table_uuid = base.table_uuid
            self.location = base.location
            self.last_column_id = base.last_column_id
            self.schemas = {s.schema_id: s for s in base.schemas}
            self.current_schema_id = base.current_schema_id
            self.specs = {s.spec_id: s for s in base.partition_specs}
            self.default_spec_id = base.default_spec_id
            self.last_partition_id = base.last_partition_id
            self.sort_orders = {o.order_id: o for o in base.sort_orders}
            self.default_sort_order_id = base.default_sort_order_id
            self.properties = dict(base.properties)
            self.current_snapshot_id = base.current_snapshot_id
            self.snapshots = {s.snapshot_id: s for s in base.snapshots}
            self.snapshot_log = list(base.snapshot_log)
            self.metadata_log = list(base.metadata_log)
            self.refs = dict(base.refs)
            self.statistics = {s.snapshot_id: s for s in base.statistics}
            self.partition_statistics = {s.snapshot_id: s for s in base.partition_statistics}
            self.last_sequence_number = base.last_sequence_number
            self.next_row_id = base.next_row_id
            self.encryption_keys = {k.key_id: k for k in base.encryption_keys}

    # -- bookkeeping ---------------------------------------------------------------------------------
    @property
    def changes(self) -> tuple[TableUpdate, ...]:
        """The updates applied so far, in order (replayable with ``apply_updates``)."""
        return tuple(self._changes)

    def with_previous_metadata(self, location: str, timestamp_ms: int | None = None) -> MetadataBuilder:
        """Record the metadata file being replaced; it is appended to ``metadata-log`` on build.

        Args:
            location: the previous metadata file's path.
            timestamp_ms: when it was written; defaults to the base's ``last-updated-ms``.
        """
        ts = (
            timestamp_ms
            if timestamp_ms is not None
            else (self._base.last_updated_ms if self._base else _now_ms())
        )
        self._previous_file = MetadataLogEntry(location, ts)
        return self

    def set_last_updated_ms(self, timestamp_ms: int) -> MetadataBuilder:
        """Fix ``last-updated-ms`` (default: the added snapshot's timestamp, else the current time)."""
        self._last_updated_ms = timestamp_ms
        return self

    # -- identity and format ---------------------------------------------------------------------------
    def assign_uuid(self, table_uuid: uuid.UUID | str | None = None) -> MetadataBuilder:
        """Set the table UUID (a random one when None)."""
        value = (
            uuid.uuid4()
            if table_uuid is None
            else (table_uuid if isinstance(table_uuid, uuid.UUID) else uuid.UUID(table_uuid))
        )
        if value == self.table_uuid:
            return self
        if self._base is not None and self._base.table_uuid is not None:
            raise ValidationError(
                f"Cannot reassign the UUID of table {self.location}: it is {self._base.table_uuid}"
            )
        self.table_uuid = value
        self._changes.append(AssignUUID(value))
        return self

    def upgrade_format_version(self, format_version: int) -> MetadataBuilder:
        """Raise the format version; v3 starts row lineage at ``next-row-id`` 0.

        Raises:
            ValidationError: a downgrade. UnsupportedError: an unknown version.
        """
        if format_version not in SUPPORTED_TABLE_FORMAT_VERSIONS:
            raise UnsupportedError(f"Unsupported format version {format_version} (supported: 1, 2, 3)")
        if format_version < self.format_version:
            raise ValidationError(f"Cannot downgrade v{self.format_version} table to v{format_version}")
        if format_version == self.format_version:
            return self
        self.format_version = format_version
        if format_version >= 3 and self.next_row_id is None:
            self.next_row_id = 0
        self._changes.append(UpgradeFormatVersion(format_version))
        return self

    def set_location(self, location: str) -> MetadataBuilder:
        """Change the table location."""
        if not location:
            raise ValidationError("Table location must not be empty")
        if location != self.location:
            self.location = location
            self._changes.append(SetLocation(location))
        return self

    def set_properties(self, updates: Mapping[str, str]) -> MetadataBuilder:
        """Set table properties (values are stored as strings)."""
        clean = {str(k): str(v) for k, v in updates.items()}
        if clean:
            self.properties.update(clean)
            self._changes.append(SetProperties(clean))
        return self

    def remove_properties(self, keys: Iterable[str]) -> MetadataBuilder:
        """Remove table properties; missing keys are ignored."""
        removals = tuple(keys)
        if removals:
            for k in removals:
                self.properties.pop(k, None)
            self._changes.append(RemoveProperties(removals))
        return self

    # -- schemas -------------------------------------------------------------------------------------
    def add_schema(self, schema: Schema, last_column_id: int | None = None) -> int:
        """Add ``schema`` (reusing the id of an identical existing schema) and return its id.

        Raises:
            ValidationError: the schema uses v3-only types or defaults in a v1/v2 table.
        """
        _check_schema_compat(schema, self.format_version)
        new_last = max(self.last_column_id, schema.highest_field_id, last_column_id or 0)
        existing = next((s.schema_id for s in self.schemas.values() if s.same_structure(schema)), None)
        if existing is not None and new_last == self.last_column_id:
            added_here = any(
                isinstance(c, AddSchema) and c.schema.schema_id == existing for c in self._changes
            )
            self._last_added_schema_id = existing if added_here else None
            return existing
        schema_id = existing if existing is not None else (max(self.schemas) + 1 if self.schemas else 0)
        fresh = schema.with_schema_id(schema_id)
        self.schemas[schema_id] = fresh
        self.last_column_id = new_last
        self._last_added_schema_id = schema_id
        self._changes.append(AddSchema(fresh, new_last))
        return schema_id

    def set_current_schema(self, schema_id: int) -> MetadataBuilder:
        """Make a schema current; ``-1`` selects the schema added last by this builder.

        Raises:
            ValidationError: no such schema, or ``-1`` without an added schema.
        """
        if schema_id == LAST_ADDED:
            if self._last_added_schema_id is None:
                raise ValidationError("Cannot set last added schema: no schema has been added")
            schema_id = self._last_added_schema_id
        if schema_id not in self.schemas:
            raise ValidationError(f"Cannot set current schema to unknown schema: {schema_id}")
        if schema_id == self.current_schema_id:
            return self
        self.current_schema_id = schema_id
        recorded = LAST_ADDED if schema_id == self._last_added_schema_id else schema_id
        self._changes.append(SetCurrentSchema(recorded))
        return self

    def remove_schemas(self, schema_ids: Iterable[int]) -> MetadataBuilder:
        """Remove schemas that are not current.

        Raises:
            ValidationError: removing the current schema.
        """
        return self._remove_ids(
            self.schemas, schema_ids, self.current_schema_id, "current schema", RemoveSchemas
        )

    def _remove_ids(
        self, store: dict[int, Any], requested: Iterable[int], keep: int, what: str, change: _Change
    ) -> MetadataBuilder:
        """Remove the ``requested`` ids present in ``store`` and record ``change(ids)``; ``keep`` may not go."""
        ids = tuple(i for i in requested if i in store)
        if keep in ids:
            raise ValidationError(f"Cannot remove {what}: {keep}")
        if ids:
            for i in ids:
                del store[i]
            self._changes.append(change(ids))
        return self

    # -- partition specs -------------------------------------------------------------------------------
    def add_partition_spec(self, spec: PartitionSpec) -> int:
        """Add ``spec`` (reusing an equivalent existing spec's id) and return its id.

        In v2+ partition field ids are re-assigned: a field with the same source and transform as any
        earlier spec's field keeps that field's id, new fields continue after ``last-partition-id``.

        Raises:
            ValidationError: the spec does not bind to the current schema.
        """
        if self.current_schema_id in self.schemas:
            spec.bind(self.schemas[self.current_schema_id])
        fresh_fields = self._fresh_partition_fields(spec)
        for existing in self.specs.values():
            if tuple(existing.fields) == fresh_fields or (
                self.format_version == 1 and existing.compatible_with(spec)
            ):
                added_here = any(
                    isinstance(c, AddPartitionSpec) and c.spec.spec_id == existing.spec_id
                    for c in self._changes
                )
                self._last_added_spec_id = existing.spec_id if added_here else None
                return existing.spec_id
        spec_id = max(self.specs) + 1 if self.specs else 0
        fresh = PartitionSpec(spec_id, fresh_fields)
        self.specs[spec_id] = fresh
        self.last_partition_id = max(self.last_partition_id, fresh.last_assigned_field_id)
        self._last_added_spec_id = spec_id
        self._changes.append(AddPartitionSpec(fresh))
        return spec_id

    def _fresh_partition_fields(self, spec: PartitionSpec) -> tuple[PartitionField, ...]:
        if self.format_version == 1:
            # v1 field ids are positional (1000 + position); keep what the caller assigned.
            return tuple(spec.fields)
        known: dict[tuple[tuple[int, ...], str], int] = {}
        for s in self.specs.values():
            for f in s.fields:
                known.setdefault((f.source_ids, str(f.transform)), f.field_id)
        next_id = self.last_partition_id
        out = []
        for f in spec.fields:
            fid = known.get((f.source_ids, str(f.transform)))
            if fid is None:
                next_id += 1
                fid = next_id
            out.append(PartitionField(f.source_id, fid, f.transform, f.name, f.source_ids))
        return tuple(out)

    def set_default_spec(self, spec_id: int) -> MetadataBuilder:
        """Make a spec the default; ``-1`` selects the spec added last by this builder."""
        if spec_id == LAST_ADDED:
            if self._last_added_spec_id is None:
                raise ValidationError("Cannot set last added spec: no spec has been added")
            spec_id = self._last_added_spec_id
        if spec_id not in self.specs:
            raise ValidationError(f"Cannot set default partition spec to unknown spec: {spec_id}")
        if spec_id == self.default_spec_id:
            return self
        self.default_spec_id = spec_id
        self._changes.append(SetDefaultSpec(LAST_ADDED if spec_id == self._last_added_spec_id else spec_id))
        return self

    def remove_partition_specs(self, spec_ids: Iterable[int]) -> MetadataBuilder:
        """Remove partition specs other than the default one."""
        default, what = self.default_spec_id, "the default partition spec"
        return self._remove_ids(self.specs, spec_ids, default, what, RemovePartitionSpecs)

    # -- sort orders ---------------------------------------------------------------------------------
    def add_sort_order(self, order: SortOrder) -> int:
        """Add ``order`` (reusing an existing order with the same fields) and return its id."""
        if order.is_sorted and self.current_schema_id in self.schemas:
            order.bind(self.schemas[self.current_schema_id])
        for existing in self.sort_orders.values():
            if existing.same_order(order):
                added_here = any(
                    isinstance(c, AddSortOrder) and c.sort_order.order_id == existing.order_id
                    for c in self._changes
                )
                self._last_added_order_id = existing.order_id if added_here else None
                return existing.order_id
        if order.is_unsorted:
            order_id = UNSORTED_ORDER_ID
        else:
            order_id = max([UNSORTED_ORDER_ID, *self.sort_orders]) + 1
        fresh = SortOrder(order_id, order.fields)
        self.sort_orders[order_id] = fresh
        self._last_added_order_id = order_id
        self._changes.append(AddSortOrder(fresh))
        return order_id

    def set_default_sort_order(self, order_id: int) -> MetadataBuilder:
        """Make a sort order the default; ``-1`` selects the order added last by this builder."""
        if order_id == LAST_ADDED:
            if self._last_added_order_id is None:
                raise ValidationError("Cannot set last added sort order: no sort order has been added")
            order_id = self._last_added_order_id
        if order_id not in self.sort_orders:
            raise ValidationError(f"Cannot set default sort order to unknown order: {order_id}")
        if order_id == self.default_sort_order_id:
            return self
        self.default_sort_order_id = order_id
        self._changes.append(
            SetDefaultSortOrder(LAST_ADDED if order_id == self._last_added_order_id else order_id)
        )
        return self

    # -- snapshots and refs ------------------------------------------------------------------------------
    def add_snapshot(self, snapshot: Snapshot) -> MetadataBuilder:
        """Add a snapshot (it is not current until ``set_ref('main', ...)``).

        Raises:
            ValidationError: duplicate id, a v2+ sequence number not above ``last-sequence-number``,
                or (v3) a missing / stale ``first-row-id``.
        """
        if snapshot.snapshot_id in self.snapshots:
            raise ValidationError(f"Snapshot already exists for id: {snapshot.snapshot_id}")
        if (
            self.format_version > 1
            and snapshot.sequence_number <= self.last_sequence_number
            and snapshot.parent_snapshot_id is not None
        ):
            raise ValidationError(
                f"Cannot add snapshot with sequence number {snapshot.sequence_number} older than last sequence "
                f"number {self.last_sequence_number}"
            )
        if self.format_version >= 3:
            assert self.next_row_id is not None
            if snapshot.first_row_id is None:
                raise ValidationError(
                    f"Cannot add snapshot {snapshot.snapshot_id}: first-row-id is required in v3"
                )
            if snapshot.first_row_id < self.next_row_id:
                raise ValidationError(
                    f"Cannot add snapshot {snapshot.snapshot_id}: first-row-id {snapshot.first_row_id} is behind "
                    f"the table's next-row-id {self.next_row_id}"
                )
            self.next_row_id = snapshot.first_row_id + (snapshot.added_rows or 0)
        self.snapshots[snapshot.snapshot_id] = snapshot
        self._added_snapshot_ids.add(snapshot.snapshot_id)
        self.last_sequence_number = max(self.last_sequence_number, snapshot.sequence_number)
        self._last_updated_ms = snapshot.timestamp_ms
        self._changes.append(AddSnapshot(snapshot))
        return self

    def set_ref(self, name: str, ref: SnapshotRef) -> MetadataBuilder:
        """Create or move a branch or tag; moving ``main`` changes the current snapshot and the snapshot log.

        Raises:
            ValidationError: unknown snapshot, or ``main`` as a tag.
        """
        if ref.snapshot_id not in self.snapshots:
            raise ValidationError(f"Cannot set {name} to unknown snapshot: {ref.snapshot_id}")
        if name == MAIN_BRANCH and ref.type != SnapshotRefType.BRANCH:
            raise ValidationError("Cannot set main to a tag: main must be a branch")
        if self.refs.get(name) == ref:
            return self
        self.refs[name] = ref
        if name == MAIN_BRANCH:
            self.current_snapshot_id = ref.snapshot_id
            if self._last_updated_ms is None:
                self._last_updated_ms = _now_ms()
            ts = (
                self.snapshots[ref.snapshot_id].timestamp_ms
                if ref.snapshot_id in self._added_snapshot_ids
                else self._last_updated_ms
            )
            self.snapshot_log.append(SnapshotLogEntry(ref.snapshot_id, ts))
        self._changes.append(SetSnapshotRef(name, ref))
        return self

    def set_branch_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> MetadataBuilder:
        """Point ``branch`` at ``snapshot_id``, keeping the branch's retention settings."""
        existing = self.refs.get(branch)
        if existing is not None and not existing.is_branch:
            raise ValidationError(f"Cannot commit to {branch}: it is a tag, not a branch")
        ref = replace(existing, snapshot_id=snapshot_id) if existing is not None else SnapshotRef(snapshot_id)
        return self.set_ref(branch, ref)

    def remove_ref(self, name: str) -> MetadataBuilder:
        """Remove a branch or tag; removing ``main`` leaves the table without a current snapshot."""
        if name not in self.refs:
            return self
        del self.refs[name]
        if name == MAIN_BRANCH:
            self.current_snapshot_id = None
        self._changes.append(RemoveSnapshotRef(name))
        return self

    def remove_snapshots(self, snapshot_ids: Iterable[int]) -> MetadataBuilder:
        """Remove snapshots, the refs pointing at them and their statistics."""
        ids = tuple(i for i in snapshot_ids if i in self.snapshots)
        if not ids:
            return self
        gone = set(ids)
        for i in ids:
            del self.snapshots[i]
            self.statistics.pop(i, None)
            self.partition_statistics.pop(i, None)
        self._changes.append(RemoveSnapshots(ids))
        for name, ref in list(self.refs.items()):
            if ref.snapshot_id in gone:
                self.remove_ref(name)
        return self

    # -- statistics and keys ---------------------------------------------------------------------------
    def _put(self, store: dict[Any, Any], key: Any, value: Any, change: _Change) -> MetadataBuilder:
        """Set ``store[key]`` and record ``change(value)``, unless it already holds ``value``."""
        if store.get(key) != value:
            store[key] = value
            self._changes.append(change(value))
        return self

    def _drop(self, store: dict[Any, Any], key: Any, change: _Change) -> MetadataBuilder:
        """Remove ``store[key]`` and record ``change(key)`` (no-op when absent)."""
        if store.pop(key, None) is not None:
            self._changes.append(change(key))
        return self

    def set_statistics(self, statistics: StatisticsFile) -> MetadataBuilder:
        """Set (replace) the statistics file of its snapshot."""
        return self._put(self.statistics, statistics.snapshot_id, statistics, SetStatistics)

    def remove_statistics(self, snapshot_id: int) -> MetadataBuilder:
        """Remove a snapshot's statistics file (no-op when absent)."""
        return self._drop(self.statistics, snapshot_id, RemoveStatistics)

    def set_partition_statistics(self, statistics: PartitionStatisticsFile) -> MetadataBuilder:
        """Set (replace) the partition statistics file of its snapshot."""
        store = self.partition_statistics
        return self._put(store, statistics.snapshot_id, statistics, SetPartitionStatistics)

    def remove_partition_statistics(self, snapshot_id: int) -> MetadataBuilder:
        """Remove a snapshot's partition statistics file (no-op when absent)."""
        return self._drop(self.partition_statistics, snapshot_id, RemovePartitionStatistics)

    def add_encryption_key(self, key: EncryptedKey) -> MetadataBuilder:
        """Add a v3 encryption key."""
        return self._put(self.encryption_keys, key.key_id, key, AddEncryptionKey)

    def remove_encryption_key(self, key_id: str) -> MetadataBuilder:
        """Remove a v3 encryption key (no-op when absent)."""
        return self._drop(self.encryption_keys, key_id, RemoveEncryptionKey)

    # -- build ---------------------------------------------------------------------------------------
    def build(self) -> TableMetadata:
        """The new TableMetadata (the base itself when nothing changed).

        Raises:
            ValidationError / InvalidMetadataError: the result breaks a spec rule (message says which).
        """
        if self._base is not None and not self._changes and self._previous_file is None:
            return self._base
        if self.location is None:
            raise ValidationError("Cannot build table metadata without a location")
        if self.table_uuid is None:
            self.assign_uuid()
        if not self.sort_orders:
            self.add_sort_order(SortOrder(UNSORTED_ORDER_ID, ()))
            self.set_default_sort_order(UNSORTED_ORDER_ID)
        metadata_log = list(self.metadata_log)
        if self._previous_file is not None and self._changes:
            metadata_log.append(self._previous_file)
        keep = max(
            1,
            props.property_int(
                self.properties,
                props.METADATA_PREVIOUS_VERSIONS_MAX,
                props.METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT,
            ),
        )
        metadata_log = metadata_log[-keep:]
        last_updated = self._last_updated_ms if self._last_updated_ms is not None else _now_ms()
        return TableMetadata(
            format_version=self.format_version,
            table_uuid=self.table_uuid,
            location=self.location,
            last_updated_ms=last_updated,
            last_column_id=self.last_column_id,
            schemas=tuple(self.schemas.values()),
            current_schema_id=self.current_schema_id,
            partition_specs=tuple(self.specs.values()),
            default_spec_id=self.default_spec_id,
            last_partition_id=self.last_partition_id,
            sort_orders=tuple(self.sort_orders.values()),
            default_sort_order_id=self.default_sort_order_id,
            properties=dict(self.properties),
            current_snapshot_id=self.current_snapshot_id,
            snapshots=tuple(self.snapshots.values()),
            snapshot_log=tuple(self._valid_snapshot_log()),
            metadata_log=tuple(metadata_log),
            refs=dict(self.refs),
            statistics=tuple(self.statistics.values()),
            partition_statistics=tuple(self.partition_statistics.values()),
            last_sequence_number=self.last_sequence_number,
            next_row_id=self.next_row_id if self.format_version >= 3 else None,
            encryption_keys=tuple(self.encryption_keys.values()),
        )

    def _valid_snapshot_log(self) -> list[SnapshotLogEntry]:
        # The snapshot log must be continuous history: once an entry's snapshot has been removed, every
        # older entry goes too (Java TableMetadata.Builder.updateSnapshotLog).
        out: list[SnapshotLogEntry] = []
        for entry in self.snapshot_log:
            if entry.snapshot_id in self.snapshots:
                out.append(entry)
            else:
                out.clear()
        return out


def _check_schema_compat(schema: Schema, format_version: int) -> None:
    if format_version >= 3:
        return
    for name, f in walk_fields(schema.as_struct()):
        if isinstance(f.field_type, _V3_ONLY_TYPES):
            raise ValidationError(
                f"Invalid type for {name}: {f.field_type} is not supported until v3 (table is v{format_version})"
            )
        if f.initial_default is not None or f.write_default is not None:
            raise ValidationError(
                f"Invalid default for column {name!r}: column DEFAULT values need format version 3 (table is "
                f"v{format_version}; set 'format-version'='3')"
            )


# -- replay ---------------------------------------------------------------------------------------
def apply_update(builder: MetadataBuilder, update: TableUpdate) -> None:
    """Apply one TableUpdate to ``builder``.

    Raises:
        ValidationError: the update is not valid for the builder's current state.
    """
    match update:
        case AssignUUID(uuid=u):
            builder.assign_uuid(u)
        case UpgradeFormatVersion(format_version=v):
            builder.upgrade_format_version(v)
        case AddSchema(schema=s, last_column_id=lc):
            builder.add_schema(s, lc)
        case SetCurrentSchema(schema_id=i):
            builder.set_current_schema(i)
        case AddPartitionSpec(spec=s):
            builder.add_partition_spec(s)
        case SetDefaultSpec(spec_id=i):
            builder.set_default_spec(i)
        case AddSortOrder(sort_order=o):
            builder.add_sort_order(o)
        case SetDefaultSortOrder(sort_order_id=i):
            builder.set_default_sort_order(i)
        case AddSnapshot(snapshot=s):
            builder.add_snapshot(s)
        case SetSnapshotRef(ref_name=n, ref=r):
            builder.set_ref(n, r)
        case RemoveSnapshots(snapshot_ids=ids):
            builder.remove_snapshots(ids)
        case RemoveSnapshotRef(ref_name=n):
            builder.remove_ref(n)
        case SetLocation(location=loc):
            builder.set_location(loc)
        case SetProperties(updates=u):
            builder.set_properties(u)
        case RemoveProperties(removals=r):
            builder.remove_properties(r)
        case SetStatistics(statistics=s):
            builder.set_statistics(s)
        case RemoveStatistics(snapshot_id=i):
            builder.remove_statistics(i)
        case SetPartitionStatistics(partition_statistics=s):
            builder.set_partition_statistics(s)
        case RemovePartitionStatistics(snapshot_id=i):
            builder.remove_partition_statistics(i)
        case RemovePartitionSpecs(spec_ids=ids):
            builder.remove_partition_specs(ids)
        case RemoveSchemas(schema_ids=ids):
            builder.remove_schemas(ids)
        case AddEncryptionKey(encryption_key=k):
            builder.add_encryption_key(k)
        case RemoveEncryptionKey(key_id=k):
            builder.remove_encryption_key(k)
        case _:
            raise UnsupportedError(f"Unknown table update: {update!r}")


def apply_updates(
    base: TableMetadata | None,
    updates: Iterable[TableUpdate],
    *,
    previous_metadata_location: str | None = None,
) -> TableMetadata:
    """Replay ``updates`` on ``base`` (None: a new table) and build the result. Pure.

    Args:
        base: the current metadata, or None when the updates create the table.
        updates: the commit's updates, in order.
        previous_metadata_location: the base's metadata file, appended to ``metadata-log``.

    Raises:
        ValidationError: an update does not apply (message names it).
    """
    todo = list(updates)
    if base is None:
        # A create starts empty at the version the client asks for (REST sends upgrade-format-version).
        version = next(
            (u.format_version for u in todo if isinstance(u, UpgradeFormatVersion)),
            props.DEFAULT_FORMAT_VERSION,
        )
        builder = MetadataBuilder(None, format_version=version)
    else:
        builder = MetadataBuilder(base)
    if previous_metadata_location is not None and base is not None:
        builder.with_previous_metadata(previous_metadata_location)
    for u in todo:
        apply_update(builder, u)
    return builder.build()


# -- new tables -----------------------------------------------------------------------------------
def new_table_builder(
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int = props.DEFAULT_FORMAT_VERSION,
    *,
    table_uuid: uuid.UUID | None = None,
) -> MetadataBuilder:
    """A builder holding a new table (its ``changes`` are what a REST create sends); see new_table_metadata."""
    user_props = dict(properties or {})
    version = props.property_int(user_props, props.FORMAT_VERSION, format_version)
    user_props = props.persisted_properties(user_props)
    fresh_schema = assign_fresh_ids(schema)
    builder = MetadataBuilder(None, format_version=version)
    builder.assign_uuid(table_uuid)
    builder.set_location(location.rstrip("/"))
    builder.set_current_schema(builder.add_schema(fresh_schema, fresh_schema.highest_field_id))
    builder.set_default_spec(builder.add_partition_spec(_fresh_spec(spec, schema, fresh_schema)))
    builder.set_default_sort_order(builder.add_sort_order(_fresh_order(sort_order, schema, fresh_schema)))
    builder.set_properties(user_props)
    return builder


def new_table_metadata(
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int = props.DEFAULT_FORMAT_VERSION,
    *,
    table_uuid: uuid.UUID | None = None,
) -> TableMetadata:
    """The first metadata of a new table, with fresh ids as Iceberg assigns them.

    Column ids are renumbered from 1 (``assign_fresh_ids``), partition field ids from 1000, the spec and
    sort order are re-pointed at the fresh column ids by column name, and the ``format-version`` property
    (if given) overrides ``format_version`` and is not stored.

    Raises:
        ValidationError: the spec or sort order does not fit the schema.
    """
    return new_table_builder(
        schema, spec, sort_order, location, properties, format_version, table_uuid=table_uuid
    ).build()


def _fresh_source_id(source_id: int, old: Schema, new: Schema) -> int:
    name = old.find_column_name(source_id)
    if name is None:
        raise ValidationError(f"Cannot find source column id {source_id} in schema {old.schema_id}")
    return new.find_field(name).field_id


def _fresh_spec(spec: PartitionSpec, old: Schema, new: Schema) -> PartitionSpec:
    fields = []
    for pos, f in enumerate(spec.fields):
        source_ids = tuple(_fresh_source_id(s, old, new) for s in f.source_ids)
        fields.append(
            PartitionField(source_ids[0], PARTITION_FIELD_ID_START + pos, f.transform, f.name, source_ids)
        )
    return PartitionSpec(0, tuple(fields))


def _fresh_order(order: SortOrder, old: Schema, new: Schema) -> SortOrder:
    fields = []
    for f in order.fields:
        source_ids = tuple(_fresh_source_id(s, old, new) for s in f.source_ids)
        fields.append(SortField(source_ids[0], f.transform, f.direction, f.null_order, source_ids))
    return SortOrder(max(order.order_id, 1), tuple(fields)) if fields else order
