"""Manifest and manifest-list Avro: write -> read round trips, inheritance, summaries, schema field ids."""

from __future__ import annotations

import io
import json
import math
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pytest

from floe.errors import InvalidMetadataError, ValidationError
from floe.serde.avro_schemas import manifest_entry_schema, manifest_list_schema
from floe.serde.manifest_avro import (
    ManifestWriter,
    iter_manifest,
    read_manifest,
    read_manifest_header,
    read_manifest_list,
    write_manifest_list,
)
from floe.serde.single_value import decode_bounds, from_bytes, to_bytes
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from floe.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "price", DecimalType(9, 2)),
    NestedField(5, "key", UUIDType()),
    NestedField(6, "score", DoubleType()),
    NestedField(7, "d", DateType()),
    schema_id=3,
)
SPEC = (
    PartitionSpecBuilder(SCHEMA, spec_id=2)
    .identity("category")
    .day("ts")
    .bucket("id", 16)
    .identity("price")
    .identity("key")
    .identity("score")
    .identity("d")
    .build()
)
UNPARTITIONED = PartitionSpec(0)
K1 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")


def data_file(i: int, partition: tuple[Any, ...], **kw: Any) -> DataFile:
    args: dict[str, Any] = {
        "content": FileContent.DATA,
        "file_path": f"s3://bucket/t/data/f{i}.parquet",
        "file_format": FileFormat.PARQUET,
        "partition": partition,
        "record_count": 100 + i,
        "file_size_in_bytes": 4096 + i,
        "column_sizes": {1: 10 + i, 2: 20},
        "value_counts": {1: 100 + i, 2: 100 + i},
        "null_value_counts": {1: 0, 2: i},
        "nan_value_counts": {6: 0},
        "lower_bounds": {1: to_bytes(LongType(), -i), 2: b"a"},
        "upper_bounds": {1: to_bytes(LongType(), 1000 + i), 2: b"z"},
        "key_metadata": None,
        "split_offsets": (4,),
        "sort_order_id": 0,
        "spec_id": SPEC.spec_id,
    }
    args.update(kw)
    return DataFile(**args)


PARTS = [
    ("books", 19000, 3, Decimal("9.99"), K1, 1.5, 19001),
    (None, 19002, 0, Decimal("-1.00"), None, float("nan"), None),
    ("art", 18990, 15, Decimal("120.00"), K1, -2.0, 18000),
]


