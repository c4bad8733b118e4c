"""Iceberg <-> Arrow schemas with field ids, projection by field id and name mapping."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.errors import ValidationError
from floe.io.arrow_schema import FIELD_ID_KEY, arrow_to_schema, field_id_of, schema_to_arrow, type_to_arrow
from floe.io.name_mapping import NameMapping, apply_name_mapping, name_mapping_from_schema
from floe.io.projection import project_by_field_id
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
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
    UnknownType,
    UUIDType,
)

ALL_TYPES = Schema(
    NestedField(1, "b", BooleanType(), True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "l", LongType(), True, doc="a long"),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(38, 10)),
    NestedField(7, "date", DateType()),
    NestedField(8, "time", TimeType()),
    NestedField(9, "ts", TimestampType()),
    NestedField(10, "tstz", TimestamptzType()),
    NestedField(11, "ts_ns", TimestampNanoType()),
    NestedField(12, "tstz_ns", TimestamptzNanoType()),
    NestedField(13, "s", StringType()),
    NestedField(14, "u", UUIDType()),
    NestedField(15, "fx", FixedType(7)),
    NestedField(16, "bin", BinaryType()),
    NestedField(17, "unk", UnknownType()),
    NestedField(
        18,
        "st",
        StructType(NestedField(19, "x", DoubleType(), True), NestedField(20, "y", StringType())),
    ),
    NestedField(
        21, "lst", ListType(22, StructType(NestedField(23, "z", IntegerType())), element_required=False)
    ),
    NestedField(24, "mp", MapType(25, StringType(), 26, ListType(27, LongType()), value_required=False)),
)


def _all_ids(t: pa.DataType) -> list[int | None]:
    out: list[int | None] = []
    children: list[pa.Field] = []
    if pa.types.is_struct(t):
        children = [t.field(i) for i in range(t.num_fields)]
    elif pa.types.is_map(t):
        children = [t.key_field, t.item_field]
    elif pa.types.is_list(t):
        children = [t.value_field]
    for c in children:
        out.append(field_id_of(c))
        out += _all_ids(c.type)
    return out


def test_schema_to_arrow_every_type_has_expected_arrow_type() -> None:
    a = schema_to_arrow(ALL_TYPES)
    assert a.field("b").nullable is False
    assert a.field("i").nullable is True
    assert a.field("dec").type == pa.decimal128(38, 10)
    assert a.field("time").type == pa.time64("us")
    assert a.field("ts").type == pa.timestamp("us")
    assert a.field("tstz").type == pa.timestamp("us", tz="UTC")
    assert a.field("ts_ns").type == pa.timestamp("ns")
    assert a.field("tstz_ns").type == pa.timestamp("ns", tz="UTC")
    assert a.field("s").type == pa.string()
    assert a.field("u").type == pa.uuid()
    assert a.field("fx").type == pa.binary(7)
    assert a.field("unk").type == pa.null()
    assert a.field("l").metadata[b"doc"] == b"a long"


def test_schema_to_arrow_field_ids_on_every_nested_field() -> None:
    a = schema_to_arrow(ALL_TYPES)
    ids = [field_id_of(f) for f in a] + [i for f in a for i in _all_ids(f.type)]
    assert sorted(ids) == list(range(1, 28))  # type: ignore[type-var]


def test_arrow_round_trip_every_type_keeps_ids_and_types() -> None:
    assert arrow_to_schema(schema_to_arrow(ALL_TYPES)) == ALL_TYPES


def test_parquet_file_keeps_ids_on_list_elements_and_map_keys(tmp_path: Path) -> None:
    path = tmp_path / "all.parquet"
    pq.write_table(schema_to_arrow(ALL_TYPES).empty_table(), path)
    back = pq.read_schema(path)
    assert arrow_to_schema(back) == ALL_TYPES


def test_arrow_to_schema_without_ids_assigns_fresh_ids() -> None:
    a = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("tags", pa.list_(pa.large_string())),
            pa.field("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
            pa.field("attrs", pa.map_(pa.string(), pa.int16())),
        ]
    )
    s = arrow_to_schema(a)
    assert [f.field_id for f in s.fields] == [1, 2, 3, 4]
    assert s.find_field("id").required
    assert s.find_type("tags") == ListType(5, StringType(), False)
    assert s.find_type("point") == StructType(
        NestedField(6, "x", DoubleType()), NestedField(7, "y", DoubleType())
    )
    assert s.find_type("attrs") == MapType(8, StringType(), 9, IntegerType(), False)


def test_arrow_to_schema_partial_ids_raises() -> None:
    a = pa.schema([pa.field("a", pa.int32(), metadata={FIELD_ID_KEY: b"1"}), pa.field("b", pa.int32())])
    with pytest.raises(ValidationError, match="b"):
        arrow_to_schema(a)


# -- projection ----------------------------------------------------------------------------------------
V1 = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "count", IntegerType()),
    NestedField(3, "score", FloatType()),
    NestedField(4, "price", DecimalType(9, 2)),
    NestedField(
        5, "loc", StructType(NestedField(6, "lat", DoubleType()), NestedField(7, "lon", DoubleType()))
    ),
    NestedField(8, "tags", ListType(9, StringType(), False)),
    NestedField(10, "props", MapType(11, StringType(), 12, IntegerType(), False)),
    NestedField(13, "dropped", StringType()),
    NestedField(20, "day", DateType()),
)


def _v1_table() -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": 1,
                "count": 10,
                "score": 1.5,
                "price": Decimal("1.25"),
                "loc": {"lat": 1.0, "lon": 2.0},
                "tags": ["a", None],
                "props": [("k", 1)],
                "dropped": "x",
                "day": datetime.date(2024, 1, 2),
            },
            {
                "id": 2,
                "count": None,
                "score": None,
                "price": None,
                "loc": None,
                "tags": None,
                "props": None,
                "dropped": None,
                "day": None,
            },
        ],
        schema=schema_to_arrow(V1),
    )


def test_project_by_field_id_after_rename_reorder_drop_add_promote(tmp_path: Path) -> None:
    path = tmp_path / "v1.parquet"
    pq.write_table(_v1_table(), path, row_group_size=1)  # two row groups -> chunked columns
    v2 = Schema(
        NestedField(
            5,
            "position",
            StructType(NestedField(7, "longitude", DoubleType()), NestedField(14, "alt", LongType())),
        ),
        NestedField(2, "cnt", LongType()),  # renamed and promoted int -> long
        NestedField(1, "key", LongType(), True),
        NestedField(3, "score", DoubleType()),  # promoted float -> double
        NestedField(4, "price", DecimalType(18, 2)),  # wider decimal
        NestedField(8, "labels", ListType(9, StringType(), False)),
        NestedField(10, "props", MapType(11, StringType(), 12, LongType(), False)),
        NestedField(15, "added", StringType()),
        NestedField(16, "with_default", IntegerType(), True, initial_default=42),
        NestedField(20, "day", TimestampType()),  # v3 promotion date -> timestamp
    )
    out = project_by_field_id(pq.read_table(path), v2)
    assert out.schema == schema_to_arrow(v2)
    rows = out.to_pylist()
    assert rows[0] == {
        "position": {"longitude": 2.0, "alt": None},
        "cnt": 10,
        "key": 1,
        "score": 1.5,
        "price": Decimal("1.25"),
        "labels": ["a", None],
        "props": [("k", 1)],
        "added": None,
        "with_default": 42,
        "day": datetime.datetime(2024, 1, 2),
    }
    assert rows[1]["position"] is None
    assert rows[1]["cnt"] is None
    assert rows[1]["with_default"] == 42


def test_project_by_field_id_reused_name_matches_by_id_not_name() -> None:
    # "a" was renamed to "b" and a new column took the name "a": the file's "a" must land in "b"
    file_schema = Schema(NestedField(1, "a", StringType()))
    data = pa.Table.from_pylist([{"a": "old"}], schema=schema_to_arrow(file_schema))
    current = Schema(NestedField(1, "b", StringType()), NestedField(2, "a", StringType()))
    assert project_by_field_id(data, current).to_pylist() == [{"b": "old", "a": None}]


def test_project_by_field_id_missing_required_without_default_raises() -> None:
    data = pa.Table.from_pylist([{"a": 1}], schema=schema_to_arrow(Schema(NestedField(1, "a", LongType()))))
    with pytest.raises(ValidationError, match="'z'"):
        project_by_field_id(
            data, Schema(NestedField(1, "a", LongType()), NestedField(9, "z", LongType(), True))
        )


def test_project_by_field_id_sliced_lists_and_maps_keep_alignment() -> None:
    data = _v1_table().to_batches()[0]
    batch = pa.RecordBatch.from_pylist(_v1_table().to_pylist() * 2, schema=data.schema).slice(1, 2)
    out = project_by_field_id(batch, V1.select(["tags", "props", "loc"]))
    assert isinstance(out, pa.RecordBatch)
    assert out.to_pylist() == [
        {"loc": None, "tags": None, "props": None},
        {"loc": {"lat": 1.0, "lon": 2.0}, "tags": ["a", None], "props": [("k", 1)]},
    ]


def test_project_by_field_id_spark_style_file_without_element_ids() -> None:
    # Spark writes ids on top-level and struct fields only; list/map children are matched by position
    plain = pa.schema(
        [
            pa.field("t", pa.list_(pa.field("element", pa.string())), metadata={FIELD_ID_KEY: b"8"}),
            pa.field("p", pa.map_(pa.string(), pa.int32()), metadata={FIELD_ID_KEY: b"10"}),
        ]
    )
    data = pa.Table.from_pylist([{"t": ["x"], "p": [("k", 3)]}], schema=plain)
    out = project_by_field_id(data, V1.select(["tags", "props"]))
    assert out.to_pylist() == [{"tags": ["x"], "props": [("k", 3)]}]


def test_project_uuid_from_fixed_binary_storage() -> None:
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    data = pa.table({"u": pa.array([u.bytes], pa.binary(16))}).cast(
        pa.schema([pa.field("u", pa.binary(16), metadata={FIELD_ID_KEY: b"1"})])
    )
    out = project_by_field_id(data, Schema(NestedField(1, "u", UUIDType())))
    assert out.column("u").type == pa.uuid()
    assert out.column("u").to_pylist() == [u]


# -- name mapping ----------------------------------------------------------------------------------------
def test_name_mapping_json_round_trip() -> None:
    text = (
        '[{"field-id":1,"names":["id","record_id"]},'
        '{"field-id":2,"names":["loc"],"fields":[{"field-id":3,"names":["lat"]}]},'
        '{"names":["unmapped"]}]'
    )
    nm = NameMapping.from_json(text)
    assert nm.find("record_id").field_id == 1  # type: ignore[union-attr]
    assert nm.find("loc", "lat").field_id == 3  # type: ignore[union-attr]
    assert nm.find("unmapped").field_id is None  # type: ignore[union-attr]
    assert NameMapping.from_json(nm.to_json()) == nm
    with pytest.raises(ValidationError):
        NameMapping.from_json('{"not": "a list"}')


def test_project_with_name_mapping_file_without_ids(tmp_path: Path) -> None:
    path = tmp_path / "imported.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "record_id": 7,
                    "loc": {"lat": 1.5, "lon": 2.5},
                    "tags": ["a"],
                    "props": [("k", 1)],
                    "extra": "x",
                }
            ],
            schema=pa.schema(
                [
                    ("record_id", pa.int64()),
                    ("loc", pa.struct([("lat", pa.float64()), ("lon", pa.float64())])),
                    ("tags", pa.list_(pa.string())),
                    ("props", pa.map_(pa.string(), pa.int32())),
                    ("extra", pa.string()),
                ]
            ),
        ),
        path,
    )
    table = pq.read_table(path)
    with pytest.raises(ValidationError, match="name mapping"):
        project_by_field_id(table, V1)
    mapping = NameMapping.from_json(
        '[{"field-id":1,"names":["id","record_id"]},'
        '{"field-id":5,"names":["loc"],"fields":[{"field-id":6,"names":["lat"]},{"field-id":7,"names":["lon"]}]},'
        '{"field-id":8,"names":["tags"],"fields":[{"field-id":9,"names":["element"]}]},'
        '{"field-id":10,"names":["props"],"fields":[{"field-id":11,"names":["key"]},{"field-id":12,"names":["value"]}]}]'
    )
    mapped = apply_name_mapping(table.schema, mapping)
    assert field_id_of(mapped.field("record_id")) == 1
    assert field_id_of(mapped.field("extra")) is None
    out = project_by_field_id(table, V1.select(["id", "loc", "tags", "props", "count"]), name_mapping=mapping)
    assert out.to_pylist() == [
        {"id": 7, "count": None, "loc": {"lat": 1.5, "lon": 2.5}, "tags": ["a"], "props": [("k", 1)]}
    ]


def test_name_mapping_from_schema_maps_every_field() -> None:
    nm = name_mapping_from_schema(V1)
    assert nm.find("loc", "lon").field_id == 7  # type: ignore[union-attr]
    assert nm.find("tags", "element").field_id == 9  # type: ignore[union-attr]
    assert nm.find("props", "value").field_id == 12  # type: ignore[union-attr]


def test_type_to_arrow_decimal_and_fixed() -> None:
    assert type_to_arrow(DecimalType(9, 2)) == pa.decimal128(9, 2)
    assert type_to_arrow(FixedType(3)) == pa.binary(3)
