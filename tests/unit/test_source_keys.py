"""A MERGE source's integral join keys packed into a bitmap (floe.spark.row_level.source_keys): bit ``key - low``
of 64-bit words, the bounds in a header, and no bitmap for repeated keys (unless asked for membership only), no keys or too
wide a range."""

from __future__ import annotations

import numpy as np

from floe.spark.row_level.source_keys import MAX_KEY_RANGE, pack_keys


def _members(words: np.ndarray, low: int) -> set[int]:
    return {low + 64 * w + b for w, word in enumerate(words.tolist()) for b in range(64) if word >> b & 1}


def test_keys_set_their_bits_across_word_edges_and_below_zero() -> None:
    keys = np.array([-70, -7, 0, 56, 57, 121], np.int64)
    bitmap = pack_keys(keys)
    assert bitmap is not None
    assert (bitmap.low, bitmap.high) == (-70, 121)
    assert bitmap.words.dtype == np.uint64 and bitmap.words.size == (121 + 70) // 64 + 1
    assert _members(bitmap.words, bitmap.low) == set(keys.tolist())
    header = bitmap.spark_words()[:2].view(np.int64).tolist()
    assert header == [-70, 191]  # low and the last offset, read by the plan instead of literals


def test_no_bitmap_for_a_repeated_key_no_key_or_too_wide_a_range() -> None:
    assert pack_keys(np.array([3, 9, 3], np.int64)) is None  # a target row of key 3 would match twice
    repeated = pack_keys(np.array([3, 9, 3], np.int64), unique=False)  # membership only: allowed
    assert repeated is not None and _members(repeated.words, repeated.low) == {3, 9}
    assert pack_keys(np.array([], np.int64)) is None
    assert pack_keys(np.array([0, MAX_KEY_RANGE], np.int64)) is None
    wide = pack_keys(np.array([0, MAX_KEY_RANGE - 1], np.int64))
    assert wide is not None and wide.words.size == MAX_KEY_RANGE // 64


def test_extreme_keys() -> None:
    top = np.iinfo(np.int64).max
    bitmap = pack_keys(np.array([top - 1, top], np.int64))
    assert bitmap is not None and _members(bitmap.words, bitmap.low) == {top - 1, top}
    assert pack_keys(np.array([np.iinfo(np.int64).min, top], np.int64)) is None  # a range wider than a long: refused
