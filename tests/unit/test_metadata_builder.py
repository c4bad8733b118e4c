"""MetadataBuilder, apply_updates and new_table_metadata, parametrized over format versions."""

from __future__ import annotations

import uuid

import pytest

from floe.errors import InvalidMetadataError, NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.serde.metadata_json import table_metadata_from_json, table_metadata_to_json
from floe.spec import properties as props
from floe.spec.metadata_builder import MetadataBuilder, apply_updates, new_table_builder, new_table_metadata
from floe.spec.partitioning import UNPARTITIONED_SPEC, PartitionField, PartitionSpec, PartitionSpecBuilder
from floe.spec.refs import MAIN_BRANCH, SnapshotRef
from floe.spec.schema import Schema
from floe.spec.snapshot import Operation, Snapshot, StatisticsFile, Summary
from floe.spec.sort_order import UNSORTED_SORT_ORDER, SortOrderBuilder
from floe.spec.types import IntegerType, LongType, NestedField, StringType, TimestampNanoType, TimestampType
from floe.spec.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    SetCurrentSchema,
    SetSnapshotRef,
    UpgradeFormatVersion,
)
from floe.transforms import BucketTransform, DayTransform, IdentityTransform

VERSIONS = [1, 2]

SCHEMA = Schema(
    NestedField(100, "id", LongType(), True),
    NestedField(200, "ts", TimestampType()),
    NestedField(300, "data", StringType()),
)


def _table(version: int, **kwargs) -> object:
    spec = PartitionSpecBuilder(SCHEMA).day("ts").build()
    order = SortOrderBuilder(SCHEMA).asc("id").build()
    return new_table_metadata(SCHEMA, spec, order, "s3://b/t", {"owner": "me"}, version, **kwargs)


def _snapshot(md, snapshot_id: int, parent: int | None, ts: int, **kw) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        timestamp_ms=ts,
        sequence_number=md.next_sequence_number,
        summary=Summary.of(Operation.APPEND, {"added-records": "1"}),
        manifest_list=f"s3://b/t/metadata/snap-{snapshot_id}.avro",
        schema_id=md.current_schema_id,
        **kw,
    )


def _commit(md, snapshot_id: int, ts: int, branch: str = MAIN_BRANCH, **kw):
    parent = md.refs[branch].snapshot_id if branch in md.refs else None
    b = MetadataBuilder(md)
    b.add_snapshot(_snapshot(md, snapshot_id, parent, ts, **kw)).set_branch_snapshot(snapshot_id, branch)
    return b.build()


@pytest.mark.parametrize("version", VERSIONS)
def test_new_table_metadata_assigns_fresh_ids(version):
    md = _table(version)
    assert md.format_version == version
    assert [f.field_id for f in md.schema().fields] == [1, 2, 3]
    assert md.last_column_id == 3
    assert md.spec().fields == (PartitionField(2, 1000, DayTransform(), "ts_day"),)
    assert md.last_partition_id == 1000
    assert md.sort_order().order_id == 1
    assert md.sort_order().fields[0].source_id == 1
    assert isinstance(md.table_uuid, uuid.UUID)
    assert md.properties == {"owner": "me", "write.parquet.compression-codec": "zstd"}  # Java's new-table default
    assert md.current_snapshot() is None
    assert md.snapshots == ()
    assert md.refs == {}


def test_new_table_format_version_property_wins_and_is_not_stored():
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, "/t", {"format-version": "1", "a": "b"}
    )
    assert md.format_version == 1
    assert md.properties == {"a": "b", "write.parquet.compression-codec": "zstd"}
    assert md.sort_order().is_unsorted
    assert md.default_sort_order_id == 0


def test_new_table_builder_changes_replay_into_same_metadata():
    b = new_table_builder(SCHEMA, UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, "/t", {"a": "b"}, 2)
    built = b.build()
    assert isinstance(b.changes[0], UpgradeFormatVersion)
    replayed = apply_updates(None, b.changes)
    assert table_metadata_to_json(replayed).replace(
        str(replayed.last_updated_ms), "T"
    ) == table_metadata_to_json(built).replace(str(built.last_updated_ms), "T")


