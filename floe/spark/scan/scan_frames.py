"""Turn planned scan tasks into one native Spark DataFrame (Parquet and ORC scans, joins for deletes).

Column naming (DESIGN.md section 5): Spark resolves Parquet columns by field id
(``spark.sql.parquet.fieldId.read.enabled``) but pushes filters into Parquet *by name*, and its vectorized
reader fails when a requested name exists in a file with another type. Columns whose name is not stable
across the table's schema history (renamed, or a name reused by another field id) are therefore requested
under a synthetic name (``_floe_c<id>``) that no file contains: ids still match, nothing can be pushed or
clash by name, and the column is renamed back afterwards. Stable columns keep their names and pushdown.

Files without deletes or fills, files with fills only and files with deletes are read as separate
relations (unioned), so only the last carry ``_metadata.row_index`` and meet the delete joins
(:mod:`floe.spark.scan.delete_joins`). Rows are keyed by their file's ``_metadata.file_path`` exactly as Spark
reports it, learnt from Spark for each file (:mod:`floe.spark.scan.file_uris`): nothing is decoded per row and
no key can silently miss. Identity partition values are filled from the manifest for files that lack the
column (imported files).

ORC data files are read natively by name (:mod:`floe.spark.scan.orc_read`); Avro data files, ORC files with
position deletes, tasks with ORC/Avro delete files and files on stores Spark has no file system for are
read with pyarrow in Python workers (:func:`_route`, :mod:`floe.spark.scan.worker_read`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import UnsupportedError
from floe.io.arrow_schema import field_id_of
from floe.io.fileio import FileIO
from floe.io.locations import scheme_of
from floe.io.name_mapping import NameMapping, name_mapping_from_schema
from floe.scan.arrow_read import fallback_field_ids
from floe.scan.tasks import FileScanTask
from floe.spark.runtime.connect import require_python_workers
from floe.spark.runtime.frame_calls import select_exprs
from floe.spark.runtime.storage import configure_native_s3, spark_reaches
from floe.spark.scan.delete_joins import DeleteJoins, file_field
from floe.spark.scan.driver_rows import driver_frame, empty_frame
from floe.spark.scan.file_uris import file_relation, reported_uris
from floe.spark.scan.orc_read import OrcNotNative, lazy_time_zones, orc_read_plan, probe_orc_schemas
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, ROW_SIZE_COLUMN, quoted
from floe.spark.scan.worker_read import make_task_group, pack_tasks, worker_frame
from floe.spark.types import to_spark_schema, to_spark_type
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema, nested_field_ids, walk_fields
from floe.spec.types import (
    DateType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

__all__ = ["PARQUET_ROW_INDEX", "ROW_FILE_COLUMN", "ROW_POS_COLUMN", "ScanInputs", "tasks_to_dataframe", "unstable_field_ids"]

_FILE = ROW_FILE_COLUMN
_POS = ROW_POS_COLUMN
_SIZE = ROW_SIZE_COLUMN
# The column Spark's Parquet reader fills with each row's position in its file when a read schema holds it
# (Spark's ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME: how it serves ``_metadata.row_index``). Asked
# for directly, the row index is a plain long column; through ``_metadata`` Spark builds a struct per row
# first (measured on local[2], 2M rows in 4 files, an aggregate: 0.26 s plain, 0.33 s with
# ``_metadata.row_index`` and ``file_size``, 0.29 s with this column and ``file_size``).
PARQUET_ROW_INDEX = "_tmp_metadata_row_index"

# Parquet footers are read to find files without field ids when the table has a name mapping, or when
# the scan is small enough that reading footers is cheap (imported tables without a mapping are read
# by position, as Iceberg Java does). Larger scans of tables without a mapping trust the files' ids.
_FOOTER_PROBE_MAX_FILES = 256
# Rows of files without deletes, as a share of the rows of files with position deletes, up to which they
# are read in the same scan (their rows then meet the bitmap's empty slots): a relation of their own cost
# the driver 15-25 ms to make on every query and the scan a task of its own (bench/mor_rounds, 2M rows:
# the newest MERGE's file, 1% of the rows, read apart from the files its MERGE left deletes on).
_JOINED_ROWS_SHARE = 0.05
# Tasks read by pyarrow in Python workers are packed into groups of about this many (one Spark task
# each), and into at least Spark's default parallelism.
_TASKS_PER_WORKER_GROUP = 8


def _with_row_index(schema: T.StructType, meta: tuple[str, ...]) -> T.StructType:
    """``schema`` with Spark's row index column when the rows need their positions (_POS in ``meta``)."""
    if _POS not in meta:
        return schema
    return T.StructType([*schema.fields, T.StructField(PARQUET_ROW_INDEX, T.LongType(), True)])


