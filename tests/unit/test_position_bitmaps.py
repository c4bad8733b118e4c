"""Deleted positions of a few data files packed into 64-bit words (floe.spark.scan.position_bitmaps): each
file's words apart, bit pos % 64 of word pos // 64, rows naming no scanned file or no row left out, and no
bitmap past the size limit."""

from __future__ import annotations

from typing import cast

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from floe.spark.scan import position_bitmaps
from floe.spark.scan.position_bitmaps import pack_positions


def _rows(pairs: list[tuple[str, int]]) -> pa.Table:
    return pa.table({"_floe_dkey": [f for f, _ in pairs], "_floe_dpos": pa.array([p for _, p in pairs], pa.int64())})


def _deleted(bitmap: position_bitmaps.PositionBitmap, file: int) -> set[int]:
    words = bitmap.words[bitmap.bases[file]:bitmap.bases[file] + bitmap.lengths[file]]
    return {64 * w + b for w, word in enumerate(words.tolist()) for b in range(64) if word >> b & 1}


def test_each_file_gets_its_own_words_with_bits_at_word_edges() -> None:
    a, b = "file:/w/a.parquet", "file:/w/b.parquet"
    rows = _rows([(b, 1), (a, 0), (a, 63), (a, 64), (b, 1), (a, 200), (b, 127), (b, 128)])
    bitmap = pack_positions(rows, [a, b])
    assert bitmap is not None
    assert bitmap.lengths == [4, 3] and bitmap.bases == [0, 4]
    assert bitmap.words.dtype == np.uint64
    assert _deleted(bitmap, 0) == {0, 63, 64, 200}
    assert _deleted(bitmap, 1) == {1, 127, 128}
    assert int(bitmap.words[0]) == 1 | 1 << 63  # bit 63 is the word's sign bit in Spark's longs


def test_rows_naming_no_scanned_file_or_no_row_are_left_out() -> None:
    a, b = "file:/w/a.parquet", "file:/w/b.parquet"
    bitmap = pack_positions(_rows([(a, 5), ("file:/w/other.parquet", 3), (a, -1), (b, 7)]), [a, b, "file:/w/c.parquet"])
    assert bitmap is not None
    assert _deleted(bitmap, 0) == {5} and _deleted(bitmap, 1) == {7}
    assert bitmap.lengths[2] == 0


def test_words_reach_past_each_files_last_row_when_that_costs_little(monkeypatch: pytest.MonkeyPatch) -> None:
    # A row past its file's words takes the lookup's other branch; padded words leave every row in range.
    a, b, c = "file:/w/a.parquet", "file:/w/b.parquet", "file:/w/c.parquet"
    bitmap = pack_positions(_rows([(a, 3), (b, 70)]), [a, b, c], [1000, 130, 10])
    assert bitmap is not None
    assert bitmap.lengths == [16, 3, 1] and bitmap.bases == [0, 16, 19]  # ceil(rows / 64) words each
    assert _deleted(bitmap, 0) == {3} and _deleted(bitmap, 1) == {70} and _deleted(bitmap, 2) == set()
    # Deletes naming no row of the files give no bitmap, padded or not.
    padded_only = pack_positions(_rows([(a, -1)]), [a], [1000])
    assert padded_only is not None and padded_only.lengths == [16]
    assert position_bitmaps.bitmap_plan(None, padded_only) is None  # type: ignore[arg-type]
    # Padding that would more than double the words (and pass the floor) is left out.
    monkeypatch.setattr(position_bitmaps, "_PAD_WORDS", 4)
    bitmap = pack_positions(_rows([(a, 3), (b, 70)]), [a, b, c], [1000, 130, 10])
    assert bitmap is not None and bitmap.lengths == [1, 2, 0]


def test_positions_beyond_the_limit_give_no_bitmap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(position_bitmaps, "MAX_BITMAP_WORDS", 4)
    a, b = "file:/w/a.parquet", "file:/w/b.parquet"
    assert pack_positions(_rows([(a, 255)]), [a]) is not None
    assert pack_positions(_rows([(a, 256)]), [a]) is None  # one position past 4 words
    assert pack_positions(_rows([(a, 255), (b, 64)]), [a, b]) is None  # 4 + 2 words in all
    assert pack_positions(_rows([(a, 2**62)]), [a]) is None


def test_dictionary_encoded_keys_in_several_chunks_are_numbered_like_strings() -> None:
    a, b = "file:/w/a.parquet", "file:/w/b.parquet"
    chunks = [pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array([a, b])),
              pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array(["file:/w/other.parquet"]))]
    rows = pa.table({"_floe_dkey": pa.chunked_array(chunks), "_floe_dpos": pa.chunked_array([[3, 4, 70], [9]], pa.int64())})
    bitmap = pack_positions(rows, [a, b])
    assert bitmap is not None
    assert _deleted(bitmap, 0) == {4} and _deleted(bitmap, 1) == {3, 70}


