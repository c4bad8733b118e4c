"""Arrow <-> numpy plumbing shared by the vectorized transforms (nulls travel as a validity mask)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.spec.transforms._lazy import LazyModule
from floe.spec.types import (
    DateType,
    IcebergType,
    TimestampNanoType,
    TimestamptzNanoType,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
else:
    np = LazyModule("numpy")
    pa = LazyModule("pyarrow")

__all__ = ["arrow_result_type", "as_array", "from_numpy", "int64_values", "validity"]

_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array (chunks combined, extension types unwrapped to their storage)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()  # Parquet readers may hand back dictionary-encoded columns
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.large_string())
    elif pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())
    return values


def validity(arr: pa.Array) -> npt.NDArray[np.bool_] | None:
    """True where the value is present; None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _source_unit_nanos(source_type: IcebergType) -> int:
    return 1 if isinstance(source_type, (TimestampNanoType, TimestamptzNanoType)) else 1_000


def int64_values(arr: pa.Array, source_type: IcebergType) -> npt.NDArray[np.int64]:
    """The column as int64 in Floe's representation for ``source_type`` (nulls read as 0).

    Integer arrays are taken as already in that representation; date32/time/timestamp arrays are
    converted (a ``timestamp[ms]`` array for a ``timestamp`` column becomes microseconds).
    """
    t = arr.type
    if pa.types.is_timestamp(t):
        raw = arr.cast(pa.int64())
        have, want = _UNIT_NANOS[t.unit], _source_unit_nanos(source_type)
        out = _np_int64(raw)
        if have > want:
            out = out * (have // want)
        elif have < want:
            out = out // (want // have)
        return out
    if pa.types.is_time(t):
        out = _np_int64(arr.cast(pa.int32() if pa.types.is_time32(t) else pa.int64()))
        have = _UNIT_NANOS[t.unit]
        return out * (have // 1_000) if have >= 1_000 else out // (1_000 // have)
    if pa.types.is_date32(t):
        return _np_int64(arr.cast(pa.int32()))
    if pa.types.is_date64(t):
        return _np_int64(arr.cast(pa.int64())) // 86_400_000
    if pa.types.is_integer(t):
        return _np_int64(arr)
    raise ValidationError(f"Cannot read Arrow {t} as {source_type} values")


def _np_int64(arr: pa.Array) -> npt.NDArray[np.int64]:
    if arr.null_count:
        arr = arr.fill_null(0)
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)


def from_numpy(
    values: npt.NDArray[np.generic], valid: npt.NDArray[np.bool_] | None, arrow_type: pa.DataType
) -> pa.Array:
    """An Arrow array of ``arrow_type`` from numpy values, null where ``valid`` is False."""
    if pa.types.is_date32(arrow_type):
        return pa.array(
            values.astype(np.int32, copy=False), mask=None if valid is None else ~valid, type=pa.int32()
        ).view(pa.date32())
    mask = None if valid is None else ~valid
    return pa.array(values, mask=mask, type=arrow_type)


def arrow_result_type(result_type: IcebergType) -> pa.DataType:
    """Arrow type of a temporal/bucket transform result (``int`` -> int32, ``date`` -> date32)."""
    return pa.date32() if isinstance(result_type, DateType) else pa.int32()
