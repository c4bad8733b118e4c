"""Render partition values as Iceberg Java prints them in paths and partition summaries.

Java renders identity/truncate values with ``DateTimeFormatter.ISO_LOCAL_*`` (dates ``2021-12-01``,
times ``10:00:00`` or ``10:00:00.5``, timestamps ``2021-12-01T10:00:00``, zoned ones with ``+00:00``),
binary as standard base64, floating point with ``Float/Double.toString`` and decimals with
``BigDecimal.toString``. Matching that keeps data-file paths and ``partitions`` tables familiar.
"""

from __future__ import annotations

import base64
import math
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from floe.spec.transforms._calendar import MICROS_PER_DAY, civil_from_days
from floe.spec.transforms._decimal import decimal_from_unscaled, unscaled_of
from floe.spec.transforms._lazy import LazyModule
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")

__all__ = [
    "human_hour",
    "human_month",
    "human_value",
    "human_year",
    "iso_date",
    "iso_time_of_day",
    "java_float_string",
    "java_year",
]

_NANOS_PER_DAY = MICROS_PER_DAY * 1000


def java_year(year: int) -> str:
    """Year as ``ISO_LOCAL_DATE`` prints it: 4+ digits, ``+`` above 9999, ``-`` before year 0."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def iso_date(days: int) -> str:
    """``yyyy-MM-dd`` for days since 1970-01-01."""
    y, m, d = civil_from_days(days)
    return f"{java_year(int(y))}-{int(m):02d}-{int(d):02d}"


def iso_time_of_day(nanos_of_day: int) -> str:
    """``HH:mm:ss[.fraction]`` with trailing fraction zeros removed (``ISO_LOCAL_TIME``)."""
    secs, frac = divmod(nanos_of_day, 1_000_000_000)
    h, rem = divmod(secs, 3600)
    mi, s = divmod(rem, 60)
    text = f"{h:02d}:{mi:02d}:{s:02d}"
    if frac:
        text += "." + f"{frac:09d}".rstrip("0")
    return text


def _iso_timestamp_nanos(nanos: int) -> str:
    days, nod = divmod(nanos, _NANOS_PER_DAY)
    return f"{iso_date(days)}T{iso_time_of_day(nod)}"


def java_float_string(value: float, *, single: bool) -> str:
    """``Float.toString`` / ``Double.toString`` (shortest round-trip digits, ``1.0E10`` style)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    num = np.float32(value) if single else np.float64(value)
    mantissa, exp_text = np.format_float_scientific(num, unique=True, trim="-").split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    exp = int(exp_text)
    if 1e-3 <= abs(float(num)) < 1e7:
        point = exp + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        return f"{sign}{whole}.{digits[point:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _decimal_string(value: Decimal, scale: int) -> str:
    # BigDecimal.toString of the value at the column's scale (same rules as Python's to-sci-string).
    return str(decimal_from_unscaled(unscaled_of(value, scale), scale))


def human_value(source_type: IcebergType, value: Any) -> str:
    """A value of ``source_type`` (Floe's representation) as Iceberg Java prints it."""
    if value is None or isinstance(source_type, UnknownType):
        return "null"
    if isinstance(source_type, BooleanType):
        return "true" if value else "false"
    if isinstance(source_type, DateType):
        return iso_date(int(value))
    if isinstance(source_type, TimeType):
        return iso_time_of_day(int(value) * 1000)
    if isinstance(source_type, TimestampType):
        return _iso_timestamp_nanos(int(value) * 1000)
    if isinstance(source_type, TimestamptzType):
        return _iso_timestamp_nanos(int(value) * 1000) + "+00:00"
    if isinstance(source_type, TimestampNanoType):
        return _iso_timestamp_nanos(int(value))
    if isinstance(source_type, TimestamptzNanoType):
        return _iso_timestamp_nanos(int(value)) + "+00:00"
    if isinstance(source_type, (FixedType, BinaryType)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(source_type, FloatType):
        return java_float_string(float(value), single=True)
    if isinstance(source_type, DoubleType):
        return java_float_string(float(value), single=False)
    if isinstance(source_type, DecimalType):
        return _decimal_string(Decimal(value), source_type.scale)
    if isinstance(source_type, UUIDType):
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
    return str(value)


def human_year(years: int) -> str:
    """``2021`` for years since 1970."""
    return f"{1970 + years:04d}"


def human_month(months: int) -> str:
    """``2021-12`` for months since 1970-01."""
    y, m = divmod(months, 12)
    return f"{1970 + y:04d}-{m + 1:02d}"


def human_hour(hours: int) -> str:
    """``2021-12-01-10`` for hours since 1970-01-01 00:00."""
    days, hour = divmod(hours, 24)
    y, m, d = civil_from_days(days)
    return f"{int(y):04d}-{int(m):02d}-{int(d):02d}-{hour:02d}"
