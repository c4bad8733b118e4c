"""The spec's every primitive and nested type in one schema, and a row of each plus a row of nulls as Arrow
(shared by the data source and the write-path tests)."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable

import pyarrow as pa

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
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

U1 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
U2 = uuid.UUID("8dc314d8-3fd4-4a42-9a5d-1f2e3d4c5b6a")
TS = dt.datetime(2017, 11, 16, 22, 31, 8, 1)
TSTZ = dt.datetime(2017, 11, 16, 22, 31, 8, 1, tzinfo=dt.timezone.utc)

ALL_TYPES = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "b", BooleanType(), False),
    NestedField(3, "i", IntegerType(), False),
    NestedField(4, "l", LongType(), False),
    NestedField(5, "f", FloatType(), False),
    NestedField(6, "d", DoubleType(), False),
    NestedField(7, "dec", DecimalType(9, 2), False),
    NestedField(8, "dt", DateType(), False),
    NestedField(9, "tm", TimeType(), False),
    NestedField(10, "ts", TimestampType(), False),
    NestedField(11, "tstz", TimestamptzType(), False),
    NestedField(12, "s", StringType(), False),
    NestedField(13, "u", UUIDType(), False),
    NestedField(14, "fx", FixedType(4), False),
    NestedField(15, "bin", BinaryType(), False),
    NestedField(
        16,
        "st",
        StructType(
            NestedField(20, "x", IntegerType(), False),
            NestedField(21, "at", TimestamptzType(), False),
            NestedField(22, "uid", UUIDType(), False),
        ),
        False,
    ),
    NestedField(17, "lst", ListType(23, TimestamptzType(), False), False),
    NestedField(18, "mp", MapType(24, StringType(), 25, UUIDType(), False), False),
    NestedField(19, "lu", ListType(26, UUIDType(), False), False),
)

ROW = {
    "id": 1,
    "b": True,
    "i": 7,
    "l": 1 << 40,
    "f": 1.5,
    "d": 2.25,
    "dec": decimal.Decimal("14.20"),
    "dt": dt.date(2017, 11, 16),
    "tm": dt.time(22, 31, 8, 5),
    "ts": TS,
    "tstz": TSTZ,
    "s": "iceberg",
    "u": U1,
    "fx": b"\x00\x01\x02\x03",
    "bin": b"\xff\x00",
    "st": {"x": 3, "at": TSTZ, "uid": U2},
    "lst": [TSTZ, None],
    "mp": [("k", U1)],
    "lu": [U2],
}
NULLS = {"id": 2, **{k: None for k in ROW if k != "id"}}


def build_rows(target: pa.Schema) -> pa.Table:
    def conv(v: object) -> object:
        if isinstance(v, uuid.UUID):
            return v.bytes
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        return v

    def storage(t: pa.DataType) -> pa.DataType:
        # pa.array cannot build nested extension (uuid) values from Python objects: build the storage
        # type (fixed_size_binary(16)) and cast.
        if isinstance(t, pa.BaseExtensionType):
            return t.storage_type
        return _retype(t, storage)

    def plain(t: pa.DataType) -> pa.DataType:
        # Same type without field-id metadata: the writer matches columns by name.
        return t if isinstance(t, pa.BaseExtensionType) else _retype(t, plain)

    target = pa.schema([pa.field(f.name, plain(f.type), f.nullable) for f in target])
    arrays = [pa.array([conv(ROW[f.name]), conv(NULLS[f.name])], type=storage(f.type)) for f in target]
    return pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, target)], schema=target)


def _retype(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``fn`` applied to its children (metadata dropped)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, fn(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, fn(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(
            pa.field(t.key_field.name, fn(t.key_type), False),
            pa.field(t.item_field.name, fn(t.item_type), t.item_field.nullable),
        )
    return t
