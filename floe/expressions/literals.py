"""Literal conversion: user values -> Floe's value representation of a column type (see transforms/base.py).

Follows Iceberg's literal conversion rules: a value that cannot represent the column type is an error
naming the column, type and value; an integer or float beyond the column type's range converts to the
``ABOVE_MAX`` / ``BELOW_MIN`` markers so binding can fold the predicate to AlwaysTrue / AlwaysFalse, as
Iceberg Java does.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation

from floe.errors import ValidationError
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

__all__ = [
    "ABOVE_MAX",
    "BELOW_MIN",
    "OutOfRange",
    "convert_default",
    "convert_literal",
    "days_to_date",
    "format_literal",
    "micros_to_datetime",
]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_FLOAT_MAX = 3.4028234663852886e38
_TS = re.compile(
    r"^(?P<date>[+-]?\d{4,}-\d{2}-\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?)?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2}(?::?\d{2})?)?$"
)
_TIME = re.compile(r"^(?P<h>\d{2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,6}))?)?$")


class OutOfRange:
    """Marker for a literal beyond the column type's range (``ABOVE_MAX`` or ``BELOW_MIN``)."""

    __slots__ = ("above",)

    def __init__(self, above: bool) -> None:
        self.above = above

    def __repr__(self) -> str:
        return "ABOVE_MAX" if self.above else "BELOW_MIN"


ABOVE_MAX = OutOfRange(True)
BELOW_MIN = OutOfRange(False)


def _fail(value: object, t: IcebergType, column: str, why: str = "") -> ValidationError:
    extra = f": {why}" if why else ""
    return ValidationError(f"Invalid literal {value!r} for column {column!r} of type {t}{extra}")


def _ranged(v: int, bounds: tuple[int, int]) -> int | OutOfRange:
    if v > bounds[1]:
        return ABOVE_MAX
    if v < bounds[0]:
        return BELOW_MIN
    return v


def _to_int(value: object, t: IcebergType, column: str) -> int:
    if isinstance(value, bool):
        raise _fail(value, t, column)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    if isinstance(value, (float, Decimal)) and math.isfinite(value) and value == int(value):
        return int(value)
    raise _fail(value, t, column, "not an integer")


def _to_float(value: object, t: IcebergType, column: str) -> float:
    if isinstance(value, bool):
        raise _fail(value, t, column)
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _fail(value, t, column, "not a number")


def _to_decimal(value: object, t: DecimalType, column: str) -> Decimal | OutOfRange:
    if isinstance(value, bool):
        raise _fail(value, t, column)
    try:
        if isinstance(value, float):
            d = Decimal(repr(value))
        elif isinstance(value, (int, Decimal, str)):
            d = Decimal(value.strip() if isinstance(value, str) else value)
        else:
            raise _fail(value, t, column)
    except InvalidOperation:
        raise _fail(value, t, column, "not a decimal number") from None
    if not d.is_finite():
        raise _fail(value, t, column, "not a finite decimal")
    quantum = Decimal(1).scaleb(-t.scale)
    q = d.quantize(quantum) if d.adjusted() < 60 else d
    if q != d:
        raise _fail(value, t, column, f"has more than {t.scale} digits after the point")
    unscaled = int(q.scaleb(t.scale))
    limit = 10**t.precision - 1
    if unscaled > limit:
        return ABOVE_MAX
    if unscaled < -limit:
        return BELOW_MIN
    return q


def _parse_ts(value: str, t: IcebergType, column: str, *, nanos: bool, zoned: bool) -> int:
    m = _TS.match(value.strip())
    if m is None:
        raise _fail(value, t, column, "expected an ISO-8601 timestamp like 2021-12-01T10:00:00")
    try:
        day = dt.date.fromisoformat(m.group("date"))
    except ValueError:
        raise _fail(value, t, column, "invalid date") from None
    h, mi, s = int(m.group("h") or 0), int(m.group("m") or 0), int(m.group("s") or 0)
    if h > 23 or mi > 59 or s > 59:
        raise _fail(value, t, column, "invalid time of day")
    frac = (m.group("f") or "").ljust(9, "0")
    if not nanos and int(frac[6:]) != 0:
        raise _fail(value, t, column, "more than microsecond precision")
    tz = m.group("tz")
    offset_s = 0
    if tz is not None:
        if not zoned:
            raise _fail(value, t, column, "timestamp without time zone cannot take a zone offset")
        if tz != "Z":
            digits = tz[1:].replace(":", "")
            offset_s = int(digits[:2]) * 3600 + int(digits[2:4]) * 60 + int(digits[4:6] or 0)
            offset_s = -offset_s if tz[0] == "-" else offset_s
    seconds = (day - _EPOCH_DATE).days * 86400 + h * 3600 + mi * 60 + s - offset_s
    return seconds * 1_000_000_000 + int(frac) if nanos else seconds * 1_000_000 + int(frac[:6])