@pytest.mark.parametrize("version", VERSIONS)
def test_add_schema_identical_reuses_id_and_records_nothing(version):
    md = _table(version)
    b = MetadataBuilder(md)
    assert b.add_schema(md.schema()) == md.current_schema_id
    assert b.changes == ()
    assert b.build() is md


@pytest.mark.parametrize("version", VERSIONS)
def test_add_schema_then_set_current_last_added(version):
    md = _table(version)
    evolved = Schema(*md.schema().fields, NestedField(4, "extra", IntegerType()))
    b = MetadataBuilder(md)
    new_id = b.add_schema(evolved)
    b.set_current_schema(-1)
    out = b.build()
    assert new_id == 1
    assert out.current_schema_id == 1
    assert out.last_column_id == 4
    assert [type(c) for c in b.changes] == [AddSchema, SetCurrentSchema]
    assert b.changes[1].schema_id == -1
    assert out.schema_by_id(0) == md.schema()


def test_set_current_schema_last_added_without_add_fails():
    with pytest.raises(ValidationError, match="no schema has been added"):
        MetadataBuilder(_table(2)).set_current_schema(-1)


def test_set_current_schema_unknown_fails():
    with pytest.raises(ValidationError, match="unknown schema: 9"):
        MetadataBuilder(_table(2)).set_current_schema(9)


def test_v3_type_in_v2_table_rejected():
    md = _table(2)
    bad = Schema(*md.schema().fields, NestedField(4, "ns", TimestampNanoType()))
    with pytest.raises(ValidationError, match="not supported until v3"):
        MetadataBuilder(md).add_schema(bad)


def test_v2_partition_spec_reuses_field_id_for_same_source_and_transform():
    md = _table(2)
    # caller-assigned ids are ignored in v2: day(ts) keeps 1000, the new field continues after last id
    spec = PartitionSpec(
        0,
        (
            PartitionField(2, 5000, DayTransform(), "ts_day"),
            PartitionField(1, 5001, BucketTransform(8), "id_bucket"),
        ),
    )
    b = MetadataBuilder(md)
    spec_id = b.add_partition_spec(spec)
    b.set_default_spec(-1)
    out = b.build()
    assert spec_id == 1
    assert [f.field_id for f in out.spec().fields] == [1000, 1001]
    assert out.last_partition_id == 1001
    assert isinstance(b.changes[0], AddPartitionSpec)


def test_v2_partition_spec_after_removal_of_field_gets_new_id_for_new_transform():
    md = _table(2)
    b = MetadataBuilder(md)
    b.set_default_spec(
        b.add_partition_spec(PartitionSpec(0, (PartitionField(3, 1000, IdentityTransform(), "data"),)))
    )
    out = b.build()
    assert out.spec().fields[0].field_id == 1001
    assert out.last_partition_id == 1001


@pytest.mark.parametrize("version", VERSIONS)
def test_add_existing_partition_spec_reuses_id(version):
    md = _table(version)
    b = MetadataBuilder(md)
    assert b.add_partition_spec(md.spec()) == md.default_spec_id
    assert b.changes == ()


