"""Position deletes of a few data files applied as a bitmap in the plan (spec "Position Delete Files",
"Deletion Vectors").

Iceberg Java applies a data file's deleted positions as a bitmap while it reads the file. Spark's file
source has no such hook, and a hash join probes a table of deleted positions once per row, a cache miss
each when the table is large (measured on local[2], 2M rows with 200k deleted: the join's probe side took
0.5-0.75 s where a scan alone takes 0.2-0.3 s). For a few data files whose deleted positions fit a small
bitmap, the driver packs each file's positions into 64-bit words (bit ``pos % 64`` of word ``pos // 64``),
the files' words laid end to end in one array that Spark gets as a scalar subquery over a one-row local
relation: evaluated once per query, printed in plans as a subquery rather than as its values, and read by
every task with an array index. A row is kept unless its bit is set: no join, no broadcast, no delete job.

A row finds its file's words by its file path for a few files (a comparison chain). For more files (a table
fed by changes, after its equality deletes became position deletes) a chain costs a string compare per file
and row, and hashing the path costs more than the scan (measured on local[2], 10M rows in 88 files: a clean
aggregate 0.5 s; ``hash()`` of the path added 0.3 s, ``xxhash64`` 0.13 s, reading ``_metadata.file_size``
nothing measurable). So the row's file size, a long Spark keeps per file, picks a slot of a table laid out on
the driver (``size mod M`` distinct for every file: M searched upward), and the path of the file in that slot
is compared once to confirm it. A file whose real size differs from its manifest's would be missed, so the
caller checks the sizes first; files sharing a size keep the comparison chain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from floe.expressions.to_spark_sql import spark_string
from floe.spark.scan.driver_rows import long_array_subquery
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, ROW_SIZE_COLUMN, quoted

__all__ = ["CHAINED_FILES", "MAX_BITMAP_WORDS", "PositionBitmap", "SizeSlots", "file_numbers", "pack_positions", "size_slots", "undeleted"]

# Words (8 bytes, 64 positions each) up to which the bitmap is built: 8 MB, every position below 64M in
# total over the files. Farther positions take the hash join (they name rows of larger files, or no row).
MAX_BITMAP_WORDS = 1 << 20
# Files up to which a row finds its file by comparing its path with each in turn; beyond, by its file size.
CHAINED_FILES = 4
# Slots of the size table up to which M is searched (a long each, shipped with the words).
_MAX_SLOTS = 1 << 18


@dataclass(frozen=True)
class PositionBitmap:
    """Deleted positions of ``files`` (``files[i]``'s words are ``words[bases[i]:bases[i] + lengths[i]]``)."""

    files: list[str]
    words: np.ndarray  # uint64
    bases: list[int]
    lengths: list[int]


def pack_positions(rows: pa.Table, files: list[str]) -> PositionBitmap | None:
    """The bitmap of ``_floe_dkey`` (a row URI among ``files``) / ``_floe_dpos`` rows, None when it would
    pass :data:`MAX_BITMAP_WORDS`. Rows naming another file or a negative position name no scanned row and
    are left out."""
    number = file_numbers(rows["_floe_dkey"], files)
    positions = rows["_floe_dpos"].combine_chunks()
    keep = pc.and_(pc.is_valid(number), pc.greater_equal(positions, 0))
    owner = number.filter(keep).to_numpy(zero_copy_only=False).astype(np.int64)
    pos = positions.filter(keep).to_numpy(zero_copy_only=False).astype(np.int64)
    if pos.size and int(pos.max()) >= MAX_BITMAP_WORDS * 64:
        return None
    word = pos >> 6
    lengths = np.zeros(len(files), np.int64)
    np.maximum.at(lengths, owner, word + 1)
    if int(lengths.sum()) > MAX_BITMAP_WORDS:
        return None
    bases = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    bits = np.zeros(int(lengths.sum()) * 64, np.bool_)  # a byte per position (64 MB at most): 4x faster than OR-ing words
    bits[bases[owner] * 64 + pos] = True
    words = np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)
    return PositionBitmap(list(files), words, bases.tolist(), lengths.tolist())


def file_numbers(keys: pa.ChunkedArray | pa.Array, files: list[str]) -> pa.Array:
    """Each key's index in ``files`` (null for another string); dictionary-encoded keys are looked up once
    per distinct value."""
    chunks = keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]
    value_set = pa.array(files, pa.string())
    numbers = [
        pc.index_in(c.dictionary, value_set=value_set).take(c.indices) if isinstance(c, pa.DictionaryArray)
        else pc.index_in(c, value_set=value_set)
        for c in chunks
    ]
    return pa.concat_arrays(numbers) if numbers else pa.array([], pa.int32())


