"""Delete files applied to a Spark scan as anti-joins (spec "Scan Planning", "Position Delete Files",
"Equality Delete Files", "Deletion Vectors").

Rows arrive with :data:`~floe.spark.row_columns.ROW_FILE_COLUMN` (Spark's ``_metadata.file_path``) and,
for files with position deletes, :data:`~floe.spark.row_columns.ROW_POS_COLUMN` (``_metadata.row_index``).
Which URI each data file's rows carry was asked of Spark (:mod:`floe.spark.file_uris`), so the joins
compare strings exactly and never guess a spelling.

- Position deletes: a delete row applies to the data file whose manifest path equals its ``file_path``
  string (the spec's identity, compared as Iceberg Java compares it); deletion vectors name their data
  file in the manifest. Few delete rows are read on the driver and broadcast; many are read by Spark.
- Equality deletes: a left-anti join on null-safe equality of exactly the delete's ``equality_ids``
  columns (a file may carry more columns: only the key counts), limited to data files with a smaller data
  sequence number in the same partition, or in any partition for a delete written unpartitioned. Data files
  of one sequence number whose keys imply their partition skip the join that gives rows those two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import ReadError, UnsupportedError
from floe.io.fileio import FileIO
from floe.io.puffin import read_deletion_vector
from floe.scan.arrow_read import position_delete_columns
from floe.scan.delete_index import is_deletion_vector
from floe.scan.tasks import FileScanTask
from floe.spark.file_uris import listed_on_driver, reported_uris, spark_location
from floe.spark.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, quoted
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
from floe.spec.types import NestedField, StructType

__all__ = ["BROADCAST_DELETE_ROWS", "DeleteJoins", "file_field", "read_position_delete_rows"]

# Delete rows (delete-file rows + deletion-vector positions, from the manifests' record counts) up to which
# the deletes are broadcast to every task (a hash join, no sort of the data rows): ~150 bytes each.
BROADCAST_DELETE_ROWS = 200_000


def file_field(f: NestedField, name: str) -> T.StructField:
    """A Spark field reading Iceberg field ``f`` (by its id) under ``name``."""
    sf = to_spark_schema(StructType(f), for_files=True).fields[0]
    return T.StructField(name, sf.dataType, True, {FIELD_ID_METADATA_KEY: f.field_id})


def read_position_delete_rows(io: FileIO, location: str) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """``(file_path, pos)`` of a Parquet position delete file, read on the driver."""
    with io.new_input(location).open() as fo:
        table = pq.ParquetFile(fo).read()
    return position_delete_columns(table, location=location)


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

    def _check_parquet(self, entries: Sequence[ManifestEntry]) -> None:
        bad = next((e for e in entries if e.data_file.file_format != FileFormat.PARQUET), None)
        if bad is not None:
            raise UnsupportedError(
                f"Table {self.table_name}: delete file {bad.data_file.file_path} is "
                f"{bad.data_file.file_format}; the Spark read path applies Parquet delete files only"
            )

    # -- position deletes ------------------------------------------------------------------------
    def apply_positions(
        self, df: DataFrame, footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]]
    ) -> DataFrame:
        """Drop rows named by position delete files or deletion vectors (rows need the file and position).

        Args:
            footer_ids: delete file locations -> (has field ids, column names) of each, from its footer.
        """
        entries: dict[str, ManifestEntry] = {}
        targets: dict[str, str] = {}  # data file manifest path -> its rows' URI
        vectors: dict[str, ManifestEntry] = {}  # data file manifest path -> its deletion vector
        for t in self.tasks:
            for e in t.deletes:
                if is_deletion_vector(e):
                    vectors[t.data_file.file_path] = e
                elif e.data_file.content == FileContent.POSITION_DELETES:
                    entries.setdefault(e.data_file.file_path, e)
                    targets[t.data_file.file_path] = self.uri_of(t.data_file.file_path)
        if not entries and not vectors:
            return df
        self._check_parquet(list(entries.values()))
        # Deleted rows are few next to the data: a broadcast hash join then spares sorting every data row.
        delete_rows = sum(e.data_file.record_count for e in (*entries.values(), *vectors.values()))
        small = delete_rows <= BROADCAST_DELETE_ROWS
        driver_rows: list[pa.Table] = []
        dels: DataFrame | None = None
        if entries and small:  # a few rows: read on the driver, sparing Spark a job to build the broadcast
            driver_rows.append(self._position_rows_on_driver(list(entries.values()), targets))
        elif entries:
            dels = self._position_rows_in_spark(list(entries.values()), targets, footer_ids)
        if vectors:
            driver_rows.append(self._deletion_vector_rows(vectors))
        if driver_rows:
            local = self.spark.createDataFrame(pa.concat_tables(driver_rows), "_floe_dkey string, _floe_dpos long")
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

    def _position_rows_on_driver(self, entries: list[ManifestEntry], targets: dict[str, str]) -> pa.Table:
        """(row URI, position) of the delete rows naming a scanned data file, read with pyarrow."""

        def read(e: ManifestEntry) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
            return read_position_delete_rows(self.io, self.location_of(e.data_file.file_path))

        with ThreadPoolExecutor(8) as pool:
            parts = list(pool.map(read, entries))
        paths = pa.chunked_array([c for p, _ in parts for c in p.chunks], pa.string())
        positions = pa.chunked_array([c for _, q in parts for c in q.chunks], pa.int64())
        owner = pc.index_in(paths, value_set=pa.array(list(targets), pa.string()))
        mine = pc.is_valid(owner)  # delete files may also name data files this scan does not read
        uris = pa.array(list(targets.values()), pa.string())
        return pa.table({
            "_floe_dkey": uris.take(owner.filter(mine)),
            "_floe_dpos": positions.filter(mine),
        })

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
        footers = footer_ids(locations)
        frames = []
        for with_ids in (True, False):
            locs = [spark_location(x) for x in locations if footers[x][0] == with_ids]
            if not locs:
                continue
            if with_ids:
                with listed_on_driver(self.spark, len(locs)):
                    frames.append(self.spark.read.schema(by_id).parquet(*locs))
                continue
            names = {n.lower(): n for x in locations if not footers[x][0] for n in footers[x][1]}
            if "file_path" not in names or "pos" not in names:
                raise ReadError(f"Table {self.table_name}: position delete file {locs[0]} has no file_path/pos columns")
            with listed_on_driver(self.spark, len(locs)):
                raw = self.spark.read.schema(f"`{names['file_path']}` string, `{names['pos']}` long").parquet(*locs)
            frames.append(raw.select(F.col(quoted(names["file_path"])).alias("file_path"), F.col(quoted(names["pos"])).alias("pos")))
        files = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        mapping = self.spark.createDataFrame(list(targets.items()), "_floe_orig string, _floe_dkey string")
        return files.join(F.broadcast(mapping), F.col("file_path") == F.col("_floe_orig")).select(
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
        owner = np.repeat(np.arange(len(decoded)), [len(p) for _, p in decoded])  # row -> its data file
        return pa.table({
            "_floe_dkey": keys.take(pa.array(owner, pa.int64())),
            "_floe_dpos": pa.array(np.concatenate([p for _, p in decoded]), pa.int64()),
        })

    # -- equality deletes ------------------------------------------------------------------------
    def _equality_tasks(self) -> list[FileScanTask]:
        return [t for t in self.tasks if any(e.data_file.content == FileContent.EQUALITY_DELETES for e in t.deletes)]

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

    def equality_needs_file(self) -> bool:
        """Whether applying the equality deletes needs each row's file (for its sequence number and partition):
        not when all tasks (also those without equality deletes: their rows meet the same join) share one
        data sequence number and keys imply partitions."""
        if not self._equality_tasks():
            return False
        return len({t.data_sequence_number for t in self.tasks}) > 1 or not self.key_implies_partition()

    def apply_equality(self, df: DataFrame, footer_ids: Callable[[list[str]], dict[str, tuple[bool, list[str]]]]) -> DataFrame:
        """Drop rows matched by equality delete files (rows need their file column when
        :meth:`equality_needs_file`).

        Args:
            footer_ids: delete file locations -> (has field ids, column names) of each, from its footer.
        """
        mine = self._equality_tasks()
        if not mine:
            return df
        groups: dict[tuple[int, ...], dict[str, ManifestEntry]] = {}
        for t in mine:
            for e in t.deletes:
                if e.data_file.content == FileContent.EQUALITY_DELETES:
                    ids = tuple(e.data_file.equality_ids or ())
                    if not ids:
                        raise ReadError(
                            f"Table {self.table_name}: equality delete file {e.data_file.file_path} has no equality_ids"
                        )
                    groups.setdefault(ids, {}).setdefault(e.data_file.file_path, e)
        pkeys: dict[tuple[int, tuple[object, ...]], int] = {}

        def pkey(spec_id: int, partition: tuple[object, ...]) -> int:
            return pkeys.setdefault((spec_id, tuple(partition)), len(pkeys))

        by_file = self.equality_needs_file()
        if by_file:
            data_rows = [
                (self.uri_of(t.data_file.file_path), t.data_sequence_number, pkey(t.data_file.spec_id, t.data_file.partition))
                for t in mine
            ]
            dm = self.spark.createDataFrame(data_rows, "_floe_k2 string, _floe_seq long, _floe_pkey int")
            df = df.join(F.broadcast(dm), F.col(ROW_FILE_COLUMN) == F.col("_floe_k2"), "left").drop("_floe_k2")
        for ids, entries in groups.items():
            fields = [self._key_field(i) for i in ids]
            small = sum(e.data_file.record_count for e in entries.values()) <= BROADCAST_DELETE_ROWS
            dels = self._equality_rows(list(entries.values()), ids, fields, footer_ids, pkey)
            if by_file:
                cond = (F.col("_floe_seq") < F.col("_floe_dseq")) & (
                    (F.col("_floe_dpkey") == F.lit(-1)) | (F.col("_floe_dpkey") == F.col("_floe_pkey"))
                )
            else:  # one data sequence number, partitions implied by the key
                cond = F.lit(mine[0].data_sequence_number) < F.col("_floe_dseq")
                dels = dels.drop("_floe_dpkey")
            for f in fields:
                row, key = F.col(quoted(self.names[f.field_id])), F.col(f"_floe_eq{f.field_id}")
                # Spec: equality deletes match nulls, hence null-safe equality; a required column holds no
                # null, so plain equality (cheaper keys) gives the same answer.
                cond = cond & (row == key if f.required else row.eqNullSafe(key))
            df = df.join(F.broadcast(dels) if small else dels, cond, "left_anti")
        return df.drop("_floe_seq", "_floe_pkey") if by_file else df

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
        pkey: Callable[[int, tuple[object, ...]], int],
    ) -> DataFrame:
        """The key columns (``_floe_eq<id>``) of equality delete rows with their file's sequence number and
        partition (``_floe_dseq``, ``_floe_dpkey``: -1 for a global delete)."""
        self._check_parquet(entries)
        locations = {e.data_file.file_path: self.location_of(e.data_file.file_path) for e in entries}
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
                with listed_on_driver(self.spark, len(locs)):
                    raw = self.spark.read.schema(schema).parquet(*[spark_location(x) for x in locs])
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
                with listed_on_driver(self.spark, len(locs)):
                    raw = self.spark.read.schema(schema).parquet(*[spark_location(x) for x in locs])
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
                -1 if is_global else pkey(dfile.spec_id, tuple(dfile.partition)),
            ))
        meta = self.spark.createDataFrame(rows, "_floe_dk string, _floe_dseq long, _floe_dpkey int")
        return dels.join(F.broadcast(meta), F.col("_floe_dfile") == F.col("_floe_dk")).drop("_floe_dfile", "_floe_dk")