def write(
    entries: list[tuple[str, DataFile, dict[str, Any]]],
    *,
    format_version: int,
    spec: PartitionSpec = SPEC,
    content: ManifestContent = ManifestContent.DATA,
) -> tuple[bytes, ManifestFile]:
    out = io.BytesIO()
    with ManifestWriter(
        out,
        spec=spec,
        schema=SCHEMA,
        format_version=format_version,
        snapshot_id=77,
        content=content,
        manifest_path="s3://bucket/t/metadata/m0.avro",
    ) as writer:
        for kind, f, kw in entries:
            getattr(writer, kind)(f, **kw)
    return out.getvalue(), writer.close()


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_manifest_round_trip_preserves_data_files(format_version: int) -> None:
    files = [data_file(i, p) for i, p in enumerate(PARTS)]
    data, mf = write([("add", f, {}) for f in files], format_version=format_version)
    entries = read_manifest(data, manifest_file=mf.with_changes(sequence_number=5, min_sequence_number=5))
    assert len(entries) == 3
    for got, want in zip(entries, files):
        assert got.status == ManifestEntryStatus.ADDED
        assert got.snapshot_id == 77
        g, w = got.data_file, want
        for attr in DataFile.__slots__:
            gv, wv = getattr(g, attr), getattr(w, attr)
            if attr == "partition":
                assert len(gv) == len(wv)
                for a, b in zip(gv, wv):
                    assert (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b
                    assert a is None or type(a) is type(b)
            else:
                assert gv == wv, attr


def test_manifest_partition_values_use_floe_representation() -> None:
    data, _ = write([("add", data_file(0, PARTS[0]), {})], format_version=2)
    (entry,) = read_manifest(data)
    category, day, bucket, price, key, score, d = entry.data_file.partition
    assert (category, day, bucket, price, key, score, d) == PARTS[0]
    assert isinstance(day, int)
    assert isinstance(d, int)
    assert isinstance(price, Decimal)
    assert isinstance(key, uuid.UUID)


def test_manifest_v2_sequence_number_inheritance_only_for_added() -> None:
    entries = [
        ("add", data_file(0, PARTS[0]), {}),
        (
            "existing",
            data_file(1, PARTS[1]),
            {"snapshot_id": 5, "data_sequence_number": 2, "file_sequence_number": 3},
        ),
        ("delete", data_file(2, PARTS[2]), {"data_sequence_number": 1, "file_sequence_number": 1}),
    ]
    data, mf = write(entries, format_version=2)
    assert mf.sequence_number is None
    assert mf.min_sequence_number == 1
    listed = mf.with_changes(sequence_number=9, min_sequence_number=1)
    added, existing, deleted = read_manifest(data, manifest_file=listed)
    assert (added.sequence_number, added.file_sequence_number, added.snapshot_id) == (9, 9, 77)
    assert (existing.status, existing.snapshot_id) == (ManifestEntryStatus.EXISTING, 5)
    assert (existing.sequence_number, existing.file_sequence_number) == (2, 3)
    assert (deleted.status, deleted.sequence_number, deleted.snapshot_id) == (
        ManifestEntryStatus.DELETED,
        1,
        77,
    )
    # Without the manifest-list entry nothing is inherited.
    raw_added = read_manifest(data)[0]
    assert raw_added.sequence_number is None
    assert raw_added.file_sequence_number is None


def test_manifest_snapshot_id_inherited_when_null() -> None:
    entry = ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, data_file(0, PARTS[0]))
    out = io.BytesIO()
    writer = ManifestWriter(out, spec=SPEC, schema=SCHEMA, format_version=2, snapshot_id=77)
    writer.add_entry(entry)
    mf = writer.close().with_changes(sequence_number=4, added_snapshot_id=123)
    (got,) = read_manifest(out.getvalue(), manifest_file=mf)
    assert got.snapshot_id == 123


def test_manifest_counts_and_partition_summaries() -> None:
    entries = [
        ("add", data_file(0, PARTS[0]), {}),
        ("add", data_file(1, PARTS[1]), {}),
        (
            "existing",
            data_file(2, PARTS[2]),
            {"snapshot_id": 1, "data_sequence_number": 1, "file_sequence_number": 1},
        ),
    ]
    _, mf = write(entries, format_version=2)
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (2, 1, 0)
    assert (mf.added_rows_count, mf.existing_rows_count, mf.deleted_rows_count) == (201, 102, 0)
    assert mf.partition_spec_id == 2
    assert mf.content == ManifestContent.DATA
    assert mf.added_snapshot_id == 77
    assert mf.partitions is not None
    assert len(mf.partitions) == 7
    category, day, bucket, price, key, score, d = mf.partitions
    assert category == PartitionFieldSummary(True, False, b"art", b"books")
    assert (from_bytes(DateType(), day.lower_bound), from_bytes(DateType(), day.upper_bound)) == (
        18990,
        19002,
    )
    assert not day.contains_null
    assert (from_bytes(LongType(), bucket.lower_bound), bucket.upper_bound) == (
        0,
        to_bytes(LongType(), 15)[:4],
    )
    assert from_bytes(DecimalType(9, 2), price.lower_bound) == Decimal("-1.00")
    assert from_bytes(DecimalType(9, 2), price.upper_bound) == Decimal("120.00")
    assert key.contains_null
    assert key.lower_bound == K1.bytes
    assert score.contains_nan
    assert not score.contains_null
    assert (from_bytes(DoubleType(), score.lower_bound), from_bytes(DoubleType(), score.upper_bound)) == (
        -2.0,
        1.5,
    )
    assert d.contains_null
    assert from_bytes(DateType(), d.lower_bound) == 18000


def test_manifest_all_null_partition_field_has_no_bounds() -> None:
    _, mf = write([("add", data_file(0, (None,) * 7), {})], format_version=2)
    assert mf.partitions is not None
    assert all(s.contains_null and s.lower_bound is None and s.upper_bound is None for s in mf.partitions)


