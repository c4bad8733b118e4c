"""Table metadata JSON: every fixture in FIXTURES.txt and every Java-written table's metadata files."""

from __future__ import annotations

import gzip
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from floe.errors import InvalidMetadataError, ValidationError
from floe.serde.json_types import default_from_json, default_to_json, type_from_json, type_to_json
from floe.serde.metadata_json import (
    metadata_file_extension,
    table_metadata_from_bytes,
    table_metadata_from_dict,
    table_metadata_from_json,
    table_metadata_to_bytes,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from floe.spec.refs import MAIN_BRANCH
from floe.spec.snapshot import Operation
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

FIXTURES = Path("/work/shared/fixtures/metadata")
JAVA_TABLES = Path("/work/shared/fixtures/java-tables")
AI = "apache-iceberg"
RUST = "iceberg-rust/crates/iceberg/testdata"

VALID = [
    f"{AI}/TableMetadataV1Valid.json",
    f"{AI}/TableMetadataV2Valid.json",
    f"{AI}/TableMetadataV2ValidMinimal.json",
    f"{AI}/TableMetadataV3ValidMinimal.json",
    f"{AI}/TableMetadataStatisticsFiles.json",
    f"{AI}/TableMetadataPartitionStatisticsFiles.json",
    f"{RUST}/table_metadata/TableMetadataV1Compat.json",
    f"{RUST}/table_metadata/TableMetadataV1SchemasWithoutCurrentId.json",
    f"{RUST}/table_metadata/TableMetadataV1PartitionSpecsWithoutDefaultId.json",
    f"{RUST}/table_metadata/TableMetadataV3ValidEncryption.json",
    f"{RUST}/example_empty_table_metadata_v2.json",
    f"{RUST}/example_table_metadata_v2.json",
    f"{RUST}/example_table_metadata_v2_deep_history.json",
    f"{RUST}/example_table_metadata_v2_partition_evolution.json",
    "iceberg-rust/crates/integrations/datafusion/testdata/table_metadata/TableMetadataV2.json",
    "iceberg-go/table/testdata/TableMetadataV3WithPartitionStatistics.json",
    "iceberg-go/table/testdata/TableMetadataV2ValidMinimal.json",
    "iceberg-go/table/testdata/TableMetadataV2Valid.zstd.metadata.json",
    "jankaul-iceberg-rust/iceberg-rust-spec/testdata/table_metadata/TableMetadataV3Valid.json",
    "duckdb-iceberg/data/persistent/custom_write_paths/metadata/00000-acdf842e-3a9d-4b9b-ad87-daf785831925.metadata.json",
    "duckdb-iceberg/data/persistent/timestamptz_ns/metadata/v1.metadata.json",
    "duckdb-iceberg/data/persistent/big_query_error/metadata/v1749025517.metadata.json",
    "dremio/sabot/kernel/src/test/resources/iceberg/empty_table/metadata/v1.metadata.json",
    "dremio/sabot/kernel/src/test/resources/iceberg/empty_table/metadata/v1.gc_disabled.metadata.json",
    (
        "dremio/dac/backend/src/test/resources/datasets/iceberg/metastore_table/metadata/"
        "00000-e818e6b0-c2c8-468c-ac7c-05f31328f48d.metadata.json"
    ),
]

INVALID = [
    (f"{AI}/TableMetadataUnsupportedVersion.json", "Unsupported format version 42"),
    (f"{AI}/TableMetadataV1MissingSchemaType.json", "Cannot parse type from json:"),
    (
        f"{AI}/TableMetadataV2CurrentSchemaNotFound.json",
        "Cannot find schema with current-schema-id=2 from schemas",
    ),
    (f"{AI}/TableMetadataV2MissingLastPartitionId.json", "last-partition-id must exist in format v2"),
    (f"{AI}/TableMetadataV2MissingPartitionSpecs.json", "partition-specs must exist in format v2"),
    (f"{AI}/TableMetadataV2MissingSchemas.json", "schemas must exist in format v2"),
    (f"{AI}/TableMetadataV2MissingSortOrder.json", "sort-orders must exist in format v2"),
    (f"{RUST}/table_metadata/TableMetadataV1NoValidSchema.json", "current-schema-id"),
    (f"{RUST}/table_metadata/TableMetadataV2CurrentSchemaNotFound.json", "current-schema-id=2"),
    ("duckdb-iceberg/data/persistent/bad_data/bad_iceberg_metadata.json", "Cannot parse table metadata JSON"),
    (
        "duckdb-iceberg/data/persistent/big_query_error/metadata/v0.metadata.json",
        "Cannot parse missing int: format-version",
    ),
]

REST_PAYLOADS = ["create_table_response.json", "load_table_response.json", "update_table_response.json"]

JAVA_METADATA_FILES = sorted(
    p for p in JAVA_TABLES.glob("*/metadata/*.json") if p.name.endswith(".metadata.json")
)


def _read(rel: str) -> bytes:
    return (FIXTURES / rel).read_bytes()


def test_fixtures_listed_valid_are_all_present():
    listed = (FIXTURES / "FIXTURES.txt").read_text()
    for name in [
        "TableMetadataV1Valid.json",
        "TableMetadataV3ValidEncryption.json",
        "TableMetadataV3Valid.json",
    ]:
        assert name in listed
    for rel in VALID:
        assert (FIXTURES / rel).exists(), rel


@pytest.mark.parametrize("rel", VALID, ids=lambda r: r.rsplit("/", 1)[-1])
def test_table_metadata_valid_fixture_round_trips_identically(rel):
    md = table_metadata_from_bytes(_read(rel))
    again = table_metadata_from_json(table_metadata_to_json(md))
    assert again == md
    assert table_metadata_to_dict(again) == table_metadata_to_dict(md)


@pytest.mark.parametrize("rel,phrase", INVALID, ids=lambda x: x.rsplit("/", 1)[-1] if "/" in x else "")
def test_table_metadata_invalid_fixture_rejected_with_named_problem(rel, phrase):
    with pytest.raises(InvalidMetadataError) as err:
        table_metadata_from_bytes(_read(rel))
    assert phrase in str(err.value)


@pytest.mark.parametrize("name", REST_PAYLOADS)
def test_rest_payload_embedded_metadata_parses(name):
    payload = json.loads(_read(f"iceberg-rust/crates/catalog/rest/testdata/{name}"))
    md = table_metadata_from_dict(payload["metadata"])
    assert md.location
    assert table_metadata_from_dict(table_metadata_to_dict(md)) == md


@pytest.mark.parametrize("path", JAVA_METADATA_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_java_table_metadata_file_parses_and_round_trips(path):
    md = table_metadata_from_bytes(path.read_bytes())
    assert md.schema().schema_id == md.current_schema_id
    assert table_metadata_from_bytes(table_metadata_to_bytes(md)) == md


def test_java_tables_fixture_set_is_not_empty():
    assert len(JAVA_METADATA_FILES) > 150
    assert any(p.name.endswith(".gz.metadata.json") for p in JAVA_METADATA_FILES)


def test_java_written_compact_v3_file_is_reproduced_byte_for_byte():
    # Java writes compact JSON; same key order and value forms give identical bytes (files diff cleanly).
    path = JAVA_TABLES / "impala__iceberg_v3_deletion_vectors/metadata/v3.metadata.json"
    raw = path.read_bytes()
    assert table_metadata_to_json(table_metadata_from_bytes(raw)).encode() == raw.strip()


@pytest.mark.parametrize("path", JAVA_METADATA_FILES[::7], ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_java_key_order_preserved_for_shared_keys(path):
    original = list(
        json.loads(gzip.decompress(raw) if (raw := path.read_bytes())[:2] == b"\x1f\x8b" else raw)
    )
    if original[0] != "format-version":
        pytest.skip("not written by Iceberg Java (key order of another writer)")
    ours = list(table_metadata_to_dict(table_metadata_from_bytes(raw)))
    shared = [k for k in ours if k in original]
    assert shared == [k for k in original if k in ours]


def test_v1_valid_reads_legacy_schema_and_spec():
    md = table_metadata_from_bytes(_read(f"{AI}/TableMetadataV1Valid.json"))
    assert md.format_version == 1
    assert [f.name for f in md.schema().fields] == ["x", "y", "z"]
    assert md.spec().spec_id == 0
    assert md.spec().fields[0].field_id == 1000
    assert md.last_partition_id == 1000
    assert md.sort_order().is_unsorted
    assert md.current_snapshot() is None


def test_v1_write_includes_legacy_fields_like_java():
    md = table_metadata_from_bytes(_read(f"{AI}/TableMetadataV1Valid.json"))
    out = table_metadata_to_dict(md)
    assert out["schema"]["fields"] == out["schemas"][0]["fields"]
    assert out["partition-spec"] == out["partition-specs"][0]["fields"]
    assert "last-sequence-number" not in out
    assert out["current-snapshot-id"] == -1


def test_v1_spec_without_field_ids_assigns_1000_onwards():
    node = json.loads(_read(f"{AI}/TableMetadataV1Valid.json"))
    node["partition-spec"] = [
        {"name": "x", "transform": "identity", "source-id": 1},
        {"name": "y_bucket", "transform": "bucket[8]", "source-id": 2},
    ]
    md = table_metadata_from_dict(node)
    assert [f.field_id for f in md.spec().fields] == [1000, 1001]
    assert md.last_partition_id == 1001


def test_v1_schemas_without_current_id_uses_legacy_schema():
    md = table_metadata_from_bytes(
        _read(f"{RUST}/table_metadata/TableMetadataV1SchemasWithoutCurrentId.json")
    )
    assert md.current_schema_id == 0


def test_v1_specs_without_default_id_picks_highest():
    md = table_metadata_from_bytes(
        _read(f"{RUST}/table_metadata/TableMetadataV1PartitionSpecsWithoutDefaultId.json")
    )
    assert md.default_spec_id == 2


def test_v2_valid_accessors():
    md = table_metadata_from_bytes(_read(f"{AI}/TableMetadataV2Valid.json"))
    assert md.current_snapshot_id == 3055729675574597004
    assert md.refs[MAIN_BRANCH].snapshot_id == md.current_snapshot_id  # implied by current-snapshot-id
    assert [s.snapshot_id for s in md.ancestors_of(md.current_snapshot_id)] == [
        3055729675574597004,
        3051729675574597004,
    ]
    assert md.snapshot_as_of_timestamp(1515100955770).snapshot_id == 3051729675574597004
    assert md.current_snapshot().summary.operation is Operation.APPEND
    assert md.sort_order().order_id == 3
    assert str(md.sort_order().fields[1].transform) == "bucket[4]"
    assert md.schema().identifier_field_ids == (1, 2)
    assert md.property("missing", "dflt") == "dflt"


def test_v3_encryption_fixture_keeps_keys_and_key_id():
    md = table_metadata_from_bytes(_read(f"{RUST}/table_metadata/TableMetadataV3ValidEncryption.json"))
    assert [k.key_id for k in md.encryption_keys][1] == "1fb95f04-7f98-4b1f-a08f-e810cfb907ff"
    assert md.current_snapshot().key_id == "1fb95f04-7f98-4b1f-a08f-e810cfb907ff"
    assert md.encryption_keys[0].properties == {"KEY_TIMESTAMP": "1781172301703"}


def test_v3_missing_next_row_id_resumes_after_assigned_rows():
    md = table_metadata_from_bytes(
        _read("duckdb-iceberg/data/persistent/timestamptz_ns/metadata/v1.metadata.json")
    )
    assert md.format_version == 3
    assert md.next_row_id is not None
    assert md.next_row_id >= 0


def test_v3_defaults_parse_to_floe_values():
    path = JAVA_TABLES / "impala__test_complex_default/metadata/v4.metadata.json"
    md = table_metadata_from_bytes(path.read_bytes())
    f = md.schema().find_field("ts_tz")
    assert f.initial_default == 1705314645123456  # 2024-01-15T10:30:45.123456+00:00 in micros
    assert md.schema().find_field("j.f1").initial_default == -1


def test_gzip_codec_writes_gzip_and_reads_back():
    md = table_metadata_from_bytes(_read(f"{AI}/TableMetadataV2Valid.json"))
    data = table_metadata_to_bytes(md, codec="gzip")
    assert data[:2] == b"\x1f\x8b"
    assert table_metadata_from_bytes(data) == md
    assert metadata_file_extension("gzip") == ".gz.metadata.json"
    assert metadata_file_extension(None) == ".metadata.json"


def test_unknown_codec_rejected():
    md = table_metadata_from_bytes(_read(f"{AI}/TableMetadataV2Valid.json"))
    with pytest.raises(ValidationError, match="snappy"):
        table_metadata_to_bytes(md, codec="snappy")


def test_zstd_metadata_detected_by_magic_bytes():
    raw = _read("iceberg-go/table/testdata/TableMetadataV2Valid.zstd.metadata.json")
    assert raw[:4] == b"\x28\xb5\x2f\xfd"
    assert table_metadata_from_bytes(raw).format_version == 2


def test_properties_preserved_exactly():
    node = json.loads(_read(f"{AI}/TableMetadataV2Valid.json"))
    node["properties"] = {"z": "1", "a": "", "write.metadata.metrics.column.Weird Col": "full"}
    out = table_metadata_to_dict(table_metadata_from_dict(node))
    assert list(out["properties"].items()) == list(node["properties"].items())


def test_main_ref_must_match_current_snapshot():
    node = json.loads(_read(f"{AI}/TableMetadataV2Valid.json"))
    node["refs"] = {"main": {"snapshot-id": 3051729675574597004, "type": "branch"}}
    with pytest.raises(InvalidMetadataError, match="does not match main branch"):
        table_metadata_from_dict(node)


def test_ref_to_missing_snapshot_rejected():
    node = json.loads(_read(f"{AI}/TableMetadataV2Valid.json"))
    node["refs"] = {
        "main": {"snapshot-id": 3055729675574597004, "type": "branch"},
        "t": {"snapshot-id": 7, "type": "tag"},
    }
    with pytest.raises(InvalidMetadataError, match="'t' points at snapshot 7"):
        table_metadata_from_dict(node)


def test_snapshot_sequence_number_above_last_rejected():
    node = json.loads(_read(f"{AI}/TableMetadataV2Valid.json"))
    node["last-sequence-number"] = 0
    with pytest.raises(InvalidMetadataError, match="greater than last-sequence-number 0"):
        table_metadata_from_dict(node)


def test_missing_location_named():
    node = json.loads(_read(f"{AI}/TableMetadataV2Valid.json"))
    del node["location"]
    with pytest.raises(InvalidMetadataError, match="Cannot parse missing string: location"):
        table_metadata_from_dict(node)


def test_bad_uuid_named():
    node = json.loads(_read(f"{AI}/TableMetadataV2Valid.json"))
    node["table-uuid"] = "nope"
    with pytest.raises(InvalidMetadataError, match="table-uuid 'nope'"):
        table_metadata_from_dict(node)


NESTED = StructType(
    NestedField(1, "a", IntegerType()),
    NestedField(2, "b", ListType(3, StringType())),
    NestedField(4, "m", MapType(5, StringType(), 6, LongType())),
)


@pytest.mark.parametrize(
    "iceberg_type,json_value,floe_value",
    [
        (IntegerType(), 34, 34),
        (DecimalType(9, 2), "14.20", Decimal("14.20")),
        (DateType(), "2017-11-16", 17486),
        (TimeType(), "22:31:08.123456", 81068123456),
        (TimestampType(), "2017-11-16T22:31:08.000001", 1510871468000001),
        (TimestamptzType(), "2017-11-16T22:31:08.000001+00:00", 1510871468000001),
        (TimestampNanoType(), "2017-11-16T22:31:08.000000001", 1510871468000000001),
        (TimestamptzNanoType(), "2017-11-16T22:31:08.000000001+00:00", 1510871468000000001),
        (
            UUIDType(),
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        ),
        (FixedType(2), "00FF", b"\x00\xff"),
        (BinaryType(), "0102", b"\x01\x02"),
        (NESTED, {"1": 5, "2": ["x"], "4": {"keys": ["k"], "values": [7]}}, {1: 5, 2: ("x",), 4: {"k": 7}}),
    ],
)
def test_default_value_json_round_trip(iceberg_type, json_value, floe_value):
    assert default_from_json(iceberg_type, json_value) == floe_value
    assert default_to_json(iceberg_type, floe_value) == json_value


def test_default_value_with_offset_normalised_to_utc():
    assert default_from_json(TimestamptzType(), "2017-11-16T14:31:08-08:00") == 1510871468000000


def test_default_value_wrong_type_names_value_and_type():
    with pytest.raises(InvalidMetadataError, match="'abc' as int"):
        default_from_json(IntegerType(), "abc")


def test_nested_type_json_round_trip():
    assert type_from_json(type_to_json(NESTED)) == NESTED


def test_unknown_type_string_rejected():
    with pytest.raises(InvalidMetadataError, match="Cannot parse type from json"):
        type_from_json("varchar")