@dataclass(frozen=True)
class ScanInputs:
    """Everything the DataFrame builder needs from the planned scan."""

    table_name: str
    io: FileIO
    table_schema: Schema  # the schema the scan reads with (all columns)
    read_schema: Schema  # projection + filter + equality-delete columns (top-level)
    output_schema: Schema  # the columns returned
    all_schemas: Sequence[Schema]
    specs: dict[int, PartitionSpec]
    name_mapping: NameMapping | None
    location_of: Callable[[str], str]
    case_sensitive: bool = True


# -- names -------------------------------------------------------------------------------------------
def unstable_field_ids(schemas: Iterable[Schema]) -> set[int]:
    """Field ids whose (dotted) name differs between schemas, or whose name another id also used."""
    names_by_id: dict[int, set[str]] = {}
    ids_by_name: dict[str, set[int]] = {}
    for s in schemas:
        for name, f in walk_fields(s.as_struct()):
            names_by_id.setdefault(f.field_id, set()).add(name)
            ids_by_name.setdefault(name, set()).add(f.field_id)
    out = {i for i, names in names_by_id.items() if len(names) > 1}
    for ids in ids_by_name.values():
        if len(ids) > 1:
            out |= ids
    return out


def _internal_names(schema: Schema, unstable: set[int]) -> dict[int, str]:
    """Top-level field id -> the name requested from Parquet (synthetic when unstable at any depth)."""
    out: dict[int, str] = {}
    for f in schema.fields:
        ids = {f.field_id} | nested_field_ids(f.field_type)
        out[f.field_id] = f"_floe_c{f.field_id}" if ids & unstable else f.name
    return out


# -- per-file facts ------------------------------------------------------------------------------------
def _lacks_column(df: DataFile, field_id: int, present: set[int] | None) -> bool:
    """Whether a file lacks a column: from its footer when probed, else from the manifest's metrics."""
    if present is not None:
        return field_id not in present
    for m in (df.value_counts, df.null_value_counts, df.column_sizes):
        if m:
            return field_id not in m
    return True


def _joins_deleted(plain: list[FileScanTask], deleted: list[FileScanTask]) -> bool:
    """Whether the files without deletes are read in the scan of the files with position deletes: when they
    are fewer and hold few rows next to them, and no equality delete applies there (its join would see
    their rows too)."""
    if not plain or len(plain) > len(deleted):
        return False
    if any(e.data_file.content == FileContent.EQUALITY_DELETES for t in deleted for e in t.deletes):
        return False
    rows = sum(t.data_file.record_count for t in plain)
    return rows <= _JOINED_ROWS_SHARE * sum(t.data_file.record_count for t in deleted)


def _constant_fills(
    task: FileScanTask, read_fields: tuple[NestedField, ...], present: set[int] | None
) -> dict[int, object]:
    """Values for columns a file lacks: identity partition values, else v3 initial defaults."""
    out: dict[int, object] = {}
    for f in read_fields:
        if f.initial_default is not None and f.field_type.is_primitive and _lacks_column(task.data_file, f.field_id, present):
            out[f.field_id] = f.initial_default
    spec = task.spec
    if spec is None:
        return out
    read_ids = {f.field_id for f in read_fields}
    for pos, pf in enumerate(spec.fields):
        if (
            str(pf.transform) == "identity"
            and pf.source_id in read_ids
            and pos < len(task.data_file.partition)
            and _lacks_column(task.data_file, pf.source_id, present)
        ):
            out[pf.source_id] = task.data_file.partition[pos]
    return out


