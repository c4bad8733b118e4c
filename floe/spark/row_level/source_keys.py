"""A MERGE source's integral join keys as a bitmap in the plan: the target rows some source row matches,
found without a join.

A copy-on-write MERGE first learns which data files hold a target row some source row matches (only those
files are rewritten). When ON is one equality on integral columns and no clause has a condition, that
question is a set membership: is the row's key among the source's keys? A broadcast hash join answers it by
shipping the keys as a hash relation and probing it once per target row; at 20M target rows against 3M
source keys that pass took 7-8 s on local[2], of which the join 4 s over a scan of the key column alone
(0.7 s). Here the driver collects the source's keys (Arrow, 8 bytes a key) and sets bit ``key - low`` of a
bitmap for each; the rows meet it in a broadcast join of its one-row relation (as position deletes do,
floe.spark.scan.position_bitmaps) and a row costs one array read. The bitmap's bounds are read from a
header of its words rather than written as literals, so the generated code does not change with them.

It applies when the keys span at most :data:`MAX_KEY_RANGE` values. Where the bitmap stands for the
matched pairs themselves (the touched files of a copy-on-write MERGE and its split rewrite), no key may
repeat: a repeated key would make every target row of that key match twice (a cardinality violation a
membership test cannot see), so such sources take the join. Where it only narrows the target rows before
the join that pairs them (a merge-on-read MERGE, floe.spark.row_level.merge_pruning), repeats are allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.spark.scan.driver_rows import LONG_ARRAY_COLUMN, long_array_frame
from floe.spark.scan.row_columns import quoted

__all__ = ["MAX_KEY_RANGE", "KeyBitmap", "integral", "key_bitmap_frame", "key_matches", "pack_keys", "source_key_bitmap"]

# Key values a bitmap spans at most: 8 MB of words.
MAX_KEY_RANGE = 64 << 20
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


@dataclass(frozen=True)
class KeyBitmap:
    """Bit ``k - low`` of ``words`` (bit ``i % 64`` of word ``i // 64``) set for each key ``k`` in
    ``low .. high``."""

    low: int
    high: int
    words: np.ndarray  # uint64

    def spark_words(self) -> np.ndarray:
        """The words Spark gets: the header (``low``, ``high - low``), then :attr:`words`."""
        return np.concatenate([np.array([self.low, self.high - self.low], np.int64).astype(np.uint64), self.words])


def pack_keys(keys: np.ndarray, *, unique: bool = True) -> KeyBitmap | None:
    """The bitmap of ``keys`` (int64, no nulls); None when there is no key, a key repeats (with ``unique``),
    or the keys span more than :data:`MAX_KEY_RANGE` values."""
    if keys.size == 0:
        return None
    low, high = int(keys.min()), int(keys.max())
    if high - low >= MAX_KEY_RANGE:
        return None
    offsets = keys - low
    bits = np.zeros(((high - low) // 64 + 1) * 64, np.bool_)
    bits[offsets] = True
    if unique and int(np.count_nonzero(bits)) != keys.size:  # fewer bits than keys: a key repeats
        return None
    return KeyBitmap(low, high, np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64))


def integral(frame: DataFrame, column: str) -> bool:
    """Whether ``frame``'s top-level ``column`` (any case) has an integral type."""
    field = next((f for f in frame.schema.fields if f.name.lower() == column.lower()), None)
    return field is not None and isinstance(field.dataType, _INTEGRAL)


def source_key_bitmap(source: DataFrame, column: str, *, unique: bool = True) -> KeyBitmap | None:
    """The bitmap of ``source``'s non-null values of ``column`` (integral), None where :func:`pack_keys`
    gives none. The keys are collected to the driver: callers bound their size first."""
    if not integral(source, column):
        return None
    keys = source.select(F.col(quoted(column)).cast("long").alias("k")).where(F.col("k").isNotNull()).toArrow()
    return pack_keys(pc.cast(keys.column("k"), "int64").to_numpy(), unique=unique)


def key_bitmap_frame(spark: SparkSession, bitmap: KeyBitmap) -> DataFrame:
    """The bitmap's one-row relation (its words in :data:`LONG_ARRAY_COLUMN`), for a broadcast join."""
    return long_array_frame(spark, bitmap.spark_words())


def key_matches(key: str) -> str:
    """SQL: whether the row's ``key`` (a quoted integral column) is set in the bitmap of the joined
    :data:`LONG_ARRAY_COLUMN`; false for null. Each header number is read once (a number read twice would be
    a common subexpression, ordered in the code by a hash that holds the relation's attribute id, new in every
    query), and the subtraction is tried (an ANSI session fails a long overflow)."""
    words = quoted(LONG_ARRAY_COLUMN)
    relative = f"try_subtract(bigint({key}), get({words}, 0))"
    offset = f"CASE WHEN {relative} BETWEEN 0 AND get({words}, 1) THEN {relative} END"
    return f"coalesce(shiftright(get({words}, int(2 + shiftright({offset}, 6))), int({offset} & 63)) & 1, 0) = 1"
