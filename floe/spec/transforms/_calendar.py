"""Proleptic Gregorian calendar arithmetic on day counts, for Python ints and numpy int64 arrays alike.

Written with ``//`` and ``%`` only (floor semantics in both Python and numpy), so the scalar and the
vectorized transforms share one implementation and agree on every value, including years before 1970
and far outside ``datetime``'s 1..9999 range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "MICROS_PER_DAY",
    "MICROS_PER_HOUR",
    "MICROS_PER_SECOND",
    "NANOS_PER_MICRO",
    "civil_from_days",
    "days_from_civil",
    "months_from_days",
    "wrap_int32",
    "years_from_days",
]

MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
NANOS_PER_MICRO = 1_000

# A string constraint: numpy is imported only by callers that pass arrays.
IntLike = TypeVar("IntLike", int, "npt.NDArray[np.int64]")


def civil_from_days(days: IntLike) -> tuple[IntLike, IntLike, IntLike]:
    """(year, month 1-12, day 1-31) of a count of days since 1970-01-01 (H. Hinnant's algorithm)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 - 12 * (mp >= 10)
    year = yoe + era * 400 + (month <= 2)
    return year, month, day


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (inverse of ``civil_from_days``)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def years_from_days(days: IntLike) -> IntLike:
    """Whole years from 1970 (negative before 1970) of a day count."""
    year, _, _ = civil_from_days(days)
    return year - 1970


def months_from_days(days: IntLike) -> IntLike:
    """Whole months from 1970-01 of a day count."""
    year, month, _ = civil_from_days(days)
    return (year - 1970) * 12 + (month - 1)


def wrap_int32(value: int) -> int:
    """Java's ``(int)`` narrowing of a long: keep the low 32 bits, two's complement."""
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