def _datetime_units(value: dt.datetime, t: IcebergType, column: str, *, nanos: bool, zoned: bool) -> int:
    if value.tzinfo is not None:
        if not zoned:
            raise _fail(value, t, column, "timestamp without time zone cannot take an aware datetime")
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = value - _EPOCH
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros * 1000 if nanos else micros


def _to_timestamp(value: object, t: IcebergType, column: str) -> int | OutOfRange:
    nanos = isinstance(t, (TimestampNanoType, TimestamptzNanoType))
    zoned = isinstance(t, (TimestamptzType, TimestamptzNanoType))
    if isinstance(value, str):
        return _parse_ts(value, t, column, nanos=nanos, zoned=zoned)
    if isinstance(value, dt.datetime):
        return _datetime_units(value, t, column, nanos=nanos, zoned=zoned)
    if isinstance(value, dt.date):
        days = (value - _EPOCH_DATE).days
        return days * 86_400_000_000_000 if nanos else days * 86_400_000_000
    return _ranged(_to_int(value, t, column), _LONG_RANGE)


def _to_date(value: object, t: IcebergType, column: str) -> int:
    if isinstance(value, dt.datetime):
        raise _fail(value, t, column, "a datetime is not a date")
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, str):
        try:
            return (dt.date.fromisoformat(value.strip()) - _EPOCH_DATE).days
        except ValueError:
            raise _fail(value, t, column, "expected an ISO date like 2021-12-01") from None
    return _to_int(value, t, column)


def _to_time(value: object, t: IcebergType, column: str) -> int:
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if isinstance(value, str):
        m = _TIME.match(value.strip())
        if m is None or int(m.group("h")) > 23 or int(m.group("m")) > 59 or int(m.group("s") or 0) > 59:
            raise _fail(value, t, column, "expected a time like 10:15:30")
        secs = int(m.group("h")) * 3600 + int(m.group("m")) * 60 + int(m.group("s") or 0)
        return secs * 1_000_000 + int((m.group("f") or "").ljust(6, "0"))
    micros = _to_int(value, t, column)
    if not 0 <= micros < 86_400_000_000:
        raise _fail(value, t, column, "time of day out of range")
    return micros


