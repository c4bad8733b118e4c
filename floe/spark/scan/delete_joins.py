"""Delete files applied to a Spark scan as anti-joins (spec "Scan Planning", "Position Delete Files",
"Equality Delete Files", "Deletion Vectors").

Rows arrive with :data:`~floe.spark.scan.row_columns.ROW_FILE_COLUMN` (Spark's ``_metadata.file_path``) and,
for files with position deletes, :data:`~floe.spark.scan.row_columns.ROW_POS_COLUMN` (``_metadata.row_index``).
Which URI each data file's rows carry was asked of Spark (:mod:`floe.spark.scan.file_uris`), so the joins
compare strings exactly and never guess a spelling.

- Position deletes: a delete row applies to the data file whose manifest path equals its ``file_path``
  string (the spec's identity, compared as Iceberg Java compares it); deletion vectors name their data
  file in the manifest. Deletes of a few data files are read on the driver and applied as a bitmap in
  the plan (:mod:`floe.spark.scan.position_bitmaps`); otherwise few delete rows are read on the driver, more by
  Spark, and joined: up to a limit broadcast, beyond it both sides shuffled.
- Equality deletes: a left-anti join on null-safe equality of exactly the delete's ``equality_ids``
  columns (a file may carry more columns: only the key counts), limited to data files with a smaller data
  sequence number in the same partition, or in any partition for a delete written unpartitioned. When keys
  imply partitions, rows of files sharing one sequence number take it as a constant: the oldest files (most
  rows, in a table fed by changes) are read apart from the newer ones, which join their file for it, and
  the union of both meets one broadcast of the delete rows. Deletes on one key holding an integral column
  whose values fit an array are read on the driver and applied by the array instead of a join
  (:mod:`floe.spark.scan.equality_arrays`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import NoSuchFileError, ReadError, UnsupportedError
from floe.expressions.to_spark_sql import spark_string
from floe.io.arrow_schema import FIELD_ID_KEY
from floe.io.fileio import FileIO
from floe.io.locations import is_local
from floe.io.puffin import read_deletion_vector
from floe.scan.arrow_read import position_delete_fields
from floe.scan.delete_index import is_deletion_vector
from floe.scan.tasks import FileScanTask
from floe.spark.runtime.frame_calls import select_exprs
from floe.spark.scan.driver_rows import (
    LONG_ARRAY_COLUMN,
    STRING_ARRAY_COLUMN,
    arrow_frame,
    driver_frame,
    literal_lookup,
    long_array_frame,
    looked_up,
)
from floe.spark.scan.equality_array_cache import ArrayCache
from floe.spark.scan.equality_arrays import (
    OTHER_KEY_TYPES,
    DeleteKeys,
    EqualityArray,
    driver_arrow_type,
    drop_deleted,
    other_value_sets,
    pack_equality,
)
from floe.spark.scan.file_uris import file_relation, reported_uris
from floe.spark.scan.position_bitmaps import (
    BitmapPlan,
    bitmap_plan,
    file_numbers,
    jvm_undeleted,
    pack_positions,
    undeleted,
)
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, quoted
from floe.spark.types import FIELD_ID_METADATA_KEY, to_spark_schema
from floe.spec.manifest import (
    POSITION_DELETE_FILE_PATH_ID,
    POSITION_DELETE_POS_ID,
    DataFile,
    FileContent,
    FileFormat,
    ManifestEntry,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import IntegerType, LongType, NestedField, StructType

__all__ = ["ARRAY_EQUALITY_ROWS", "BITMAP_DELETE_ROWS", "BROADCAST_DELETE_ROWS", "BROADCAST_EQUALITY_ROWS", "BROADCAST_NUMBERED_ROWS", "DRIVER_DELETE_ROWS", "DRIVER_ROWS", "NUMBERED_FILES", "DeleteJoins", "file_field", "read_position_delete_rows"]

# Delete rows (delete-file rows + deletion-vector positions, from the manifests' record counts) up to which
# the deletes are broadcast to every task (a hash join, no sort of the data rows): ~150 bytes each.
BROADCAST_DELETE_ROWS = 200_000
# Position delete rows up to which the driver reads them (pyarrow) and hands them to Spark; more are read by
# Spark (and still broadcast up to BROADCAST_DELETE_ROWS): shipping rows from Python costs more than a scan
# (measured on local[2], a 2M-row read: 200k delete rows 0.92 s read by Spark, 1.33 s from the driver;
# 20k rows 0.67 s either way; and numbered, as a long key each: 0.68 s read by Spark, 0.90 s from the driver).
DRIVER_DELETE_ROWS = 20_000
# Position delete rows (of at most NUMBERED_FILES data files) up to which the driver reads them and the scan
# drops deleted rows by a bitmap in the plan (floe.spark.scan.position_bitmaps) instead of a join (measured on
# local[2], a 2M-row read with 200k deleted, medians of 7: 1.39-1.56 s against 1.91-2.80 s joined, a clean
# read of the same rows 0.7-0.8 s; pyarrow reads 1M delete rows, paths dictionary-encoded, in about 0.06 s).
# The bitmap's size is bounded by MAX_BITMAP_WORDS whatever the rows; this bounds the driver's read of them
# (10M rows: about 0.6 s and 150 MB, once per set of delete files). bench/mor_rounds after 50 rounds, 1.02M
# delete rows in 53 files: the join read 2.2M rows in 3.0-3.2 s, the bitmap in 0.75 s (1.39 s when packed).
BITMAP_DELETE_ROWS = 10_000_000
# Data files with position deletes up to which a scan numbers them in the plan and keys their rows by
# position and number in one long. Every row of the part looks its path up among the numbered files' (a
# literal map: compared in turn, ~5 ns each for paths that share their folder), so they stay few.
NUMBERED_FILES = 4
# Data files with position deletes up to which the bitmap serves, found by their sizes
# (floe.spark.scan.position_bitmaps): one size check each on the driver.
BITMAP_FILES = 2048
# Delete rows up to which deletes of numbered files are broadcast: a long each (measured on local[2], 10M
# rows with 1M deleted: read in 1.8-2.1 s broadcast, 2.5-2.8 s shuffled with their paths).
BROADCAST_NUMBERED_ROWS = 2_000_000
# Equality delete rows up to which they are broadcast: a hash on the key spares shuffling every data row
# (measured on local[2]: 10M rows against 1M delete rows read in 4.5 s broadcast, 7.4 s shuffled); Spark's
# hash relation takes about 60 bytes a row for a long and a short string, so this stays near 60 MB a copy.
BROADCAST_EQUALITY_ROWS = 1_000_000
# Equality delete rows up to which the driver reads them to apply them as an array over one integral key
# column (floe.spark.scan.equality_arrays), when their keys fit one.
ARRAY_EQUALITY_ROWS = 4_000_000
_ARRAYS: ArrayCache[_KeyArray] = ArrayCache()


@dataclass(frozen=True)
class _PackedBitmap:
    """Position deletes laid out for the plan; ``plan`` None when they name no scanned row."""

    plan: BitmapPlan | None


# Position bitmaps kept between reads of the same delete files (reading 80 delete files of 800k rows and
# laying out their words cost the driver about 0.15 s a read, measured on bench/cdc's table).
_BITMAPS: ArrayCache[_PackedBitmap] = ArrayCache()
# Each delete file's (file_path, pos) columns as the driver read them, by location and size: a pipeline's
# every commit adds delete files to those a read already holds, and the read after it then reads only the
# new ones (bench/mor_rounds at round 50: 51 delete files of 20k rows, about 0.1 s a read to read them all).
_POSITION_KEYS: ArrayCache[tuple[pa.DictionaryArray, pa.Array]] = ArrayCache()
# Delete rows the driver holds: a data file's URI (as its rows carry it; few distinct, so dictionary-encoded)
# and a position.
DRIVER_ROWS = pa.schema([pa.field("_floe_dkey", pa.dictionary(pa.int32(), pa.string())), pa.field("_floe_dpos", pa.int64())])
# A numbered file's row key is position * _FILE_SLOTS + number: unique while positions stay below the max.
_FILE_SLOTS = 1024
_MAX_NUMBERED_POSITION = 2**53 - 1
# Data files up to which a scan's set of files is a literal IN list in the plan (Spark hashes it).
INLINE_FILES = 1000


def _numbered_keys(rows: pa.Table, files: list[str]) -> pa.Array:
    """The numbered keys (see DeleteJoins.apply_positions) of ``_floe_dkey``/``_floe_dpos`` rows naming
    ``files`` (a position that names no row is dropped: no file holds 2^53 rows, and it would overflow)."""
    number = file_numbers(rows["_floe_dkey"], files)
    pos = rows["_floe_dpos"].combine_chunks()
    keep = pc.and_(pc.is_valid(number), pc.and_(pc.greater_equal(pos, 0), pc.less_equal(pos, _MAX_NUMBERED_POSITION)))
    keys = pc.add(pc.multiply(pos.filter(keep), _FILE_SLOTS), number.filter(keep).cast(pa.int64()))
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def file_field(f: NestedField, name: str) -> T.StructField:
    """A Spark field reading Iceberg field ``f`` (by its id) under ``name``."""
    sf = to_spark_schema(StructType(f), for_files=True).fields[0]
    return T.StructField(name, sf.dataType, True, {FIELD_ID_METADATA_KEY: f.field_id})


def read_position_delete_rows(io: FileIO, location: str) -> tuple[pa.Array, pa.Array]:
    """``(file_path, pos)`` of a Parquet position delete file, read on the driver, the paths as strings."""
    paths, positions = _read_position_keys(io, location)
    return paths.cast(pa.string()), positions


def _read_position_keys(io: FileIO, location: str) -> tuple[pa.DictionaryArray, pa.Array]:
    """``(file_path, pos)`` of a Parquet position delete file, read on the driver with the paths kept
    dictionary-encoded: a file names few data files, and decoding a string per row costs ten times the
    read (measured: 100k rows in 6 ms against 60-80 ms)."""
    with io.new_input(location).open() as fo:
        footer = pq.ParquetFile(fo)
        path_i, pos_i = position_delete_fields(footer.schema_arrow, location=location)
        names = footer.schema_arrow.names
        table = pq.ParquetFile(fo, metadata=footer.metadata, read_dictionary=[names[path_i]]).read(
            columns=[names[path_i], names[pos_i]])
    paths = table.column(0).combine_chunks()
    if not isinstance(paths, pa.DictionaryArray):  # (an empty file)
        paths = pc.dictionary_encode(paths)
    return paths, table.column(1).cast(pa.int64()).combine_chunks()


@dataclass(frozen=True)
class _EqualitySet:
    """Equality delete rows of one key (``_floe_eq<id>`` columns, ``_floe_dseq``, maybe ``_floe_dpkey``)."""

    fields: list[NestedField]
    rows: DataFrame
    small: bool  # broadcast


def _union(parts: Sequence[DataFrame]) -> DataFrame:
    df = parts[0]
    for more in parts[1:]:
        df = df.unionByName(more)
    return df


def _hash_key(fields: list[NestedField]) -> NestedField | None:
    """The key column Spark should hash when the key has several: a required int or long (a long hash
    relation is Spark's fastest), None to hash them all."""
    if len(fields) < 2:
        return None
    return next((f for f in fields if f.required and isinstance(f.field_type, (IntegerType, LongType))), None)


@dataclass(frozen=True)
class _KeyArray:
    """Equality deletes packed as an array over ``key``'s values (:mod:`floe.spark.scan.equality_arrays`)."""

    array: EqualityArray
    key: NestedField
    others: list[NestedField]


@dataclass
class DeleteJoins:
    """The deletes of a set of tasks, applied to the rows of their data files.

    Args:
        spark: the session.
        table_name: for messages.
        io: opens delete files read on the driver.
        location_of: a recorded location -> a readable one.
        read_schema: the top-level columns being read (equality keys among them).
        names: top-level field id -> the column name rows carry it under.
        tasks: the tasks whose rows are joined.
        uri_of: a data file's manifest path -> the ``_metadata.file_path`` its rows carry.
        specs: partition specs by id (an equality delete written unpartitioned is global).
        mapped_names: a delete file's column names -> {field id: column name}, for files without ids.
        keep_matched: keep only the rows the equality deletes match instead of dropping them (what
            ``rewrite_equality_deletes`` turns into positions); the tasks' deletes then share one key.
    """

    spark: SparkSession
    table_name: str
    io: FileIO
    location_of: Callable[[str], str]
    read_schema: Schema
    names: dict[int, str]
    tasks: Sequence[FileScanTask]
    uri_of: Callable[[str], str]
    specs: dict[int, PartitionSpec]
    mapped_names: Callable[[list[str]], dict[int, str]]
    keep_matched: bool = False
    _pkeys: dict[tuple[int, tuple[object, ...]], int] = field(default_factory=dict, init=False)
    _sets: list[_EqualitySet] | None = field(default=None, init=False)
    _array: _KeyArray | None = field(default=None, init=False)
    _array_decided: bool = field(default=False, init=False)
    _array_key: Hashable = field(default=None, init=False)

    def _check_parquet(self, entries: Sequence[ManifestEntry]) -> None:
        bad = next((e for e in entries if e.data_file.file_format != FileFormat.PARQUET), None)
        if bad is not None:
            raise UnsupportedError(
                f"Table {self.table_name}: delete file {bad.data_file.file_path} is "
                f"{bad.data_file.file_format}; the Spark read path applies Parquet delete files only"
            )

    # -- position deletes ------------------------------------------------------------------------
    def apply_positions(
        self,
        df: DataFrame,
        footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]],
        tasks: Sequence[FileScanTask] | None = None,
    ) -> DataFrame:
        """Drop rows of ``tasks`` (default: all) named by position delete files or deletion vectors (rows
        need the file and position).

        Args:
            footer_ids: delete file locations -> (has field ids, column names) of each, from its footer.
        """
        entries: dict[str, ManifestEntry] = {}
        targets: dict[str, str] = {}  # data file manifest path -> its rows' URI
        vectors: dict[str, ManifestEntry] = {}  # data file manifest path -> its deletion vector
        scan = self.tasks if tasks is None else tasks
        for t in scan:
            for e in t.deletes:
                if is_deletion_vector(e):
                    vectors[t.data_file.file_path] = e
                elif e.data_file.content == FileContent.POSITION_DELETES:
                    entries.setdefault(e.data_file.file_path, e)
                    targets[t.data_file.file_path] = self.uri_of(t.data_file.file_path)
        if not entries and not vectors:
            return df
        # Rows now carry their file (the URIs were learnt when the relation was made).
        data_files = {self.uri_of(t.data_file.file_path): t.data_file for t in scan}  # rows' URI -> data file
        self._check_parquet(list(entries.values()))
        # Deleted rows are few next to the data: a broadcast hash join then spares sorting every data row.
        delete_rows = sum(e.data_file.record_count for e in (*entries.values(), *vectors.values()))
        files = sorted({*targets.values(), *(self.uri_of(path) for path in vectors)})
        few_files = len(files) <= NUMBERED_FILES
        small = delete_rows <= (BROADCAST_NUMBERED_ROWS if few_files else BROADCAST_DELETE_ROWS)
        numbered = few_files and small
        # A row finds its file's bits by the file's size; the size must then be the size Spark reads (the
        # manifest's is checked against storage: a mismatch would miss deletes in silence). When every file
        # of the scan gets a slot (those without deletes an empty one), a row's slot names its file and
        # nothing is compared per row; otherwise the slots hold the files with deletes beyond a few, and a
        # row's path confirms its slot (a few are compared with each row's path).
        within = delete_rows <= BITMAP_DELETE_ROWS
        scanned = sorted(data_files)
        only_these = within and len(scanned) <= BITMAP_FILES
        by_size = only_these or (within and not few_files and len(files) <= BITMAP_FILES)
        members = scanned if only_these else files  # the files the bitmap lays out
        sizes = self._checked_sizes([data_files[f] for f in members]) if by_size else None
        as_bitmap = within and (few_files or sizes is not None)
        if as_bitmap:
            if sizes is None:
                members, only_these = files, False
            # Named by the delete files (never rewritten in place), the files they apply to and their sizes.
            key = (
                tuple(sorted((e.data_file.file_path, e.data_file.file_size_in_bytes) for e in entries.values())),
                tuple(sorted((p, e.data_file.file_path, e.data_file.content_offset or 0) for p, e in vectors.items())),
                tuple(sorted(targets.items())), tuple(members), tuple(sizes or ()), only_these,
            )
            packed = _BITMAPS.get_or_pack(key, lambda: self._pack_bitmap(
                entries, vectors, targets, members, [data_files[f].record_count for f in members], sizes, only_these,
            ))
            if packed is not None:
                plan = packed.plan
                if plan is None:
                    return df
                # Floe's JVM helper reads the words from a broadcast variable made once for them (no job
                # collects them in each read, and the adaptive planner has no stage to plan around).
                helper = _BITMAPS.in_session(key, self.spark, lambda: jvm_undeleted(self.spark, plan), "helper")
                if helper is not None:
                    return df.where(helper)
                # Elsewhere the words reach the rows by a broadcast join of their one-row relation, not as a scalar
                # subquery: a subquery's hash holds its rows, and Spark orders the common subexpressions
                # of the generated code by such hashes, so the code would change with every commit.
                # Kept with its broadcast hint (the hint is a step Spark analyses: 3 ms a read).
                frame = _BITMAPS.in_session(key, self.spark, lambda: F.broadcast(long_array_frame(self.spark, plan.words, plan.paths)))
                # One join carrying the condition, then the rows' own columns: two calls into Spark, each
                # analysing the plan (a cross join, a filter and a drop took 35-45 ms a read, 2M rows).
                kept = df.join(frame, undeleted(plan, LONG_ARRAY_COLUMN, STRING_ARRAY_COLUMN))
                return select_exprs(kept, [quoted(c) for c in df.columns])
            # Positions too far apart for a small bitmap: the numbered join below.
        local_rows: list[pa.Table] = []
        dels: DataFrame | None = None
        if entries and delete_rows <= DRIVER_DELETE_ROWS:  # read on the driver: no Spark job
            local_rows.append(self._position_rows_on_driver(list(entries.values()), targets))
        elif entries:
            dels = self._position_rows_in_spark(list(entries.values()), targets, footer_ids)
        if vectors:
            local_rows.append(self._deletion_vector_rows(vectors))
        if numbered:
            # Few files: each gets a number in the plan, and a row's key is its position and its file's
            # number in one long (Spark's fastest hash relation, and a broadcast of one long per deleted row
            # instead of a path string).
            numbers = pa.array(range(len(files)), pa.int64())
            row_key = F.col(ROW_POS_COLUMN) * _FILE_SLOTS + literal_lookup(ROW_FILE_COLUMN, files, numbers)
            parts = []
            if dels is not None:
                parts.append(dels.where(F.col("_floe_dpos").between(0, _MAX_NUMBERED_POSITION)).select(
                    (F.col("_floe_dpos") * _FILE_SLOTS + literal_lookup("_floe_dkey", files, numbers)).alias("_floe_drow")
                ))
            if local_rows:
                keys = _numbered_keys(pa.concat_tables(local_rows), files)
                parts.append(driver_frame(self.spark, {"_floe_drow": keys}))
            deleted = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
            return df.join(F.broadcast(deleted), row_key == F.col("_floe_drow"), "left_anti")
        if local_rows:
            rows = pa.concat_tables(local_rows)
            rows = rows.set_column(0, "_floe_dkey", rows["_floe_dkey"].cast(pa.string()))
            local = arrow_frame(self.spark, rows, "_floe_dkey string, _floe_dpos long")
            dels = local if dels is None else dels.unionByName(local)
        assert dels is not None
        same_pos = F.col(ROW_POS_COLUMN) == F.col("_floe_dpos")
        same_file = F.col(ROW_FILE_COLUMN) == F.col("_floe_dkey")
        if not small:
            return df.join(dels, same_pos & same_file, "left_anti")
        # Only the position is hashed (a long key, Spark's fastest hash relation); the file is compared for
        # the rows whose position some delete names. coalesce() keeps it out of the join keys (both sides are
        # non-null, so it never changes the result).
        return df.join(F.broadcast(dels), same_pos & F.coalesce(same_file, F.lit(False)), "left_anti")

    def _pack_bitmap(
        self, entries: dict[str, ManifestEntry], vectors: dict[str, ManifestEntry], targets: dict[str, str],
        files: list[str], record_counts: list[int], sizes: list[int] | None, only_these: bool,
    ) -> tuple[_PackedBitmap | None, int, bool]:
        """The deleted positions of ``files`` read on the driver and laid out for the plan (None when they
        are too far apart for a bitmap), with the bytes of its words; always kept (the key names every
        input)."""
        rows: list[pa.Table] = []
        if entries:
            rows.append(self._position_rows_on_driver(list(entries.values()), targets))
        if vectors:
            rows.append(self._deletion_vector_rows(vectors))
        bitmap = pack_positions(pa.concat_tables(rows), files, record_counts)
        if bitmap is None:
            return None, 0, True
        plan = bitmap_plan(self.spark, bitmap, sizes, only_these=only_these)
        if plan is not None and not plan.compiles():
            return None, 0, True  # the join below serves (its key names every input: kept as such)
        return _PackedBitmap(plan), 0 if plan is None else plan.words.nbytes, True

    def _checked_sizes(self, data_files: list[DataFile]) -> list[int] | None:
        """The files' sizes from their manifests, None when storage holds any at another size (or none)."""

        def holds(f: DataFile) -> bool:
            try:
                return self.io.new_input(self.location_of(f.file_path)).length() == f.file_size_in_bytes
            except NoSuchFileError:
                return False

        # A local file's size is a stat of microseconds, fewer than starting the pool's threads (on every read).
        if all(is_local(self.location_of(f.file_path)) for f in data_files):
            return [f.file_size_in_bytes for f in data_files] if all(map(holds, data_files)) else None
        with ThreadPoolExecutor(8) as pool:
            if not all(pool.map(holds, data_files)):
                return None
        return [f.file_size_in_bytes for f in data_files]

    def _position_rows_on_driver(self, entries: list[ManifestEntry], targets: dict[str, str]) -> pa.Table:
        """(row URI, position) of the delete rows naming a scanned data file, read with pyarrow; the URIs
        dictionary-encoded (:data:`DRIVER_ROWS`)."""

        def read(e: ManifestEntry) -> tuple[pa.DictionaryArray, pa.Array]:
            location = self.location_of(e.data_file.file_path)

            def load() -> tuple[tuple[pa.DictionaryArray, pa.Array], int, bool]:
                paths, positions = _read_position_keys(self.io, location)
                return (paths, positions), paths.nbytes + positions.nbytes, True

            keys = _POSITION_KEYS.get_or_pack((location, e.data_file.file_size_in_bytes), load)
            assert keys is not None
            return keys

        with ThreadPoolExecutor(8) as pool:
            parts = list(pool.map(read, entries))
        paths = pa.array(list(targets), pa.string())
        uris = pa.array(list(targets.values()), pa.string())
        keys, positions = [], []
        for path, pos in parts:
            owner = pc.index_in(path.dictionary.cast(pa.string()), value_set=paths).take(path.indices)
            mine = pc.is_valid(owner)  # delete files may also name data files this scan does not read
            keys.append(pa.DictionaryArray.from_arrays(owner.filter(mine), uris))
            positions.append(pos.filter(mine))
        return pa.table({"_floe_dkey": pa.chunked_array(keys, DRIVER_ROWS.field("_floe_dkey").type),
                         "_floe_dpos": pa.chunked_array(positions, pa.int64())}, schema=DRIVER_ROWS)

    def _position_rows_in_spark(
        self, entries: list[ManifestEntry], targets: dict[str, str],
        footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]],
    ) -> DataFrame:
        """(row URI, position) of many delete rows, read by Spark: by the reserved field ids, else by name."""
        by_id = T.StructType([
            T.StructField("file_path", T.StringType(), True, {FIELD_ID_METADATA_KEY: POSITION_DELETE_FILE_PATH_ID}),
            T.StructField("pos", T.LongType(), True, {FIELD_ID_METADATA_KEY: POSITION_DELETE_POS_ID}),
        ])
        locations = [self.location_of(e.data_file.file_path) for e in entries]
        size_at = {loc: e.data_file.file_size_in_bytes for loc, e in zip(locations, entries, strict=True)}
        footers = footer_ids(locations)
        frames = []
        for with_ids in (True, False):
            locs = [x for x in locations if footers[x][0] == with_ids]
            if not locs:
                continue
            if with_ids:
                frames.append(file_relation(self.spark, "parquet", by_id, locs, size_at))
                continue
            names = {n.lower(): n for x in locations if not footers[x][0] for n in footers[x][1]}
            if "file_path" not in names or "pos" not in names:
                raise ReadError(f"Table {self.table_name}: position delete file {locs[0]} has no file_path/pos columns")
            raw = file_relation(
                self.spark, "parquet", f"`{names['file_path']}` string, `{names['pos']}` long", locs, size_at
            )
            frames.append(raw.select(F.col(quoted(names["file_path"])).alias("file_path"), F.col(quoted(names["pos"])).alias("pos")))
        files = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        # Only the rows naming a file this scan reads, spelled as its rows spell it: without a relation
        # joined by broadcast (a Spark job of its own) when Spark spells the paths as the manifests do (a
        # literal IN list, which Spark hashes) or the files are few (a literal map).
        if len(targets) <= INLINE_FILES and all(uri == path for path, uri in targets.items()):
            listed = ", ".join(spark_string(p) for p in targets)
            return files.where(F.expr(f"file_path IN ({listed})")).select(
                F.col("file_path").alias("_floe_dkey"), F.col("pos").alias("_floe_dpos"))
        uris = pa.array(list(targets.values()), pa.string())
        return looked_up(files, "file_path", list(targets), {"_floe_dkey": uris}).select(
            F.col("_floe_dkey"), F.col("pos").alias("_floe_dpos")
        )

    def _deletion_vector_rows(self, vectors: dict[str, ManifestEntry]) -> pa.Table:
        """(row URI, position) of v3 deletion vectors, decoded on the driver (one ranged read each)."""

        def decode(item: tuple[str, ManifestEntry]) -> tuple[str, np.ndarray]:
            path, e = item
            positions = read_deletion_vector(self.io, self.location_of(e.data_file.file_path), e.data_file)
            return self.uri_of(path), positions

        with ThreadPoolExecutor(8) as pool:
            decoded = list(pool.map(decode, vectors.items()))
        keys = pa.array([k for k, _ in decoded], pa.string())
        owner = np.repeat(np.arange(len(decoded), dtype=np.int32), [len(p) for _, p in decoded])  # row -> its file
        return pa.table({
            "_floe_dkey": pa.DictionaryArray.from_arrays(pa.array(owner, pa.int32()), keys),
            "_floe_dpos": pa.array(np.concatenate([p for _, p in decoded]), pa.int64()),
        }, schema=DRIVER_ROWS)

    # -- equality deletes ------------------------------------------------------------------------
    def _equality_tasks(self, tasks: Sequence[FileScanTask] | None = None) -> list[FileScanTask]:
        return [
            t for t in (self.tasks if tasks is None else tasks)
            if any(e.data_file.content == FileContent.EQUALITY_DELETES for e in t.deletes)
        ]

    def key_implies_partition(self) -> bool:
        """Every partitioned equality delete has the source columns of its spec in its key, and the data files
        share that spec: a key match then implies the same partition (transforms are functions of their
        sources)."""
        tasks = self._equality_tasks()
        data_specs = {t.data_file.spec_id for t in tasks}
        for t in tasks:
            for e in t.deletes:
                if e.data_file.content != FileContent.EQUALITY_DELETES:
                    continue
                spec = self.specs.get(e.data_file.spec_id)
                if spec is None or spec.is_unpartitioned:
                    continue  # global delete
                keys = set(e.data_file.equality_ids or ())
                if data_specs != {e.data_file.spec_id} or any(s not in keys for f in spec.fields for s in f.source_ids):
                    return False
        return True

    def _oldest_sequence(self) -> int:
        return min(t.data_sequence_number for t in self.tasks)

    def equality_needs_file(self, tasks: Sequence[FileScanTask] | None = None) -> bool:
        """Whether the rows of ``tasks`` (default: all) need their file to meet the equality deletes: for
        sequence numbers, unless the tasks share one, and for partitions, unless keys imply them."""
        tasks = self.tasks if tasks is None else tasks
        if not self._equality_tasks(tasks):
            return False
        return len({t.data_sequence_number for t in tasks}) > 1 or not self.key_implies_partition()

    def split_for_equality(self) -> list[list[FileScanTask]]:
        """The tasks in parts read apart: when the oldest data files (one sequence number, equality deletes
        only, keys implying partitions) hold at least half the rows, they are a part whose rows take their
        sequence number as a constant instead of from a join on their file."""
        tasks = list(self.tasks)
        if not self._equality_tasks() or not self.key_implies_partition():
            return [tasks]
        oldest = self._oldest_sequence()
        base = [
            t for t in tasks
            if t.data_sequence_number == oldest
            and all(e.data_file.content == FileContent.EQUALITY_DELETES for e in t.deletes)
        ]
        rest = [t for t in tasks if t not in base]
        rows = sum(t.data_file.record_count for t in base)
        if not base or not rest or rows < sum(t.data_file.record_count for t in rest):
            return [tasks]
        return [base, rest]

    def with_sequence(self, df: DataFrame, tasks: Sequence[FileScanTask] | None = None) -> DataFrame:
        """The rows of ``tasks`` (default: all) with what :meth:`apply_equality` compares: ``_floe_seq``, their
        file's data sequence number, and ``_floe_pkey``, their partition, unless keys imply it (null for
        rows of files without equality deletes: no delete matches them)."""
        tasks = self.tasks if tasks is None else tasks
        if not self._equality_tasks():
            return df
        packed = self._key_array()
        # Rows compared with an array of deletes carry their file's rank among the deletes' sequence numbers.
        sequence_of = packed.array.rank if packed is not None else int
        mine = self._equality_tasks(tasks)
        if not mine:  # planning attached no equality delete to these files: a null sequence matches none
            df = df.withColumn("_floe_seq", F.lit(None).cast("long"))
            return df if self.key_implies_partition() else df.withColumn("_floe_pkey", F.lit(None).cast("int"))
        if not self.equality_needs_file(tasks):  # one sequence number, partitions implied by keys
            # Not a literal: Spark would fold it into the anti-join, push the comparison into the delete
            # side and prune its sequence column, so this part and the others would build two broadcasts
            # of the same delete rows. A non-deterministic term keeps the comparison here (it adds zero).
            # Its price: the query's filters stop above this part instead of reaching its scan (Spark
            # pushes no filter through a non-deterministic projection). A literal on the array's path
            # (measured 2026-11-27: full reads 15% faster) left three copies of the packed array in each
            # compaction task (60 MB) and ran the driver out of heap with concurrent groups.
            sequence = F.lit(sequence_of(tasks[0].data_sequence_number)) + F.spark_partition_id().cast("long") * 0
            return df.withColumn("_floe_seq", sequence)
        columns = {
            "_floe_k2": pa.array([self.uri_of(t.data_file.file_path) for t in mine], pa.string()),
            "_floe_seq": pa.array([sequence_of(t.data_sequence_number) for t in mine], pa.int64()),
        }
        if not self.key_implies_partition():
            columns["_floe_pkey"] = pa.array([self._partition_key(t.data_file) for t in mine], pa.int32())
        dm = driver_frame(self.spark, columns)
        return df.join(F.broadcast(dm), F.col(ROW_FILE_COLUMN) == F.col("_floe_k2"), "left").drop("_floe_k2")

    def apply_equality(
        self, parts: Sequence[DataFrame], footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]]
    ) -> DataFrame:
        """The union of ``parts`` (rows carrying :meth:`with_sequence`'s columns) without the rows equality
        delete files match. An array of deletes filters each part as it is read (a filter above the union
        would read the rows again, copied); a join takes the union, so one broadcast serves every part.

        Args:
            footer_ids: delete file locations -> (has field ids, column names) of each, from its footer.
        """
        if not self._equality_tasks():
            return _union(parts).where(F.lit(False)) if self.keep_matched else _union(parts)
        packed = self._key_array()
        if packed is not None:
            column = quoted(self.names[packed.key.field_id])
            others = [quoted(self.names[f.field_id]) for f in packed.others]
            array = packed.array
            # One relation for every part (Spark reuses its broadcast), joined rather than a scalar subquery,
            # whose hash holds its rows and would reorder the generated code with every commit.
            words = _ARRAYS.in_session(self._array_key, self.spark, lambda: long_array_frame(self.spark, array.spark_words()))
            return _union([
                drop_deleted(
                    df.crossJoin(F.broadcast(words)), array, LONG_ARRAY_COLUMN, column, others, "_floe_seq",
                    keep=self.keep_matched,
                ).drop("_floe_seq", LONG_ARRAY_COLUMN)
                for df in parts
            ])
        df = _union(parts)
        with_partition = not self.key_implies_partition()
        sets = self._equality_sets(footer_ids)
        if self.keep_matched and len(sets) != 1:
            # a semi join per key would keep the rows every key matches, not those any key matches
            raise UnsupportedError(f"Table {self.table_name}: matched rows are found for one equality key at a time")
        for key in sets:
            cond = F.col("_floe_seq") < F.col("_floe_dseq")
            if with_partition:
                cond = cond & ((F.col("_floe_dpkey") == F.lit(-1)) | (F.col("_floe_dpkey") == F.col("_floe_pkey")))
            hashed = _hash_key(key.fields)
            for f in key.fields:
                row, other = F.col(quoted(self.names[f.field_id])), F.col(f"_floe_eq{f.field_id}")
                # Spec: equality deletes match nulls, hence null-safe equality; a required column holds no
                # null, so plain equality (cheaper keys) gives the same answer.
                same = row == other if f.required else row.eqNullSafe(other)
                # One integral column as the join's key lets Spark hash longs; the other columns are
                # compared for the rows it matches (coalesce keeps them out of the keys; never null).
                cond = cond & (same if hashed is None or f is hashed else F.coalesce(same, F.lit(False)))
            how = "left_semi" if self.keep_matched else "left_anti"
            df = df.join(F.broadcast(key.rows) if key.small else key.rows, cond, how)
        return df.drop("_floe_seq", "_floe_pkey")

    def _partition_key(self, data_file: DataFile) -> int:
        """A small int per (spec, partition) of the files and deletes joined (-1 marks global deletes)."""
        return self._pkeys.setdefault((data_file.spec_id, tuple(data_file.partition)), len(self._pkeys))

    def _equality_sets(self, footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]]) -> list[_EqualitySet]:
        """The equality delete rows of all tasks, by key (built once)."""
        if self._sets is not None:
            return self._sets
        groups = self._equality_entries()
        oldest = F.lit(self._oldest_sequence())
        self._sets = []
        for ids, entries in groups.items():
            fields = [self._key_field(i) for i in ids]
            rows = self._equality_rows(list(entries.values()), ids, fields, footer_ids)
            if self.key_implies_partition():
                rows = rows.drop("_floe_dpkey")
            small = sum(e.data_file.record_count for e in entries.values()) <= BROADCAST_EQUALITY_ROWS
            # Deletes no newer than every data file match no row: dropped before they are broadcast.
            self._sets.append(_EqualitySet(fields, rows.where(oldest < F.col("_floe_dseq")), small))
        return self._sets

    def _equality_entries(self) -> dict[tuple[int, ...], dict[str, ManifestEntry]]:
        """The equality delete files of all tasks by key (``equality_ids``), each once."""
        groups: dict[tuple[int, ...], dict[str, ManifestEntry]] = {}
        for t in self._equality_tasks():
            for e in t.deletes:
                if e.data_file.content == FileContent.EQUALITY_DELETES:
                    ids = tuple(e.data_file.equality_ids or ())
                    if not ids:
                        raise ReadError(
                            f"Table {self.table_name}: equality delete file {e.data_file.file_path} has no equality_ids"
                        )
                    groups.setdefault(ids, {}).setdefault(e.data_file.file_path, e)
        return groups

    def _key_array(self) -> _KeyArray | None:
        """The equality deletes as an array over one integral key column, when they fit one (read once)."""
        if not self._array_decided:
            self._array_decided = True
            self._array = self._pack_key_array()
        return self._array

    def _pack_key_array(self) -> _KeyArray | None:
        """One key (``equality_ids``) implying partitions, holding an int or long column (a required one if
        any) no delete leaves null and otherwise columns of types with plain literals, at most
        ARRAY_EQUALITY_ROWS delete rows: read on the driver and packed (None when they do not fit: the join
        applies them)."""
        if not self._equality_tasks() or not self.key_implies_partition():
            return None
        groups = self._equality_entries()
        if len(groups) != 1:
            return None
        ((ids, entries),) = groups.items()
        fields = [self._key_field(i) for i in ids]
        integral = [f for f in fields if isinstance(f.field_type, (IntegerType, LongType))]
        key = next((f for f in integral if f.required), integral[0] if integral else None)
        others = [f for f in fields if f is not key]
        if key is None or any(not isinstance(f.field_type, OTHER_KEY_TYPES) for f in others):
            return None
        oldest = self._oldest_sequence()
        live = [e for e in entries.values() if (e.sequence_number or 0) > oldest]  # older ones match no row
        if sum(e.data_file.record_count for e in live) > ARRAY_EQUALITY_ROWS:
            return None
        self._check_parquet(live)
        # Named by the delete files (never rewritten in place), the key's columns and the ranks' inputs.
        cache_key = (
            tuple(sorted((e.data_file.file_path, e.data_file.file_size_in_bytes, e.sequence_number or 0) for e in live)),
            tuple((f.field_id, str(f.field_type), f.required) for f in fields), key.field_id,
        )
        self._array_key = cache_key
        return _ARRAYS.get_or_pack(cache_key, lambda: self._read_and_pack(live, key, others))

    def _read_and_pack(
        self, live: list[ManifestEntry], key: NestedField, others: list[NestedField]
    ) -> tuple[_KeyArray | None, int, bool]:
        """(the packed array or None, its bytes, whether every file had field ids: a name mapping would
        be an input the cache key does not name)."""
        with ThreadPoolExecutor(8) as pool:
            read = list(pool.map(lambda e: self._read_equality_keys(e, [key, *others]), live))
        tables = [t for t, _ in read]
        by_ids = all(ids for _, ids in read)
        if not tables:  # every delete older than every data file: nothing to drop
            empty = pack_equality([], [()])
            return (None if empty is None else _KeyArray(empty, key, [])), 0, True
        rows = pa.concat_tables(tables)
        if rows.column(0).null_count:  # a null key matches rows no array holds: the join applies them
            return None, 0, by_ids
        index, values = other_value_sets(rows.select(list(range(1, 1 + len(others)))), others)
        if index is None:
            return None, 0, by_ids
        ends = np.cumsum([t.num_rows for t in tables]).tolist()
        array = pack_equality([
            DeleteKeys(e.sequence_number or 0, t.column(0).to_numpy(), index[end - t.num_rows:end])
            for e, t, end in zip(live, tables, ends, strict=True)
        ], values)
        if array is None:
            return None, 0, by_ids
        return _KeyArray(array, key, others), array.words.nbytes, by_ids

    def _read_equality_keys(self, entry: ManifestEntry, fields: list[NestedField]) -> tuple[pa.Table, bool]:
        """Columns ``fields`` of an equality delete file (by field id, else by mapped name), read by pyarrow,
        in the types :func:`~floe.spark.scan.equality_arrays.driver_arrow_type` gives, and whether by field id."""
        location = self.location_of(entry.data_file.file_path)
        with self.io.new_input(location).open() as fo:
            footer = pq.ParquetFile(fo)
            schema = footer.schema_arrow
            by_id = {int(f.metadata[FIELD_ID_KEY]): f.name for f in schema if f.metadata and FIELD_ID_KEY in f.metadata}
            names = by_id or self.mapped_names(schema.names)
            missing = [f.field_id for f in fields if f.field_id not in names]
            if missing:
                raise ReadError(
                    f"Table {self.table_name}: equality delete file {location} has no column for field id {missing[0]}"
                )
            table = footer.read(columns=[names[f.field_id] for f in fields])
        return pa.table({
            f"_floe_eq{f.field_id}": table.column(i).cast(driver_arrow_type(f)) for i, f in enumerate(fields)
        }), bool(by_id)

    def _key_field(self, field_id: int) -> NestedField:
        f = self.read_schema.find_field_or_none(field_id)
        if f is None or f not in self.read_schema.fields:
            raise UnsupportedError(
                f"Table {self.table_name}: equality deletes on nested or dropped field id {field_id} are not supported"
            )
        return f

    def _equality_rows(
        self,
        entries: list[ManifestEntry],
        ids: tuple[int, ...],
        fields: list[NestedField],
        footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]],
    ) -> DataFrame:
        """The key columns (``_floe_eq<id>``) of equality delete rows with their file's sequence number and
        partition (``_floe_dseq``, ``_floe_dpkey``: -1 for a global delete)."""
        self._check_parquet(entries)
        locations = {e.data_file.file_path: self.location_of(e.data_file.file_path) for e in entries}
        size_at = {locations[e.data_file.file_path]: e.data_file.file_size_in_bytes for e in entries}
        footers = footer_ids(list(locations.values()))
        frames: list[DataFrame] = []
        by_layout: dict[tuple[tuple[int, str], ...] | None, list[str]] = {}
        for loc in locations.values():
            has_ids, columns = footers[loc]
            layout = None if has_ids else tuple(sorted(self.mapped_names(columns).items()))
            by_layout.setdefault(layout, []).append(loc)
        uris: dict[str, str] = {}
        for layout, locs in by_layout.items():
            if layout is None:  # field ids in the file: Spark matches the key columns by id
                schema = T.StructType([file_field(f, f"_floe_eq{f.field_id}") for f in fields])
                raw = file_relation(self.spark, "parquet", schema, locs, size_at)
                part = raw
            else:  # no ids: the key columns by their names in the file (name mapping, else the schema's)
                names = dict(layout)
                missing = [i for i in ids if i not in names]
                if missing:
                    raise ReadError(
                        f"Table {self.table_name}: equality delete file {locs[0]} has no column for field id "
                        f"{missing[0]} (columns without ids, none mapped to it)"
                    )
                schema = T.StructType([
                    T.StructField(names[f.field_id], to_spark_schema(StructType(f), for_files=True).fields[0].dataType)
                    for f in fields
                ])
                raw = file_relation(self.spark, "parquet", schema, locs, size_at)
                part = raw.select(*[F.col(quoted(names[f.field_id])).alias(f"_floe_eq{f.field_id}") for f in fields])
            uris.update(reported_uris(raw, locs, table_name=self.table_name))
            frames.append(part.select("*", F.col("_metadata.file_path").alias("_floe_dfile")))
        dels = frames[0]
        for extra in frames[1:]:
            dels = dels.unionByName(extra)
        rows = []
        for e in entries:
            dfile: DataFile = e.data_file
            spec = self.specs.get(dfile.spec_id)
            is_global = spec is None or spec.is_unpartitioned
            rows.append((
                uris[locations[dfile.file_path]],
                e.sequence_number or 0,
                -1 if is_global else self._partition_key(dfile),
            ))
        return looked_up(dels, "_floe_dfile", [r[0] for r in rows], {
            "_floe_dseq": pa.array([r[1] for r in rows], pa.int64()),
            "_floe_dpkey": pa.array([r[2] for r in rows], pa.int32()),
        }).drop("_floe_dfile")