@dataclass(frozen=True)
class _Footer:
    """Top-level columns of a Parquet file: field ids (None when the file has none) and names."""

    ids: frozenset[int] | None
    names: tuple[str, ...]


# Footers probed by this process, by location: a table's data and delete files are never rewritten in
# place, so repeated reads of a table (a pipeline's every query, a stream's every batch) skip the reads.
_FOOTER_CACHE: dict[str, _Footer] = {}
_FOOTER_CACHE_MAX = 200_000
_FOOTER_CACHE_LOCK = threading.Lock()


def _probe_footers(io: FileIO, locations: list[str]) -> dict[str, _Footer]:
    """Read Parquet footers in parallel (only the schema is used), or remember them."""

    def probe(loc: str) -> tuple[str, _Footer]:
        with io.new_input(loc).open() as fo:
            schema = pq.read_schema(fo)
        ids = [i for f in schema if (i := field_id_of(f)) is not None]
        return loc, _Footer(frozenset(ids) if ids else None, tuple(schema.names))

    with _FOOTER_CACHE_LOCK:
        known = {loc: f for loc in locations if (f := _FOOTER_CACHE.get(loc)) is not None}
    missing = [loc for loc in dict.fromkeys(locations) if loc not in known]
    if not missing:
        return known
    with ThreadPoolExecutor(min(8, len(missing))) as pool:
        probed = dict(pool.map(probe, missing))
    with _FOOTER_CACHE_LOCK:
        if len(_FOOTER_CACHE) + len(probed) > _FOOTER_CACHE_MAX:
            _FOOTER_CACHE.clear()
        _FOOTER_CACHE.update(probed)
    return known | probed


