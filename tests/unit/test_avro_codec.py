"""Floe's schema-compiled Avro decoder/encoder agree with fastavro (the reference codec).

Every decoder test runs twice: with the C decoder (when the install compiled it) and with the Python readers
(an install without a C compiler)."""

from __future__ import annotations

import io
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pytest

from floe.errors import UnsupportedError
from floe.serde import avro_decoder
from floe.serde.avro_decoder import compile_reader, iter_records, native_available, read_container
from floe.serde.avro_encoder import ContainerWriter

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "s", "type": ["null", "string"]},
        {"name": "s2", "type": ["string", "null"]},
        {"name": "b", "type": "bytes"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "flag", "type": "boolean"},
        {"name": "fx", "type": {"type": "fixed", "name": "f4", "size": 4}},
        {"name": "fx2", "type": ["null", "f4"]},
        {"name": "arr", "type": ["null", {"type": "array", "items": "long"}]},
        {
            "name": "counts",
            "type": [
                "null",
                {
                    "type": "array",
                    "logicalType": "map",
                    "items": {
                        "type": "record",
                        "name": "k1_v2",
                        "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "long"}],
                    },
                },
            ],
        },
        {
            "name": "bounds",
            "type": {
                "type": "array",
                "logicalType": "map",
                "items": {
                    "type": "record",
                    "name": "k3_v4",
                    "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}],
                },
            },
        },
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {
            "name": "nested",
            "type": {"type": "record", "name": "n", "fields": [{"name": "x", "type": "long"}]},
        },
    ],
}

@pytest.fixture(params=["native", "python"], autouse=True)
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "native" and not native_available():
        pytest.skip("the C decoder was not compiled in this install")
    if request.param == "python":
        monkeypatch.setattr(avro_decoder, "_native", None)
    return str(request.param)


EDGE_LONGS = [0, 1, -1, 63, 64, -64, -65, 8191, 8192, 2**20, 2**21, 2**27, -(2**40), 2**63 - 1, -(2**63)]


def _record(i: int) -> dict[str, Any]:
    big = EDGE_LONGS[i % len(EDGE_LONGS)]
    return {
        "i": (-1) ** i * i * 1000,
        "l": big,
        "s": None if i % 3 == 0 else f"s{i}é",
        "s2": None if i % 2 else "x" * (i % 200),
        "b": bytes(range(i % 256)),
        "f": 1.5,
        "d": -2.25e10,
        "flag": bool(i % 2),
        "fx": b"\x00\x01\x02\x03",
        "fx2": None if i % 2 else b"abcd",
        "arr": None if i % 5 == 0 else [big, i, -i],
        "counts": None if i % 7 == 0 else [{"key": k, "value": (big >> 1) + k} for k in range(1, i % 12)],
        "bounds": [{"key": k, "value": bytes([k]) * (k * 7)} for k in range(i % 15)],
        "m": {"a": big, "bb": i},
        "nested": {"x": -big if big > -(2**63) else 0},
    }


def _normalise(rec: dict[str, Any]) -> dict[str, Any]:
    out = dict(rec)
    out["counts"] = None if rec["counts"] is None else {kv["key"]: kv["value"] for kv in rec["counts"]}
    out["bounds"] = {kv["key"]: kv["value"] for kv in rec["bounds"]}
    return out


RECORDS = [_record(i) for i in range(300)]


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_decoder_reads_fastavro_files(codec: str) -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), RECORDS, codec=codec, sync_interval=2000)
    buf.seek(0)
    metadata, blocks = read_container(buf)
    read = compile_reader(SCHEMA)
    got = [r for block, count in blocks for r in iter_records(read, block, count)]
    assert len(got) == len(RECORDS)
    for g, want in zip(got, RECORDS):
        assert g == _normalise(want)
    assert metadata["avro.codec"] == codec


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_encoder_files_read_by_fastavro(codec: str) -> None:
    buf = io.BytesIO()
    writer = ContainerWriter(buf, SCHEMA, metadata={"k": "v"}, codec=codec)
    for i, rec in enumerate(RECORDS):
        # dict-form maps (what Floe passes) and k/v-record lists must encode the same way
        writer.write(_normalise(rec) if i % 2 else rec)
    writer.flush()
    buf.seek(0)
    reader = fastavro.reader(buf)
    assert reader.metadata["k"] == "v"
    assert list(reader) == RECORDS


def test_decoder_handles_negative_block_counts() -> None:
    # Writers may emit array blocks as (-count, byte size); Java does not, other tools can.
    schema = {"type": "array", "items": "long"}
    read = compile_reader(schema)
    data = bytes([3, 4, 2, 4]) + bytes([0])  # count -2 (zig-zag 3), size 2, items 1 and 2, end
    assert read(data, 0) == ([1, 2], 5)