def test_partition_spec_on_unknown_column_rejected():
    with pytest.raises(ValidationError, match="source column id 42"):
        MetadataBuilder(_table(2)).add_partition_spec(
            PartitionSpec(0, (PartitionField(42, 1000, IdentityTransform(), "x"),))
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_add_sort_order_reuses_same_fields_and_assigns_next_id(version):
    md = _table(version)
    b = MetadataBuilder(md)
    assert b.add_sort_order(md.sort_order()) == md.default_sort_order_id
    new_order = SortOrderBuilder(md.schema()).desc("data").build()
    assert b.add_sort_order(new_order) == 2
    assert b.add_sort_order(UNSORTED_SORT_ORDER) == 0
    b.set_default_sort_order(-1)
    assert b.build().default_sort_order_id == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_commit_snapshot_moves_main_and_logs_it(version):
    md = _commit(_table(version), 11, 1000)
    md = _commit(md, 12, 2000)
    assert md.current_snapshot_id == 12
    assert md.refs[MAIN_BRANCH] == SnapshotRef(12)
    assert [(e.snapshot_id, e.timestamp_ms) for e in md.snapshot_log] == [(11, 1000), (12, 2000)]
    assert md.last_updated_ms == 2000
    assert md.last_sequence_number == (2 if version == 2 else 0)
    assert [s.snapshot_id for s in md.ancestors_of(12)] == [12, 11]
    assert md.snapshot_as_of_timestamp(1500).snapshot_id == 11
    with pytest.raises(NoSuchSnapshotError, match=r"older than 1970-01-01T00:00:00\.999\+00:00"):
        md.snapshot_as_of_timestamp(999)
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


def test_v2_snapshot_with_stale_sequence_number_rejected():
    md = _commit(_table(2), 11, 1000)
    stale = Snapshot(12, 2000, Summary.of("append"), "m.avro", parent_snapshot_id=11, sequence_number=1)
    with pytest.raises(ValidationError, match="sequence number 1 older than last sequence number 1"):
        MetadataBuilder(md).add_snapshot(stale)


def test_duplicate_snapshot_rejected():
    md = _commit(_table(2), 11, 1000)
    with pytest.raises(ValidationError, match="already exists for id: 11"):
        MetadataBuilder(md).add_snapshot(md.snapshot_by_id(11))


@pytest.mark.parametrize("version", VERSIONS)
def test_branch_commit_does_not_touch_main_or_log(version):
    md = _commit(_table(version), 11, 1000)
    md = _commit(md, 12, 2000, branch="audit")
    assert md.current_snapshot_id == 11
    assert md.snapshot_by_name("audit").snapshot_id == 12
    assert len(md.snapshot_log) == 1


def test_main_cannot_be_a_tag():
    md = _commit(_table(2), 11, 1000)
    with pytest.raises(ValidationError, match="main must be a branch"):
        MetadataBuilder(md).set_ref(MAIN_BRANCH, SnapshotRef.tag(11))


def test_ref_to_unknown_snapshot_rejected():
    with pytest.raises(ValidationError, match="unknown snapshot: 5"):
        MetadataBuilder(_table(2)).set_ref("b", SnapshotRef(5))


@pytest.mark.parametrize("version", VERSIONS)
def test_remove_snapshots_drops_refs_statistics_and_older_log(version):
    md = _commit(_commit(_commit(_table(version), 11, 1000), 12, 2000), 13, 3000)
    b = MetadataBuilder(md).set_ref("tag", SnapshotRef.tag(12))
    b.set_statistics(StatisticsFile(12, "s3://b/t/stats.puffin", 10, 4))
    md = b.build()
    out = MetadataBuilder(md).remove_snapshots([12]).build()
    assert "tag" not in out.refs
    assert out.statistics == ()
    assert [e.snapshot_id for e in out.snapshot_log] == [13]
    assert out.current_snapshot_id == 13


@pytest.mark.parametrize("version", VERSIONS)
def test_remove_main_ref_clears_current_snapshot(version):
    md = _commit(_table(version), 11, 1000)
    out = MetadataBuilder(md).remove_ref(MAIN_BRANCH).build()
    assert out.current_snapshot_id is None
    assert out.current_snapshot() is None


@pytest.mark.parametrize("version", VERSIONS)
def test_metadata_log_appends_previous_file_and_trims(version):
    md = _table(version)
    md = MetadataBuilder(md).set_properties({props.METADATA_PREVIOUS_VERSIONS_MAX: "2"}).build()
    for i in range(4):
        md = (
            MetadataBuilder(md)
            .with_previous_metadata(f"s3://b/t/metadata/v{i}.metadata.json")
            .set_properties({"i": str(i)})
            .build()
        )
    assert [e.metadata_file.rsplit("/", 1)[-1] for e in md.metadata_log] == [
        "v2.metadata.json",
        "v3.metadata.json",
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_properties_set_and_remove(version):
    md = (
        MetadataBuilder(_table(version))
        .set_properties({"a": "1"})
        .remove_properties(["owner", "nope"])
        .build()
    )
    assert md.properties == {"a": "1", "write.parquet.compression-codec": "zstd"}


def test_upgrade_v1_to_v2_and_refuse_downgrade():
    md = _commit(_table(1), 11, 1000)
    up = MetadataBuilder(md).upgrade_format_version(2).build()
    assert up.format_version == 2
    assert up.last_sequence_number == 0
    up2 = _commit(up, 12, 2000)
    assert up2.snapshot_by_id(12).sequence_number == 1
    with pytest.raises(ValidationError, match="Cannot downgrade v2 table to v1"):
        MetadataBuilder(up2).upgrade_format_version(1)
    with pytest.raises(UnsupportedError, match="Unsupported format version 9"):
        MetadataBuilder(up2).upgrade_format_version(9)


def test_v3_row_lineage_advances_next_row_id():
    md = MetadataBuilder(_table(2)).upgrade_format_version(3).build()
    assert md.next_row_id == 0
    md = _commit(md, 11, 1000, first_row_id=0, added_rows=5)
    assert md.next_row_id == 5
    with pytest.raises(ValidationError, match="first-row-id 3 is behind"):
        MetadataBuilder(md).add_snapshot(_snapshot(md, 12, 11, 2000, first_row_id=3, added_rows=1))
    assert table_metadata_from_json(table_metadata_to_json(md)) == md


@pytest.mark.parametrize("version", VERSIONS)
def test_apply_updates_replays_builder_changes(version):
    base = _commit(_table(version), 11, 1000)
    b = MetadataBuilder(base)
    b.set_current_schema(b.add_schema(Schema(*base.schema().fields, NestedField(4, "n", IntegerType()))))
    b.add_snapshot(_snapshot(base, 12, 11, 5000)).set_branch_snapshot(12)
    b.set_properties({"x": "y"}).set_ref("t", SnapshotRef.tag(11))
    built = b.build()
    replayed = apply_updates(base, b.changes)
    assert replayed == built
    assert [type(c) for c in b.changes][:2] == [AddSchema, SetCurrentSchema]
    assert any(isinstance(c, AddSnapshot) for c in b.changes)
    assert any(isinstance(c, SetSnapshotRef) and c.ref_name == "t" for c in b.changes)


def test_apply_updates_with_previous_location_logs_it():
    base = _table(2)
    out = apply_updates(
        base, [UpgradeFormatVersion(3)], previous_metadata_location="s3://b/t/metadata/v1.metadata.json"
    )
    assert out.format_version == 3
    assert out.metadata_log[-1].metadata_file.endswith("v1.metadata.json")
    assert out.metadata_log[-1].timestamp_ms == base.last_updated_ms


def test_build_without_changes_returns_base():
    md = _table(2)
    assert MetadataBuilder(md).build() is md


def test_build_new_table_without_location_fails():
    b = MetadataBuilder(None)
    b.set_current_schema(b.add_schema(SCHEMA))
    with pytest.raises(ValidationError, match="without a location"):
        b.build()


def test_build_new_table_without_spec_fails_with_named_problem():
    b = MetadataBuilder(None).set_location("/t")
    b.set_current_schema(b.add_schema(SCHEMA))
    with pytest.raises(InvalidMetadataError, match="default-spec-id"):
        b.build()


def test_assign_uuid_on_existing_table_refused():
    with pytest.raises(ValidationError, match="Cannot reassign the UUID"):
        MetadataBuilder(_table(2)).assign_uuid(uuid.uuid4())


def test_remove_current_schema_and_default_spec_refused():
    md = _table(2)
    with pytest.raises(ValidationError, match="Cannot remove current schema: 0"):
        MetadataBuilder(md).remove_schemas([0])
    with pytest.raises(ValidationError, match="Cannot remove the default partition spec: 0"):
        MetadataBuilder(md).remove_partition_specs([0])


def test_new_table_user_codec_wins_over_the_zstd_default():
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_SPEC, UNSORTED_SORT_ORDER, "/t", {"write.parquet.compression-codec": "snappy"}
    )
    assert md.properties == {"write.parquet.compression-codec": "snappy"}
