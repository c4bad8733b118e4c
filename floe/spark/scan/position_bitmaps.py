"""Position deletes of a few data files applied as a bitmap in the plan (spec "Position Delete Files",
"Deletion Vectors").

Iceberg Java applies a data file's deleted positions as a bitmap while it reads the file. Spark's file
source has no such hook, and a hash join probes a table of deleted positions once per row, a cache miss
each when the table is large (measured on local[2], 2M rows with 200k deleted: the join's probe side took
0.5-0.75 s where a scan alone takes 0.2-0.3 s). For a few data files whose deleted positions fit a small
bitmap, the driver packs each file's positions into 64-bit words (bit ``pos % 64`` of word ``pos // 64``),
the files' words laid end to end in one array, a one-row local relation that the rows meet in a broadcast
nested-loop join: collected once per query, printed in plans as the relation rather than as its values,
and read by every task with an array index. A row is kept unless its bit is set: no join on the deleted
rows, no delete job. Where Floe's JVM helper is available (classic sessions) an exact slot table is read from
a broadcast variable by the helper instead (:func:`jvm_undeleted`), and no relation is joined at all.

A row finds its file's words by its file path for a few files (a comparison chain) whose sizes could not be
trusted or whose scan holds other files too. For more files (a table fed by changes, after its equality deletes
became position deletes) a chain costs a string compare per file and row, and hashing the path costs more than
the scan (measured on local[2], 10M rows in 88 files: a clean
aggregate 0.5 s; ``hash()`` of the path added 0.3 s, ``xxhash64`` 0.13 s, reading ``_metadata.file_size``
nothing measurable). So the row's file size, a long Spark keeps per file, picks a slot of a table laid out on
the driver (``size mod M`` distinct for every file: M searched upward), and the path of the file in that slot
is compared once to confirm it. A file whose real size differs from its manifest's would be missed, so the
caller checks the sizes first. Files sharing a size (equal row counts of similar data often give equal
sizes) are found the same way by Spark's ``xxhash64`` of the path, computed only for their rows (a chain of
path comparisons there cost 18 s instead of 0.7 s on 10M rows in 88 files of 8 sizes). Where the scan
reads only files with deletes (reads and row-level changes keep the others in a scan of their own), the
slot itself holds the file's words and nothing is confirmed: a row costs two array lookups, and its
``_metadata`` struct carries no path. Such a scan takes the slot table for one file as for a thousand: a chain of a few files
compared every row's path (paths of one table differ only near their end), and the change of kind when
the fifth file got deletes compiled the read again (bench/mor_rounds, 2M rows, medians of 3 runs: the reads of
rounds 2-4 took 1.25, 1.13 and 1.18 s with the chain, 1.00, 0.82 and 0.77 s with the table).

Nothing in the generated code depends on the deletes, so a read after a commit runs the code Spark compiled
(and the JVM optimized) for the read before it while the bitmap's shape stays (the number of chained
files, the kind of slot table). Code compiled anew runs cold: on local[2], the first read of 2M rows after a
MERGE took 0.85-1.0 s, the next 0.55-0.6 s. So the numbers of the lookup (word bases and counts of chained
files, the slot table's offset and moduli) are read from a header at the front of the words, where Spark
would inline them as literals; and the words come by a join, not as a scalar subquery, whose hash holds
its rows: Spark orders a stage's common subexpressions by such hashes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.classic.column import Column as ClassicColumn

from floe.spark.runtime.java_classes import java_class
from floe.spark.runtime.jvm_helpers import helper_method
from floe.spark.scan.driver_rows import note_driver_bytes, spark_xxhash64
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, ROW_SIZE_COLUMN, quoted

__all__ = [
    "CHAINED_FILES",
    "MAX_BITMAP_WORDS",
    "BitmapPlan",
    "PositionBitmap",
    "SizeSlots",
    "bitmap_plan",
    "file_numbers",
    "jvm_undeleted",
    "pack_positions",
    "size_slots",
    "undeleted",
]

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


def pack_positions(rows: pa.Table, files: list[str], record_counts: list[int] | None = None) -> PositionBitmap | None:
    """The bitmap of ``_floe_dkey`` (a row URI among ``files``) / ``_floe_dpos`` rows, None when it would
    pass :data:`MAX_BITMAP_WORDS`. Rows naming another file or a negative position name no scanned row and
    are left out.

    With ``record_counts`` (each file's rows, from its manifest), each file's words reach past its last
    row when that costs little (:func:`_padded`), so no row of the file falls beyond its words.
    """
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
    if record_counts is not None:
        lengths = _padded(lengths, np.asarray(record_counts, np.int64))
    if int(lengths.sum()) > MAX_BITMAP_WORDS:
        return None
    bases = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    bits = np.zeros(int(lengths.sum()) * 64, np.bool_)  # a byte per position (64 MB at most): 4x faster than OR-ing words
    bits[bases[owner] * 64 + pos] = True
    words = np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)
    return PositionBitmap(list(files), words, bases.tolist(), lengths.tolist())


def _padded(lengths: np.ndarray, record_counts: np.ndarray) -> np.ndarray:
    """Word counts covering every row of each file, where that at most doubles the words (or stays within
    64K words, 512 KB).

    Why: a row past its file's words takes the lookup's other branch (no word: kept). When the first rows
    of a task never took it (the tail of a file after its last delete, a file without deletes read in the
    same scan), the JVM's optimized code for the task's loop has no path for it, and the first such row
    throws that code away: the loop then runs in the JVM's profiling tier until it is compiled again (seen
    with -XX:+LogCompilation in the first reads of bench/mor_rounds: an ``unstable_if`` trap in the stage's
    loop, recompiled about a second later, tasks of 1M rows taking 0.55-0.7 s instead of 0.2-0.3 s).
    """
    covering = np.maximum(lengths, (record_counts + 63) >> 6)
    total, padded = int(lengths.sum()), int(covering.sum())
    return covering if padded <= max(2 * total, _PAD_WORDS) else lengths


# Words up to which padding is taken whatever the words of the deletes themselves (see _padded).
_PAD_WORDS = 1 << 16


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


def jvm_undeleted(spark: SparkSession, plan: BitmapPlan) -> Column | None:
    """True for a row whose position ``plan`` does not hold, looked up by Floe's JVM helper in a broadcast
    variable of the words (:mod:`floe.spark.runtime.jvm_helpers`), for an exact slot table (rows need
    :data:`ROW_SIZE_COLUMN` and :data:`ROW_POS_COLUMN`, and :data:`ROW_FILE_COLUMN` where files share a
    size); None for another plan, or where the helper is unavailable (Spark Connect): :func:`undeleted`
    then serves, by a join.

    The join's relation was collected by a job in every read, and the adaptive planner planned again after
    that stage: on local[2], a read of 2M rows after 3 merge-on-read MERGEs took 0.50 s instead of 0.61 s
    (medians of 25, alternated). The helper is the same object in every plan of this table state, and the
    generated code holds no words, so it stays the same from commit to commit, as the join's did.
    """
    table = plan.table
    if table is None or not table.exact:
        return None
    method = helper_method(spark, "UndeletedPositions", "filter", (
        "org.apache.spark.api.java.JavaSparkContext", "[B", "java.lang.String", "java.lang.String", "java.lang.String"))
    if method is None:
        return None
    gateway: Any = spark.sparkContext._gateway
    jvm: Any = spark._jvm
    args = gateway.new_array(java_class(jvm, "java.lang.Object"), 5)
    args[0] = spark.sparkContext._jsc
    args[1] = bytearray(np.ascontiguousarray(plan.words).astype("<u8", copy=False).tobytes())
    args[2] = ROW_SIZE_COLUMN
    args[3] = ROW_POS_COLUMN
    args[4] = ROW_FILE_COLUMN if table.hash_modulus else None
    note_driver_bytes(plan.words.nbytes)  # the broadcast lives as long as a plan holding the filter
    return ClassicColumn(method.invoke(None, args))


def undeleted(plan: BitmapPlan, words: str, paths: str) -> Column:
    """True for a row (:data:`ROW_FILE_COLUMN`, :data:`ROW_POS_COLUMN`, and for a size table
    :data:`ROW_SIZE_COLUMN`) whose position ``plan`` does not hold; rows of other files are kept.

    Args:
        plan: the bitmap laid out for the plan (:func:`bitmap_plan`).
        words: the name of ``plan.words``' column in Spark, and ``paths`` that of ``plan.paths``', from their
            one-row relation joined to the rows (``driver_rows.long_array_frame``).

    The condition is built as SQL text, one call into Spark (a column built function by function took
    about 90 calls through py4j, 35 ms a read).
    """
    array = quoted(words)
    index = plan.index(array, quoted(paths))
    return F.expr(f"coalesce(shiftright(get({array}, {index}), int({quoted(ROW_POS_COLUMN)} & 63)) & 1, 0) = 0")


@dataclass(frozen=True)
class BitmapPlan:
    """How rows find their words: ``words`` (the header, the bitmap's, then any slot table), the paths the
    lookup compares (``paths``: the chained files', padded with nulls, or the slot table's), and the lookup."""

    words: np.ndarray
    paths: list[str | None]
    table: SizeSlots | None

    def compiles(self) -> bool:
        """Whether Spark can compile the lookup: a slot table, or a chain of at most CHAINED_FILES files. A chain
        of every file (no slot table fits their sizes) is a CASE of one branch per file, and Janino, Spark's
        compiler, took more than a 4 GB heap for 960 branches (its local-variable maps are copied at every
        nesting level) where it did not give up first."""
        return self.table is not None or len(self.paths) <= CHAINED_FILES

    def index(self, words: str, paths: str) -> str:
        """A row's word index in ``words`` (a quoted column), null for a row whose file or word has no
        deletes (SQL); ``paths`` is the quoted column of :attr:`paths`."""
        if self.table is not None:
            return self.table.index(words, paths)
        return _chain(len(self.paths), words, paths)


def bitmap_plan(spark: SparkSession, bitmap: PositionBitmap, sizes: list[int] | None = None, *,
                only_these: bool = False) -> BitmapPlan | None:
    """The words Spark gets for ``bitmap`` and how a row finds its own (:func:`undeleted`), None when no
    file has a deleted position.

    Args:
        sizes: each bitmap file's size in bytes as Spark reports it (``_metadata.file_size``), checked by the
            caller; without them (or for a few files the rows of other files may meet) a row compares its
            path with every file's.
        only_these: the rows come from the bitmap's files and no others (files without deleted positions
            among them, with no words), so a row's size slot names its file: neither its size nor its path
            is compared (:meth:`SizeSlots.index`), however few the files.
    """
    laid_out = list(zip(bitmap.files, bitmap.bases, bitmap.lengths, strict=True))
    live = [(f, base, length) for f, base, length in laid_out if length]
    if not bitmap.words.any():
        return None
    # The header: each chained file's word base and count, or the slot table's numbers (SizeSlots.header).
    # Its length depends on the number of files alone, so the table's offset is known before the table is
    # laid out; a chain is padded to CHAINED_FILES, so chains of 1 to 4 files run the same code.
    chained = max(len(live), CHAINED_FILES)
    head = max(2 * chained, len(_SLOT_HEADER))
    live = [(f, head + base, length) for f, base, length in live]
    table = None
    exact = only_these and sizes is not None
    if sizes is not None and (len(live) > CHAINED_FILES or exact):
        size_of = dict(zip(bitmap.files, sizes, strict=True))
        # An exact table gives every file a slot, those without words too: a row of such a file must find
        # its own empty slot, never another file's whose size shares its residue.
        slotted = [(f, head + base, length) for f, base, length in laid_out] if exact else live
        table = size_slots(head + bitmap.words.size, [(f, size_of[f], base, length) for f, base, length in slotted],
                           lambda paths: spark_xxhash64(spark, paths), exact=exact)
    header = np.zeros(head, np.int64)
    if table is not None:
        header[: len(_SLOT_HEADER)] = table.header()
    else:
        header[: 2 * len(live)] = [n for _, base, length in live for n in (base, length)]
    parts = [header.astype(np.uint64), bitmap.words, *([] if table is None else [table.array])]
    if table is not None:
        paths: list[str | None] = [] if table.exact else list(table.paths)
    else:
        paths = [f for f, _, _ in live] + [None] * (chained - len(live))
    return BitmapPlan(np.concatenate(parts), paths, table)


def _chain(count: int, words: str, paths: str) -> str:
    """A row's word index found by comparing its path with each of ``count`` files' in turn (SQL): file ``i``'s
    path is element ``i`` of ``paths`` (null: no file), its word base and count header longs ``2i`` and
    ``2i + 1``."""
    file = quoted(ROW_FILE_COLUMN)
    branches = " ".join(
        f"WHEN {file} = get({paths}, {i}) AND {_WORD} < get({words}, {2 * i + 1}) THEN int({_WORD} + get({words}, {2 * i}))"
        for i in range(count)
    )
    return f"CASE {branches} END"


_WORD = f"shiftright({quoted(ROW_POS_COLUMN)}, 6)"


@dataclass(frozen=True)
class SizeSlots:
    """Files found by size: slot ``size mod size_modulus`` holds the file's number, -1 for none, or -2 for a
    size several files share, whose files are then found by slot ``xxhash64(path) mod hash_modulus``. The
    files' sizes, word bases, word counts follow; all laid out after ``offset`` words (``array``).

    ``exact`` tables serve rows of their own files only: a slot then holds its file's word base and count
    in one long (``base << 32 | count``; 0 for no file, -2 for a shared size), so a row takes one lookup
    and compares neither size nor path (measured on local[2], 10M rows in 88 files: the confirmations and
    the path in each row's ``_metadata`` struct cost about a third of the read)."""

    offset: int
    size_modulus: int
    hash_modulus: int  # 0: no size is shared
    count: int
    array: np.ndarray  # uint64: size slots, hash slots, then (not exact) sizes, bases, lengths (count each)
    paths: list[str]
    exact: bool = False

    def header(self) -> list[int]:
        """The numbers :meth:`index` reads from the words' header, in :data:`_SLOT_HEADER`'s order."""
        hash_start = self.offset + self.size_modulus
        columns = hash_start + self.hash_modulus
        return [self.offset, self.size_modulus, hash_start, self.hash_modulus, *(columns + k * self.count for k in range(3))]

    def index(self, words: str, paths: str) -> str:
        """A row's word index in ``words`` (a quoted column: the header, the bitmap's words, then this
        table), null for a row of no slotted file or past its file's words (SQL). Unless ``exact``, the
        slot's path (element of ``paths``, the quoted column of :attr:`paths`) is compared once: a row of a
        file without deletes that has a slotted file's size (or hash slot) is kept."""

        def number(name: str) -> str:
            return f"get({words}, {_SLOT_HEADER.index(name)})"

        file, size = quoted(ROW_FILE_COLUMN), quoted(ROW_SIZE_COLUMN)
        slot = f"get({words}, int({number('offset')} + pmod({size}, {number('size_modulus')})))"
        # Only rows of a shared size (slot -2) hash their path. The branch is left out without shared sizes:
        # an exact table then needs no path in the rows (the scan carries none: a third of the read on 88
        # files), and a confirming table's lookup stays one number a row (with the branch, the MERGE job of
        # bench/mor_rounds took 0.8 s instead of 0.5 s).
        by_hash = f"get({words}, int({number('hash_start')} + pmod(xxhash64({file}), {number('hash_modulus')})))"
        if self.exact:
            info = f"CASE WHEN {slot} = -2 THEN {by_hash} ELSE {slot} END" if self.hash_modulus else slot
            return f"CASE WHEN {_WORD} < ({info} & {_COUNT_MASK}) THEN int(shiftright({info}, 32) + {_WORD}) END"
        held = f"int({slot})"
        if self.hash_modulus:
            held = f"CASE WHEN {held} = -2 THEN int({by_hash}) ELSE {held} END"

        def column(name: str) -> str:
            return f"get({words}, int({number(name)} + {held}))"

        found = (
            f"{held} >= 0 AND {column('sizes')} = {size} AND {_WORD} < {column('lengths')} "
            f"AND get({paths}, {held}) = {file}"
        )
        return f"CASE WHEN {found} THEN int({column('bases')} + {_WORD}) END"


# The slot table's numbers at the front of the words: where it starts, its size slots' modulus, where its hash
# slots start and their modulus (0: none), and where each per-file column starts. Each is read once in a row's
# lookup: Spark would make a number read twice a common subexpression, ordered in the code by a hash of the
# words themselves, and the code would differ with every commit again.
_SLOT_HEADER = ("offset", "size_modulus", "hash_start", "hash_modulus", "sizes", "bases", "lengths")
_COUNT_MASK = (1 << 32) - 1


def _modulus(keys: np.ndarray) -> int | None:
    """The smallest modulus searched (upward by 5%) giving each key a residue of its own, None past the limit."""
    modulus = max(len(keys), 1)
    while modulus <= _MAX_SLOTS and len(np.unique(keys % modulus)) < len(keys):
        modulus = int(modulus * 1.05) + 1
    return modulus if modulus <= _MAX_SLOTS else None


def size_slots(
    offset: int, files: list[tuple[str, int, int, int]], hashes: Callable[[list[str]], list[int]], *, exact: bool = False
) -> SizeSlots | None:
    """The slot tables of ``files`` (path, size, word base, word count); ``hashes`` gives Spark's
    ``xxhash64`` of paths (asked only for files of a shared size). None when a table would pass the limits
    (or two paths hash alike). ``exact``: for rows of these files only (:class:`SizeSlots`)."""
    counts: dict[int, int] = {}
    for _, size, _, _ in files:
        counts[size] = counts.get(size, 0) + 1
    distinct = np.array(sorted(counts), np.int64)
    size_modulus = _modulus(distinct)
    if size_modulus is None:
        return None
    # exact: a file's slot holds its packed words; else its number, looked up in the columns below
    held = [(base << 32) | length if exact else number for number, (_, _, base, length) in enumerate(files)]
    slots = np.full(size_modulus, 0 if exact else -1, np.int64)
    for number, (_, size, _, _) in enumerate(files):
        slots[size % size_modulus] = held[number] if counts[size] == 1 else -2
    shared = [(number, x[0]) for number, x in enumerate(files) if counts[x[1]] > 1]
    hash_slots = np.zeros(0, np.int64)
    if shared:
        keys = np.array(hashes([path for _, path in shared]), np.int64)
        hash_modulus = _modulus(keys) if len(np.unique(keys)) == len(keys) else None
        if hash_modulus is None:
            return None
        hash_slots = np.full(hash_modulus, 0 if exact else -1, np.int64)
        hash_slots[keys % hash_modulus] = [held[number] for number, _ in shared]
    columns = [] if exact else [np.array([x[k] for x in files], np.int64) for k in (1, 2, 3)]
    if offset + size_modulus + hash_slots.size + sum(c.size for c in columns) > MAX_BITMAP_WORDS + _MAX_SLOTS:
        return None
    array = np.concatenate([slots, hash_slots, *columns]).astype(np.uint64)
    return SizeSlots(offset, size_modulus, hash_slots.size, len(files), array, [x[0] for x in files], exact)
