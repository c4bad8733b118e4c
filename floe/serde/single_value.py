"""Single-value binary serialization (spec Appendix D), used for bounds and partition summaries.

Values use Floe's representation (see floe.spec.transforms.base): date -> int days, time/timestamp -> int
micros (nanos for the ``_ns`` types), decimal -> Decimal, uuid -> uuid.UUID, fixed/binary -> bytes.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any

from floe.errors import InvalidMetadataError, UnsupportedError, ValidationError
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
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

if TYPE_CHECKING:
    from floe.spec.schema import Schema

__all__ = ["decode_bounds", "decoder_for", "encoder_for", "from_bytes", "to_bytes", "unscaled_decimal"]

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def _i32(data: bytes) -> int:
    value: int = _I32.unpack(data)[0]
    return value


def _i64(data: bytes) -> int:
    value: int = _I64.unpack(data)[0]
    return value


def _f32(data: bytes) -> float:
    value: float = _F32.unpack(data)[0]
    return value


def _f64(data: bytes) -> float:
    value: float = _F64.unpack(data)[0]
    return value


# Exact arithmetic for 38-digit decimals: the default context (28 digits) would round.
_DEC_CTX = Context(prec=80)
_MICROS_PER_DAY = 86_400_000_000
_NANOS_PER_DAY = 86_400_000_000_000

Decoder = Callable[[bytes], Any]
Encoder = Callable[[Any], bytes]


# -- decoders ---------------------------------------------------------------------------------------
def _dec_bool(data: bytes) -> bool:
    return data != b"\x00"


_dec_int = _i32


def _dec_long(data: bytes) -> int:
    # A column promoted int -> long keeps the 4-byte bounds its old files were written with.
    if len(data) == 4:
        return _i32(data)
    return _i64(data)


_dec_float = _f32


def _dec_double(data: bytes) -> float:
    # float -> double promotion leaves 4-byte bounds in older files.
    if len(data) == 4:
        return _f32(data)
    return _f64(data)


def _dec_timestamp(data: bytes) -> int:
    # v3 allows date -> timestamp promotion: old bounds are 4-byte day counts.
    if len(data) == 4:
        return _i32(data) * _MICROS_PER_DAY
    return _i64(data)


def _dec_timestamp_ns(data: bytes) -> int:
    if len(data) == 4:
        return _i32(data) * _NANOS_PER_DAY
    return _i64(data)


def _dec_string(data: bytes) -> str:
    return data.decode("utf-8")


def _dec_uuid(data: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=bytes(data))


def _dec_bytes(data: bytes) -> bytes:
    return bytes(data)


def _decimal_decoder(scale: int) -> Decoder:
    def dec(data: bytes) -> Decimal:
        unscaled = int.from_bytes(data, "big", signed=True)
        return Decimal(unscaled).scaleb(-scale, _DEC_CTX)

    return dec


# -- encoders ---------------------------------------------------------------------------------------
def _enc_bool(value: Any) -> bytes:
    return b"\x01" if value else b"\x00"


def _enc_int(value: Any) -> bytes:
    return _I32.pack(value)


def _enc_long(value: Any) -> bytes:
    return _I64.pack(value)


def _enc_float(value: Any) -> bytes:
    return _F32.pack(value)


def _enc_double(value: Any) -> bytes:
    return _F64.pack(value)


def _enc_string(value: Any) -> bytes:
    text: str = value
    return text.encode("utf-8")


def _enc_uuid(value: Any) -> bytes:
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    return uuid.UUID(str(value)).bytes


def _enc_bytes(value: Any) -> bytes:
    return bytes(value)


def _fixed_encoder(length: int) -> Encoder:
    def enc(value: Any) -> bytes:
        if len(value) != length:
            raise ValidationError(f"fixed[{length}] value has {len(value)} bytes: {bytes(value)!r}")
        return bytes(value)

    return enc


def unscaled_decimal(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``; raises if the value has more fractional digits."""
    scaled = Decimal(value).scaleb(scale, _DEC_CTX)
    unscaled = int(scaled)
    if scaled != unscaled:
        raise ValidationError(f"decimal value {value} does not fit scale {scale}")
    return unscaled


def _decimal_encoder(scale: int) -> Encoder:
    def enc(value: Any) -> bytes:
        unscaled = unscaled_decimal(value, scale)
        # Minimal two's-complement length: one sign bit beyond the magnitude's bits.
        length = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8) + 1
        return unscaled.to_bytes(length, "big", signed=True)

    return enc