def undeleted(spark: SparkSession, bitmap: PositionBitmap, sizes: list[int] | None = None) -> Column:
    """True for a row (:data:`ROW_FILE_COLUMN`, :data:`ROW_POS_COLUMN`, and with ``sizes``
    :data:`ROW_SIZE_COLUMN`) whose position ``bitmap`` does not hold; rows of other files are kept.

    Args:
        sizes: each bitmap file's size in bytes as Spark reports it (``_metadata.file_size``), checked by the
            caller; without them (or for a few files) a row compares its path with every file's.
    """
    live = [(f, base, length) for f, base, length in zip(bitmap.files, bitmap.bases, bitmap.lengths, strict=True) if length]
    if not live:
        return F.lit(True)
    table = None
    if sizes is not None and len(live) > CHAINED_FILES:
        size_of = dict(zip(bitmap.files, sizes, strict=True))
        table = size_slots(bitmap.words.size, [(f, size_of[f], base, length) for f, base, length in live])
    if table is None:
        words = long_array_subquery(spark, bitmap.words)
        index = F.expr(f"CASE {_chain(live)} END")
    else:
        words = long_array_subquery(spark, np.concatenate([bitmap.words, table.array]))
        index = table.index(words)
        shared = [x for x in live if x[0] in table.shared]
        if shared:  # after the slot (coalesce stops at the first value): most rows compare no path
            index = F.coalesce(index, F.expr(f"CASE {_chain(shared)} END"))
    bit = F.call_function("shiftright", F.get(words, index), F.expr(f"int({quoted(ROW_POS_COLUMN)} & 63)"))
    return F.coalesce(bit.bitwiseAND(1), F.lit(0)) == 0


def _chain(files: list[tuple[str, int, int]]) -> str:
    """CASE branches giving a row's word index by comparing its path with each file's in turn."""
    file, word = quoted(ROW_FILE_COLUMN), _WORD
    return " ".join(f"WHEN {file} = {spark_string(f)} AND {word} < {length} THEN int({word}) + {base}" for f, base, length in files)


_WORD = f"shiftright({quoted(ROW_POS_COLUMN)}, 6)"


@dataclass(frozen=True)
class SizeSlots:
    """Files found by size: slot ``size mod modulus`` holds the file's number (-1: none), and the numbered
    files' sizes, word bases, word counts and paths follow, all appended after ``offset`` words."""

    offset: int
    modulus: int
    count: int
    array: np.ndarray  # uint64: slots, then sizes, bases, lengths (count each)
    paths: list[str]
    shared: frozenset[str]  # files whose size another file shares: found by path instead

    def index(self, words: Column) -> Column:
        """A row's word index in ``words`` (the bitmap's words then this table), null for a row of no
        slotted file or past its file's words."""
        size, pos_word = F.col(quoted(ROW_SIZE_COLUMN)), F.expr(_WORD)
        slot = F.lit(self.offset) + F.pmod(size, F.lit(self.modulus)).cast("int")
        number = F.get(words, slot).cast("int")
        at = self.offset + self.modulus

        def column(k: int) -> Column:
            return F.get(words, F.lit(at + k * self.count) + number)

        listed = ", ".join(spark_string(p) for p in self.paths)
        found = (
            (number >= 0) & (column(0) == size) & (pos_word < column(2))
            & (F.get(F.expr(f"array({listed})"), number) == F.col(quoted(ROW_FILE_COLUMN)))
        )
        return F.when(found, (column(1) + pos_word).cast("int"))


def size_slots(offset: int, files: list[tuple[str, int, int, int]]) -> SizeSlots | None:
    """The slot table of ``files`` (path, size, word base, word count) with the smallest modulus found that
    gives every size of one file a slot of its own; None when it would pass the size limits."""
    counts: dict[int, int] = {}
    for _, size, _, _ in files:
        counts[size] = counts.get(size, 0) + 1
    own = [x for x in files if counts[x[1]] == 1]
    shared = frozenset(x[0] for x in files if counts[x[1]] > 1)
    sizes = np.array([x[1] for x in own], np.int64)
    modulus = max(len(own), 1)
    while modulus <= _MAX_SLOTS and len(np.unique(sizes % modulus)) < len(own):
        modulus = int(modulus * 1.05) + 1
    if modulus > _MAX_SLOTS:
        return None
    if offset + modulus + 3 * len(own) > MAX_BITMAP_WORDS + _MAX_SLOTS:
        return None
    slots = np.full(modulus, -1, np.int64)
    slots[sizes % modulus] = np.arange(len(own))
    columns = [np.array([x[k] for x in own], np.int64) for k in (1, 2, 3)]
    array = np.concatenate([slots, *columns]).astype(np.uint64)
    return SizeSlots(offset, modulus, len(own), array, [x[0] for x in own], shared)