def test_delete_manifest_with_equality_ids_round_trip() -> None:
    eq = data_file(0, PARTS[0], content=FileContent.EQUALITY_DELETES, equality_ids=(1, 2), sort_order_id=None)
    pos = data_file(
        1,
        PARTS[1],
        content=FileContent.POSITION_DELETES,
        referenced_data_file="s3://bucket/t/data/f0.parquet",
        sort_order_id=None,
    )
    data, mf = write([("add", eq, {}), ("add", pos, {})], format_version=2, content=ManifestContent.DELETES)
    assert mf.content == ManifestContent.DELETES
    assert read_manifest_header(data)["content"] == "deletes"
    got_eq, got_pos = read_manifest(data, manifest_file=mf.with_changes(sequence_number=3))
    assert got_eq.data_file.content == FileContent.EQUALITY_DELETES
    assert got_eq.data_file.equality_ids == (1, 2)
    assert got_pos.data_file.content == FileContent.POSITION_DELETES
    assert got_pos.data_file.referenced_data_file == "s3://bucket/t/data/f0.parquet"
    assert got_pos.sequence_number == 3


def test_delete_file_in_data_manifest_rejected() -> None:
    eq = data_file(0, PARTS[0], content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    with pytest.raises(ValidationError, match="EQUALITY_DELETES"):
        write([("add", eq, {})], format_version=2)


def test_delete_manifest_in_v1_rejected() -> None:
    with pytest.raises(ValidationError, match="v1"):
        ManifestWriter(
            io.BytesIO(),
            spec=SPEC,
            schema=SCHEMA,
            format_version=1,
            snapshot_id=1,
            content=ManifestContent.DELETES,
        )


def test_v3_first_row_id_inherited_in_file_order() -> None:
    files = [data_file(i, PARTS[i]) for i in range(3)]
    data, mf = write([("add", f, {}) for f in files], format_version=3)
    entries = read_manifest(data, manifest_file=mf.with_changes(sequence_number=2, first_row_id=1000))
    assert [e.data_file.first_row_id for e in entries] == [1000, 1100, 1201]


def test_cached_entry_builder_binds_each_manifests_inherited_values() -> None:
    from floe.serde.manifest_avro import _entry_builder_factory

    files = [data_file(0, PARTS[0]), data_file(1, PARTS[2])]  # no NaN partition: entries compare equal
    data, mf = write([("add", f, {}) for f in files], format_version=3)
    first = mf.with_changes(sequence_number=2, first_row_id=1000)
    second = mf.with_changes(sequence_number=5, first_row_id=50)
    hits = _entry_builder_factory.cache_info().hits
    a = read_manifest(data, manifest_file=first, partition_spec=SPEC, schema=SCHEMA)
    b = read_manifest(data, manifest_file=second, partition_spec=SPEC, schema=SCHEMA)
    again = read_manifest(data, manifest_file=first, partition_spec=SPEC, schema=SCHEMA)
    assert _entry_builder_factory.cache_info().hits >= hits + 2  # the generated code is reused
    assert [(e.sequence_number, e.file_sequence_number, e.data_file.first_row_id) for e in a] == [
        (2, 2, 1000),
        (2, 2, 1100),
    ]
    assert [(e.sequence_number, e.file_sequence_number, e.data_file.first_row_id) for e in b] == [
        (5, 5, 50),
        (5, 5, 150),
    ]
    assert again == a


def test_not_a_manifest_error_names_each_file() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long", "field-id": 1}]}
    for name in ("first.avro", "second.avro"):  # the second hits the cache and must still name its file
        out = io.BytesIO()
        fastavro.writer(out, schema, [{"x": 1}])
        fo = io.BytesIO(out.getvalue())
        fo.name = name  # type: ignore[attr-defined]
        with pytest.raises(InvalidMetadataError, match=f"^{name} is not a manifest"):
            read_manifest(fo)


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2"])  # bzip2: handed to fastavro
def test_read_container_blocks_and_metadata_match_fastavro(codec: str) -> None:
    from floe.serde.avro_decoder import read_container

    schema = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]}
    out = io.BytesIO()
    fastavro.writer(out, schema, [{"x": i} for i in range(3000)], codec=codec, sync_interval=500)
    data = out.getvalue()
    expected = fastavro.block_reader(io.BytesIO(data))
    metadata, blocks = read_container(io.BytesIO(data))
    assert metadata == {k: v.decode() if isinstance(v, bytes) else v for k, v in expected.metadata.items()}
    got = list(blocks)
    assert len(got) > 2
    assert got == [(b.bytes_.getvalue(), b.num_records) for b in expected]
    if codec != "bzip2":  # the framing read here checks every block's sync marker
        flipped = data[:-16] + bytes(b ^ 0xFF for b in data[-16:])
        with pytest.raises(ValueError, match="sync marker"):
            list(read_container(io.BytesIO(flipped))[1])


