"""The ``bucket[N]`` transform (spec "Bucket Transform Details" and Appendix B hashing)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import mmh3

from floe.errors import ValidationError
from floe.spec.transforms._arrow import as_array, from_numpy, int64_values, validity
from floe.spec.transforms._decimal import unscaled_of
from floe.spec.transforms._lazy import LazyModule
from floe.spec.transforms.base import Transform
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

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from floe.spec.transforms import _murmur
else:
    np = LazyModule("numpy")
    pa = LazyModule("pyarrow")
    _murmur = LazyModule("floe.spec.transforms._murmur")  # numpy constants at import

__all__ = ["BucketTransform", "hash_value"]

_LONG_LIKE = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)
_NANO = (TimestampNanoType, TimestamptzNanoType)
_BYTES_LIKE = (StringType, UUIDType, FixedType, BinaryType)
_BUCKETABLE = _LONG_LIKE + _NANO + _BYTES_LIKE + (DecimalType,)


def _min_big_endian(unscaled: int) -> bytes:
    # Java BigInteger.toByteArray: the fewest two's-complement bytes that hold the value (sign included).
    size = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
    return unscaled.to_bytes(size, "big", signed=True)


def _long_bytes(value: int) -> bytes:
    return int(value).to_bytes(8, "little", signed=True)


def hash_value(source_type: IcebergType, value: Any) -> int:
    """The spec's 32-bit Murmur3 hash (signed) of one non-null value of ``source_type`` (Appendix B).

    Raises:
        ValidationError: the type is not hashable for bucketing (float, double, boolean, nested...).
    """
    if isinstance(source_type, _LONG_LIKE):
        return mmh3.hash(_long_bytes(value), 0)
    if isinstance(source_type, _NANO):
        # Appendix B note 3: nanosecond timestamps hash as their (floored) microsecond value.
        return mmh3.hash(_long_bytes(int(value) // 1000), 0)
    if isinstance(source_type, DecimalType):
        unscaled = unscaled_of(value, source_type.scale)
        return mmh3.hash(_min_big_endian(unscaled), 0)
    if isinstance(source_type, StringType):
        return mmh3.hash(str(value).encode("utf-8"), 0)
    if isinstance(source_type, UUIDType):
        raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
        return mmh3.hash(raw, 0)
    if isinstance(source_type, (FixedType, BinaryType)):
        return mmh3.hash(bytes(value), 0)
    raise ValidationError(f"Cannot hash values of type {source_type} for bucketing")


def _decimal_hashes(arr: pa.Array) -> npt.NDArray[np.int32]:
    """Hash decimal128 values by the minimal big-endian bytes of their unscaled integers, vectorized."""
    n = len(arr)
    t = arr.type
    if not pa.types.is_decimal128(t):
        arr = arr.cast(pa.decimal128(t.precision, t.scale))
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8)[arr.offset * 16 : (arr.offset + n) * 16].reshape(n, 16)
    be = raw[:, ::-1]  # Arrow stores little-endian two's complement; the spec hashes big-endian
    negative = be[:, 0] >= 0x80
    sign_byte = np.where(negative, 0xFF, 0x00).astype(np.uint8)
    # A leading byte is redundant when it is pure sign and the next byte still carries the same sign bit.
    redundant = (be[:, :-1] == sign_byte[:, None]) & ((be[:, 1:] >= 0x80) == negative[:, None])
    drop = np.logical_and.accumulate(redundant, axis=1).sum(axis=1)
    lengths = 16 - drop
    out = np.empty(n, dtype=np.int32)
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        out[rows] = _murmur.murmur3_rows(np.ascontiguousarray(be[rows, 16 - length :]))
    return out


class BucketTransform(Transform):
    """``bucket[N]``: ``(murmur3_x86_32(v) & Integer.MAX_VALUE) % N``."""

    def __init__(self, num_buckets: int) -> None:
        if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets <= 0:
            raise ValidationError(f"Invalid number of buckets: {num_buckets!r} (must be a positive int)")
        self._num_buckets = num_buckets

    @property
    def num_buckets(self) -> int:
        return self._num_buckets

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, _BUCKETABLE)

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return IntegerType()

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        if value is None:
            return None
        return (hash_value(source_type, value) & 0x7FFFFFFF) % self._num_buckets

    def hashes_arrow(
        self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray
    ) -> npt.NDArray[np.int32]:
        """The spec hash of every value (nulls give an arbitrary hash; mask them with the validity)."""
        arr = as_array(values)
        if isinstance(source_type, _LONG_LIKE):
            return _murmur.murmur3_longs(int64_values(arr, source_type))
        if isinstance(source_type, _NANO):
            return _murmur.murmur3_longs(int64_values(arr, source_type) // 1000)
        if isinstance(source_type, DecimalType):
            return _decimal_hashes(arr)
        if isinstance(source_type, _BYTES_LIKE):
            return _murmur.murmur3_binary_array(arr)
        raise ValidationError(f"Cannot hash values of type {source_type} for bucketing")

    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        arr = as_array(values)
        hashes = self.hashes_arrow(source_type, arr)
        buckets = ((hashes.astype(np.int64) & 0x7FFFFFFF) % self._num_buckets).astype(np.int32)
        return from_numpy(buckets, validity(arr), pa.int32())

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else str(value)

    def __str__(self) -> str:
        return f"bucket[{self._num_buckets}]"
