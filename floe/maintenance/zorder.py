"""Z-order values for ``rewrite_data_files(strategy => 'sort', sort_order => 'zorder(a, b)')`` (pure numpy).

Each column becomes fixed-width bytes whose unsigned lexicographic order is the column's order (the idea
of Iceberg's ``ZOrderByteUtils``): a long with its sign bit flipped, big-endian; a double's IEEE bits with
the sign bit flipped (all bits for negatives); the first ``var_length_contribution`` bytes of a string or
binary, zero-padded. A null is all zeros (first). The z-value interleaves the columns' bits, most
significant first, round-robin over the columns, cut to ``max_output_size`` bytes: sorting by it keeps
rows close in every column close in the files.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["PRIMITIVE_WIDTH", "interleave_bits", "ordered_bytes"]

PRIMITIVE_WIDTH = 8  # bytes per long or double, as Iceberg's PRIMITIVE_BUFFER_SIZE
_SIGN = np.uint64(1 << 63)


def _fixed(values: pa.Array, width: int) -> np.ndarray:
    # Variable-length values: first `width` bytes, zero-padded (nulls become all zeros).
    out = np.zeros((len(values), width), dtype=np.uint8)
    for i, v in enumerate(values.to_pylist()):
        if v is None:
            continue
        raw = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        head = raw[:width]
        out[i, : len(head)] = np.frombuffer(head, dtype=np.uint8)
    return out


def ordered_bytes(values: pa.Array, *, var_length_contribution: int = PRIMITIVE_WIDTH) -> np.ndarray:
    """Order-preserving bytes of ``values`` as an ``(n, width)`` uint8 matrix.

    Integers (any width), floats, strings and binaries are supported; the caller maps dates, timestamps
    and booleans to integers first.

    Raises:
        TypeError: another Arrow type.
    """
    t = values.type
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(t):
        ints = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        bits = ints.view(np.uint64) ^ _SIGN
    elif pa.types.is_floating(t):
        floats = pc.fill_null(values.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        raw = floats.view(np.uint64)
        negative = (raw & _SIGN) != 0
        bits = np.where(negative, ~raw, raw ^ _SIGN)
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _fixed(values, var_length_contribution)
    else:
        raise TypeError(f"Cannot z-order values of type {t}")
    bits = np.where(valid, bits, np.uint64(0))
    out: np.ndarray = bits.astype(">u8").view(np.uint8).reshape(len(values), PRIMITIVE_WIDTH)
    return out


def interleave_bits(columns: Sequence[np.ndarray], max_output_size: int) -> list[bytes]:
    """Per row, the columns' bits interleaved (most significant first, round-robin), cut to a byte limit."""
    if not columns:
        return []
    rows = columns[0].shape[0]
    widths = [c.shape[1] * 8 for c in columns]
    bits = np.concatenate([np.unpackbits(c, axis=1) for c in columns], axis=1)
    starts = np.cumsum([0, *widths[:-1]])
    # Bit b of every column that still has one, then bit b + 1, ...: a column that is shorter drops out.
    order = [int(starts[i]) + b for b in range(max(widths)) for i in range(len(columns)) if b < widths[i]]
    keep = min(len(order), max_output_size * 8)
    packed = np.packbits(bits[:, order[:keep]], axis=1)
    return [packed[r].tobytes() for r in range(rows)]