# -- building --------------------------------------------------------------------------------------------
class _Builder:
    def __init__(
        self,
        spark: SparkSession,
        inputs: ScanInputs,
        tasks: list[FileScanTask],
        with_position: bool = False,
        equality_matches: bool = False,
    ) -> None:
        self.spark = spark
        self.inp = inputs
        self.tasks = tasks
        self.with_position = with_position
        self.equality_matches = equality_matches
        self.read_schema = inputs.read_schema
        self.unstable = unstable_field_ids(inputs.all_schemas)
        self.names = _internal_names(self.read_schema, self.unstable)
        self.loc = {t.data_file.file_path: inputs.location_of(t.data_file.file_path) for t in tasks}
        self.size_at = {self.loc[t.data_file.file_path]: t.data_file.file_size_in_bytes for t in tasks}
        self.footers: dict[str, _Footer] = {}
        # data file manifest path -> the ``_metadata.file_path`` Spark gives its rows (asked of Spark)
        self.uris: dict[str, str] = {}

    def _uri_of(self, path: str) -> str:
        return self.uris[path]

    def _learn_uris(self, relation: DataFrame, locations: list[str]) -> None:
        by_location = reported_uris(relation, locations, table_name=self.inp.table_name)
        for path, loc in self.loc.items():
            if loc in by_location:
                self.uris[path] = by_location[loc]

    def _present(self, task: FileScanTask) -> set[int] | None:
        """Field ids a probed file holds (mapped ids for files without ids), None when not probed."""
        foot = self.footers.get(self.loc[task.data_file.file_path])
        if foot is None:
            return None
        if foot.ids is not None:
            return set(foot.ids)
        return set(self._mapped_names(list(foot.names)))

    def _deletes(self) -> DeleteJoins:
        return DeleteJoins(
            spark=self.spark,
            table_name=self.inp.table_name,
            io=self.inp.io,
            location_of=self.inp.location_of,
            read_schema=self.read_schema,
            names=self.names,
            tasks=self.tasks,
            uri_of=self._uri_of,
            specs=self.inp.specs,
            mapped_names=self._mapped_names,
            keep_matched=self.equality_matches,
        )

    def _delete_footers(self, locations: list[str]) -> dict[str, tuple[bool, list[str]]]:
        return {loc: (f.ids is not None, list(f.names)) for loc, f in _probe_footers(self.inp.io, locations).items()}

    # -- data reads ---------------------------------------------------------------------------------
    def _read_parquet_by_id(self, locations: list[str], meta: tuple[str, ...]) -> DataFrame:
        schema = T.StructType([file_field(f, self.names[f.field_id]) for f in self.read_schema.fields])
        df = file_relation(self.spark, "parquet", _with_row_index(schema, meta), locations, self.size_at)
        if meta:
            self._learn_uris(df, locations)
        return self._with_meta(df, meta)

    def _read_parquet_by_name(self, locations: list[str], file_names: dict[int, str], meta: tuple[str, ...]) -> DataFrame:
        """Files without field ids: request each column by its name in the file (from the name mapping)."""
        fields = []
        for f in self.read_schema.fields:
            sf = to_spark_schema(StructType(f), for_files=True).fields[0]
            fields.append(T.StructField(file_names.get(f.field_id, f"_floe_missing{f.field_id}"), _strip(sf.dataType)))
        df = file_relation(self.spark, "parquet", _with_row_index(T.StructType(fields), meta), locations, self.size_at)
        if meta:
            self._learn_uris(df, locations)
        df = self._with_meta(df, meta)
        cols = [f"{quoted(fld.name)} AS {quoted(self.names[f.field_id])}" for f, fld in zip(self.read_schema.fields, fields)]
        return df.selectExpr(*cols, *[quoted(m) for m in meta])

    @staticmethod
    def _with_meta(df: DataFrame, meta: tuple[str, ...]) -> DataFrame:
        """Add the asked metadata columns (_FILE: ``_metadata.file_path``, _POS: the row index column
        :func:`_with_row_index` asked for, _SIZE: ``_metadata.file_size``); one call into Spark (the read
        path is built on every query, and each call through py4j costs 0.3-0.4 ms)."""
        if not meta:
            return df
        source = {_FILE: "_metadata.file_path", _POS: quoted(PARQUET_ROW_INDEX), _SIZE: "_metadata.file_size"}
        rest = [quoted(c) for c in df.columns if c != PARQUET_ROW_INDEX]
        return select_exprs(df, [*rest, *[f"{source[m]} AS {quoted(m)}" for m in meta]])

    def _mapped_names(self, file_columns: list[str]) -> dict[int, str]:
        """Field id -> column name for a file without ids: the name mapping, else Java's fallback ids."""
        mapping = self.inp.name_mapping
        out: dict[int, str] = {}
        if mapping is None:
            ids = fallback_field_ids(file_columns, self.inp.table_schema)
            return {i: name for i, name in zip(ids, file_columns) if i is not None}
        present = set(file_columns)
        for f in self.read_schema.fields:
            entry = next((m for m in mapping.fields if m.field_id == f.field_id), None)
            if entry is not None:
                name = next((n for n in entry.names if n in present), None)
                if name is not None:
                    out[f.field_id] = name
        return out

    def _apply_identity_fills(self, df: DataFrame) -> DataFrame:
        fills = {t.data_file.file_path: _constant_fills(t, self.read_schema.fields, self._present(t)) for t in self.tasks}
        fill_ids = sorted({i for v in fills.values() for i in v})
        if not fill_ids:
            return df
        fields = [T.StructField("_floe_k3", T.StringType())]
        for i in fill_ids:
            f = self.read_schema.find_field(i)
            fields.append(T.StructField(f"_floe_fill{i}", to_spark_type(f.field_type, for_files=True)))
        rows = []
        for path, vals in fills.items():
            if vals:
                rows.append(tuple([self._uri_of(path)] + [_py(vals.get(i), self.read_schema.find_field(i).field_type) for i in fill_ids]))
        fm = self.spark.createDataFrame(rows, T.StructType(fields))
        df = df.join(F.broadcast(fm), F.col(_FILE) == F.col("_floe_k3"), "left")
        for i in fill_ids:
            name = self.names[i]
            df = df.withColumn(name, F.coalesce(F.col(quoted(name)), F.col(f"_floe_fill{i}")))
        return df.drop("_floe_k3", *[f"_floe_fill{i}" for i in fill_ids])

    def _manifest_paths(self, df: DataFrame) -> DataFrame:
        """Replace each row's file URI with its data file's path as the manifest spells it."""
        if all(uri == path for path, uri in self.uris.items()):
            return df  # Spark spells every path as the manifest does: no join over every row
        mapping = driver_frame(self.spark, {
            "_floe_uri": pa.array(list(self.uris.values()), pa.string()),
            "_floe_path": pa.array(list(self.uris), pa.string()),
        })
        joined = df.join(F.broadcast(mapping), F.col(_FILE) == F.col("_floe_uri"))
        return joined.drop(_FILE, "_floe_uri").withColumnRenamed("_floe_path", _FILE)

    # -- ORC data files ------------------------------------------------------------------------------
    def _orc_frames(self, tasks: list[FileScanTask]) -> tuple[list[DataFrame], list[FileScanTask]]:
        """Native reads of ORC files grouped by file schema; the tasks Spark cannot read are returned."""
        mapping = self.inp.name_mapping or name_mapping_from_schema(self.inp.table_schema)
        locations = list(dict.fromkeys(self.loc[t.data_file.file_path] for t in tasks))
        schemas = probe_orc_schemas(self.inp.io, locations, mapping)
        zones = lazy_time_zones(self.spark)
        groups: dict[str, tuple[T.StructType, list[Column], list[str]]] = {}
        driver: set[str] = set()
        for loc, schema in schemas.items():
            key = schema.to_string(show_field_metadata=True, show_schema_metadata=False)
            if key in groups:
                groups[key][2].append(loc)
                continue
            try:
                requested, columns = orc_read_plan(schema, self.read_schema, self.names, zones)
            except OrcNotNative:
                driver.add(loc)
                continue
            groups[key] = (requested, columns, [loc])
        for loc, schema in schemas.items():
            ids = [i for f in schema if (i := field_id_of(f)) is not None]
            self.footers[loc] = _Footer(frozenset(ids), tuple(schema.names))
        native = [t for t in tasks if self.loc[t.data_file.file_path] not in driver]
        rest = [t for t in tasks if self.loc[t.data_file.file_path] in driver]
        if not native:
            return [], rest
        self.tasks = native
        need_meta = any(t.deletes for t in native) or any(
            _constant_fills(t, self.read_schema.fields, self._present(t)) for t in native
        )
        df: DataFrame | None = None
        for requested, columns, locs in groups.values():
            raw = file_relation(self.spark, "orc", requested, locs, self.size_at)
            meta = []
            if need_meta:
                self._learn_uris(raw, locs)
                meta = [F.col("_metadata.file_path").alias(_FILE)]
            part = raw.select(*columns, *meta)
            df = part if df is None else df.unionByName(part)
        assert df is not None
        if need_meta:
            df = self._apply_identity_fills(df)
            # Position deletes never reach here (ORC has no row index: such files go to the driver).
            deletes = self._deletes()
            df = deletes.apply_equality([deletes.with_sequence(df)], self._delete_footers)
            df = df.drop(_FILE)
        return [self._finish(df)], rest

    def _for(self, tasks: list[FileScanTask]) -> _Builder:
        """A builder for a subset of the tasks (deletes are looked up per frame)."""
        return _Builder(self.spark, self.inp, tasks, self.with_position, self.equality_matches)

    # -- assembly ------------------------------------------------------------------------------------
    def build(self) -> DataFrame:
        reach_by_scheme: dict[str, bool] = {}  # one answer per scheme and read (it reads a session conf)

        def reaches(location: str) -> bool:
            scheme = scheme_of(location)
            if scheme not in reach_by_scheme:
                reach_by_scheme[scheme] = spark_reaches(self.spark, location)
            return reach_by_scheme[scheme]

        parquet, orc, others = _route(self.tasks, reaches, self.inp.location_of)
        if self.with_position and orc:  # Spark's ORC source has no row index: workers count positions
            others, orc = others + orc, []
        if self.equality_matches and others:
            raise UnsupportedError(
                f"Table {self.inp.table_name}: rows matched by equality deletes are found in Parquet data files "
                f"Spark reads natively; {others[0].data_file.file_path} is not one"
            )
        frames: list[DataFrame] = []
        if parquet or orc:
            configure_native_s3(self.spark, self.loc.values(), self.inp.io.properties)
        if parquet:
            frames.extend(self._for(parquet)._parquet_frames(parquet))
        if orc:
            orc_frames, rest = self._for(orc)._orc_frames(orc)
            frames.extend(orc_frames)
            others.extend(rest)
        if others:
            frames.append(self._worker_frame(others))
        if not frames:
            return empty_frame(self.spark, to_spark_schema(self.inp.output_schema))
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out

    def _layers(self, tasks: list[FileScanTask]) -> list[list[FileScanTask]]:
        """The tasks split so no layer reads a file twice: the n-th task of a file goes to layer n.

        Manifests may list one data file in several entries (``add_files`` without its duplicate check),
        and each entry's rows are read, as in Java; Spark's file listing reads a path given twice once.
        """
        count: dict[str, int] = {}
        layers: list[list[FileScanTask]] = []
        for t in tasks:
            loc = self.loc[t.data_file.file_path]
            n = count.get(loc, 0)
            count[loc] = n + 1
            if n == len(layers):
                layers.append([])
            layers[n].append(t)
        return layers

    def _parquet_frames(self, tasks: list[FileScanTask]) -> list[DataFrame]:
        """Files without deletes or fills, files with fills only, and files with deletes, read apart.

        Only the last need each row's position and only the last two each row's file, so the joins that
        apply deletes (or fill columns) never see the rows of the other files. Row-level changes, whose
        rows all carry their file and position, read them apart too: the files with deletes then meet a
        position bitmap whose size slot names a row's file, where one scan of all compared each row's path
        with a chain of files (bench/mor_rounds, 2M rows: the MERGE's pass over the target took 1.6-2.1 s
        in rounds 2-5 and 0.65-0.75 s later; 0.34-0.66 s from round 3 when apart). Files without deletes
        that hold few rows next to those with position deletes join their scan (:func:`_joins_deleted`).
        """
        locations = [self.loc[t.data_file.file_path] for t in tasks]
        probe = self.inp.name_mapping is not None or len(locations) <= _FOOTER_PROBE_MAX_FILES
        self.footers = _probe_footers(self.inp.io, locations) if probe else {}
        layers = self._layers(tasks)
        if len(layers) > 1:  # a file listed twice: each layer lists a file once and is read on its own
            frames = []
            for layer in layers:
                part = self._for(layer)
                frames.extend(part._parquet_frames(layer))
            return frames
        plain: list[FileScanTask] = []
        filled: list[FileScanTask] = []
        deleted: list[FileScanTask] = []
        for t in tasks:
            if t.deletes:
                deleted.append(t)
            elif _constant_fills(t, self.read_schema.fields, self._present(t)):
                filled.append(t)
            else:
                plain.append(t)
        if _joins_deleted(plain, deleted):
            plain, deleted = [], deleted + plain
        frames = []
        for group in (plain, filled, deleted):
            if group:
                part = self._for(group)
                part.footers = self.footers
                frames.append(part._parquet_frame(group))
        return frames

    def _parquet_frame(self, tasks: list[FileScanTask]) -> DataFrame:
        """The rows of ``tasks`` with their deletes applied (equality deletes once, to the union of the
        parts :meth:`DeleteJoins.split_for_equality` reads apart)."""
        deletes = self._deletes()
        parts = [tasks] if self.with_position else deletes.split_for_equality()
        df = deletes.apply_equality([self._part_rows(part, deletes) for part in parts], self._delete_footers)
        if self.with_position:
            df = self._manifest_paths(df)
        return self._finish(df)

    def _part_rows(self, tasks: list[FileScanTask], deletes: DeleteJoins) -> DataFrame:
        """The rows of ``tasks`` read natively, fills and position deletes applied, with the columns the
        equality join needs (:meth:`DeleteJoins.with_sequence`) and, when reading positions, file and
        position."""
        locations = [self.loc[t.data_file.file_path] for t in tasks]
        mine = set(locations)
        no_ids = {loc: list(f.names) for loc, f in self.footers.items() if f.ids is None and loc in mine}
        needs_fill = any(_constant_fills(t, self.read_schema.fields, self._present(t)) for t in tasks)
        need_pos = self.with_position or any(
            e.data_file.content == FileContent.POSITION_DELETES for t in tasks for e in t.deletes
        )
        need_file = need_pos or needs_fill or deletes.equality_needs_file(tasks)
        meta = (_FILE,) * need_file + (_POS, _SIZE) * need_pos
        groups: dict[tuple[tuple[int, str], ...], list[str]] = {}
        with_ids = [x for x in locations if x not in no_ids]
        for loc, cols in no_ids.items():
            groups.setdefault(tuple(sorted(self._mapped_names(cols).items())), []).append(loc)
        raw: list[DataFrame] = []
        if with_ids:
            raw.append(self._read_parquet_by_id(with_ids, meta))
        for names, locs in groups.items():
            raw.append(self._read_parquet_by_name(locs, dict(names), meta))
        df = raw[0]
        for r in raw[1:]:
            df = df.unionByName(r)
        if need_file:
            df = self._apply_identity_fills(df)
        if any(t.deletes for t in tasks):
            df = deletes.apply_positions(df, self._delete_footers, tasks)
            df = deletes.with_sequence(df, tasks)
        return df.drop(_SIZE) if self.with_position else df.drop(*meta)

    def _finish(self, df: DataFrame) -> DataFrame:
        """Columns renamed back to the schema's names, uuids (at any depth) as text; one selectExpr call."""
        exprs = []
        has_uuid = False
        for f in self.read_schema.fields:
            src = quoted(self.names[f.field_id])
            text = _uuids_as_text(src, f.field_type)
            has_uuid = has_uuid or text is not None
            exprs.append(f"{text or src} AS {quoted(f.name)}")
        if self.with_position:
            exprs += [_FILE, _POS]
        if list(df.columns) == [f.name for f in self.read_schema.fields] and not has_uuid:
            return df
        return select_exprs(df, exprs)

    def _worker_frame(self, tasks: list[FileScanTask]) -> DataFrame:
        """The tasks read with pyarrow in Spark's Python workers (floe.spark.scan.worker_read), deletes applied."""
        require_python_workers(self.spark, "Reading files Spark's own sources cannot (storage it cannot reach, ORC or Avro deletes)")
        inp = self.inp
        position = (_FILE, _POS) if self.with_position else None
        packed = pack_tasks(tasks, max(self.spark.sparkContext.defaultParallelism, len(tasks) // _TASKS_PER_WORKER_GROUP))
        groups = [
            make_task_group(
                i, group, io=inp.io, table_schema=inp.table_schema, projection=self.read_schema,
                name_mapping=inp.name_mapping, location_of=inp.location_of, table_name=inp.table_name,
                case_sensitive=inp.case_sensitive, position_columns=position,
            )
            for i, group in enumerate(packed)
        ]
        schema = to_spark_schema(self.read_schema)
        if position is not None:
            schema = T.StructType([*schema.fields, T.StructField(_FILE, T.StringType(), False), T.StructField(_POS, T.LongType(), False)])
        return worker_frame(self.spark, groups, schema)


def _route(
    tasks: list[FileScanTask], reaches: Callable[[str], bool], location_of: Callable[[str], str]
) -> tuple[list[FileScanTask], list[FileScanTask], list[FileScanTask]]:
    """Tasks read natively as Parquet, natively as ORC, and in Python workers.

    Spark reads Parquet delete files (and v3 deletion vectors are decoded on the driver), so a task with
    an ORC or Avro delete file goes to the workers; so does an ORC file with position deletes, because
    Spark's ORC source has no ``_metadata.row_index`` to join them on, and every task with a file on a
    store Spark has no file system for (``reaches``, floe.spark.runtime.storage).
    """
    parquet: list[FileScanTask] = []
    orc: list[FileScanTask] = []
    workers: list[FileScanTask] = []
    for t in tasks:
        fmt = t.data_file.file_format
        foreign_deletes = any(e.data_file.file_format in (FileFormat.ORC, FileFormat.AVRO) for e in t.deletes)
        reachable = reaches(location_of(t.data_file.file_path)) and all(
            reaches(location_of(e.data_file.file_path)) for e in t.deletes
        )
        if not reachable:
            workers.append(t)
        elif fmt == FileFormat.PARQUET and not foreign_deletes:
            parquet.append(t)
        elif fmt == FileFormat.ORC and not foreign_deletes and not any(
            e.data_file.content == FileContent.POSITION_DELETES for e in t.deletes
        ):
            orc.append(t)
        else:
            workers.append(t)
    return parquet, orc, workers


def _uuids_as_text(src: str, t: IcebergType) -> str | None:
    """A SQL expression turning the 16-byte uuids inside ``src`` into text, or None when it holds none.

    Spark has no uuid type: Parquet's UUID columns are read as binary and shown as Iceberg on Spark shows
    them (``8dc314d8-3fd4-4a42-...``), in structs, lists and maps too.
    """
    if isinstance(t, UUIDType):
        h = f"lower(hex({src}))"
        parts = ", ".join(f"substr({h}, {a}, {n})" for a, n in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12)))
        return f"CASE WHEN {src} IS NULL THEN NULL ELSE concat_ws('-', {parts}) END"
    if isinstance(t, StructType):
        inner = [(f, _uuids_as_text(f"{src}.{quoted(f.name)}", f.field_type)) for f in t.fields]
        if all(x is None for _, x in inner):
            return None
        body = ", ".join(f"'{f.name}', {x or src + '.' + quoted(f.name)}" for f, x in inner)
        return f"CASE WHEN {src} IS NULL THEN NULL ELSE named_struct({body}) END"
    if isinstance(t, ListType):
        element = _uuids_as_text("x", t.element_type)
        return None if element is None else f"transform({src}, x -> {element})"
    if isinstance(t, MapType):
        key = _uuids_as_text("k", t.key_type)
        value = _uuids_as_text("v", t.value_type)
        out = src if key is None else f"transform_keys({src}, (k, v) -> {key})"
        out = out if value is None else f"transform_values({out}, (k, v) -> {value})"
        return None if key is None and value is None else out
    return None


