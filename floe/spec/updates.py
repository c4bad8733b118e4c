"""A commit is data: table updates and requirements (REST catalog OpenAPI ``TableUpdate`` / ``TableRequirement``).

Updates are applied by :func:`floe.spec.metadata_builder.apply_updates`, shared by catalogs and
transactions. Requirements check the base a commit was planned against and raise
:class:`CommitFailedError` naming what changed, so a transaction can refresh and replay.
JSON forms (the REST shapes, ``action`` / ``type`` keys) live in :mod:`floe.serde.updates_json`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from floe.errors import CommitFailedError
from floe.spec.partitioning import PartitionSpec
from floe.spec.refs import SnapshotRef
from floe.spec.schema import Schema
from floe.spec.snapshot import EncryptedKey, PartitionStatisticsFile, Snapshot, StatisticsFile
from floe.spec.sort_order import SortOrder
from floe.spec.table_metadata import TableMetadata

__all__ = [
    "LAST_ADDED",
    "AddEncryptionKey",
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "AssignUUID",
    "RemoveEncryptionKey",
    "RemovePartitionSpecs",
    "RemovePartitionStatistics",
    "RemoveProperties",
    "RemoveSchemas",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "RemoveStatistics",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetPartitionStatistics",
    "SetProperties",
    "SetSnapshotRef",
    "SetStatistics",
    "TableRequirement",
    "TableUpdate",
    "UpgradeFormatVersion",
    "requirements_for_create",
    "requirements_for_update",
    "validate_requirements",
]

# Id meaning "the schema / spec / sort order added earlier in this same commit" (REST convention).
LAST_ADDED = -1


# -- updates --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AssignUUID:
    """Set the table UUID (only when creating a table)."""

    action: ClassVar[str] = "assign-uuid"
    uuid: uuid.UUID


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion:
    """Raise the format version (never lowers it)."""

    action: ClassVar[str] = "upgrade-format-version"
    format_version: int


@dataclass(frozen=True, slots=True)
class AddSchema:
    """Add a schema; ``last_column_id`` is the deprecated REST field (the builder recomputes it)."""

    action: ClassVar[str] = "add-schema"
    schema: Schema
    last_column_id: int | None = None


@dataclass(frozen=True, slots=True)
class SetCurrentSchema:
    """Make a schema current; ``-1`` means the one added by this commit."""

    action: ClassVar[str] = "set-current-schema"
    schema_id: int


@dataclass(frozen=True, slots=True)
class AddPartitionSpec:
    """Add a partition spec (REST ``add-spec``)."""

    action: ClassVar[str] = "add-spec"
    spec: PartitionSpec


@dataclass(frozen=True, slots=True)
class SetDefaultSpec:
    """Make a partition spec the default; ``-1`` means the one added by this commit."""

    action: ClassVar[str] = "set-default-spec"
    spec_id: int


@dataclass(frozen=True, slots=True)
class AddSortOrder:
    """Add a sort order."""

    action: ClassVar[str] = "add-sort-order"
    sort_order: SortOrder


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder:
    """Make a sort order the default; ``-1`` means the one added by this commit."""

    action: ClassVar[str] = "set-default-sort-order"
    sort_order_id: int


@dataclass(frozen=True, slots=True)
class AddSnapshot:
    """Add a snapshot (it becomes current only through ``SetSnapshotRef('main', ...)``)."""

    action: ClassVar[str] = "add-snapshot"
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class SetSnapshotRef:
    """Create or move a branch or tag."""

    action: ClassVar[str] = "set-snapshot-ref"
    ref_name: str
    ref: SnapshotRef


@dataclass(frozen=True, slots=True)
class RemoveSnapshots:
    """Remove snapshots (expiry); refs pointing at them go too."""

    action: ClassVar[str] = "remove-snapshots"
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef:
    """Remove a branch or tag."""

    action: ClassVar[str] = "remove-snapshot-ref"
    ref_name: str


@dataclass(frozen=True, slots=True)
class SetLocation:
    """Change the table's base location."""

    action: ClassVar[str] = "set-location"
    location: str


@dataclass(frozen=True, slots=True)
class SetProperties:
    """Set table properties."""

    action: ClassVar[str] = "set-properties"
    updates: Mapping[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.updates.items())))


@dataclass(frozen=True, slots=True)
class RemoveProperties:
    """Remove table properties (missing keys are ignored)."""

    action: ClassVar[str] = "remove-properties"
    removals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetStatistics:
    """Set the statistics file of one snapshot (replacing any previous one)."""

    action: ClassVar[str] = "set-statistics"
    statistics: StatisticsFile


