"""Vectorized 32-bit Murmur3 (x86 variant, seed 0) over numpy byte matrices (spec Appendix B).

The scalar hash comes from ``mmh3``; this module hashes many equal-length byte strings at once, which
covers long (8 bytes), uuid (16), fixed[L] and, grouped by length, strings, binaries and decimals.
The results equal ``mmh3.hash(bytes, 0)`` (signed int32); tests check that.
"""

from __future__ import annotations

import mmh3
import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["murmur3_binary_array", "murmur3_longs", "murmur3_rows"]

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M5 = np.uint32(5)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)

# Above this many distinct lengths per row the per-length grouping costs more than mmh3 per value.
_MAX_LENGTH_GROUPS = 256


def _rotl(x: npt.NDArray[np.uint32], r: int) -> npt.NDArray[np.uint32]:
    out: npt.NDArray[np.uint32] = (x << np.uint32(r)) | (x >> np.uint32(32 - r))
    return out


def _mix_k(k: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    k = _rotl(k * _C1, 15)
    out: npt.NDArray[np.uint32] = k * _C2
    return out


def murmur3_rows(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.int32]:
    """Hash each row of an ``(n, L)`` uint8 matrix as one L-byte string.

    Returns:
        int32 hashes, one per row, equal to ``mmh3.hash(row.tobytes())``.
    """
    n, length = data.shape
    h = np.zeros(n, dtype=np.uint32)
    nblocks = length // 4
    if nblocks:
        blocks = np.ascontiguousarray(data[:, : nblocks * 4]).view("<u4").reshape(n, nblocks)
        for i in range(nblocks):
            h ^= _mix_k(blocks[:, i].astype(np.uint32, copy=False))
            h = _rotl(h, 13)
            h = h * _M5 + _N1
    tail = length & 3
    if tail:
        k1 = np.zeros(n, dtype=np.uint32)
        base = nblocks * 4
        for j in range(tail - 1, -1, -1):
            k1 = (k1 << np.uint32(8)) | data[:, base + j].astype(np.uint32)
        h ^= _mix_k(k1)
    h ^= np.uint32(length & 0xFFFFFFFF)
    h ^= h >> np.uint32(16)
    h = h * _F1
    h ^= h >> np.uint32(13)
    h = h * _F2
    h ^= h >> np.uint32(16)
    signed: npt.NDArray[np.int32] = h.view(np.int32)
    return signed


def murmur3_longs(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    """Hash int64 values as 8-byte little-endian longs (the spec's ``hashLong``)."""
    le = np.ascontiguousarray(values, dtype="<i8")
    return murmur3_rows(le.view(np.uint8).reshape(len(le), 8))


def murmur3_binary_array(arr: pa.Array) -> npt.NDArray[np.int32]:
    """Hash every value of a (large_)binary/string Arrow array (nulls hash as empty; caller masks them).

    Values are grouped by byte length so each group is one vectorized ``murmur3_rows`` call; with many
    distinct lengths it falls back to ``mmh3`` per value.
    """
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        buf = arr.buffers()[1]
        raw = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, dtype=np.uint8)
        mat = raw[arr.offset * width : (arr.offset + n) * width].reshape(n, width)
        return murmur3_rows(mat)
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    _, obuf, dbuf = arr.buffers()
    offsets = np.frombuffer(obuf, dtype=np.int64 if large else np.int32)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(dbuf, dtype=np.uint8) if dbuf is not None else np.zeros(0, dtype=np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    distinct = np.unique(lengths)
    out = np.empty(n, dtype=np.int32)
    if len(distinct) > _MAX_LENGTH_GROUPS:
        ends = starts + lengths
        mv = data.tobytes()
        out[:] = [mmh3.hash(mv[s:e], 0) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
        return out
    for length in distinct.tolist():
        rows = np.flatnonzero(lengths == length)
        idx = starts[rows][:, None] + np.arange(length, dtype=np.int64)[None, :]
        out[rows] = murmur3_rows(data[idx] if length else np.zeros((len(rows), 0), dtype=np.uint8))
    return out
