"""Single-value binary serialization (spec Appendix D): known byte vectors and round trips."""

from __future__ import annotations

import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest

from floe.errors import InvalidMetadataError, UnsupportedError, ValidationError
from floe.serde.single_value import from_bytes, to_bytes
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
    VariantType,
)

UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

KNOWN: list[tuple[IcebergType, Any, bytes]] = [
    (BooleanType(), False, b"\x00"),
    (BooleanType(), True, b"\x01"),
    (IntegerType(), 34, b"\x22\x00\x00\x00"),
    (IntegerType(), -1, b"\xff\xff\xff\xff"),
    (LongType(), 34, b"\x22\x00\x00\x00\x00\x00\x00\x00"),
    (LongType(), -(2**63), b"\x00\x00\x00\x00\x00\x00\x00\x80"),
    (FloatType(), 1.0, b"\x00\x00\x80\x3f"),
    (DoubleType(), 1.0, b"\x00\x00\x00\x00\x00\x00\xf0\x3f"),
    (DateType(), 17486, struct.pack("<i", 17486)),  # 2017-11-16
    (TimeType(), 81068000000, struct.pack("<q", 81068000000)),  # 22:31:08
    (TimestampType(), 1510871468000001, struct.pack("<q", 1510871468000001)),
    (TimestamptzType(), 1510871468000001, struct.pack("<q", 1510871468000001)),
    (TimestampNanoType(), 1510871468000001001, struct.pack("<q", 1510871468000001001)),
    (TimestamptzNanoType(), -1, b"\xff" * 8),
    (StringType(), "iceberg", b"iceberg"),
    (StringType(), "ü", b"\xc3\xbc"),
    (UUIDType(), UUID, bytes.fromhex("f79c3e09677c4bbda4793f349cb785e7")),
    (FixedType(4), b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    (BinaryType(), b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    # decimals: minimal two's-complement big-endian unscaled value
    (DecimalType(9, 2), Decimal("14.20"), b"\x05\x8c"),  # 1420
    (DecimalType(9, 2), Decimal("-14.20"), b"\xfa\x74"),
    (DecimalType(9, 2), Decimal("0.00"), b"\x00"),
    (DecimalType(9, 2), Decimal("1.27"), b"\x7f"),
    (DecimalType(9, 2), Decimal("1.28"), b"\x00\x80"),
    (DecimalType(9, 2), Decimal("-1.28"), b"\x80"),
    (DecimalType(9, 2), Decimal("-1.29"), b"\xff\x7f"),
]


@pytest.mark.parametrize(("iceberg_type", "value", "expected"), KNOWN, ids=lambda x: repr(x)[:30])
def test_to_bytes_known_vectors_match_spec(iceberg_type: IcebergType, value: Any, expected: bytes) -> None:
    assert to_bytes(iceberg_type, value) == expected


@pytest.mark.parametrize(("iceberg_type", "value", "expected"), KNOWN, ids=lambda x: repr(x)[:30])
def test_from_bytes_known_vectors_round_trip(iceberg_type: IcebergType, value: Any, expected: bytes) -> None:
    decoded = from_bytes(iceberg_type, expected)
    assert decoded == value
    assert type(decoded) is type(value)


def test_decimal_38_digits_round_trip_exact() -> None:
    t = DecimalType(38, 10)
    value = Decimal("9999999999999999999999999999.9999999999")
    data = to_bytes(t, value)
    assert len(data) == 16
    assert from_bytes(t, data) == value
    assert str(from_bytes(t, data)) == str(value)


def test_decimal_scale_preserved_on_decode() -> None:
    assert str(from_bytes(DecimalType(5, 3), to_bytes(DecimalType(5, 3), Decimal("1.5")))) == "1.500"


def test_decimal_too_many_fraction_digits_raises() -> None:
    with pytest.raises(ValidationError, match="scale"):
        to_bytes(DecimalType(9, 2), Decimal("1.234"))


def test_long_from_four_byte_bound_after_int_promotion() -> None:
    assert from_bytes(LongType(), struct.pack("<i", -7)) == -7


def test_double_from_four_byte_bound_after_float_promotion() -> None:
    assert from_bytes(DoubleType(), struct.pack("<f", 1.5)) == 1.5


def test_timestamp_from_four_byte_date_bound_after_v3_promotion() -> None:
    assert from_bytes(TimestampType(), struct.pack("<i", 1)) == 86_400_000_000
    assert from_bytes(TimestampNanoType(), struct.pack("<i", 1)) == 86_400_000_000_000


def test_uuid_accepts_string_and_bytes() -> None:
    assert to_bytes(UUIDType(), str(UUID)) == UUID.bytes
    assert to_bytes(UUIDType(), UUID.bytes) == UUID.bytes


def test_fixed_wrong_length_raises() -> None:
    with pytest.raises(ValidationError, match="fixed"):
        to_bytes(FixedType(3), b"\x00")


def test_int_out_of_range_raises() -> None:
    with pytest.raises(ValidationError, match="int"):
        to_bytes(IntegerType(), 2**31)


def test_invalid_bytes_raise_invalid_metadata() -> None:
    with pytest.raises(InvalidMetadataError, match="int"):
        from_bytes(IntegerType(), b"\x00")
    with pytest.raises(InvalidMetadataError, match="string"):
        from_bytes(StringType(), b"\xff\xfe")


def test_nested_and_variant_types_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        to_bytes(ListType(1, IntegerType()), [1])
    with pytest.raises(UnsupportedError):
        from_bytes(VariantType(), b"")


@pytest.mark.parametrize("value", [0, 1, -1, 2**31 - 1, -(2**31), 12345])
def test_int_round_trip(value: int) -> None:
    assert from_bytes(IntegerType(), to_bytes(IntegerType(), value)) == value


@pytest.mark.parametrize("value", ["", "a", "日本語", "x" * 1000])
def test_string_round_trip(value: str) -> None:
    assert from_bytes(StringType(), to_bytes(StringType(), value)) == value


@pytest.mark.parametrize("value", ["-0.01", "123456.78", "-9999999.99", "0.00"])
def test_decimal_round_trip(value: str) -> None:
    t = DecimalType(9, 2)
    assert from_bytes(t, to_bytes(t, Decimal(value))) == Decimal(value)