@dataclass(frozen=True, slots=True)
class RemoveStatistics:
    """Remove the statistics file of one snapshot."""

    action: ClassVar[str] = "remove-statistics"
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class SetPartitionStatistics:
    """Set the partition statistics file of one snapshot."""

    action: ClassVar[str] = "set-partition-statistics"
    partition_statistics: PartitionStatisticsFile


@dataclass(frozen=True, slots=True)
class RemovePartitionStatistics:
    """Remove the partition statistics file of one snapshot."""

    action: ClassVar[str] = "remove-partition-statistics"
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class RemovePartitionSpecs:
    """Remove unused partition specs (never the default one)."""

    action: ClassVar[str] = "remove-partition-specs"
    spec_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemoveSchemas:
    """Remove unused schemas (never the current one)."""

    action: ClassVar[str] = "remove-schemas"
    schema_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AddEncryptionKey:
    """Add a v3 encryption key."""

    action: ClassVar[str] = "add-encryption-key"
    encryption_key: EncryptedKey


@dataclass(frozen=True, slots=True)
class RemoveEncryptionKey:
    """Remove a v3 encryption key."""

    action: ClassVar[str] = "remove-encryption-key"
    key_id: str


TableUpdate = (
    AssignUUID
    | UpgradeFormatVersion
    | AddSchema
    | SetCurrentSchema
    | AddPartitionSpec
    | SetDefaultSpec
    | AddSortOrder
    | SetDefaultSortOrder
    | AddSnapshot
    | SetSnapshotRef
    | RemoveSnapshots
    | RemoveSnapshotRef
    | SetLocation
    | SetProperties
    | RemoveProperties
    | SetStatistics
    | RemoveStatistics
    | SetPartitionStatistics
    | RemovePartitionStatistics
    | RemovePartitionSpecs
    | RemoveSchemas
    | AddEncryptionKey
    | RemoveEncryptionKey
)


# -- requirements ---------------------------------------------------------------------------------
def _require_base(base: TableMetadata | None, what: str) -> TableMetadata:
    if base is None:
        raise CommitFailedError(f"Requirement failed: {what}: the table does not exist (no current metadata)")
    return base


