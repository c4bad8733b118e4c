"""Equality deletes on one integral key column applied as an array in the plan (spec "Equality Delete
Files"; "Scan Planning": a delete applies to data files with a smaller data sequence number).

A table fed by changes collects equality deletes on its identifier fields, often one integral id plus
the partition's source column. Joining every data row against a hash of a million delete keys costs a
cache miss per row (measured on local[2]: 10.8M rows against 1M delete rows read in about 8x the time of
the same rows clean). When the deleted keys of that column span a range that fits a small array, the
driver reads the delete rows and stores, for each key of the range, the newest delete that names it (the
rank of its sequence number among the deletes') and which values of the other key columns it names. A
row is dropped when its key's rank passes its file's and its other key columns hold those values: an
array read per row, in key order when the data is written in key order, and no join.

It applies when every key value names one set of other values (a key that moved partitions takes the
join) and keys imply partitions (:meth:`floe.spark.scan.delete_joins.DeleteJoins.key_implies_partition`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from floe.expressions.to_spark_sql import spark_literal
from floe.spark.scan.row_columns import quoted
from floe.spec.types import BooleanType, DateType, IntegerType, LongType, NestedField, StringType

__all__ = [
    "MAX_ARRAY_WORDS", "MAX_OTHER_VALUES", "OTHER_KEY_TYPES", "DeleteKeys", "EqualityArray", "driver_arrow_type", "drop_deleted",
    "other_value_sets", "pack_equality",
]

# Words (8 bytes) up to which the array is built: 32 MB, 32M keys at a byte each. Wider key ranges (sparse
# keys, random ids) take the hash join.
MAX_ARRAY_WORDS = 1 << 22
# Distinct values of the other key columns (the partitions, in a table keyed by id and partition) up to
# which a row finds its own by comparing them in turn.
MAX_OTHER_VALUES = 64
_LANE_BITS = (8, 16, 32)


# Types of the key columns beside the array's key: the plan compares their values as literals.
OTHER_KEY_TYPES = (BooleanType, IntegerType, LongType, StringType, DateType)


def driver_arrow_type(f: NestedField) -> pa.DataType:
    """The Arrow type a key column is read as on the driver (dates as days, as Iceberg literals hold them)."""
    t = f.field_type
    if isinstance(t, BooleanType):
        return pa.bool_()
    if isinstance(t, StringType):
        return pa.string()
    return pa.int32() if isinstance(t, DateType) else pa.int64()


def other_value_sets(rows: pa.Table, fields: list[NestedField]) -> tuple[np.ndarray | None, list[tuple[str, ...]]]:
    """Each row's index among the distinct rows of ``rows`` (columns of ``fields``), and those rows as SQL
    literals; None past :data:`MAX_OTHER_VALUES` distinct rows."""
    if not fields:
        return np.zeros(rows.num_rows, np.int64), [()]
    code = np.zeros(rows.num_rows, np.int64)
    dictionaries = []
    combinations = 1
    for column in rows.columns:
        encoded = pc.dictionary_encode(column.combine_chunks(), null_encoding="encode")
        combinations *= len(encoded.dictionary)
        if len(encoded.dictionary) > MAX_OTHER_VALUES or combinations > 1 << 62:
            return None, []
        code = code * len(encoded.dictionary) + encoded.indices.to_numpy(zero_copy_only=False)
        dictionaries.append(encoded.dictionary.to_pylist())
    if combinations <= 1 << 20:  # a table over the combinations: no sort of the rows
        seen = np.zeros(combinations, np.bool_)
        seen[code] = True
        distinct = np.flatnonzero(seen)
        index = (np.cumsum(seen) - 1)[code]
    else:
        distinct, index = np.unique(code, return_inverse=True)
    if len(distinct) > MAX_OTHER_VALUES:
        return None, []
    values = []
    for c in distinct.tolist():
        parts = []
        for dictionary in reversed(dictionaries):
            c, i = divmod(c, len(dictionary))
            parts.append(dictionary[i])
        values.append(tuple(
            "NULL" if v is None else spark_literal(v, f.field_type) for v, f in zip(reversed(parts), fields, strict=True)
        ))
    return index.astype(np.int64), values


@dataclass(frozen=True)
class EqualityArray:
    """The newest delete of each key in ``low .. low + count - 1``, one lane of ``lane_bits`` per key,
    ``64 // lane_bits`` lanes a word, lane ``i % per_word`` of word ``i // per_word`` holding key ``low + i``
    (little end first): 0 when no delete names the key, else ``rank << other_bits | other`` where ``rank``
    (1-based) orders ``sequences`` and ``other`` indexes ``others``, the values of the other key columns the
    deletes of that key name (as SQL literals, in the order of the columns)."""

    low: int
    count: int
    lane_bits: int
    other_bits: int
    others: list[tuple[str, ...]]
    sequences: list[int]  # of the deletes, distinct, ascending
    words: np.ndarray  # uint64

    def rank(self, data_sequence: int) -> int:
        """A data file's rank: deletes of a higher rank have a larger sequence number and apply to it."""
        return bisect.bisect_right(self.sequences, data_sequence)

    def spark_words(self) -> np.ndarray:
        """The words Spark gets: a header of the lookup's numbers (:data:`_HEADER`), then :attr:`words`. Read
        from the words rather than written as literals, they leave the generated code the same from one
        commit to the next (code compiled anew runs cold in the JVM)."""
        per_word = 64 // self.lane_bits
        header = [
            self.low, self.count - 1, per_word.bit_length() - 1, per_word - 1, self.lane_bits,
            (1 << self.lane_bits) - 1, self.other_bits, (1 << self.other_bits) - 1,
        ]
        return np.concatenate([np.array(header, np.int64).astype(np.uint64), self.words])


