"""The ``truncate[W]`` transform (spec "Truncate Transform Details").

Integers use ``v - (((v % W) + W) % W)`` with Java's truncated ``%`` and two's-complement wrapping of
``int``/``long`` arithmetic, so values near the type's minimum truncate exactly as Iceberg Java does.
Decimals truncate the unscaled value (no overflow), strings by code points, binary by bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from floe.errors import ValidationError
from floe.spec.transforms._arrow import as_array, from_numpy, int64_values, validity
from floe.spec.transforms._decimal import decimal_from_unscaled, unscaled_of
from floe.spec.transforms._human import human_value
from floe.spec.transforms._lazy import LazyModule
from floe.spec.transforms.base import Transform
from floe.spec.types import BinaryType, DecimalType, IcebergType, IntegerType, LongType, StringType

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    np = LazyModule("numpy")
    pa = LazyModule("pyarrow")
    pc = LazyModule("pyarrow.compute")

__all__ = ["TruncateTransform"]

_INT_MAX = (1 << 31) - 1


def _wrap(value: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


def _java_rem(a: int, b: int) -> int:
    # Java's % truncates toward zero: the remainder takes the dividend's sign.
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _truncate_java_int(value: int, width: int, bits: int) -> int:
    rem = _java_rem(_wrap(_java_rem(value, width) + width, bits), width)
    return _wrap(value - rem, bits)


def _truncate_decimal_arrow(arr: pa.Array, width: int, target: pa.DataType) -> pa.Array:
    """Floor-truncate decimal128 unscaled values to multiples of ``width`` with 128-bit numpy arithmetic."""
    n = len(arr)
    if not pa.types.is_decimal128(arr.type):
        arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale))
    words = np.frombuffer(arr.buffers()[1], dtype="<u8")[arr.offset * 2 : (arr.offset + n) * 2].reshape(n, 2)
    lo = words[:, 0].copy()
    hi = words[:, 1].view(np.int64)
    w = np.uint64(width)
    # v = hi * 2^64 + lo, so floor(v mod W) = ((hi mod W) * (2^64 mod W) + lo mod W) mod W; every
    # product stays below 2^62 because W < 2^31.
    rem = (np.mod(hi, np.int64(width)).astype(np.uint64) * np.uint64((1 << 64) % width) + lo % w) % w
    borrow = (lo < rem).astype(np.int64)
    out = np.empty((n, 2), dtype="<u8")
    out[:, 0] = lo - rem
    out[:, 1] = (hi - borrow).view(np.uint64)
    valid = validity(arr)
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    nulls = 0 if valid is None else int(n - valid.sum())
    return pa.Array.from_buffers(target, n, [bitmap, pa.py_buffer(out.tobytes())], null_count=nulls)


class TruncateTransform(Transform):
    """``truncate[W]``: numbers down to a multiple of W, strings to W code points, binary to W bytes."""

    def __init__(self, width: int) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or not 0 < width <= _INT_MAX:
            raise ValidationError(f"Invalid truncate width: {width!r} (must be a positive 32-bit int)")
        self._width = width

    @property
    def width(self) -> int:
        return self._width

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, (IntegerType, LongType, DecimalType, StringType, BinaryType))

    def result_type(self, source_type: IcebergType) -> IcebergType:
        if not self.can_transform(source_type):
            raise ValidationError(f"Cannot truncate type {source_type}")
        return source_type

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        if value is None:
            return None
        w = self._width
        if isinstance(source_type, IntegerType):
            return _truncate_java_int(int(value), w, 32)
        if isinstance(source_type, LongType):
            return _truncate_java_int(int(value), w, 64)
        if isinstance(source_type, DecimalType):
            unscaled = unscaled_of(value, source_type.scale)
            return decimal_from_unscaled(unscaled - unscaled % w, source_type.scale)
        if isinstance(source_type, StringType):
            return str(value)[:w]
        if isinstance(source_type, BinaryType):
            return bytes(value)[:w]
        raise ValidationError(f"Cannot truncate type {source_type}")

    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        arr = as_array(values)
        w = self._width
        if isinstance(source_type, (IntegerType, LongType)):
            dtype: type[np.integer[Any]] = np.int32 if isinstance(source_type, IntegerType) else np.int64
            v: npt.NDArray[Any] = int64_values(arr, source_type).astype(dtype)
            wd = dtype(w)
            # numpy integer arrays wrap like Java's int/long; np.fmod is Java's truncated remainder.
            rem = np.fmod(np.fmod(v, wd) + wd, wd)
            return from_numpy(v - rem, validity(arr), pa.int32() if dtype is np.int32 else pa.int64())
        if isinstance(source_type, DecimalType):
            return _truncate_decimal_arrow(arr, w, pa.decimal128(source_type.precision, source_type.scale))
        if isinstance(source_type, StringType):
            return pc.utf8_slice_codeunits(arr, 0, w)
        if isinstance(source_type, BinaryType):
            return pc.binary_slice(arr, 0, w)
        raise ValidationError(f"Cannot truncate type {source_type}")

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform, *, source_type: IcebergType | None = None) -> bool:
        if self == other:
            return True
        if not isinstance(other, TruncateTransform) or source_type is None:
            return False
        if isinstance(source_type, (StringType, BinaryType)):
            # Equal longer prefixes imply equal shorter prefixes.
            return self._width >= other._width
        # Equal multiples of W imply equal multiples of any multiple of W.
        return other._width % self._width == 0

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return human_value(result_type, value)

    def __str__(self) -> str:
        return f"truncate[{self._width}]"
