"""Property tests: for every transform and applicable type, ``apply_arrow`` equals ``apply`` per value."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floe.spec.transforms._decimal import decimal_from_unscaled, unscaled_of
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    # Mix uniform values with the edges, zero and small negatives, where floor/wrap bugs live.
    return st.one_of(
        st.integers(lo, hi),
        st.sampled_from([lo, lo + 1, hi, hi - 1, 0, -1, 1]),
        st.integers(-100_000, 100_000),
    )


def _int_array(arrow_type: pa.DataType, storage: pa.DataType) -> Callable[[list[Any]], pa.Array]:
    return lambda values: (
        pa.array(values, storage).cast(arrow_type) if storage != arrow_type else pa.array(values, storage)
    )


def _decimal_case(
    precision: int, scale: int
) -> tuple[IcebergType, st.SearchStrategy[Any], Callable[[list[Any]], pa.Array]]:
    limit = 10**precision - 1
    values = _ints(-limit, limit).map(lambda u: decimal_from_unscaled(u, scale))
    return DecimalType(precision, scale), values, lambda vs: pa.array(vs, pa.decimal128(precision, scale))


# (Iceberg type, strategy of Floe values, build an Arrow array from Floe values)
CASES: list[tuple[IcebergType, st.SearchStrategy[Any], Callable[[list[Any]], pa.Array]]] = [
    (IntegerType(), _ints(*INT32), _int_array(pa.int32(), pa.int32())),
    (LongType(), _ints(*INT64), _int_array(pa.int64(), pa.int64())),
    _decimal_case(9, 2),
    _decimal_case(18, 0),
    _decimal_case(38, 10),
    (DateType(), _ints(*INT32), lambda vs: pa.array(vs, pa.int32()).view(pa.date32())),
    (TimeType(), st.integers(0, 86_400_000_000 - 1), _int_array(pa.time64("us"), pa.int64())),
    (TimestampType(), _ints(*INT64), _int_array(pa.timestamp("us"), pa.int64())),
    (TimestamptzType(), _ints(*INT64), _int_array(pa.timestamp("us", "UTC"), pa.int64())),
    (TimestampNanoType(), _ints(*INT64), _int_array(pa.timestamp("ns"), pa.int64())),
    (TimestamptzNanoType(), _ints(*INT64), _int_array(pa.timestamp("ns", "UTC"), pa.int64())),
    (StringType(), st.text(max_size=40), lambda vs: pa.array(vs, pa.string())),
    (
        UUIDType(),
        st.uuids(),
        lambda vs: pa.array([None if v is None else v.bytes for v in vs], pa.binary(16)),
    ),
    (FixedType(5), st.binary(min_size=5, max_size=5), lambda vs: pa.array(vs, pa.binary(5))),
    (BinaryType(), st.binary(max_size=40), lambda vs: pa.array(vs, pa.large_binary())),
]


def _floe_values(arr: pa.Array) -> list[Any]:
    """Arrow results back in Floe's value representation (dates/times/timestamps as ints)."""
    t = arr.type
    if pa.types.is_date32(t):
        return arr.view(pa.int32()).to_pylist()
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return arr.view(pa.int64()).to_pylist()
    return arr.to_pylist()


def _scalar_expected(transform: Transform, source_type: IcebergType, values: list[Any]) -> list[Any]:
    out = [transform.apply(source_type, v) for v in values]
    if isinstance(source_type, UUIDType) and isinstance(transform, (IdentityTransform, VoidTransform)):
        return [None if v is None else v.bytes for v in out]
    return out


def _transforms(source_type: IcebergType) -> st.SearchStrategy[Transform]:
    candidates: list[st.SearchStrategy[Transform]] = [
        st.just(IdentityTransform()),
        st.just(VoidTransform()),
        st.integers(1, 2**31 - 1).map(BucketTransform),
        st.integers(1, 64).map(BucketTransform),
        st.integers(1, 2**31 - 1).map(TruncateTransform),
        st.integers(1, 100).map(TruncateTransform),
        st.sampled_from([YearTransform(), MonthTransform(), DayTransform(), HourTransform()]),
    ]
    return st.one_of(*candidates).filter(lambda t: t.can_transform(source_type))


@pytest.mark.parametrize(
    ("source_type", "values", "build"), CASES, ids=lambda c: str(c) if isinstance(c, IcebergType) else ""
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_apply_arrow_equals_scalar_apply(
    source_type: IcebergType,
    values: st.SearchStrategy[Any],
    build: Callable[[list[Any]], pa.Array],
    data: st.DataObject,
) -> None:
    rows = data.draw(st.lists(st.one_of(st.none(), values), max_size=30), label="rows")
    transform = data.draw(_transforms(source_type), label="transform")
    arr = build(rows)
    split = data.draw(st.integers(0, len(rows)), label="split")
    chunked = pa.chunked_array([arr.slice(0, split), arr.slice(split)], type=arr.type)
    expected = _scalar_expected(transform, source_type, rows)
    got = _floe_values(transform.apply_arrow(source_type, chunked))
    assert got == expected
    if isinstance(source_type, DecimalType):
        # Equal Decimals can differ in scale; Floe keeps the column's scale in both paths.
        assert [None if g is None else str(g) for g in got] == [
            None if e is None else str(e) for e in expected
        ]


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.one_of(st.none(), st.uuids()), max_size=20), n=st.integers(1, 2**31 - 1))
def test_bucket_uuid_objects_and_bytes_agree(rows: list[uuid.UUID | None], n: int) -> None:
    t = BucketTransform(n)
    as_objects = [t.apply(UUIDType(), v) for v in rows]
    as_bytes = [t.apply(UUIDType(), None if v is None else v.bytes) for v in rows]
    assert as_objects == as_bytes


@settings(max_examples=100, deadline=None)
@given(value=_ints(*INT32), n=st.integers(1, 2**31 - 1))
def test_bucket_date_equals_bucket_of_int_days(value: int, n: int) -> None:
    assert BucketTransform(n).apply(DateType(), value) == BucketTransform(n).apply(IntegerType(), value)


@settings(max_examples=100, deadline=None)
@given(value=st.integers(-(10**37), 10**37), w=st.integers(1, 2**31 - 1))
def test_truncate_decimal_is_floor_multiple_of_width(value: int, w: int) -> None:
    got = TruncateTransform(w).apply(DecimalType(38, 3), decimal_from_unscaled(value, 3))
    unscaled = unscaled_of(got, 3)
    assert unscaled % w == 0
    assert 0 <= value - unscaled < w
    assert got.as_tuple().exponent == -3
    assert isinstance(got, Decimal)