def _strip(t: T.DataType) -> T.DataType:
    """The type without field-id metadata (name-mapped files are read by name at every level)."""
    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _strip(f.dataType), f.nullable) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_strip(t.elementType), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(_strip(t.keyType), _strip(t.valueType), t.valueContainsNull)
    return t


def _py(value: object, t: IcebergType) -> object:
    """A partition value (Floe's representation) as the Python value Spark's createDataFrame expects."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(str(value)))
    if isinstance(t, TimestamptzType):
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(str(value)))
    if isinstance(t, TimestampType):
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(str(value)))
    if isinstance(t, UUIDType):
        return getattr(value, "bytes", value)
    return value


def tasks_to_dataframe(
    spark: SparkSession,
    inputs: ScanInputs,
    tasks: list[FileScanTask],
    *,
    with_position: bool = False,
    equality_matches: bool = False,
) -> DataFrame:
    """One DataFrame with the rows of ``tasks`` (deletes applied), columns of ``inputs.read_schema``.

    ``with_position`` adds :data:`ROW_FILE_COLUMN` (the data file's path as its manifest spells it) and
    :data:`ROW_POS_COLUMN` (the row's position in it); Parquet data files only. ``equality_matches`` (with
    ``with_position``) keeps only the rows the tasks' equality deletes match (one key for all of them),
    position deletes still applied.
    """
    return _Builder(spark, inputs, tasks, with_position, equality_matches).build()