def test_manifest_header_has_spec_keys_and_field_ids() -> None:
    data, _ = write([("add", data_file(0, PARTS[0]), {})], format_version=2)
    header = read_manifest_header(data)
    assert json.loads(header["schema"])["schema-id"] == 3
    assert header["schema-id"] == "3"
    assert header["partition-spec-id"] == "2"
    assert header["format-version"] == "2"
    assert header["content"] == "data"
    spec_json = json.loads(header["partition-spec"])
    assert [f["field-id"] for f in spec_json] == [1000, 1001, 1002, 1003, 1004, 1005, 1006]
    assert spec_json[1]["transform"] == "day"
    avro = json.loads(header["avro.schema"])
    assert avro["name"] == "manifest_entry"
    assert {f["name"]: f["field-id"] for f in avro["fields"]} == {
        "status": 0,
        "snapshot_id": 1,
        "sequence_number": 3,
        "file_sequence_number": 4,
        "data_file": 2,
    }
    df = avro["fields"][-1]["type"]
    assert df["name"] == "r2"
    ids = {f["name"]: f["field-id"] for f in df["fields"]}
    assert ids["partition"] == 102
    assert ids["column_sizes"] == 108
    assert ids["lower_bounds"] == 125
    by_name = {f["name"]: f for f in df["fields"]}
    sizes = by_name["column_sizes"]["type"][1]
    assert sizes["logicalType"] == "map"
    assert sizes["items"]["name"] == "k117_v118"
    assert [f["field-id"] for f in sizes["items"]["fields"]] == [117, 118]
    assert by_name["split_offsets"]["type"][1]["element-id"] == 133
    assert by_name["equality_ids"]["type"][1]["element-id"] == 136
    partition = by_name["partition"]["type"]
    assert partition["name"] == "r102"
    assert [f["field-id"] for f in partition["fields"]] == [1000, 1001, 1002, 1003, 1004, 1005, 1006]
    day_type = partition["fields"][1]["type"][1]
    assert day_type == {"type": "int", "logicalType": "date"}
    price_type = partition["fields"][3]["type"][1]
    assert price_type["logicalType"] == "decimal"
    assert price_type["size"] == 4


