"""Table updates and requirements: validation against a base and REST JSON round trips."""

from __future__ import annotations

import json
import uuid

import pytest

from floe.errors import CommitFailedError, InvalidMetadataError
from floe.serde.updates_json import (
    requirement_from_json,
    requirement_to_json,
    update_from_json,
    update_to_json,
)
from floe.spec.metadata_builder import MetadataBuilder, apply_updates, new_table_metadata
from floe.spec.partitioning import UNPARTITIONED_SPEC, PartitionField, PartitionSpec
from floe.spec.refs import SnapshotRef
from floe.spec.schema import Schema
from floe.spec.snapshot import (
    BlobMetadata,
    EncryptedKey,
    PartitionStatisticsFile,
    Snapshot,
    StatisticsFile,
    Summary,
)
from floe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from floe.spec.types import LongType, NestedField, StringType
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
    UpgradeFormatVersion,
    requirements_for_create,
    requirements_for_update,
    validate_requirements,
)
from floe.transforms import BucketTransform, IdentityTransform

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "data", StringType()), schema_id=0)
UID = uuid.UUID("9c12d441-03fe-4693-9a96-a0705ddf69c1")


@pytest.fixture
def base():
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, "s3://b/t", {}, 2, table_uuid=UID
    )
    b = MetadataBuilder(md)
    b.add_snapshot(
        Snapshot(5, 1000, Summary.of("append"), "s3://b/t/m.avro", sequence_number=1)
    ).set_branch_snapshot(5)
    return b.build()


UPDATES = [
    AssignUUID(UID),
    UpgradeFormatVersion(3),
    AddSchema(SCHEMA, 2),
    SetCurrentSchema(-1),
    AddPartitionSpec(PartitionSpec(1, (PartitionField(1, 1000, BucketTransform(16), "id_bucket"),))),
    SetDefaultSpec(1),
    AddSortOrder(
        SortOrder(1, (SortField(2, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),))
    ),
    SetDefaultSortOrder(-1),
    AddSnapshot(
        Snapshot(
            7,
            123,
            Summary.of("overwrite", {"k": "v"}),
            "s3://m.avro",
            parent_snapshot_id=5,
            sequence_number=2,
            schema_id=0,
        )
    ),
    SetSnapshotRef(
        "b1", SnapshotRef.branch(7, min_snapshots_to_keep=2, max_snapshot_age_ms=10, max_ref_age_ms=20)
    ),
    SetSnapshotRef("t1", SnapshotRef.tag(7)),
    RemoveSnapshots((1, 2)),
    RemoveSnapshotRef("b1"),
    SetLocation("s3://elsewhere"),
    SetProperties({"a": "1"}),
    RemoveProperties(("a", "b")),
    SetStatistics(
        StatisticsFile(
            7,
            "s3://s.puffin",
            100,
            20,
            (BlobMetadata("apache-datasketches-theta-v1", 7, 2, (1,), {"ndv": "3"}),),
        )
    ),
    RemoveStatistics(7),
    SetPartitionStatistics(PartitionStatisticsFile(7, "s3://p.parquet", 50)),
    RemovePartitionStatistics(7),
    RemovePartitionSpecs((0,)),
    RemoveSchemas((3, 4)),
    AddEncryptionKey(EncryptedKey("k1", "AAAA", "master", {"p": "q"})),
    RemoveEncryptionKey("k1"),
]


@pytest.mark.parametrize("update", UPDATES, ids=lambda u: u.action)
def test_update_json_round_trip(update):
    node = update_to_json(update)
    assert node["action"] == update.action
    assert update_from_json(json.loads(json.dumps(node))) == update


def test_update_json_rest_shapes():
    assert update_to_json(SetSnapshotRef("main", SnapshotRef(7))) == {
        "action": "set-snapshot-ref",
        "ref-name": "main",
        "snapshot-id": 7,
        "type": "branch",
    }
    assert update_to_json(SetCurrentSchema(-1)) == {"action": "set-current-schema", "schema-id": -1}
    assert update_to_json(AddPartitionSpec(UNPARTITIONED_SPEC)) == {
        "action": "add-spec",
        "spec": {"spec-id": 0, "fields": []},
    }
    assert update_to_json(RemoveProperties(("a",))) == {"action": "remove-properties", "removals": ["a"]}


def test_update_unknown_action_rejected():
    with pytest.raises(InvalidMetadataError, match="unknown action 'fly'"):
        update_from_json({"action": "fly"})


def test_update_malformed_field_named():
    with pytest.raises(InvalidMetadataError, match="snapshot-ids"):
        update_from_json({"action": "remove-snapshots", "snapshot-ids": "x"})


REQUIREMENTS = [
    AssertCreate(),
    AssertTableUUID(UID),
    AssertRefSnapshotId("main", 5),
    AssertRefSnapshotId("main", None),
    AssertLastAssignedFieldId(2),
    AssertCurrentSchemaId(0),
    AssertLastAssignedPartitionId(999),
    AssertDefaultSpecId(0),
    AssertDefaultSortOrderId(0),
]


