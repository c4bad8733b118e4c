"""Partition transforms: spec vectors (Appendix B, truncate table), scalar and vectorized, plus type rules."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.errors import UnsupportedError, ValidationError
from floe.spec.partitioning import url_encode
from floe.spec.transforms._calendar import civil_from_days, days_from_civil
from floe.spec.transforms._murmur import murmur3_binary_array, murmur3_longs, murmur3_rows
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    VariantType,
)
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    hash_value,
    parse_transform,
)

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
MAX_BUCKETS = 2**31 - 1  # bucket[MAX] of a non-negative hash is the masked hash itself


def days(d: dt.date) -> int:
    return (d - EPOCH_DATE).days


def micros(t: dt.datetime) -> int:
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = t - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


TS = micros(dt.datetime(2017, 11, 16, 22, 31, 8))
TS1 = micros(dt.datetime(2017, 11, 16, 22, 31, 8, 1))
TSTZ = micros(dt.datetime(2017, 11, 16, 14, 31, 8, tzinfo=dt.timezone(dt.timedelta(hours=-8))))

# (type, Floe value, Arrow array holding that value, expected spec hash)
HASH_VECTORS: list[tuple[IcebergType, Any, pa.Array, int]] = [
    (IntegerType(), 34, pa.array([34], pa.int32()), 2017239379),
    (LongType(), 34, pa.array([34], pa.int64()), 2017239379),
    (DecimalType(4, 2), Decimal("14.20"), pa.array([Decimal("14.20")], pa.decimal128(4, 2)), -500754589),
    (DateType(), days(dt.date(2017, 11, 16)), pa.array([dt.date(2017, 11, 16)], pa.date32()), -653330422),
    (
        TimeType(),
        (22 * 3600 + 31 * 60 + 8) * 10**6,
        pa.array([dt.time(22, 31, 8)], pa.time64("us")),
        -662762989,
    ),
    (TimestampType(), TS, pa.array([TS], pa.timestamp("us")), -2047944441),
    (TimestampType(), TS1, pa.array([TS1], pa.timestamp("us")), -1207196810),
    (TimestamptzType(), TSTZ, pa.array([TSTZ], pa.timestamp("us", "UTC")), -2047944441),
    (TimestampNanoType(), TS * 1000, pa.array([TS * 1000], pa.timestamp("ns")), -2047944441),
    (TimestampNanoType(), TS1 * 1000 + 1, pa.array([TS1 * 1000 + 1], pa.timestamp("ns")), -1207196810),
    (
        TimestamptzNanoType(),
        TS1 * 1000 + 1,
        pa.array([TS1 * 1000 + 1], pa.timestamp("ns", "UTC")),
        -1207196810,
    ),
    (StringType(), "iceberg", pa.array(["iceberg"]), 1210000089),
    (
        UUIDType(),
        uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        pa.array([uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes], pa.binary(16)),
        1488055340,
    ),
    (FixedType(4), b"\x00\x01\x02\x03", pa.array([b"\x00\x01\x02\x03"], pa.binary(4)), -188683207),
    (BinaryType(), b"\x00\x01\x02\x03", pa.array([b"\x00\x01\x02\x03"], pa.binary()), -188683207),
]


@pytest.mark.parametrize(
    ("source_type", "value", "arrow", "expected"), HASH_VECTORS, ids=lambda x: str(x)[:20]
)
def test_hash_value_spec_vector_matches(
    source_type: IcebergType, value: Any, arrow: pa.Array, expected: int
) -> None:
    assert hash_value(source_type, value) == expected


@pytest.mark.parametrize(
    ("source_type", "value", "arrow", "expected"), HASH_VECTORS, ids=lambda x: str(x)[:20]
)
def test_bucket_spec_vector_scalar_and_arrow_agree(
    source_type: IcebergType, value: Any, arrow: pa.Array, expected: int
) -> None:
    for n in (MAX_BUCKETS, 16, 1):
        want = (expected & 0x7FFFFFFF) % n
        t = BucketTransform(n)
        assert t.apply(source_type, value) == want
        got = t.apply_arrow(source_type, pa.chunked_array([arrow, pa.nulls(1, arrow.type)]))
        assert got.type == pa.int32()
        assert got.to_pylist() == [want, None]


def test_bucket_uuid_extension_array_hashes_storage() -> None:
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    arr = pa.array([u.bytes, None], pa.uuid())
    assert BucketTransform(MAX_BUCKETS).apply_arrow(UUIDType(), arr).to_pylist() == [1488055340, None]


def test_bucket_int_and_long_agree_for_promotion() -> None:
    values = [0, 1, -1, 34, 2**31 - 1, -(2**31)]
    t = BucketTransform(1000)
    assert [t.apply(IntegerType(), v) for v in values] == [t.apply(LongType(), v) for v in values]
    ints = t.apply_arrow(IntegerType(), pa.array(values, pa.int32())).to_pylist()
    longs = t.apply_arrow(LongType(), pa.array(values, pa.int64())).to_pylist()
    assert ints == longs


def test_bucket_decimal_hash_ignores_scale_and_uses_minimal_bytes() -> None:
    # 127 fits one byte; 128 needs a sign byte (00 80); -128 is one byte (80); -129 is ff 7f.
    cases = {127: b"\x7f", 128: b"\x00\x80", -128: b"\x80", -129: b"\xff\x7f", 0: b"\x00"}
    t = DecimalType(38, 0)
    for unscaled, raw in cases.items():
        assert hash_value(t, Decimal(unscaled)) == mmh3.hash(raw, 0)
    assert hash_value(DecimalType(9, 3), Decimal("0.128")) == mmh3.hash(b"\x00\x80", 0)
    arr = pa.array([Decimal(k) for k in cases], pa.decimal128(38, 0))
    got = BucketTransform(MAX_BUCKETS).apply_arrow(t, arr).to_pylist()
    assert got == [mmh3.hash(raw, 0) & 0x7FFFFFFF for raw in cases.values()]


def test_bucket_decimal_extremes_scalar_equals_arrow() -> None:
    big = 10**38 - 1
    values = [Decimal(big), Decimal(-big), Decimal(2**64), Decimal(-(2**64)), Decimal(2**63 - 1), None]
    t = BucketTransform(MAX_BUCKETS)
    want = [t.apply(DecimalType(38, 0), v) for v in values]
    assert t.apply_arrow(DecimalType(38, 0), pa.array(values, pa.decimal128(38, 0))).to_pylist() == want


def test_bucket_float_double_boolean_not_bucketable() -> None:
    t = BucketTransform(4)
    for bad in (FloatType(), DoubleType(), BooleanType(), StructType(), UnknownType(), VariantType()):
        assert not t.can_transform(bad)
        with pytest.raises(ValidationError, match="bucket"):
            t.apply(bad, 1.0)


def test_bucket_invalid_count_rejected() -> None:
    for bad in (0, -3):
        with pytest.raises(ValidationError, match="buckets"):
            BucketTransform(bad)


def test_murmur3_rows_matches_mmh3_for_every_length_up_to_20() -> None:
    rng = np.random.default_rng(7)
    for length in range(21):
        data = rng.integers(0, 256, size=(50, length), dtype=np.uint8)
        got = murmur3_rows(data)
        assert got.tolist() == [mmh3.hash(row.tobytes(), 0) for row in data]


def test_murmur3_longs_matches_mmh3_on_extremes() -> None:
    values = np.array([0, 1, -1, 34, 2**63 - 1, -(2**63)], dtype=np.int64)
    assert murmur3_longs(values).tolist() == [
        mmh3.hash(int(v).to_bytes(8, "little", signed=True)) for v in values
    ]


def test_murmur3_binary_array_many_lengths_uses_fallback_and_agrees() -> None:
    values = ["x" * n for n in range(400)] + ["é😀"]
    arr = pa.array(values, pa.large_string()).slice(3)
    assert murmur3_binary_array(arr).tolist() == [mmh3.hash(v.encode(), 0) for v in values[3:]]


# --- truncate -----------------------------------------------------------------------------------
TRUNCATE_VECTORS: list[tuple[IcebergType, int, Any, Any, pa.DataType]] = [
    (IntegerType(), 10, 1, 0, pa.int32()),
    (IntegerType(), 10, -1, -10, pa.int32()),
    (LongType(), 10, 1, 0, pa.int64()),
    (LongType(), 10, -1, -10, pa.int64()),
    (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50"), pa.decimal128(9, 2)),
    (StringType(), 3, "iceberg", "ice", pa.string()),
    (BinaryType(), 3, b"\x01\x02\x03\x04\x05", b"\x01\x02\x03", pa.binary()),
]


@pytest.mark.parametrize(("source_type", "width", "value", "expected", "arrow_type"), TRUNCATE_VECTORS)
def test_truncate_spec_vector_scalar_and_arrow(
    source_type: IcebergType, width: int, value: Any, expected: Any, arrow_type: pa.DataType
) -> None:
    t = TruncateTransform(width)
    got = t.apply(source_type, value)
    assert got == expected
    if isinstance(expected, Decimal):
        assert got.as_tuple().exponent == expected.as_tuple().exponent
    arr = t.apply_arrow(source_type, pa.array([value, None], arrow_type))
    assert arr.type == arrow_type
    assert arr.to_pylist() == [expected, None]


def test_truncate_negative_values_floor() -> None:
    t = TruncateTransform(10)
    values = [-1, -10, -11, -19, -20, 0, 9, 10, 19]
    want = [-10, -10, -20, -20, -20, 0, 0, 10, 10]
    assert [t.apply(LongType(), v) for v in values] == want
    assert t.apply_arrow(LongType(), pa.array(values, pa.int64())).to_pylist() == want
    assert t.apply_arrow(IntegerType(), pa.array(values, pa.int32())).to_pylist() == want


def test_truncate_decimal_negative_floors_keeping_scale() -> None:
    t = TruncateTransform(50)
    values = [Decimal("-10.65"), Decimal("-0.01"), Decimal("0.00"), Decimal("-0.50")]
    want = [Decimal("-11.00"), Decimal("-0.50"), Decimal("0.00"), Decimal("-0.50")]
    assert [t.apply(DecimalType(9, 2), v) for v in values] == want
    got = t.apply_arrow(DecimalType(9, 2), pa.array(values, pa.decimal128(9, 2))).to_pylist()
    assert got == want
    assert [str(g) for g in got] == ["-11.00", "-0.50", "0.00", "-0.50"]


def test_truncate_long_minimum_wraps_like_java() -> None:
    # Java: Long.MIN_VALUE - 2 overflows to Long.MAX_VALUE - 1; Floe matches Iceberg Java bit for bit.
    t = TruncateTransform(10)
    assert t.apply(LongType(), -(2**63)) == 2**63 - 2
    assert t.apply_arrow(LongType(), pa.array([-(2**63)], pa.int64())).to_pylist() == [2**63 - 2]
    assert t.apply(IntegerType(), -(2**31)) == 2**31 - 2
    assert t.apply_arrow(IntegerType(), pa.array([-(2**31)], pa.int32())).to_pylist() == [2**31 - 2]


def test_truncate_string_counts_code_points_not_bytes() -> None:
    t = TruncateTransform(2)
    values = ["é😀x", "😀😀😀", "a", ""]
    want = ["é😀", "😀😀", "a", ""]
    assert [t.apply(StringType(), v) for v in values] == want
    assert t.apply_arrow(StringType(), pa.array(values, pa.large_string())).to_pylist() == want


def test_truncate_invalid_width_and_types_rejected() -> None:
    for bad in (0, -1, 2**31):
        with pytest.raises(ValidationError, match="width"):
            TruncateTransform(bad)
    t = TruncateTransform(4)
    for bad_type in (FixedType(4), UUIDType(), DateType(), TimestampType(), DoubleType(), BooleanType()):
        assert not t.can_transform(bad_type)
        with pytest.raises(ValidationError):
            t.result_type(bad_type)


# --- temporal -----------------------------------------------------------------------------------
TEMPORAL_CASES = [
    # (datetime, year, month, day, hour)
    (dt.datetime(2017, 11, 16, 22, 31, 8), 47, 574, 17486, 419686),
    (dt.datetime(1970, 1, 1, 0, 0, 0), 0, 0, 0, 0),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 999999), -1, -1, -1, -1),
    (dt.datetime(1969, 1, 1, 0, 0, 0), -1, -12, -365, -8760),
    (dt.datetime(1968, 12, 31, 23, 0, 0), -2, -13, -366, -8761),
    (dt.datetime(2000, 2, 29, 12, 0, 0), 30, 361, 11016, 264396),
    (dt.datetime(1, 1, 1, 0, 0, 0), -1969, -23628, -719162, -17259888),
]


@pytest.mark.parametrize(("when", "year", "month", "day", "hour"), TEMPORAL_CASES, ids=str)
def test_temporal_timestamp_values_scalar_and_arrow(
    when: dt.datetime, year: int, month: int, day: int, hour: int
) -> None:
    us = micros(when)
    cases: list[tuple[IcebergType, int, pa.DataType]] = [
        (TimestampType(), us, pa.timestamp("us")),
        (TimestamptzType(), us, pa.timestamp("us", "UTC")),
        (TimestampNanoType(), us * 1000 + 999, pa.timestamp("ns")),
        (TimestamptzNanoType(), us * 1000, pa.timestamp("ns", "UTC")),
    ]
    for source_type, value, arrow_type in cases:
        if arrow_type.unit == "ns" and not -(2**63) < value < 2**63:
            continue
        arr = pa.array([value, None], pa.int64()).cast(arrow_type)
        for t, want in (
            (YearTransform(), year),
            (MonthTransform(), month),
            (DayTransform(), day),
            (HourTransform(), hour),
        ):
            assert t.apply(source_type, value) == want, (t, source_type)
            got = t.apply_arrow(source_type, arr)
            assert got.cast(pa.int32()).to_pylist() == [want, None], (t, source_type)


def test_temporal_nanos_floor_before_epoch() -> None:
    # -1 ns is 1969-12-31T23:59:59.999999999: floor to micro -1, so every unit is -1.
    for t in (YearTransform(), MonthTransform(), DayTransform(), HourTransform()):
        assert t.apply(TimestampNanoType(), -1) == -1
        assert t.apply_arrow(TimestampNanoType(), pa.array([-1], pa.timestamp("ns"))).cast(
            pa.int32()
        ).to_pylist() == [-1]


def test_temporal_date_values_scalar_and_arrow() -> None:
    dates = [dt.date(2017, 11, 16), dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(1900, 3, 1), None]
    want = {
        YearTransform(): [47, 0, -1, -70, None],
        MonthTransform(): [574, 0, -1, -838, None],
        DayTransform(): [17486, 0, -1, -25508, None],
    }
    arr = pa.array(dates, pa.date32())
    for t, expected in want.items():
        assert [t.apply(DateType(), None if d is None else days(d)) for d in dates] == expected
        assert t.apply_arrow(DateType(), arr).cast(pa.int32()).to_pylist() == expected


def test_temporal_result_types_and_arrow_types() -> None:
    ts = pa.array([0], pa.timestamp("us"))
    assert YearTransform().result_type(TimestampType()) == IntegerType()
    assert MonthTransform().result_type(DateType()) == IntegerType()
    assert HourTransform().result_type(TimestamptzNanoType()) == IntegerType()
    assert DayTransform().result_type(TimestampType()) == DateType()
    assert DayTransform().apply_arrow(TimestampType(), ts).type == pa.date32()
    assert HourTransform().apply_arrow(TimestampType(), ts).type == pa.int32()


def test_hour_on_date_rejected() -> None:
    assert not HourTransform().can_transform(DateType())
    with pytest.raises(ValidationError, match="hour"):
        HourTransform().apply(DateType(), 1)
    with pytest.raises(ValidationError, match="hour"):
        HourTransform().apply_arrow(DateType(), pa.array([1], pa.date32()))


def test_temporal_arrow_accepts_millisecond_timestamps() -> None:
    arr = pa.array([micros(dt.datetime(2021, 12, 1, 10, 30)) // 1000], pa.timestamp("ms"))
    assert HourTransform().apply_arrow(TimestampType(), arr).to_pylist() == [
        HourTransform().apply(TimestampType(), micros(dt.datetime(2021, 12, 1, 10, 30)))
    ]


# --- identity and void --------------------------------------------------------------------------
def test_identity_returns_value_and_combines_chunks() -> None:
    t = IdentityTransform()
    assert t.apply(StringType(), "x") == "x"
    assert t.apply(StringType(), None) is None
    got = t.apply_arrow(LongType(), pa.chunked_array([[1, 2], [None]], pa.int64()))
    assert isinstance(got, pa.Array)
    assert got.to_pylist() == [1, 2, None]


def test_bucket_dictionary_encoded_strings_decode_first() -> None:
    arr = pa.array(["iceberg", None, "iceberg"]).dictionary_encode()
    assert BucketTransform(MAX_BUCKETS).apply_arrow(StringType(), arr).to_pylist() == [
        1210000089,
        None,
        1210000089,
    ]


def test_void_returns_nulls_of_source_type() -> None:
    t = VoidTransform()
    assert t.apply(LongType(), 5) is None
    got = t.apply_arrow(LongType(), pa.array([1, 2], pa.int64()))
    assert got.type == pa.int64()
    assert got.to_pylist() == [None, None]
    assert t.result_type(StringType()) == StringType()
    assert t.is_void


# --- type matrix --------------------------------------------------------------------------------
ALL_TYPES: list[IcebergType] = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(9, 2),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    TimestampNanoType(),
    TimestamptzNanoType(),
    StringType(),
    UUIDType(),
    FixedType(4),
    BinaryType(),
    UnknownType(),
    VariantType(),
    GeometryType(),
    ListType(1, IntegerType()),
]

CAN_TRANSFORM = {
    "identity": {
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "decimal(9, 2)",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "fixed[4]",
        "binary",
        "unknown",
    },
    "bucket[4]": {
        "int",
        "long",
        "decimal(9, 2)",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "fixed[4]",
        "binary",
    },
    "truncate[4]": {"int", "long", "decimal(9, 2)", "string", "binary"},
    "year": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "month": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "day": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "hour": {"timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "void": {str(t) for t in ALL_TYPES},
}


@pytest.mark.parametrize("name", sorted(CAN_TRANSFORM))
def test_can_transform_matrix_matches_spec_table(name: str) -> None:
    t = parse_transform(name)
    assert {str(s) for s in ALL_TYPES if t.can_transform(s)} == CAN_TRANSFORM[name]


@pytest.mark.parametrize("name", sorted(CAN_TRANSFORM))
def test_result_type_matches_spec_table(name: str) -> None:
    t = parse_transform(name)
    for s in ALL_TYPES:
        if not t.can_transform(s):
            continue
        r = t.result_type(s)
        if name == "bucket[4]" or name in ("year", "month", "hour"):
            assert r == IntegerType()
        elif name == "day":
            assert r == DateType()
        else:
            assert r == s


# --- parsing, equality, order -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("identity", IdentityTransform),
        ("bucket[16]", BucketTransform),
        ("truncate[4]", TruncateTransform),
        ("year", YearTransform),
        ("month", MonthTransform),
        ("day", DayTransform),
        ("hour", HourTransform),
        ("void", VoidTransform),
    ],
)
def test_parse_transform_round_trips(text: str, cls: type[Transform]) -> None:
    t = parse_transform(text)
    assert isinstance(t, cls)
    assert str(t) == text
    assert parse_transform(str(t)) == t
    assert hash(parse_transform(text)) == hash(t)


def test_parse_transform_unknown_keeps_text_and_refuses_apply() -> None:
    t = parse_transform("zorder[a,b]")
    assert isinstance(t, UnknownTransform)
    assert str(t) == "zorder[a,b]"
    assert t.can_transform(LongType())
    with pytest.raises(UnsupportedError, match="zorder"):
        t.apply(LongType(), 1)
    with pytest.raises(UnsupportedError, match="zorder"):
        t.apply_arrow(LongType(), pa.array([1]))
    assert isinstance(parse_transform("bucket[0]"), UnknownTransform)


def test_transform_equality_by_spec_string() -> None:
    assert BucketTransform(16) == BucketTransform(16)
    assert BucketTransform(16) != BucketTransform(8)
    assert TruncateTransform(4) != BucketTransform(4)
    assert len({DayTransform(), DayTransform(), parse_transform("day")}) == 1


def test_preserves_order_flags() -> None:
    assert IdentityTransform().preserves_order
    assert TruncateTransform(3).preserves_order
    assert all(
        t.preserves_order for t in (YearTransform(), MonthTransform(), DayTransform(), HourTransform())
    )
    assert not BucketTransform(3).preserves_order
    assert not VoidTransform().preserves_order


def test_satisfies_order_of_temporal_granularity() -> None:
    assert HourTransform().satisfies_order_of(DayTransform())
    assert DayTransform().satisfies_order_of(MonthTransform())
    assert DayTransform().satisfies_order_of(YearTransform())
    assert DayTransform().satisfies_order_of(DayTransform())
    assert not MonthTransform().satisfies_order_of(DayTransform())
    assert not YearTransform().satisfies_order_of(HourTransform())
    assert IdentityTransform().satisfies_order_of(DayTransform())
    assert not IdentityTransform().satisfies_order_of(BucketTransform(4))
    assert not BucketTransform(4).satisfies_order_of(BucketTransform(8))


def test_satisfies_order_of_truncate_depends_on_type() -> None:
    assert TruncateTransform(4).satisfies_order_of(TruncateTransform(2), source_type=StringType())
    assert not TruncateTransform(2).satisfies_order_of(TruncateTransform(4), source_type=StringType())
    assert TruncateTransform(10).satisfies_order_of(TruncateTransform(20), source_type=LongType())
    assert not TruncateTransform(10).satisfies_order_of(TruncateTransform(25), source_type=LongType())
    assert not TruncateTransform(4).satisfies_order_of(TruncateTransform(2))  # unknown type: be safe


def test_dedup_name_groups_temporal_transforms() -> None:
    assert {t.dedup_name for t in (YearTransform(), MonthTransform(), DayTransform(), HourTransform())} == {
        "time"
    }
    assert BucketTransform(4).dedup_name == "bucket[4]"


# --- human strings ------------------------------------------------------------------------------
def test_human_strings_temporal_like_java() -> None:
    assert YearTransform().to_human_string(IntegerType(), 51) == "2021"
    assert MonthTransform().to_human_string(IntegerType(), 12 * 51 + 11) == "2021-12"
    assert DayTransform().to_human_string(DateType(), days(dt.date(2021, 12, 1))) == "2021-12-01"
    hours = micros(dt.datetime(2021, 12, 1, 10)) // 3_600_000_000
    assert HourTransform().to_human_string(IntegerType(), hours) == "2021-12-01-10"
    assert HourTransform().to_human_string(IntegerType(), -1) == "1969-12-31-23"
    assert MonthTransform().to_human_string(IntegerType(), -1) == "1969-12"
    assert YearTransform().to_human_string(IntegerType(), None) == "null"


@pytest.mark.parametrize(
    ("source_type", "value", "text"),
    [
        (DateType(), days(dt.date(2021, 12, 1)), "2021-12-01"),
        (TimeType(), 10 * 3600 * 10**6, "10:00:00"),
        (TimeType(), 10 * 3600 * 10**6 + 500_000, "10:00:00.5"),
        (TimestampType(), micros(dt.datetime(2021, 12, 1, 10)), "2021-12-01T10:00:00"),
        (TimestampType(), micros(dt.datetime(2021, 12, 1, 10, 0, 0, 1)), "2021-12-01T10:00:00.000001"),
        (TimestamptzType(), micros(dt.datetime(2021, 12, 1, 10)), "2021-12-01T10:00:00+00:00"),
        (
            TimestampNanoType(),
            micros(dt.datetime(2021, 12, 1, 10)) * 1000 + 1,
            "2021-12-01T10:00:00.000000001",
        ),
        (TimestamptzNanoType(), -1, "1969-12-31T23:59:59.999999999+00:00"),
        (BinaryType(), b"\x01\x02\x03", "AQID"),
        (FixedType(3), b"\xaa\xbb\xcc", "qrvM"),
        (BooleanType(), True, "true"),
        (BooleanType(), False, "false"),
        (LongType(), -9223372036854775808, "-9223372036854775808"),
        (FloatType(), 3.1415927, "3.1415927"),
        (FloatType(), 2.7182817, "2.7182817"),
        (DoubleType(), 1e10, "1.0E10"),
        (DoubleType(), 0.001, "0.001"),
        (DoubleType(), 1.0e-4, "1.0E-4"),
        (DoubleType(), 100.0, "100.0"),
        (DoubleType(), -0.0, "-0.0"),
        (DoubleType(), float("nan"), "NaN"),
        (DecimalType(8, 4), Decimal("1.23"), "1.2300"),
        (DecimalType(8, 4), Decimal("42.5630"), "42.5630"),
        (StringType(), "a b", "a b"),
        (
            UUIDType(),
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
        ),
        (StringType(), None, "null"),
        (DateType(), days(dt.date(1, 1, 1)) - 366, "0000-01-01"),
    ],
)
def test_identity_human_string_like_java(source_type: IcebergType, value: Any, text: str) -> None:
    assert IdentityTransform().to_human_string(source_type, value) == text


def test_bucket_and_truncate_human_strings_are_result_values() -> None:
    assert BucketTransform(16).to_human_string(IntegerType(), 3) == "3"
    assert TruncateTransform(3).to_human_string(StringType(), "ice") == "ice"
    assert TruncateTransform(3).to_human_string(BinaryType(), b"\x01\x02\x03") == "AQID"
    assert VoidTransform().to_human_string(LongType(), None) == "null"


def test_civil_from_days_matches_python_calendar() -> None:
    first, last = days(dt.date(1, 1, 1)), days(dt.date(9999, 12, 31))
    sample = np.arange(first, last + 1, 37, dtype=np.int64)
    years, months, mdays = civil_from_days(sample)
    expected = [EPOCH_DATE + dt.timedelta(days=int(d)) for d in sample]
    assert years.tolist() == [e.year for e in expected]
    assert months.tolist() == [e.month for e in expected]
    assert mdays.tolist() == [e.day for e in expected]
    assert all(
        days_from_civil(e.year, e.month, e.day) == int(d)
        for e, d in zip(expected[::50], sample[::50], strict=True)
    )


# --- cross-check against partition directories written by Iceberg Java ---------------------------
JAVA_TABLES = Path("/work/shared/fixtures/java-tables")
JAVA_CASES: list[tuple[str, str, IcebergType, Transform, str]] = [
    # (table, source column, source type, transform, partition name)
    (
        "duckdb__partition_bucket_test",
        "partition_col",
        StringType(),
        BucketTransform(10),
        "partition_col_bucket",
    ),
    (
        "duckdb__partition_timestamp_year",
        "partition_col",
        TimestampType(),
        YearTransform(),
        "partition_col_year",
    ),
    ("impala__iceberg_timestamptz_part", "ts", TimestamptzType(), HourTransform(), "ts_hour"),
    ("impala__iceberg_timestamp_part", "ts", TimestampType(), HourTransform(), "ts_hour"),
    ("polars__iceberg_table", "ts", TimestampType(), DayTransform(), "ts_day"),
    ("impala__iceberg_partitioned", "event_time", TimestamptzType(), HourTransform(), "event_time_hour"),
    ("glaredb__v1_lineitem_partitioned", "l_shipmode", StringType(), IdentityTransform(), "l_shipmode"),
]


@pytest.mark.skipif(not JAVA_TABLES.is_dir(), reason="Java-written fixture tables are not present")
@pytest.mark.parametrize(
    ("table", "column", "source_type", "transform", "name"), JAVA_CASES, ids=lambda c: str(c)[:40]
)
def test_transform_matches_java_partition_directories(
    table: str, column: str, source_type: IcebergType, transform: Transform, name: str
) -> None:
    files = sorted((JAVA_TABLES / table).rglob("*.parquet"))
    checked = 0
    for path in files:
        parts = dict(p.split("=", 1) for p in path.parent.relative_to(JAVA_TABLES / table).parts if "=" in p)
        if name not in parts:
            continue
        pf = pq.ParquetFile(path)
        if column not in pf.schema_arrow.names:
            continue  # identity columns may live only in the manifest
        values = pf.read(columns=[column]).column(column)
        result = transform.apply_arrow(source_type, values)
        rtype = transform.result_type(source_type)
        rendered = {
            url_encode(transform.to_human_string(rtype, transform.apply(source_type, v)))
            for v in _floe_scalars(values, source_type)
        }
        arrow_rendered = {url_encode(transform.to_human_string(rtype, v)) for v in _as_floe(result, rtype)}
        assert rendered == {parts[name]}, path
        assert arrow_rendered == {parts[name]}, path
        checked += 1
    assert checked > 0


def _as_floe(arr: pa.Array, result_type: IcebergType) -> list[Any]:
    if pa.types.is_date32(arr.type):
        return arr.view(pa.int32()).to_pylist()
    if isinstance(result_type, (TimestampType, TimestamptzType)):
        return arr.cast(pa.timestamp("us")).view(pa.int64()).to_pylist()
    return arr.to_pylist()


def _floe_scalars(values: pa.ChunkedArray, source_type: IcebergType) -> list[Any]:
    if isinstance(source_type, (TimestampType, TimestamptzType)):
        return values.cast(pa.timestamp("us", values.type.tz)).cast(pa.int64()).to_pylist()
    return values.to_pylist()


# DuckDB wrote these tables' data files without the identity column; the values live in the manifests.
MANIFEST_CASES: list[tuple[str, IcebergType, str]] = [
    ("duckdb__partition_binary", BinaryType(), "partition_col"),
    ("duckdb__partition_double", FloatType(), "partition_col"),
    ("duckdb__partition_decimal_integer", DecimalType(8, 4), "partition_col"),
    ("duckdb__partition_bool", BooleanType(), "partition_col"),
    ("duckdb__partition_bigint", LongType(), "partition_col"),
]


@pytest.mark.skipif(not JAVA_TABLES.is_dir(), reason="Java-written fixture tables are not present")
@pytest.mark.parametrize(("table", "source_type", "name"), MANIFEST_CASES, ids=lambda c: str(c)[:40])
def test_identity_human_string_matches_java_paths_from_manifests(
    table: str, source_type: IcebergType, name: str
) -> None:
    checked = 0
    for manifest in sorted((JAVA_TABLES / table / "metadata").glob("*-m*.avro")):
        with manifest.open("rb") as fh:
            for entry in fastavro.reader(fh):
                data_file = entry["data_file"]
                segment = next(p for p in data_file["file_path"].split("/") if p.startswith(f"{name}="))
                value = data_file["partition"][name]
                human = IdentityTransform().to_human_string(source_type, value)
                assert f"{name}={url_encode(human)}" == segment
                checked += 1
    assert checked > 0