# The numbers at the front of EqualityArray.spark_words: the lowest key and the last key offset, a key's word
# (shift) and lane (mask), the lane's width and mask, and the other values' bits and mask. Each is read once in
# a row's lookup: a value read twice would be a common subexpression, and Spark orders those of one height
# by a hash that holds the words relation's attribute id, new in every query.
_HEADER = ("low", "last", "word_shift", "lane_index_mask", "lane_bits", "lane_mask", "other_bits", "other_mask")


@dataclass(frozen=True)
class DeleteKeys:
    """The rows of equality delete files of one sequence number: each row's key (int64) and the index of its
    other key columns' values among the packed sets."""

    sequence: int
    keys: np.ndarray
    other_index: np.ndarray


def pack_equality(groups: Sequence[DeleteKeys], others: list[tuple[str, ...]]) -> EqualityArray | None:
    """The array of the delete rows of ``groups`` (``others`` holds the sets of other values they index);
    None when the keys span more than :data:`MAX_ARRAY_WORDS`, a key names two sets of other values, or
    ranks and others pass a 32-bit lane."""
    distinct = sorted({g.sequence for g in groups})
    other_bits = max(len(others) - 1, 0).bit_length()
    lane_bits = next((b for b in _LANE_BITS if len(distinct).bit_length() + other_bits <= b), None)
    present = [g for g in groups if g.keys.size]
    if lane_bits is None or len(others) > MAX_OTHER_VALUES:
        return None
    if not present:
        return EqualityArray(0, 0, lane_bits, other_bits, others, distinct, np.zeros(0, np.uint64))
    low = min(int(g.keys.min()) for g in present)
    high = max(int(g.keys.max()) for g in present)
    per_word = 64 // lane_bits
    words = (high - low) // per_word + 1
    if words > MAX_ARRAY_WORDS:
        return None
    lanes = np.zeros(words * per_word, np.dtype(f"<u{lane_bits // 8}"))
    # Oldest deletes first: a key's lane ends holding its newest delete (a plain store per row; rows of one
    # sequence number naming a key give it the same lane unless their other values differ, caught below).
    ranks = {sequence: i + 1 for i, sequence in enumerate(distinct)}  # a file each: no list search per file
    for g in sorted(present, key=lambda g: g.sequence):
        rank = ranks[g.sequence]
        lanes[g.keys - low] = (rank << other_bits) | g.other_index
    mask = (1 << other_bits) - 1
    if any(np.any((lanes[g.keys - low] & mask) != g.other_index) for g in present):
        return None  # a key whose deletes name two sets of other values
    return EqualityArray(low, high - low + 1, lane_bits, other_bits, others, distinct, lanes.view("<u8").astype(np.uint64))


def drop_deleted(
    df: DataFrame, array: EqualityArray, words: str, key: str, others: Sequence[str], rank: str, *, keep: bool = False
) -> DataFrame:
    """The rows of ``df`` the array's deletes do not remove (``keep``: only those they remove): ``words`` is
    the column of :meth:`EqualityArray.spark_words` (its one-row relation joined to the rows), ``key`` the
    row's key column, ``others`` its other key columns (quoted, in the order of ``array.others``' values),
    ``rank`` the column of its file's rank (:meth:`EqualityArray.rank`; null for rows of files no delete
    applies to: not removed). Built as SQL text: one call into Spark."""
    if not array.count:
        return df.where(F.lit(False)) if keep else df

    def number(name: str) -> str:
        return f"get({quoted_words}, {_HEADER.index(name)})"

    quoted_words = quoted(words)
    relative = f"try_subtract(bigint({key}), {number('low')})"  # null past a long: an ANSI session fails a plain overflow
    offset = f"CASE WHEN {relative} BETWEEN 0 AND {number('last')} THEN {relative} END"
    word = f"get({quoted_words}, int({len(_HEADER)} + shiftright({offset}, int({number('word_shift')}))))"
    shift = f"int(({offset} & {number('lane_index_mask')}) * {number('lane_bits')})"
    lane = f"(shiftrightunsigned({word}, {shift}) & {number('lane_mask')})"
    # The newer-delete test comes first: most rows fail it (no delete, lane 0), and Spark skips the rest of
    # the conjunction for them, so the lane is read again only for rows some delete names.
    deleted = f"shiftright({lane}, int({number('other_bits')})) > {quoted(rank)}"
    if others:
        branches = " ".join(
            f"WHEN {' AND '.join(f'{col} <=> {lit}' for col, lit in zip(others, values, strict=True))} THEN {i}"
            for i, values in enumerate(array.others)
        )
        deleted = f"{deleted} AND ({lane} & {number('other_mask')}) = CASE {branches} END"
    removed = F.expr(f"coalesce({deleted}, false)")
    return df.where(removed if keep else ~removed)