@pytest.mark.parametrize("req", REQUIREMENTS, ids=lambda r: r.type)
def test_requirement_json_round_trip(req):
    node = requirement_to_json(req)
    assert node["type"] == req.type
    assert requirement_from_json(json.loads(json.dumps(node))) == req


def test_requirement_ref_null_snapshot_written_as_null():
    assert requirement_to_json(AssertRefSnapshotId("main", None)) == {
        "type": "assert-ref-snapshot-id",
        "ref": "main",
        "snapshot-id": None,
    }


def test_requirements_hold_on_matching_base(base):
    validate_requirements(
        base,
        [
            AssertTableUUID(UID),
            AssertRefSnapshotId("main", 5),
            AssertRefSnapshotId("missing", None),
            AssertLastAssignedFieldId(2),
            AssertCurrentSchemaId(0),
            AssertLastAssignedPartitionId(999),
            AssertDefaultSpecId(0),
            AssertDefaultSortOrderId(0),
        ],
    )
    AssertCreate().validate(None)


@pytest.mark.parametrize(
    "req,phrase",
    [
        (AssertCreate(), "table already exists"),
        (AssertTableUUID(uuid.UUID(int=1)), "UUID does not match"),
        (AssertRefSnapshotId("main", 4), "branch main has changed: expected id 4 != 5"),
        (AssertRefSnapshotId("main", None), "branch main was created concurrently"),
        (AssertRefSnapshotId("dev", 5), "branch or tag dev is missing, expected 5"),
        (AssertLastAssignedFieldId(1), "last assigned field id changed: expected id 1 != 2"),
        (AssertCurrentSchemaId(3), "current schema changed: expected id 3 != 0"),
        (AssertLastAssignedPartitionId(1000), "last assigned partition id changed"),
        (AssertDefaultSpecId(1), "default partition spec changed: expected id 1 != 0"),
        (AssertDefaultSortOrderId(2), "default sort order id changed: expected id 2 != 0"),
    ],
    ids=lambda x: getattr(x, "type", ""),
)
def test_requirement_fails_naming_what_changed(base, req, phrase):
    with pytest.raises(CommitFailedError, match=phrase):
        req.validate(base)


def test_requirement_on_missing_table_fails():
    with pytest.raises(CommitFailedError, match="does not exist"):
        AssertCurrentSchemaId(0).validate(None)


def test_rest_create_sequence_applies_on_empty_base():
    updates = [
        update_from_json(n)
        for n in [
            {"action": "assign-uuid", "uuid": str(UID)},
            {"action": "upgrade-format-version", "format-version": 1},
            {
                "action": "add-schema",
                "schema": {
                    "type": "struct",
                    "schema-id": 0,
                    "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}],
                },
                "last-column-id": 1,
            },
            {"action": "set-current-schema", "schema-id": -1},
            {
                "action": "add-spec",
                "spec": {
                    "spec-id": 0,
                    "fields": [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}],
                },
            },
            {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1},
            {"action": "set-location", "location": "s3://b/t"},
            {"action": "set-properties", "updates": {"owner": "x"}},
        ]
    ]
    md = apply_updates(None, updates)
    assert md.format_version == 1
    assert md.table_uuid == UID
    assert md.spec().fields[0].field_id == 1000
    assert md.properties == {"owner": "x"}


def test_applying_update_on_moved_base_fails_validation(base):
    # a concurrent commit moved main: the replayed requirement catches it before the update applies
    moved = MetadataBuilder(base)
    moved.add_snapshot(
        Snapshot(6, 2000, Summary.of("append"), "m2.avro", parent_snapshot_id=5, sequence_number=2)
    )
    moved = moved.set_branch_snapshot(6).build()
    with pytest.raises(CommitFailedError, match="expected id 5 != 6"):
        validate_requirements(moved, [AssertRefSnapshotId("main", 5)])


def test_requirements_for_update_assert_what_each_change_depends_on(base):
    updates = [
        AddSchema(SCHEMA),
        SetCurrentSchema(-1),
        AddPartitionSpec(UNPARTITIONED_SPEC),
        SetDefaultSpec(-1),
        SetDefaultSortOrder(-1),
        SetSnapshotRef("main", SnapshotRef(5)),
        SetSnapshotRef("main", SnapshotRef(5)),
        SetSnapshotRef("dev", SnapshotRef(5)),
        SetProperties({"a": "b"}),
    ]
    assert requirements_for_update(base, updates) == (
        AssertTableUUID(UID),
        AssertLastAssignedFieldId(2),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(999),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(0),
        AssertRefSnapshotId("main", 5),
        AssertRefSnapshotId("dev", None),
    )
    validate_requirements(base, requirements_for_update(base, updates))
    assert requirements_for_create() == (AssertCreate(),)