_DECODERS: dict[type, Decoder] = {
    BooleanType: _dec_bool,
    IntegerType: _dec_int,
    LongType: _dec_long,
    FloatType: _dec_float,
    DoubleType: _dec_double,
    DateType: _dec_int,
    TimeType: _dec_long,
    TimestampType: _dec_timestamp,
    TimestamptzType: _dec_timestamp,
    TimestampNanoType: _dec_timestamp_ns,
    TimestamptzNanoType: _dec_timestamp_ns,
    StringType: _dec_string,
    UUIDType: _dec_uuid,
    BinaryType: _dec_bytes,
    FixedType: _dec_bytes,
}

_ENCODERS: dict[type, Encoder] = {
    BooleanType: _enc_bool,
    IntegerType: _enc_int,
    LongType: _enc_long,
    FloatType: _enc_float,
    DoubleType: _enc_double,
    DateType: _enc_int,
    TimeType: _enc_long,
    TimestampType: _enc_long,
    TimestamptzType: _enc_long,
    TimestampNanoType: _enc_long,
    TimestamptzNanoType: _enc_long,
    StringType: _enc_string,
    UUIDType: _enc_uuid,
    BinaryType: _enc_bytes,
}


def decoder_for(iceberg_type: IcebergType) -> Decoder:
    """A function decoding single-value bytes of ``iceberg_type`` (hoist it out of per-row loops).

    Raises:
        UnsupportedError: the type has no single-value form (nested, variant, geometry ...).
    """
    if isinstance(iceberg_type, DecimalType):
        return _decimal_decoder(iceberg_type.scale)
    fn = _DECODERS.get(type(iceberg_type))
    if fn is None:
        raise UnsupportedError(f"no single-value serialization for type {iceberg_type}")
    return fn


def encoder_for(iceberg_type: IcebergType) -> Encoder:
    """A function encoding a value of ``iceberg_type`` to single-value bytes.

    Raises:
        UnsupportedError: the type has no single-value form.
    """
    if isinstance(iceberg_type, DecimalType):
        return _decimal_encoder(iceberg_type.scale)
    if isinstance(iceberg_type, FixedType):
        return _fixed_encoder(iceberg_type.length)
    fn = _ENCODERS.get(type(iceberg_type))
    if fn is None:
        raise UnsupportedError(f"no single-value serialization for type {iceberg_type}")
    return fn


def to_bytes(iceberg_type: IcebergType, value: Any) -> bytes:
    """Serialize one value of ``iceberg_type`` (spec Appendix D).

    Args:
        iceberg_type: a primitive Iceberg type.
        value: the value in Floe's representation.

    Returns:
        The single-value bytes.

    Raises:
        UnsupportedError: the type has no single-value form.
        ValidationError: the value does not fit the type.
    """
    try:
        return encoder_for(iceberg_type)(value)
    except (struct.error, AttributeError, TypeError, OverflowError) as exc:
        raise ValidationError(f"cannot serialize {value!r} as {iceberg_type}: {exc}") from exc


def from_bytes(iceberg_type: IcebergType, data: bytes) -> Any:
    """Deserialize single-value bytes of ``iceberg_type`` (robust to promoted int/float/date bounds).

    Raises:
        UnsupportedError: the type has no single-value form.
        InvalidMetadataError: the bytes are not a valid value of the type.
    """
    try:
        return decoder_for(iceberg_type)(data)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidMetadataError(
            f"invalid {iceberg_type} single-value bytes {bytes(data)!r}: {exc}"
        ) from exc


def decode_bounds(bounds: dict[int, bytes] | None, schema: Schema) -> dict[int, Any]:
    """Decode a data file's raw bounds (``DataFile.lower_bounds``/``upper_bounds``) with the column types of
    ``schema`` (field id -> value).

    Columns no longer in the schema, and types without a single-value form, are left out.
    """
    if not bounds:
        return {}
    out: dict[int, Any] = {}
    for field_id, raw in bounds.items():
        field = schema.find_field_or_none(field_id)
        if field is None or not field.field_type.is_primitive:
            continue
        try:
            decode = decoder_for(field.field_type)
        except UnsupportedError:
            continue
        out[field_id] = decode(raw)
    return out