def test_schemas_carry_field_ids_everywhere() -> None:
    def check(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "record":
                for f in node["fields"]:
                    assert "field-id" in f, f
                    check(f["type"])
            elif node.get("type") == "array":
                items = node["items"]
                assert "element-id" in node or (isinstance(items, dict) and items.get("type") == "record")
                check(items)
        elif isinstance(node, list):
            for n in node:
                check(n)

    for v in (1, 2, 3):
        check(manifest_entry_schema(v, SPEC.partition_type(SCHEMA)))
        check(manifest_list_schema(v))


def test_iter_manifest_streams_same_entries_as_read() -> None:
    data, mf = write([("add", data_file(i, PARTS[i % 3]), {}) for i in range(50)], format_version=2)
    listed = mf.with_changes(sequence_number=1, min_sequence_number=1)
    streamed = list(iter_manifest(io.BytesIO(data), manifest_file=listed))
    assert repr(streamed) == repr(read_manifest(data, manifest_file=listed))  # repr: NaN partitions
    assert len(streamed) == 50


def test_manifest_without_header_keys_uses_caller_spec() -> None:
    # Class B fixtures: Avro files re-written by another tool keep the Avro schema but lose Iceberg's
    # header keys; spec order and types then come from table metadata.
    data, _ = write([("add", data_file(0, PARTS[0]), {})], format_version=2)
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    bare = io.BytesIO()
    fastavro.writer(bare, fastavro.parse_schema(json.loads(reader.metadata["avro.schema"])), records)
    header = read_manifest_header(bare.getvalue())
    assert "partition-spec-id" not in header
    assert "schema" not in header
    (entry,) = read_manifest(bare.getvalue(), partition_spec=SPEC, schema=SCHEMA)
    assert entry.data_file.spec_id == 2
    assert entry.data_file.partition == PARTS[0]


def test_manifest_partition_ordered_by_caller_spec_field_ids() -> None:
    spec = PartitionSpecBuilder(SCHEMA, spec_id=1).identity("category").bucket("id", 4).build()
    data, _ = write([("add", data_file(0, ("x", 2)), {})], format_version=2, spec=spec)
    reversed_spec = PartitionSpec(1, tuple(reversed(spec.fields)))
    (entry,) = read_manifest(data, partition_spec=reversed_spec, schema=SCHEMA)
    assert entry.data_file.partition == (2, "x")


def test_unpartitioned_manifest_has_empty_partition() -> None:
    data, mf = write([("add", data_file(0, ()), {})], format_version=2, spec=UNPARTITIONED)
    assert read_manifest(data)[0].data_file.partition == ()
    assert mf.partitions == ()


def test_partition_tuple_length_mismatch_rejected() -> None:
    with pytest.raises(ValidationError, match="partition tuple"):
        write([("add", data_file(0, ("x",)), {})], format_version=2)


def test_corrupt_manifest_raises_invalid_metadata() -> None:
    with pytest.raises(InvalidMetadataError):
        read_manifest(b"not an avro file")
    data, _ = write([("add", data_file(0, PARTS[0]), {})], format_version=2)
    with pytest.raises(InvalidMetadataError):
        read_manifest(data[: len(data) // 2] + b"\x00" * 8)


def test_bound_values_decoded_with_schema() -> None:
    data, _ = write([("add", data_file(4, PARTS[0]), {})], format_version=2)
    f = read_manifest(data)[0].data_file
    assert decode_bounds(f.lower_bounds, SCHEMA) == {1: -4, 2: "a"}
    assert decode_bounds(f.upper_bounds, SCHEMA) == {1: 1004, 2: "z"}
    assert decode_bounds(f.lower_bounds, Schema(NestedField(2, "category", StringType()))) == {2: "a"}


# -- manifest lists -----------------------------------------------------------------------------------
def _manifest(path: str, content: ManifestContent, seq: int | None, **kw: Any) -> ManifestFile:
    args: dict[str, Any] = {
        "manifest_path": path,
        "manifest_length": 1234,
        "partition_spec_id": 0,
        "content": content,
        "sequence_number": seq,
        "min_sequence_number": seq,
        "added_snapshot_id": 10,
        "added_files_count": 2,
        "existing_files_count": 1,
        "deleted_files_count": 0,
        "added_rows_count": 200,
        "existing_rows_count": 50,
        "deleted_rows_count": 0,
        "partitions": (PartitionFieldSummary(False, False, b"a", b"z"),),
    }
    args.update(kw)
    return ManifestFile(**args)


@pytest.mark.parametrize("format_version", [2, 3])
def test_manifest_list_round_trip_assigns_sequence_numbers(format_version: int) -> None:
    manifests = [
        _manifest("m-new.avro", ManifestContent.DATA, None),
        _manifest("m-old.avro", ManifestContent.DATA, 3, first_row_id=0),
        _manifest("d-new.avro", ManifestContent.DELETES, None),
    ]
    out = io.BytesIO()
    written = write_manifest_list(
        out,
        manifests,
        format_version=format_version,
        snapshot_id=10,
        parent_snapshot_id=9,
        sequence_number=4,
        first_row_id=500 if format_version == 3 else None,
    )
    got = read_manifest_list(out.getvalue())
    assert got == written
    assert [m.sequence_number for m in got] == [4, 3, 4]
    assert [m.min_sequence_number for m in got] == [4, 3, 4]
    assert [m.content for m in got] == [ManifestContent.DATA, ManifestContent.DATA, ManifestContent.DELETES]
    assert got[0].partitions == (PartitionFieldSummary(False, False, b"a", b"z"),)
    header = read_manifest_header(out.getvalue())
    assert (header["snapshot-id"], header["parent-snapshot-id"], header["sequence-number"]) == (
        "10",
        "9",
        "4",
    )
    if format_version == 3:
        assert [m.first_row_id for m in got] == [500, 0, None]
        assert header["first-row-id"] == "500"


def test_manifest_list_v1_reads_zero_sequence_numbers() -> None:
    out = io.BytesIO()
    write_manifest_list(
        out,
        [_manifest("m.avro", ManifestContent.DATA, None)],
        format_version=1,
        snapshot_id=10,
        parent_snapshot_id=None,
        sequence_number=0,
    )
    (m,) = read_manifest_list(out.getvalue())
    assert (m.sequence_number, m.min_sequence_number, m.content) == (0, 0, ManifestContent.DATA)
    assert m.added_files_count == 2
    assert m.manifest_length == 1234
    assert read_manifest_header(out.getvalue())["parent-snapshot-id"] == "null"


def test_manifest_list_v1_rejects_delete_manifests() -> None:
    with pytest.raises(ValidationError, match="delete manifest"):
        write_manifest_list(
            io.BytesIO(),
            [_manifest("d.avro", ManifestContent.DELETES, None)],
            format_version=1,
            snapshot_id=1,
            parent_snapshot_id=None,
            sequence_number=0,
        )


def test_manifest_list_v3_requires_first_row_id() -> None:
    with pytest.raises(ValidationError, match="first-row-id"):
        write_manifest_list(
            io.BytesIO(), [], format_version=3, snapshot_id=1, parent_snapshot_id=None, sequence_number=1
        )


def test_manifest_list_schema_ids() -> None:
    fields = {f["name"]: f["field-id"] for f in manifest_list_schema(2)["fields"]}
    assert fields["manifest_path"] == 500
    assert fields["content"] == 517
    assert fields["sequence_number"] == 515
    assert fields["partitions"] == 507
    assert fields["key_metadata"] == 519
    assert "first_row_id" not in fields
    assert {f["name"]: f["field-id"] for f in manifest_list_schema(3)["fields"]}["first_row_id"] == 520


def test_manifest_list_null_and_deflate_codecs() -> None:
    for codec in ("null", "deflate"):
        out = io.BytesIO()
        write_manifest_list(
            out,
            [_manifest("m.avro", ManifestContent.DATA, 1)],
            format_version=2,
            snapshot_id=1,
            parent_snapshot_id=None,
            sequence_number=1,
            compression=codec,
        )
        assert read_manifest_list(out.getvalue())[0].manifest_path == "m.avro"


def test_read_manifest_stats_columns_empty_leaves_metrics_unloaded() -> None:
    data, mf = write([("add", data_file(i, PARTS[i % 3]), {}) for i in range(20)], format_version=2)
    listed = mf.with_changes(sequence_number=1, min_sequence_number=1)
    full = read_manifest(data, manifest_file=listed)
    light = read_manifest(data, manifest_file=listed, stats_columns=())
    maps = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")
    for f, g in zip(full, light):
        assert all(getattr(g.data_file, m) is None for m in maps)
        assert repr(g.with_changes(data_file=f.data_file)) == repr(f)  # repr: NaN partitions
        assert repr(g.data_file.with_changes(**{m: getattr(f.data_file, m) for m in maps})) == repr(f.data_file)


def test_read_manifest_stats_columns_keeps_listed_columns_only() -> None:
    data, mf = write([("add", data_file(i, PARTS[i % 3]), {}) for i in range(5)], format_version=2)
    for e in read_manifest(data, manifest_file=mf, stats_columns={2}):
        f = e.data_file
        assert f.value_counts is not None
        assert set(f.value_counts) == {2}
        assert f.lower_bounds == {2: b"a"}
        assert f.upper_bounds == {2: b"z"}
        assert f.nan_value_counts == {}
