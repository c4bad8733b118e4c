"""Equality deletes on one integral key packed into an array (floe.spark.scan.equality_arrays): per key the rank
of its newest delete and the values of the other key columns it names, in lanes of 8, 16 or 32 bits, and
no array for keys naming two sets of other values, too wide a key range or too many other values; the
other key columns' values as sets of SQL literals."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from floe.spark.scan import equality_arrays
from floe.spark.scan.equality_arrays import DeleteKeys, EqualityArray, other_value_sets, pack_equality
from floe.spec.types import DateType, IntegerType, NestedField, StringType


def _lanes(array: EqualityArray) -> dict[int, tuple[int, int]]:
    """key -> (rank, other index) of every key the array names, decoded as the plan decodes a lane."""
    per_word = 64 // array.lane_bits
    out = {}
    for i in range(array.count):
        lane = int(array.words[i // per_word]) >> (i % per_word * array.lane_bits) & ((1 << array.lane_bits) - 1)
        if lane:
            out[array.low + i] = (lane >> array.other_bits, lane & ((1 << array.other_bits) - 1))
    return out


def _pack(rows: list[tuple[int, int, int]], others: list[tuple[str, ...]]) -> EqualityArray | None:
    """(key, other index, sequence number) rows packed, a group per sequence number, newest first."""
    by_sequence: dict[int, list[tuple[int, int]]] = {}
    for k, o, s in rows:
        by_sequence.setdefault(s, []).append((k, o))
    groups = [
        DeleteKeys(s, np.array([k for k, _ in pairs], np.int64), np.array([o for _, o in pairs], np.int64))
        for s, pairs in sorted(by_sequence.items(), reverse=True)
    ]
    return pack_equality(groups, others)


def test_each_key_holds_the_rank_of_its_newest_delete_and_its_other_values() -> None:
    others = [("'p0'",), ("'p1'",), ("'p2'",)]
    array = _pack([(-3, 0, 5), (4, 1, 7), (4, 1, 5), (9, 2, 9), (-3, 0, 7)], others)
    assert array is not None
    assert (array.low, array.count, array.lane_bits, array.other_bits) == (-3, 13, 8, 2)
    assert array.sequences == [5, 7, 9]
    assert _lanes(array) == {-3: (2, 0), 4: (2, 1), 9: (3, 2)}
    assert array.words.dtype == np.uint64 and len(array.words) == 2  # 13 byte lanes, 8 a word


@pytest.mark.parametrize(("sequences", "other_sets", "bits"), [(127, 2, 8), (128, 2, 16), (1024, 64, 32)])
def test_lanes_widen_with_the_ranks_and_other_values_they_hold(sequences: int, other_sets: int, bits: int) -> None:
    # five keys, each naming one set of other values (their bits count the sets, not the ones named)
    rows = [(k % 5, k % 5 % other_sets, 10 + k) for k in range(sequences)]
    array = _pack(rows, [(f"'{i}'",) for i in range(other_sets)])
    assert array is not None and array.lane_bits == bits
    assert all(rank == max(s for k, _, s in rows if k == key) - 9 for key, (rank, _) in _lanes(array).items())


def test_a_data_files_rank_counts_the_deletes_no_newer_than_it() -> None:
    array = _pack([(1, 0, 4), (2, 0, 6)], [()])
    assert array is not None
    assert [array.rank(s) for s in (1, 4, 5, 6, 9)] == [0, 1, 1, 2, 2]
    assert array.other_bits == 0 and _lanes(array) == {1: (1, 0), 2: (2, 0)}


def test_a_key_naming_two_sets_of_other_values_takes_the_join() -> None:
    assert _pack([(1, 0, 2), (1, 1, 3)], [("'a'",), ("'b'",)]) is None
    assert _pack([(1, 1, 2), (1, 0, 2)], [("'a'",), ("'b'",)]) is None  # in one file
    assert _pack([(1, 1, 2), (1, 1, 3)], [("'a'",), ("'b'",)]) is not None


def test_no_array_past_the_word_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(equality_arrays, "MAX_ARRAY_WORDS", 2)
    assert _pack([(0, 0, 2), (15, 0, 2)], [()]) is not None  # 16 byte lanes: two words
    assert _pack([(0, 0, 2), (16, 0, 2)], [()]) is None
    assert _pack([(-(2**62), 0, 2), (2**62, 0, 2)], [()]) is None  # a range a long cannot count


def test_no_array_past_the_other_values_limit() -> None:
    others = [(f"'{i}'",) for i in range(equality_arrays.MAX_OTHER_VALUES + 1)]
    assert _pack([(i, i, 2) for i in range(len(others))], others) is None


def test_no_rows_make_an_empty_array() -> None:
    array = _pack([], [()])
    assert array is not None and array.count == 0 and _lanes(array) == {}


def test_other_values_are_indexed_as_sets_of_literals_nulls_included() -> None:
    fields = [NestedField(2, "dt", StringType()), NestedField(3, "k", IntegerType()), NestedField(4, "d", DateType())]
    rows = pa.table({"dt": ["a", None, "a", "b'c", None], "k": pa.array([1, 2, 1, None, 2], pa.int64()),
                     "d": pa.array([0, 1, 0, None, 1], pa.int32())})
    index, sets = other_value_sets(rows, fields)
    assert index is not None and index.tolist() == [0, 1, 0, 2, 1]
    assert sets == [("'a'", "1", "DATE '1970-01-01'"), ("NULL", "2", "DATE '1970-01-02'"), ("'b\\'c'", "NULL", "NULL")]
    assert other_value_sets(rows.select([]), []) == (pytest.approx(np.zeros(5)), [()])


def test_too_many_other_value_sets_take_the_join() -> None:
    n = equality_arrays.MAX_OTHER_VALUES
    fields = [NestedField(2, "a", IntegerType()), NestedField(3, "b", IntegerType())]
    rows = pa.table({"a": pa.array([i % 9 for i in range(n + 1)], pa.int64()), "b": pa.array([i // 9 for i in range(n + 1)], pa.int64())})
    assert other_value_sets(rows, fields)[0] is None  # 65 sets from two columns of at most 9 values each