def test_decoder_logical_types_use_floe_representation() -> None:
    schema = {
        "type": "record",
        "name": "p",
        "fields": [
            {"name": "d", "type": {"type": "int", "logicalType": "date"}},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {
                "name": "dec",
                "type": {
                    "type": "fixed",
                    "name": "d9",
                    "size": 4,
                    "logicalType": "decimal",
                    "precision": 9,
                    "scale": 2,
                },
            },
            {"name": "u", "type": {"type": "fixed", "name": "u16", "size": 16, "logicalType": "uuid"}},
        ],
    }
    key = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    buf = io.BytesIO()
    fastavro.writer(
        buf, fastavro.parse_schema(schema), [{"d": 19000, "ts": -5, "dec": Decimal("-1.50"), "u": key.bytes}]
    )
    buf.seek(0)
    _, blocks = read_container(buf)
    block, count = next(blocks)
    (rec,) = list(iter_records(compile_reader(schema), block, count))
    assert rec == {"d": 19000, "ts": -5, "dec": Decimal("-1.50"), "u": key}


def test_encoder_rejects_general_unions() -> None:
    with pytest.raises(UnsupportedError, match="union"):
        ContainerWriter(
            io.BytesIO(),
            {"type": "record", "name": "x", "fields": [{"name": "a", "type": ["int", "string"]}]},
            metadata={},
        )


def test_encoder_rejects_unsupported_codec() -> None:
    with pytest.raises(UnsupportedError, match="codec"):
        ContainerWriter(io.BytesIO(), SCHEMA, metadata={}, codec="snappy")


def _with_field_ids(schema: dict[str, Any]) -> dict[str, Any]:
    """SCHEMA with field ids 1..n on its top-level fields (projections address fields by id)."""
    return {**schema, "fields": [{**f, "field-id": i} for i, f in enumerate(schema["fields"], start=1)]}


@pytest.mark.parametrize("codec", ["null", "deflate"])
@pytest.mark.parametrize("skipped", range(1, len(SCHEMA["fields"]) + 1))
def test_decoder_projection_skips_one_field_others_unchanged(codec: str, skipped: int) -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), RECORDS, codec=codec, sync_interval=2000)
    buf.seek(0)
    _, blocks = read_container(buf)
    schema = _with_field_ids(SCHEMA)
    name = schema["fields"][skipped - 1]["name"]
    read = compile_reader(schema, projection={skipped: None})
    got = [r for block, count in blocks for r in iter_records(read, block, count)]
    assert len(got) == len(RECORDS)
    for g, want in zip(got, RECORDS):
        assert g == {**_normalise(want), name: None}


def test_decoder_projection_keeps_only_listed_map_keys() -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), RECORDS, codec="null")
    buf.seek(0)
    _, blocks = read_container(buf)
    schema = _with_field_ids(SCHEMA)
    counts_id = next(i for i, f in enumerate(SCHEMA["fields"], 1) if f["name"] == "counts")
    bounds_id = next(i for i, f in enumerate(SCHEMA["fields"], 1) if f["name"] == "bounds")
    read = compile_reader(schema, projection={counts_id: frozenset({2, 5}), bounds_id: frozenset({3})})
    got = [r for block, count in blocks for r in iter_records(read, block, count)]
    for g, want in zip(got, RECORDS):
        full = _normalise(want)
        counts = None if full["counts"] is None else {k: v for k, v in full["counts"].items() if k in (2, 5)}
        assert g == {**full, "counts": counts, "bounds": {k: v for k, v in full["bounds"].items() if k == 3}}


def test_decoder_projection_skips_negative_count_blocks() -> None:
    # Blocks written as (-count, byte size): skipping jumps over them by size.
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": {"type": "array", "items": "long"}, "field-id": 1},
            {"name": "s", "type": {"type": "array", "items": "string"}, "field-id": 2},
            {"name": "z", "type": "long", "field-id": 3},
        ],
    }
    # count -3 (zig-zag 0x05), byte size 3, items 1 2 3, end; strings: count -1, size 2, "a"; end; z = 7
    longs = bytes([0x05, 0x06, 0x02, 0x04, 0x06, 0x00])
    strings = bytes([0x01, 0x04, 0x02, ord("a"), 0x00])
    data = longs + strings + bytes([0x0E])
    assert compile_reader(schema)(data, 0) == ({"a": [1, 2, 3], "s": ["a"], "z": 7}, len(data))
    skip_both = compile_reader(schema, projection={1: None, 2: None})
    assert skip_both(data, 0) == ({"a": None, "s": None, "z": 7}, len(data))