def test_size_slots_give_each_size_its_own_slot_and_shared_sizes_a_hash_slot() -> None:
    files = [(f"f{i}", 1000 + 37 * i, 10 * i, i + 1) for i in range(40)] + [("x", 5000, 900, 2), ("y", 5000, 902, 3)]
    hashed: list[list[str]] = []

    def hashes(paths: list[str]) -> list[int]:
        hashed.append(paths)
        return [-7_000_000_000_000 + 13 * ord(p) for p in paths]  # negative, as Spark's xxhash64 often is

    table = position_bitmaps.size_slots(7, files, hashes)
    assert table is not None
    assert hashed == [["x", "y"]] and table.count == 42 and table.offset == 7 and table.hash_modulus >= 2
    slots = table.array[: table.size_modulus].astype(np.int64)
    hash_slots = table.array[table.size_modulus: table.size_modulus + table.hash_modulus].astype(np.int64)
    at = table.size_modulus + table.hash_modulus
    sizes, bases, lengths = (table.array[at + k * 42: at + (k + 1) * 42].astype(np.int64) for k in range(3))
    for path, size, base, length in files:
        number = slots[size % table.size_modulus]
        if path in ("x", "y"):
            assert number == -2
            number = hash_slots[hashes([path])[0] % table.hash_modulus]  # Python's % is Spark's pmod
        assert table.paths[number] == path and sizes[number] == size and bases[number] == base and lengths[number] == length


def test_no_size_table_past_the_slot_limit_or_for_paths_hashing_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [("x", 5, 0, 1), ("y", 5, 1, 1)]
    assert position_bitmaps.size_slots(0, files, lambda paths: [42 for _ in paths]) is None
    monkeypatch.setattr(position_bitmaps, "_MAX_SLOTS", 39)  # fewer slots than files
    assert position_bitmaps.size_slots(0, [(f"f{i}", 1000 + 37 * i, 0, 1) for i in range(40)], lambda p: []) is None


def test_exact_size_slots_hold_each_files_words_in_one_long() -> None:
    files = [(f"f{i}", 1000 + 37 * i, 10 * i, i + 1) for i in range(6)] + [("x", 5000, 900, 2), ("y", 5000, 902, 3)]
    table = position_bitmaps.size_slots(3, files, lambda paths: [11 * ord(p) for p in paths], exact=True)
    assert table is not None and table.exact
    slots = table.array[: table.size_modulus].astype(np.int64)
    hash_slots = table.array[table.size_modulus:].astype(np.int64)
    assert table.array.size == table.size_modulus + table.hash_modulus  # no per-file columns
    for path, size, base, length in files:
        held = slots[size % table.size_modulus]
        if path in ("x", "y"):
            assert held == -2
            held = hash_slots[(11 * ord(path)) % table.hash_modulus]
        assert held >> 32 == base and held & 0xFFFFFFFF == length
    # Slots of no file name no words (count 0), so a row reaching one is kept rather than read elsewhere.
    taken = {size % table.size_modulus for _, size, _, _ in files}
    assert all(slots[k] == 0 for k in range(table.size_modulus) if k not in taken)


def test_an_exact_plan_gives_files_without_words_an_empty_slot_of_their_own() -> None:
    # Files without deleted positions read in the same scan: each must find its own empty slot, never the
    # words of a file whose size shares its residue (so every file's size takes part in the modulus).
    files = [f"f{i}" for i in range(6)]
    bitmap = pack_positions(_rows([("f0", 3), ("f2", 70)]), files)
    assert bitmap is not None and bitmap.lengths == [1, 0, 2, 0, 0, 0]
    sizes = [1000 + 37 * i for i in range(6)]
    no_session = cast(SparkSession, None)  # distinct sizes: no path is hashed
    plan = position_bitmaps.bitmap_plan(no_session, bitmap, sizes, only_these=True)
    assert plan is not None and plan.table is not None and plan.table.exact and plan.table.count == 6
    table = plan.table
    assert len({s % table.size_modulus for s in sizes}) == 6
    slots = plan.words[table.offset: table.offset + table.size_modulus].astype(np.int64)
    head = table.offset - bitmap.words.size
    for i, size in enumerate(sizes):
        held = int(slots[size % table.size_modulus])
        assert held & 0xFFFFFFFF == bitmap.lengths[i]
        if bitmap.lengths[i]:
            assert held >> 32 == head + bitmap.bases[i]
    # Not exact (rows of other files may come): the two files with words are compared by path.
    chained = position_bitmaps.bitmap_plan(no_session, bitmap, sizes, only_these=False)
    assert chained is not None and chained.table is None and chained.paths == ["f0", "f2", None, None]


def test_a_plan_without_a_slot_table_compiles_only_as_a_short_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sizes no slot table fits (past the slot limit here; on a 960-partition table, residues that collide
    # at every modulus tried): the lookup would chain every file's path in one CASE, which Spark's compiler
    # could not compile in a 4 GB heap for 960 files, so the caller joins instead.
    monkeypatch.setattr(position_bitmaps, "_MAX_SLOTS", 39)
    files = [f"f{i}" for i in range(40)]
    bitmap = pack_positions(_rows([(f, 1) for f in files]), files)
    assert bitmap is not None
    no_session = cast(SparkSession, None)  # distinct sizes: no path is hashed
    plan = position_bitmaps.bitmap_plan(no_session, bitmap, [1000 + 37 * i for i in range(40)], only_these=True)
    assert plan is not None and plan.table is None and len(plan.paths) == 40
    assert not plan.compiles()
    few = pack_positions(_rows([("f0", 1), ("f1", 2)]), ["f0", "f1"])
    assert few is not None
    chain = position_bitmaps.bitmap_plan(no_session, few)  # no sizes: two files chained
    assert chain is not None and chain.table is None and chain.compiles()