@dataclass(frozen=True, slots=True)
class AssertCreate:
    """The table must not exist yet."""

    type: ClassVar[str] = "assert-create"

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when the table already exists."""
        if base is not None:
            raise CommitFailedError(f"Requirement failed: table already exists (at {base.location})")


@dataclass(frozen=True, slots=True)
class AssertTableUUID:
    """The table must still be the one with this UUID (not dropped and re-created)."""

    type: ClassVar[str] = "assert-table-uuid"
    uuid: uuid.UUID

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when the UUID differs."""
        md = _require_base(base, "assert-table-uuid")
        if md.table_uuid != self.uuid:
            raise CommitFailedError(
                f"Requirement failed: UUID does not match: expected {self.uuid} != {md.table_uuid}"
            )


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId:
    """A branch or tag must still point at ``snapshot_id`` (None: the ref must not exist)."""

    type: ClassVar[str] = "assert-ref-snapshot-id"
    ref: str
    snapshot_id: int | None

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when the ref moved, appeared or disappeared."""
        md = _require_base(base, f"assert-ref-snapshot-id {self.ref}")
        current = md.refs.get(self.ref)
        if current is not None:
            kind = "branch" if current.is_branch else "tag"
            if self.snapshot_id is None:
                raise CommitFailedError(f"Requirement failed: {kind} {self.ref} was created concurrently")
            if current.snapshot_id != self.snapshot_id:
                raise CommitFailedError(
                    f"Requirement failed: {kind} {self.ref} has changed: expected id {self.snapshot_id} "
                    f"!= {current.snapshot_id}"
                )
        elif self.snapshot_id is not None:
            raise CommitFailedError(
                f"Requirement failed: branch or tag {self.ref} is missing, expected {self.snapshot_id}"
            )


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId:
    """No other commit may have assigned new column ids."""

    type: ClassVar[str] = "assert-last-assigned-field-id"
    last_assigned_field_id: int

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when last-column-id changed."""
        md = _require_base(base, "assert-last-assigned-field-id")
        if md.last_column_id != self.last_assigned_field_id:
            raise CommitFailedError(
                f"Requirement failed: last assigned field id changed: expected id {self.last_assigned_field_id} "
                f"!= {md.last_column_id}"
            )


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId:
    """The current schema must be unchanged."""

    type: ClassVar[str] = "assert-current-schema-id"
    current_schema_id: int

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when the current schema changed."""
        md = _require_base(base, "assert-current-schema-id")
        if md.current_schema_id != self.current_schema_id:
            raise CommitFailedError(
                f"Requirement failed: current schema changed: expected id {self.current_schema_id} "
                f"!= {md.current_schema_id}"
            )


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId:
    """No other commit may have assigned new partition field ids."""

    type: ClassVar[str] = "assert-last-assigned-partition-id"
    last_assigned_partition_id: int

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when last-partition-id changed."""
        md = _require_base(base, "assert-last-assigned-partition-id")
        if md.last_partition_id != self.last_assigned_partition_id:
            raise CommitFailedError(
                f"Requirement failed: last assigned partition id changed: expected id "
                f"{self.last_assigned_partition_id} != {md.last_partition_id}"
            )


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId:
    """The default partition spec must be unchanged."""

    type: ClassVar[str] = "assert-default-spec-id"
    default_spec_id: int

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when the default spec changed."""
        md = _require_base(base, "assert-default-spec-id")
        if md.default_spec_id != self.default_spec_id:
            raise CommitFailedError(
                f"Requirement failed: default partition spec changed: expected id {self.default_spec_id} "
                f"!= {md.default_spec_id}"
            )


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId:
    """The default sort order must be unchanged."""

    type: ClassVar[str] = "assert-default-sort-order-id"
    default_sort_order_id: int

    def validate(self, base: TableMetadata | None) -> None:
        """Raises CommitFailedError when the default sort order changed."""
        md = _require_base(base, "assert-default-sort-order-id")
        if md.default_sort_order_id != self.default_sort_order_id:
            raise CommitFailedError(
                f"Requirement failed: default sort order id changed: expected id {self.default_sort_order_id} "
                f"!= {md.default_sort_order_id}"
            )


TableRequirement = (
    AssertCreate
    | AssertTableUUID
    | AssertRefSnapshotId
    | AssertLastAssignedFieldId
    | AssertCurrentSchemaId
    | AssertLastAssignedPartitionId
    | AssertDefaultSpecId
    | AssertDefaultSortOrderId
)


def validate_requirements(
    base: TableMetadata | None, requirements: tuple[TableRequirement, ...] | list[TableRequirement]
) -> None:
    """Check every requirement against ``base``.

    Raises:
        CommitFailedError: the first requirement that fails (message names what changed).
    """
    for r in requirements:
        r.validate(base)


def requirements_for_create() -> tuple[TableRequirement, ...]:
    """Requirements of a create-table commit: the table must not exist."""
    return (AssertCreate(),)


def requirements_for_update(
    base: TableMetadata, updates: tuple[TableUpdate, ...] | list[TableUpdate]
) -> tuple[TableRequirement, ...]:
    """The requirements a commit of ``updates`` planned on ``base`` needs (optimistic concurrency).

    Each kind of change asserts the part of ``base`` it depends on, once: the table UUID always; new
    columns the last column id; schema / spec / sort order changes their current ids; new partition
    fields the last partition id; every moved or removed ref its current snapshot id.
    """
    out: list[TableRequirement] = []
    seen: set[object] = set()

    def add(r: TableRequirement) -> None:
        if r not in seen:
            seen.add(r)
            out.append(r)

    if base.table_uuid is not None:
        add(AssertTableUUID(base.table_uuid))
    for u in updates:
        if isinstance(u, AddSchema):
            add(AssertLastAssignedFieldId(base.last_column_id))
        elif isinstance(u, (SetCurrentSchema, RemoveSchemas)):
            add(AssertCurrentSchemaId(base.current_schema_id))
        elif isinstance(u, AddPartitionSpec):
            add(AssertLastAssignedPartitionId(base.last_partition_id))
        elif isinstance(u, (SetDefaultSpec, RemovePartitionSpecs)):
            add(AssertDefaultSpecId(base.default_spec_id))
        elif isinstance(u, SetDefaultSortOrder):
            add(AssertDefaultSortOrderId(base.default_sort_order_id))
        elif isinstance(u, (SetSnapshotRef, RemoveSnapshotRef)):
            ref = base.refs.get(u.ref_name)
            add(AssertRefSnapshotId(u.ref_name, None if ref is None else ref.snapshot_id))
    return tuple(out)