def _to_bytes(value: object, t: IcebergType, column: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        out = bytes(value)
    else:
        raise _fail(value, t, column, "expected bytes")
    if isinstance(t, FixedType) and len(out) != t.length:
        raise _fail(value, t, column, f"expected exactly {t.length} bytes, got {len(out)}")
    return out


def _to_uuid(value: object, t: IcebergType, column: str) -> uuid.UUID:
    try:
        if isinstance(value, uuid.UUID):
            return value
        if isinstance(value, str):
            return uuid.UUID(value.strip())
        if isinstance(value, (bytes, bytearray)) and len(value) == 16:
            return uuid.UUID(bytes=bytes(value))
    except ValueError:
        pass
    raise _fail(value, t, column, "not a UUID")


def convert_literal(value: object, iceberg_type: IcebergType, *, column: str) -> object:
    """Convert a user value to ``iceberg_type``'s value representation.

    Args:
        value: a Python value (str, int, float, Decimal, date, datetime, time, UUID, bytes, bool).
        iceberg_type: the column's type.
        column: the column name, used in error messages.

    Returns:
        The converted value, or ``ABOVE_MAX`` / ``BELOW_MIN`` for a number beyond the type's range.

    Raises:
        ValidationError: the value cannot represent the type (message names column, type and value).
    """
    t = iceberg_type
    if value is None:
        raise _fail(value, t, column, "null is not a literal; use is_null / not_null")
    if isinstance(t, BooleanType):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _fail(value, t, column)
    if isinstance(t, IntegerType):
        return _ranged(_to_int(value, t, column), _INT_RANGE)
    if isinstance(t, LongType):
        return _ranged(_to_int(value, t, column), _LONG_RANGE)
    if isinstance(t, FloatType):
        f = _to_float(value, t, column)
        if math.isnan(f):
            return f
        if f > _FLOAT_MAX and not math.isinf(f):
            return ABOVE_MAX
        if f < -_FLOAT_MAX and not math.isinf(f):
            return BELOW_MIN
        # compare as the column does: a float column holds float32 values (Java casts the literal too)
        return struct.unpack("<f", struct.pack("<f", f))[0]
    if isinstance(t, DoubleType):
        return _to_float(value, t, column)
    if isinstance(t, DecimalType):
        return _to_decimal(value, t, column)
    if isinstance(t, DateType):
        return _to_date(value, t, column)
    if isinstance(t, TimeType):
        return _to_time(value, t, column)
    if isinstance(t, (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)):
        return _to_timestamp(value, t, column)
    if isinstance(t, StringType):
        if isinstance(value, str):
            return value
        raise _fail(value, t, column, "expected a string")
    if isinstance(t, UUIDType):
        return _to_uuid(value, t, column)
    if isinstance(t, (FixedType, BinaryType)):
        return _to_bytes(value, t, column)
    raise _fail(value, t, column, "predicates on this type are not supported")


def convert_default(value: object, iceberg_type: IcebergType, *, column: str) -> object:
    """A column default (v3 ``initial-default`` / ``write-default``) in Floe's value representation.

    Unlike a predicate literal, a default must hold in the column: out-of-range numbers are refused, and so
    are nested types (Floe writes primitive defaults only). ``None`` means "no default".

    Raises:
        ValidationError: the value does not fit the type (one line naming column, value and type).
    """
    if value is None:
        return None
    if not iceberg_type.is_primitive:
        raise ValidationError(
            f"Column {column!r}: DEFAULT {value!r} is not supported for type {iceberg_type} (primitive types only)"
        )
    try:
        out = convert_literal(value, iceberg_type, column=column)
    except ValidationError as e:
        raise ValidationError(f"Column {column!r}: DEFAULT {value!r} does not fit type {iceberg_type}") from e
    if isinstance(out, OutOfRange) or (isinstance(out, float) and math.isinf(out) and not isinstance(value, float)):
        raise ValidationError(f"Column {column!r}: DEFAULT {value!r} is out of range for type {iceberg_type}")
    return out


def days_to_date(days: int) -> dt.date:
    """A date from days since 1970-01-01."""
    return _EPOCH_DATE + dt.timedelta(days=days)


def micros_to_datetime(micros: int) -> dt.datetime:
    """A naive datetime from microseconds since the epoch."""
    return _EPOCH + dt.timedelta(microseconds=micros)


def _iso_ts(units: int, per_second: int, zoned: bool) -> str:
    secs, frac = divmod(units, per_second)
    text = (_EPOCH + dt.timedelta(seconds=secs)).isoformat()
    if frac:
        digits = 6 if per_second == 1_000_000 else 9
        text += "." + str(frac).rjust(digits, "0").rstrip("0")
    return text + ("+00:00" if zoned else "")


def format_literal(value: object, iceberg_type: IcebergType) -> str:
    """A value as a readable literal: ``'2021-12-01'`` for dates, ``X'0102'`` for bytes, ``5`` for ints."""
    t = iceberg_type
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(t, DateType) and isinstance(value, int):
        return f"'{days_to_date(value).isoformat()}'"
    if isinstance(t, TimeType) and isinstance(value, int):
        secs, frac = divmod(value, 1_000_000)
        text = (dt.datetime.min + dt.timedelta(seconds=secs)).time().isoformat()
        return f"'{text}.{frac:06d}'" if frac else f"'{text}'"
    if isinstance(t, (TimestampType, TimestamptzType)) and isinstance(value, int):
        return f"'{_iso_ts(value, 1_000_000, isinstance(t, TimestamptzType))}'"
    if isinstance(t, (TimestampNanoType, TimestamptzNanoType)) and isinstance(value, int):
        return f"'{_iso_ts(value, 1_000_000_000, isinstance(t, TimestamptzNanoType))}'"
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(value, (str, uuid.UUID)):
        return "'" + str(value).replace("'", "''") + "'"
    if isinstance(value, (dt.date, dt.time)):
        return f"'{value.isoformat()}'"
    return str(value)
