"""JSON (REST catalog OpenAPI shapes) of table updates and requirements.

Updates carry an ``action`` key (``add-schema``, ``set-snapshot-ref`` ...), requirements a ``type`` key
(``assert-ref-snapshot-id`` ...), with the OpenAPI's kebab-case field names.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from floe.errors import InvalidMetadataError, ValidationError
from floe.serde.json_types import (
    JSON,
    get_int,
    get_int_or_none,
    get_str,
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from floe.serde.metadata_json import (
    encryption_key_from_json,
    encryption_key_to_json,
    partition_statistics_from_json,
    partition_statistics_to_json,
    ref_from_json,
    ref_to_json,
    snapshot_from_json,
    snapshot_to_json,
    statistics_from_json,
    statistics_to_json,
)
from floe.spec.updates import (
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
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
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
)

__all__ = ["requirement_from_json", "requirement_to_json", "update_from_json", "update_to_json"]


def update_to_json(u: TableUpdate) -> dict[str, JSON]:
    """The REST JSON of one table update."""
    out: dict[str, JSON] = {"action": u.action}
    match u:
        case AssignUUID():
            out["uuid"] = str(u.uuid)
        case UpgradeFormatVersion():
            out["format-version"] = u.format_version
        case AddSchema():
            out["schema"] = schema_to_json(u.schema)
            if u.last_column_id is not None:
                out["last-column-id"] = u.last_column_id
        case SetCurrentSchema():
            out["schema-id"] = u.schema_id
        case AddPartitionSpec():
            out["spec"] = partition_spec_to_json(u.spec)
        case SetDefaultSpec():
            out["spec-id"] = u.spec_id
        case AddSortOrder():
            out["sort-order"] = sort_order_to_json(u.sort_order)
        case SetDefaultSortOrder():
            out["sort-order-id"] = u.sort_order_id
        case AddSnapshot():
            out["snapshot"] = snapshot_to_json(u.snapshot)
        case SetSnapshotRef():
            out["ref-name"] = u.ref_name
            out.update(ref_to_json(u.ref))
        case RemoveSnapshots():
            out["snapshot-ids"] = list(u.snapshot_ids)
        case RemoveSnapshotRef():
            out["ref-name"] = u.ref_name
        case SetLocation():
            out["location"] = u.location
        case SetProperties():
            out["updates"] = dict(u.updates)
        case RemoveProperties():
            out["removals"] = list(u.removals)
        case SetStatistics():
            out["snapshot-id"] = u.statistics.snapshot_id  # deprecated in the OpenAPI, still sent by Java
            out["statistics"] = statistics_to_json(u.statistics)
        case RemoveStatistics():
            out["snapshot-id"] = u.snapshot_id
        case SetPartitionStatistics():
            out["partition-statistics"] = partition_statistics_to_json(u.partition_statistics)
        case RemovePartitionStatistics():
            out["snapshot-id"] = u.snapshot_id
        case RemovePartitionSpecs():
            out["spec-ids"] = list(u.spec_ids)
        case RemoveSchemas():
            out["schema-ids"] = list(u.schema_ids)
        case AddEncryptionKey():
            out["encryption-key"] = encryption_key_to_json(u.encryption_key)
        case RemoveEncryptionKey():
            out["key-id"] = u.key_id
    return out


def _ints(node: Mapping[str, JSON], key: str) -> tuple[int, ...]:
    values = node.get(key)
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise InvalidMetadataError(f"Cannot parse {key}: expected a list of integers, got {values!r}")
    return tuple(values)


_UPDATE_READERS: dict[str, Callable[[Mapping[str, JSON]], TableUpdate]] = {
    "assign-uuid": lambda n: AssignUUID(uuid.UUID(get_str(n, "uuid"))),
    "upgrade-format-version": lambda n: UpgradeFormatVersion(get_int(n, "format-version")),
    "add-schema": lambda n: AddSchema(schema_from_json(n["schema"]), get_int_or_none(n, "last-column-id")),
    "set-current-schema": lambda n: SetCurrentSchema(get_int(n, "schema-id")),
    "add-spec": lambda n: AddPartitionSpec(partition_spec_from_json(n["spec"])),
    "set-default-spec": lambda n: SetDefaultSpec(get_int(n, "spec-id")),
    "add-sort-order": lambda n: AddSortOrder(sort_order_from_json(n["sort-order"])),
    "set-default-sort-order": lambda n: SetDefaultSortOrder(get_int(n, "sort-order-id")),
    "add-snapshot": lambda n: AddSnapshot(snapshot_from_json(n["snapshot"])),
    "set-snapshot-ref": lambda n: SetSnapshotRef(get_str(n, "ref-name"), ref_from_json(n)),
    "remove-snapshots": lambda n: RemoveSnapshots(_ints(n, "snapshot-ids")),
    "remove-snapshot-ref": lambda n: RemoveSnapshotRef(get_str(n, "ref-name")),
    "set-location": lambda n: SetLocation(get_str(n, "location")),
    "set-properties": lambda n: SetProperties({str(k): str(v) for k, v in (n.get("updates") or {}).items()}),
    "remove-properties": lambda n: RemoveProperties(tuple(str(k) for k in n.get("removals") or ())),
    "set-statistics": lambda n: SetStatistics(statistics_from_json(n["statistics"])),
    "remove-statistics": lambda n: RemoveStatistics(get_int(n, "snapshot-id")),
    "set-partition-statistics": lambda n: SetPartitionStatistics(
        partition_statistics_from_json(n["partition-statistics"])
    ),
    "remove-partition-statistics": lambda n: RemovePartitionStatistics(get_int(n, "snapshot-id")),
    "remove-partition-specs": lambda n: RemovePartitionSpecs(_ints(n, "spec-ids")),
    "remove-schemas": lambda n: RemoveSchemas(_ints(n, "schema-ids")),
    "add-encryption-key": lambda n: AddEncryptionKey(encryption_key_from_json(n["encryption-key"])),
    "remove-encryption-key": lambda n: RemoveEncryptionKey(get_str(n, "key-id")),
}


def update_from_json(node: Mapping[str, JSON]) -> TableUpdate:
    """Parse one REST table update.

    Raises:
        InvalidMetadataError: unknown ``action`` or a malformed field (message names it).
    """
    action = get_str(node, "action")
    reader = _UPDATE_READERS.get(action)
    if reader is None:
        raise InvalidMetadataError(f"Cannot parse table update: unknown action {action!r}")
    try:
        return reader(node)
    except InvalidMetadataError:
        raise
    except (KeyError, TypeError, ValueError, ValidationError) as e:
        raise InvalidMetadataError(f"Cannot parse table update {action}: {type(e).__name__}: {e}") from e


def requirement_to_json(r: TableRequirement) -> dict[str, JSON]:
    """The REST JSON of one table requirement."""
    out: dict[str, JSON] = {"type": r.type}
    match r:
        case AssertTableUUID():
            out["uuid"] = str(r.uuid)
        case AssertRefSnapshotId():
            out["ref"] = r.ref
            out["snapshot-id"] = r.snapshot_id
        case AssertLastAssignedFieldId():
            out["last-assigned-field-id"] = r.last_assigned_field_id
        case AssertCurrentSchemaId():
            out["current-schema-id"] = r.current_schema_id
        case AssertLastAssignedPartitionId():
            out["last-assigned-partition-id"] = r.last_assigned_partition_id
        case AssertDefaultSpecId():
            out["default-spec-id"] = r.default_spec_id
        case AssertDefaultSortOrderId():
            out["default-sort-order-id"] = r.default_sort_order_id
    return out


_REQUIREMENT_READERS: dict[str, Callable[[Mapping[str, JSON]], TableRequirement]] = {
    "assert-create": lambda n: AssertCreate(),
    "assert-table-uuid": lambda n: AssertTableUUID(uuid.UUID(get_str(n, "uuid"))),
    "assert-ref-snapshot-id": lambda n: AssertRefSnapshotId(
        get_str(n, "ref"), get_int_or_none(n, "snapshot-id")
    ),
    "assert-last-assigned-field-id": lambda n: AssertLastAssignedFieldId(
        get_int(n, "last-assigned-field-id")
    ),
    "assert-current-schema-id": lambda n: AssertCurrentSchemaId(get_int(n, "current-schema-id")),
    "assert-last-assigned-partition-id": lambda n: AssertLastAssignedPartitionId(
        get_int(n, "last-assigned-partition-id")
    ),
    "assert-default-spec-id": lambda n: AssertDefaultSpecId(get_int(n, "default-spec-id")),
    "assert-default-sort-order-id": lambda n: AssertDefaultSortOrderId(get_int(n, "default-sort-order-id")),
}


def requirement_from_json(node: Mapping[str, JSON]) -> TableRequirement:
    """Parse one REST table requirement.

    Raises:
        InvalidMetadataError: unknown ``type`` or a malformed field.
    """
    kind = get_str(node, "type")
    reader = _REQUIREMENT_READERS.get(kind)
    if reader is None:
        raise InvalidMetadataError(f"Cannot parse table requirement: unknown type {kind!r}")
    try:
        return reader(node)
    except InvalidMetadataError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidMetadataError(f"Cannot parse table requirement {kind}: {type(e).__name__}: {e}") from e
