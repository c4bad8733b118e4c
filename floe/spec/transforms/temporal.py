"""The ``year``, ``month``, ``day`` and ``hour`` transforms (spec "Partition Transforms").

Results count whole units from 1970-01-01T00:00 and round toward negative infinity (so 1969-12-31T23:59
is in year -1, month -1, day -1, hour -1). Nanosecond timestamps are floored to microseconds first. Like
Iceberg Java, results are narrowed to 32 bits (only ``hour`` of timestamps beyond year 294,000 can wrap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from floe.errors import ValidationError
from floe.spec.transforms._arrow import arrow_result_type, as_array, from_numpy, int64_values, validity
from floe.spec.transforms._calendar import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    months_from_days,
    wrap_int32,
    years_from_days,
)
from floe.spec.transforms._human import human_hour, human_month, human_year, iso_date
from floe.spec.transforms._lazy import LazyModule
from floe.spec.transforms.base import Transform
from floe.spec.types import (
    DateType,
    IcebergType,
    IntegerType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
else:
    np = LazyModule("numpy")

__all__ = ["DayTransform", "HourTransform", "MonthTransform", "TimeTransform", "YearTransform"]

_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_NANOS = (TimestampNanoType, TimestamptzNanoType)


class TimeTransform(Transform):
    """Common base of the temporal transforms; ``granularity`` orders them year < month < day < hour."""

    name: ClassVar[str]
    granularity: ClassVar[int]
    accepts_date: ClassVar[bool] = True

    def can_transform(self, source_type: IcebergType) -> bool:
        if isinstance(source_type, DateType):
            return self.accepts_date
        return isinstance(source_type, _TIMESTAMPS)

    def result_type(self, source_type: IcebergType) -> IcebergType:
        if not self.can_transform(source_type):
            raise ValidationError(f"Cannot apply {self.name} to {source_type}")
        return IntegerType()

    def _check(self, source_type: IcebergType) -> None:
        if not self.can_transform(source_type):
            raise ValidationError(f"Cannot apply {self.name} to {source_type}")

    # Subclasses map days (from a date) or micros (from a timestamp) to their unit; the arithmetic is
    # written with // only, so one body serves Python ints and numpy int64 arrays.
    def _from_days(self, days: Any) -> Any:
        raise ValidationError(f"Cannot apply {self.name} to date")

    def _from_micros(self, micros: Any) -> Any:
        return self._from_days(micros // MICROS_PER_DAY)

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        self._check(source_type)
        if value is None:
            return None
        v = int(value)
        if isinstance(source_type, DateType):
            return wrap_int32(int(self._from_days(v)))
        micros = v // 1000 if isinstance(source_type, _NANOS) else v
        return wrap_int32(int(self._from_micros(micros)))

    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        self._check(source_type)
        arr = as_array(values)
        v = int64_values(arr, source_type)
        if isinstance(source_type, DateType):
            out: npt.NDArray[np.int64] = self._from_days(v)
        else:
            out = self._from_micros(v // 1000 if isinstance(source_type, _NANOS) else v)
        narrowed = np.asarray(out, dtype=np.int64).astype(np.int32)  # wraps like Java's (int)
        return from_numpy(narrowed, validity(arr), arrow_result_type(self.result_type(source_type)))

    @property
    def preserves_order(self) -> bool:
        return True

    @property
    def dedup_name(self) -> str:
        # Two temporal partitions of one column are redundant whatever their granularity.
        return "time"

    def satisfies_order_of(self, other: Transform, *, source_type: IcebergType | None = None) -> bool:
        # Ordered by day means ordered by month and year too (coarser units).
        return isinstance(other, TimeTransform) and other.granularity <= self.granularity

    def __str__(self) -> str:
        return self.name


class YearTransform(TimeTransform):
    """``year``: years from 1970."""

    name = "year"
    granularity = 0

    def _from_days(self, days: Any) -> Any:
        return years_from_days(days)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else human_year(int(value))


class MonthTransform(TimeTransform):
    """``month``: months from 1970-01."""

    name = "month"
    granularity = 1

    def _from_days(self, days: Any) -> Any:
        return months_from_days(days)

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else human_month(int(value))


class DayTransform(TimeTransform):
    """``day``: days from 1970-01-01; the result type is ``date`` as in Iceberg Java."""

    name = "day"
    granularity = 2

    def result_type(self, source_type: IcebergType) -> IcebergType:
        self._check(source_type)
        return DateType()

    def _from_days(self, days: Any) -> Any:
        return days

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else iso_date(int(value))


class HourTransform(TimeTransform):
    """``hour``: hours from 1970-01-01 00:00 (timestamps only)."""

    name = "hour"
    granularity = 3
    accepts_date = False

    def _from_micros(self, micros: Any) -> Any:
        return micros // MICROS_PER_HOUR

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else human_hour(int(value))
