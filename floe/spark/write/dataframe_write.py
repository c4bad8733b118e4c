"""Writing Spark DataFrames to Iceberg tables: ``table.append(df)``, ``table.overwrite(df, filter)``,
``table.dynamic_partition_overwrite(df)`` (all through :func:`write_dataframe`).

:func:`write_files` writes the data files and returns their DataFiles without committing (copy-on-write
DELETE/UPDATE/MERGE and compaction commit them in their own operation); :func:`write_dataframe` is
schema evolution + :func:`write_files` + one commit. Two data paths:

- **native** (default): Spark's own Parquet writer (2-3x faster than any Python-worker path, DESIGN.md
  section 5). Partition values are computed by native expressions (floe.spark.write.transforms) into hidden
  columns that ``partitionBy`` turns into staging directories; the schema carries ``parquet.field.id``
  on top-level and struct fields; timestamps are INT64 micros. Spark's file output committer publishes
  only committed task attempts, and removes everything of a failed job. The driver then lists the
  staged files, reads their footers in parallel threads, moves them (cheap rename on local disks) to
  Iceberg's layout ``<data>/<partition path>/%05d-%d-<operation id>-%05d.parquet`` - on object stores
  and HDFS they stay where Spark wrote them. The partition id comes from Spark's file name
  (``part-<partition id>-<job uuid>.c<file counter>...``); the task id is always 0 because nothing on the
  driver knows which task attempt wrote a file: the name does not carry it, the committer publishes files
  without recording the attempt, and the status tracker reports only per-stage counts. Partition id,
  operation id and a per-partition count keep names unique.
- **arrow** (tables with list/map columns, whose element/key/value field ids Spark cannot write, and
  uuid/fixed columns, which Spark cannot write with the right Parquet type; copy-on-write rewrites of many
  small partitions, where Spark's writer costs more per file than the Arrow path per row): ``mapInArrow``
  runs floe.write.TaskWriter in each task, which returns its DataFiles; failed attempts delete their files.

NaN counts: Parquet footers have none. Spark's Parquet writer (parquet-java) orders NaN above every
number, so a row group holding a NaN has NaN as its max: files whose float/double statistics show no NaN
get an exact NaN count of 0 and keep their bounds; files with a NaN get no NaN count (unknown, which the
spec allows) and no bounds for that column, so no reader prunes or drops rows on a NaN-polluted bound.

If anything fails before the files are returned, every file this write created is deleted; if the commit
fails, its caller deletes them (except after CommitStateUnknownError, when the commit may have succeeded).
"""

from __future__ import annotations

import math
import pickle
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import FloeError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.io.arrow_schema import field_id_of
from floe.io.fileio import FileIO
from floe.io.locations import basename, is_local, join, to_local_path
from floe.serde.json_types import default_to_json
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import attach
from floe.spark.runtime.connect import application_id, is_connect, require_python_workers
from floe.spark.runtime.java_classes import java_class
from floe.spark.runtime.storage import configure_native_s3, spark_reaches
from floe.spark.scan.file_uris import spark_location
from floe.spark.scan.row_columns import ROW_ID_STORED, ROW_SEQ_STORED, quoted
from floe.spark.types import FIELD_ID_METADATA_KEY, from_spark_schema, to_spark_type
from floe.spark.write.advisory import write_advisory_size
from floe.spark.write.layout import decode_partition_dirs, hidden_partition_columns
from floe.spark.write.parquet_options import spark_parquet_options
from floe.spark.write.session_settings import (
    compression_properties,
    merge_schema_requested,
    schema_checks,
    with_session_settings,
)
from floe.spark.write.transforms import ensure_workers_import_floe, source_column, transform_column
from floe.spec import properties as P
from floe.spec.manifest import DataFile
from floe.spec.parquet_columns import column_settings
from floe.spec.partitioning import PartitionSpec
from floe.spec.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from floe.spec.schema import Schema, walk_fields
from floe.spec.sort_order import UNSORTED_ORDER_ID, NullOrder, SortDirection, SortOrder
from floe.spec.types import (
    BinaryType,
    DoubleType,
    FixedType,
    FloatType,
    ListType,
    MapType,
    NestedField,
    StructType,
    UUIDType,
)
from floe.write.commit import WriteMode, apply_schema_changes, commit_files
from floe.write.locations import LocationProvider, data_file_name
from floe.write.parquet_files import ParquetSettings, data_file_from_footer
from floe.write.schema_check import check_write_schema
from floe.write.task_writer import TaskWriter, geospatial_columns, refuse_geospatial

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "TARGET_FILE_SIZE_OPTION",
    "ArrowWriteTask",
    "cleanup_operation_files",
    "default_column",
    "distribution_mode",
    "required_null_marker",
    "write_dataframe",
    "write_files",
]

_NULL_MARKER = "FLOE_REQUIRED_NULL"
_STAGING_PREFIX = ".floe-staging-"
# Hadoop's default file:// system checksums every byte into .crc side files, each created with one more
# forked `chmod`; the move to Iceberg's layout leaves them behind, so they are pure cost (960-file write,
# bench/write.py: -8% CPU at 20M rows, -25% at 200k). Without the cache flag FileSystem.get returns the
# cached checksumming instance whatever fs.file.impl says.
_RAW_LOCAL_FS = {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem", "fs.file.impl.disable.cache": "true"}
TARGET_FILE_SIZE_OPTION = "target-file-size-bytes"  # Iceberg's Spark write option of the same name
# Java's SparkWriteOptions name: false keeps the caller's row order (rewrite_data_files sorts itself).
USE_TABLE_ORDERING_OPTION = "use-table-distribution-and-ordering"


def required_null_marker() -> str:
    """The text a failing required-column check puts in Spark's error."""
    return _NULL_MARKER


# -- schema and projection ------------------------------------------------------------------------
def _known_not_null(col: Column) -> Column:
    """Mark a column non-nullable for the analyzer (classic sessions), so it can be a required field."""
    if getattr(col, "_jc", None) is None:
        return col
    spark = SparkSession.getActiveSession()
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return col
    utils = java_class(jvm, "org.apache.spark.sql.classic.ExpressionUtils")
    expr = java_class(jvm, "org.apache.spark.sql.catalyst.expressions.KnownNotNull")(utils.expression(col._jc))
    return Column(utils.column(expr))


def _relaxed(target: T.DataType, data: T.DataType) -> T.DataType:
    """``target`` with nested fields nullable wherever the data's are (``DataFrame.to`` refuses otherwise)."""
    if isinstance(target, T.StructType) and isinstance(data, T.StructType):
        by_name = {f.name: f for f in data.fields}
        fields = []
        for f in target.fields:
            d = by_name.get(f.name)
            nullable = f.nullable or (d is None) or d.nullable
            fields.append(T.StructField(f.name, _relaxed(f.dataType, d.dataType) if d else f.dataType, nullable, f.metadata))
        return T.StructType(fields)
    if isinstance(target, T.ArrayType) and isinstance(data, T.ArrayType):
        return T.ArrayType(_relaxed(target.elementType, data.elementType), target.containsNull or data.containsNull)
    if isinstance(target, T.MapType) and isinstance(data, T.MapType):
        return T.MapType(
            _relaxed(target.keyType, data.keyType),
            _relaxed(target.valueType, data.valueType),
            target.valueContainsNull or data.valueContainsNull,
        )
    return target


def project_to_table(df: DataFrame, schema: Schema, *, table_name: str, extra: Sequence[str] = ()) -> DataFrame:
    """``df`` as the table's columns (by name, table order, table types with field ids), then the ``extra``
    columns of ``df`` as they are (e.g. a changelog's operation column).

    Missing optional columns become nulls; narrower types are widened; a null in a required top-level
    column fails the Spark job with a message naming the column (see :func:`required_null_marker`).
    """
    present = {f.name: f for f in df.schema.fields}
    targets = {f.name: f for f in _target_spark_schema(schema).fields}
    cols: list[Column] = []
    for f in schema.as_struct().fields:
        target = targets[f.name]
        metadata = {FIELD_ID_METADATA_KEY: f.field_id}
        if f.name not in present:
            # v3: a writer that omits a column writes its write-default (spec "Default values")
            col = F.lit(None).cast(target.dataType) if f.write_default is None else default_column(f, target.dataType)
        else:
            data = present[f.name]
            col = F.col(f"`{f.name.replace('`', '``')}`")
            # Structs are always cast: the target type carries the nested fields' ids as metadata.
            if data.dataType != target.dataType or isinstance(target.dataType, T.StructType):
                col = col.cast(_relaxed(target.dataType, data.dataType))
            if f.required and data.nullable:
                msg = f"{_NULL_MARKER}: Cannot write null to required column {f.name!r} of table {table_name}"
                col = _known_not_null(F.when(col.isNull(), F.raise_error(F.lit(msg))).otherwise(col))
        # The id goes on the alias itself: metadata added by a later projection can be optimized away.
        cols.append(col.alias(f.name, metadata=metadata))
    return df.select(*cols, *[F.col(f"`{c}`") for c in extra])


def default_column(f: NestedField, spark_type: T.DataType) -> Column:
    """A literal column holding ``f``'s write-default as Spark type ``spark_type``.

    The spec's JSON single-value form is what Spark's casts read back exactly (ISO dates and timestamps with
    their offset, decimal text), so no value goes through a Python datetime and a session time zone.
    """
    value = f.write_default
    if isinstance(f.field_type, (BinaryType, FixedType)):
        return F.lit(bytearray(value)).cast(spark_type)  # type: ignore[call-overload]
    if isinstance(f.field_type, (FloatType, DoubleType)):
        return F.lit(value).cast(spark_type)
    text = default_to_json(f.field_type, value)
    return F.lit(text if isinstance(text, str) else value).cast(spark_type)


def _carries_lineage(table: Table, df: DataFrame) -> bool:
    """Whether ``df`` holds rows rewritten from a v3 table (UPDATE, MERGE, DELETE, compaction) with their
    row lineage values (floe.spark.scan: ROW_ID_STORED, ROW_SEQ_STORED)."""
    return table.format_version >= 3 and ROW_ID_STORED in df.columns and ROW_SEQ_STORED in df.columns


def _named_lineage(projected: DataFrame) -> DataFrame:
    """The lineage values as the spec's ``_row_id`` and ``_last_updated_sequence_number`` columns with their
    reserved field ids (spec "Row Lineage"), so a rewritten row keeps its id in the new file."""
    if ROW_ID_STORED not in projected.columns:
        return projected
    out = [F.col(quoted(c)) for c in projected.columns if c not in (ROW_ID_STORED, ROW_SEQ_STORED)]
    for stored, f in ((ROW_ID_STORED, ROW_ID), (ROW_SEQ_STORED, LAST_UPDATED_SEQUENCE_NUMBER)):
        out.append(F.col(stored).cast(T.LongType()).alias(f.name, metadata={FIELD_ID_METADATA_KEY: f.field_id}))
    return projected.select(*out)


def _target_spark_schema(schema: Schema) -> T.StructType:
    def field(f: Any) -> T.StructField:
        t = f.field_type
        if isinstance(t, StructType):
            dt: T.DataType = T.StructType([field(c) for c in t.fields])
        else:
            dt = to_spark_type(t, column=f.name)
        return T.StructField(f.name, dt, not f.required, {FIELD_ID_METADATA_KEY: f.field_id})

    return T.StructType([field(f) for f in schema.as_struct().fields])


def _needs_arrow_path(schema: Schema) -> bool:
    return any(isinstance(f.field_type, (ListType, MapType, UUIDType, FixedType)) for _, f in walk_fields(schema.as_struct()))


# A rewrite of at least this many files of at most this mean size goes through the Arrow path. Spark's writer
# costs about 11 ms of CPU per file on a local disk (parquet-java's set-up, and Hadoop, without its native
# library, forks a `chmod` for every file and partition directory it creates: 4,300 forks for a write of 976
# partitions), the Arrow path about 0.3 s more per 2M rows. Measured on local[2], 2026-12-07, 976 partitions:
# INSERT of 2M rows 8.6 s native against 3.4 s, of 20M rows (files of 400 KB) 26.7 s against 26.8 s; a 1%
# copy-on-write DELETE of 2M rows 9.8 s against 5.2 s, of 20M rows 21.6-28.4 s against 19.8-21.8 s; one file
# of 2M rows 1.1 s against 1.6 s. The count keeps a few files from paying the Python workers' first start.
_SMALL_REWRITE_FILES = 200
_SMALL_REWRITE_FILE_BYTES = 512 * 1024


def _rewrites_many_small_files(spark: SparkSession, schema: Schema, rewriting: Sequence[DataFile]) -> bool:
    """Whether the rows of ``rewriting`` (a copy-on-write rewrite's files), written back one file per
    partition, make many small files: then the Arrow path writes them faster than Spark's writer."""
    partitions = len({(f.spec_id, f.partition) for f in rewriting})
    return (
        partitions >= _SMALL_REWRITE_FILES
        and sum(f.file_size_in_bytes for f in rewriting) <= _SMALL_REWRITE_FILE_BYTES * partitions
        and not is_connect(spark)  # the server's Python workers need not have Floe
        and not geospatial_columns(schema)
    )


# -- distribution and ordering ------------------------------------------------------------------
def _sort_exprs(order: SortOrder, schema: Schema) -> list[Column]:
    out = []
    for sf in order.fields:
        col = transform_column(sf.transform, schema.find_type(sf.source_id), source_column(schema, sf.source_id))
        asc = sf.direction == SortDirection.ASC
        first = sf.null_order == NullOrder.NULLS_FIRST
        if asc:
            out.append(col.asc_nulls_first() if first else col.asc_nulls_last())
        else:
            out.append(col.desc_nulls_first() if first else col.desc_nulls_last())
    return out


def distribution_mode(table: Table, options: Mapping[str, str]) -> str:
    """The write distribution mode (none|hash|range): the option (which the session's
    ``spark.sql.iceberg.distribution-mode`` fills in :func:`write_files`), else the table property, else Iceberg's default.

    Measured (bench/write.py, 960 partitions): a partitioned write costs about the same with ``hash``
    (shuffle by partition values, one file per partition) and ``none`` (no shuffle; Spark's writer sorts each
    task's rows by partition), and both are dominated by Spark's per-file cost (parquet-java writer set-up
    and the committer's renames: plain ``partitionBy`` on precomputed columns is 10x slower than an
    unpartitioned write). ``hash`` stays the default: it bounds files to one per partition whatever the
    input's partitioning, while ``none`` writes one file per partition per input task.
    """
    explicit = options.get("distribution-mode") or table.properties.get(P.WRITE_DISTRIBUTION_MODE)
    if explicit:
        mode = explicit.strip().lower()
        if mode not in ("none", "hash", "range"):
            raise ValidationError(f"Invalid write.distribution-mode {explicit!r}: expected none, hash or range")
        return mode
    if table.sort_order().is_sorted:
        return "range"
    return "hash" if table.spec().is_partitioned else "none"


def _ordering(table: Table, schema: Schema, options: Mapping[str, str]) -> tuple[list[Column], str]:
    """The table's sort and distribution mode; neither when the caller ordered the rows (compaction)."""
    if options.get(USE_TABLE_ORDERING_OPTION, "true").strip().lower() == "false":
        return [], "none"
    order = table.sort_order()
    return (_sort_exprs(order, schema) if order.is_sorted else []), distribution_mode(table, options)


def _distribute(df: DataFrame, keys: list[Column], sort: list[Column], mode: str) -> tuple[DataFrame, bool]:
    """Shuffle and sort per the distribution mode; returns the frame and whether tasks see sorted keys."""
    if mode == "hash" and keys:
        df = df.repartition(*keys)
    elif mode == "range" and (keys or sort):
        df = df.repartitionByRange(*(keys + sort))
    if sort or (keys and mode != "none"):
        df = df.sortWithinPartitions(*(keys + sort))
        return df, True
    return df, False


# -- the native path ------------------------------------------------------------------------------
def _default_size(t: T.DataType) -> int:
    """Spark's per-type size guesses (``DataType.defaultSize`` on the JVM side)."""
    if isinstance(t, T.StructType):
        return sum(_default_size(f.dataType) for f in t.fields)
    if isinstance(t, (T.ArrayType, T.MapType)):
        return 40
    if isinstance(t, (T.StringType, T.BinaryType)):
        return 20
    if isinstance(t, T.DecimalType):
        return 8 if t.precision <= 18 else 16
    if isinstance(t, (T.BooleanType, T.ByteType)):
        return 1
    if isinstance(t, (T.IntegerType, T.FloatType, T.DateType, T.ShortType)):
        return 4
    return 8


def _max_records_per_file(table: Table, df: DataFrame, target_bytes: int) -> int:
    snap = table.current_snapshot()
    per_row = 0.0
    if snap is not None:
        props = dict(snap.summary.properties) if snap.summary is not None else {}
        size, rows = props.get("total-files-size"), props.get("total-records")
        if size and rows and int(rows) > 0:
            per_row = int(size) / int(rows)
    if per_row <= 0:
        # Spark's default sizes per type, halved for encoding and compression: a rough first guess only.
        per_row = max(sum(_default_size(f.dataType) for f in df.schema.fields) / 2, 1.0)
    return max(int(target_bytes / per_row), 1000)


def _leaf_field_ids(arrow_schema: pa.Schema) -> list[int | None]:
    out: list[int | None] = []

    def visit(f: pa.Field) -> None:
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i))
        elif pa.types.is_map(t):
            visit(t.key_field)
            visit(t.item_field)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            visit(t.value_field)
        else:
            out.append(field_id_of(f))

    for f in arrow_schema:
        visit(f)
    return out


def _with_nan_info(f: DataFile, md: pq.FileMetaData, schema: Schema) -> DataFile:
    """Exact zero NaN counts where statistics prove no NaN; no bounds where a NaN may be (module doc)."""
    floats = {
        fid for fid in (fl.field_id for _, fl in walk_fields(schema.as_struct()) if isinstance(fl.field_type, (FloatType, DoubleType)))
    }
    if not floats:
        return f
    leaves = _leaf_field_ids(md.schema.to_arrow_schema())
    tainted: set[int] = set()
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        for i, fid in enumerate(leaves):
            if fid not in floats or fid in tainted:
                continue
            chunk = group.column(i)
            stats = chunk.statistics if chunk.is_stats_set else None
            if stats is None or not stats.has_min_max:
                if stats is None or not stats.has_null_count or stats.null_count != chunk.num_values:
                    tainted.add(fid)  # values without statistics: NaN unknown
                continue
            if math.isnan(stats.min) or math.isnan(stats.max):
                tainted.add(fid)
    lower = dict(f.lower_bounds or {})
    upper = dict(f.upper_bounds or {})
    for fid in tainted:
        lower.pop(fid, None)
        upper.pop(fid, None)
    bounded = {fid for fid in floats if fid in leaves}
    nans = {fid: 0 for fid in bounded - tainted if fid in (f.value_counts or {})}
    return f.with_changes(lower_bounds=lower, upper_bounds=upper, nan_value_counts=nans or None)


def _write_native(
    table: Table, df: DataFrame, schema: Schema, spec: PartitionSpec, op_id: str, options: Mapping[str, str],
    created: list[str], props: dict[str, str],
) -> list[DataFile]:
    settings = ParquetSettings.from_properties(props, table_name=table.name())
    locations = LocationProvider.for_table(table.location(), props)
    hidden = hidden_partition_columns(spec, schema) if spec.is_partitioned else []
    names = [n for n, _ in hidden]
    out = df.select("*", *[c.alias(n) for n, c in hidden]) if hidden else df
    sort, mode = _ordering(table, schema, options)
    out, _ = _distribute(out, [F.col(n) for n in names], sort, mode)
    staging = join(locations.data_dir, f"{_STAGING_PREFIX}{op_id}")
    created.append(staging)
    writer = (
        out.write.mode("error")  # "error": the spelling Spark Connect also accepts
        .format("parquet")
        .options(**spark_parquet_options(settings, column_settings(schema, props)))
        .option("parquet.block.size", str(settings.row_group_bytes))
        .option("parquet.page.size", str(settings.page_bytes))
        .option("parquet.dictionary.page.size", str(settings.dict_bytes))
        .option("maxRecordsPerFile", str(_max_records_per_file(table, df, settings.target_file_bytes)))
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    )
    if is_local(staging):
        writer = writer.options(**_RAW_LOCAL_FS)
    if names:
        writer = writer.partitionBy(*names)
    configure_native_s3(df.sparkSession, [staging], table.io.properties)
    writer.save(spark_location(staging))

    entries = [
        e for e in table.io.list_prefix(staging)
        if e.location.endswith(".parquet") and not any(p.startswith(("_temporary", ".")) for p in e.location[len(staging) + 1 :].split("/"))
    ]
    entries.sort(key=lambda e: e.location)
    created.extend(e.location for e in entries)
    # Iceberg on Spark records the unsorted order (0) on every data file it writes, sorted table or not
    # (SparkWrite never sets a data sort order, so DataFiles.Builder keeps its default, 0).
    sort_order_id = UNSORTED_ORDER_ID

    def describe(entry: Any) -> DataFile:
        fs, path = table.io.resolve(entry.location)
        with fs.open_input_file(path) as fh:
            md = pq.ParquetFile(fh).metadata
        rel = entry.location[len(staging) + 1 :]
        rel_dir = rel.rsplit("/", 1)[0] if "/" in rel else ""
        partition = decode_partition_dirs(rel_dir, spec, schema) if names else ()
        f = data_file_from_footer(
            md, location=entry.location, file_size=entry.size, schema=schema, properties=props,
            partition=partition, spec_id=spec.spec_id, sort_order_id=sort_order_id,
        )
        return _with_nan_info(f, md, schema)

    with ThreadPoolExecutor(max_workers=8) as pool:
        described = list(pool.map(describe, entries))
    empty = [f.file_path for f in described if f.record_count == 0]  # Spark writes one for an empty input
    if empty:
        table.io.delete_many(empty)
    files = [f for f in described if f.record_count > 0]
    if not is_local(staging):
        return files  # object stores copy to rename: the files stay where Spark put them
    return _move_to_iceberg_layout(table.io, files, spec, schema, locations, op_id, created)


def _move_to_iceberg_layout(
    io: FileIO, files: list[DataFile], spec: PartitionSpec, schema: Schema, locations: LocationProvider,
    op_id: str, created: list[str],
) -> list[DataFile]:
    counters: dict[int, int] = {}
    moved = []
    for f in files:
        name = basename(f.file_path)  # part-00003-<uuid>.c000.zstd.parquet
        try:
            part_id = int(name.split("-")[1])
        except (IndexError, ValueError):
            part_id = 0
        counters[part_id] = counters.get(part_id, 0) + 1
        new_name = data_file_name(part_id, 0, op_id, counters[part_id])
        path = spec.partition_path(f.partition, schema) if spec.fields else ""
        target = locations.new_location(new_name, path)
        created.append(target)
        io.rename(f.file_path, target)
        moved.append(f.with_changes(file_path=target))
    return moved


# -- the Arrow (mapInArrow) path -------------------------------------------------------------------
@dataclass(frozen=True)
class ArrowWriteTask:
    """The picklable job a Spark task runs: write its Arrow batches with a TaskWriter, return DataFiles."""

    schema: Schema
    spec: PartitionSpec
    properties: dict[str, str]
    locations: LocationProvider
    io_properties: dict[str, str]
    table_name: str
    operation_id: str
    clustered: bool
    sort_order_id: int | None
    lineage: bool = False  # rows rewritten from a v3 table, with their row lineage columns

    def writer(self, partition_id: int, task_id: int) -> TaskWriter:
        return TaskWriter(
            schema=self.schema, spec=self.spec, properties=self.properties, locations=self.locations,
            io=FileIO(self.io_properties), table_name=self.table_name, partition_id=partition_id,
            task_id=task_id, operation_id=self.operation_id, clustered=self.clustered, sort_order_id=self.sort_order_id,
            lineage=self.lineage,
        )

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid, tid = (ctx.partitionId(), ctx.taskAttemptId()) if ctx is not None else (0, 0)
        files = self.writer(pid, tid).write_all(batches)  # deletes its files if anything fails
        yield pa.RecordBatch.from_pydict({"files": [pickle.dumps(files)]}, schema=pa.schema([("files", pa.binary())]))


def _write_arrow_path(
    table: Table, df: DataFrame, schema: Schema, spec: PartitionSpec, op_id: str, options: Mapping[str, str],
    props: dict[str, str],
) -> list[DataFile]:
    keys = [transform_column(pf.transform, schema.find_type(pf.source_id), source_column(schema, pf.source_id))
            for pf in spec.fields if not pf.transform.is_void]
    sort, mode = _ordering(table, schema, options)
    out, clustered = _distribute(df, keys, sort, mode)
    task = ArrowWriteTask(
        schema=schema, spec=spec, properties=props,
        locations=LocationProvider.for_table(table.location(), props), io_properties=dict(table.io.properties),
        table_name=table.name(), operation_id=op_id, clustered=clustered,
        sort_order_id=UNSORTED_ORDER_ID,  # as Iceberg on Spark records (see _write_native)
        lineage=ROW_ID.name in df.columns,
    )
    rows = out.mapInArrow(task, "files binary").collect()
    return [f for r in rows for f in pickle.loads(r["files"])]


@contextmanager
def _job_tag(spark: SparkSession, operation_id: str) -> Iterator[str | None]:
    """Tag the Spark jobs this thread starts with the write's operation id (None without a SparkContext)."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        yield None
        return
    tag = f"floe-write-{operation_id}"
    sc.addJobTag(tag)
    try:
        yield tag
    finally:
        sc.removeJobTag(tag)


def _await_tasks_of(spark: SparkSession, tag: str | None, timeout_s: float = 60.0) -> None:
    """Wait (bounded) until no task of the tagged jobs still runs.

    A failed job returns to the driver while tasks of its other partitions may still be running; an
    Arrow-path task still writing after the cleanup would leave a file behind.
    """
    if tag is None:
        return
    try:
        sc = spark.sparkContext
        tracker = sc.statusTracker()
        job_ids = list(sc._jsc.sc().statusTracker().getJobIdsForTag(tag))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            jobs = [tracker.getJobInfo(j) for j in job_ids]
            stages = [tracker.getStageInfo(s) for job in jobs if job is not None for s in job.stageIds]
            if all(st is None or st.numActiveTasks == 0 for st in stages):
                return
            time.sleep(0.1)
    except Exception:  # noqa: BLE001 - status is best effort: clean up anyway
        return


def cleanup_operation_files(table: Table, operation_id: str, extra: list[str] | None = None) -> None:
    """Delete every data file of a failed write: its staging dir and any file named with its operation id."""
    io = table.io
    locations = LocationProvider.for_table(table.location(), table.properties)
    doomed = [loc for loc in (extra or []) if not basename(loc).startswith(_STAGING_PREFIX)]
    doomed += [e.location for e in io.list_prefix(locations.data_dir) if operation_id in e.location]
    if doomed:
        io.delete_many(doomed)
    staging = join(locations.data_dir, f"{_STAGING_PREFIX}{operation_id}")
    if is_local(staging):
        _remove_local_tree(staging)


def _remove_local_tree(location: str) -> None:
    shutil.rmtree(to_local_path(location), ignore_errors=True)


# -- the entry points -----------------------------------------------------------------------------
def _write_properties(table: Table, options: Mapping[str, str]) -> dict[str, str]:
    """The table properties, with the ``target-file-size-bytes`` option (if any) as the file size target and the
    ``compression-*`` options (or the session's ``spark.sql.iceberg.compression-*``) as the codec and level."""
    props = compression_properties(table.properties, options, table_name=table.name())
    target = options.get(TARGET_FILE_SIZE_OPTION)
    if target is not None:
        try:
            size = int(target)
        except ValueError:
            size = 0
        if size <= 0:
            raise ValidationError(f"Invalid {TARGET_FILE_SIZE_OPTION} {target!r} for table {table.name()}: expected a positive integer")
        props[P.WRITE_TARGET_FILE_SIZE_BYTES] = str(size)
    return props


@without_call_sites()
def write_files(
    table: Table, df: DataFrame, *, options: Mapping[str, str] | None = None, rewriting: Sequence[DataFile] = ()
) -> list[DataFile]:
    """Write ``df`` into new data files of ``table``'s current schema and spec; commit nothing.

    ``df``'s columns are matched to the table's by name and projected like every Floe write (missing
    optional columns become nulls, narrower types are widened, a null in a required column fails). The
    schema is never evolved here, because that would be a commit: a column the table lacks is an error
    (:func:`write_dataframe` applies ``mergeSchema`` first, then calls this). The files get the same data
    path, distribution, sort order, metrics and layout as :func:`write_dataframe`; the caller commits them
    and deletes them if its commit fails.

    Args:
        table: the target table (not modified).
        df: the rows.
        options: ``distribution-mode`` (none|hash|range), ``write-path`` (native|arrow),
            ``target-file-size-bytes`` (overrides ``write.target-file-size-bytes``, e.g. for compaction),
            ``advisory-partition-size`` (bytes per shuffle partition; overrides
            ``write.spark.advisory-partition-size-bytes``),
            ``compression-codec`` / ``compression-level`` (over the data and delete codec properties),
            ``use-table-distribution-and-ordering`` (false: write ``df``'s rows in their order, no shuffle).
            The session's ``spark.sql.iceberg.*`` settings fill the options not given
            (floe.spark.write.session_settings).
        rewriting: the files whose rows ``df`` writes again (a copy-on-write rewrite): without a
            ``write-path`` option, many small ones are written through the Arrow path.

    Returns:
        The new data files (none for an empty ``df``).

    Raises:
        ValidationError: the DataFrame does not fit the table, a required column holds a null, or an
            option is invalid. On any error every file this call created is deleted first.
    """
    spark = df.sparkSession
    opts = with_session_settings(spark, options or {}, table_name=table.name())
    attach(spark)
    ensure_workers_import_floe(spark)  # UDF buckets and the Arrow path run floe code in Python workers
    schema, spec = table.schema(), table.spec()
    check_write_schema(
        schema, from_spark_schema(df.drop(ROW_ID_STORED, ROW_SEQ_STORED).schema), table_name=table.name(), merge_schema=False,
        format_version=table.format_version, spark_types=True,
    )
    props = _write_properties(table, opts)
    ParquetSettings.from_properties(props, table_name=table.name())  # bad settings refused before any task runs
    data_dir = LocationProvider.for_table(table.location(), props).data_dir
    reachable = spark_reaches(spark, data_dir)
    arrow = _needs_arrow_path(schema) or not reachable or _rewrites_many_small_files(spark, schema, rewriting)
    path = opts.get("write-path", "arrow" if arrow else "native")
    # Rewritten rows keep their v3 row lineage on either path (the files carry the spec's lineage columns).
    lineage = (ROW_ID_STORED, ROW_SEQ_STORED) if _carries_lineage(table, df) else ()
    projected = _named_lineage(project_to_table(df, schema, table_name=table.name(), extra=lineage))
    if path not in ("native", "arrow"):
        raise ValidationError(f"Invalid write-path {path!r} for table {table.name()}: expected native or arrow")
    if path == "arrow":
        refuse_geospatial(schema, table.name())
        require_python_workers(spark, f"Writing table {table.name()} through the Arrow path (list/map/uuid/fixed "
                                      "columns, storage Spark cannot reach)")
    if path == "native" and _needs_arrow_path(schema):
        raise ValidationError(f"Table {table.name()} has list/map/uuid/fixed columns: Spark's native writer cannot write them")
    if path == "native" and not reachable:
        raise ValidationError(
            f"Table {table.name()}: write-path native needs a Hadoop file system for {data_dir} in Spark "
            "(for S3, hadoop-aws in spark.jars.packages); the arrow path writes there without one"
        )
    op_id = str(uuid.uuid4())
    created: list[str] = []
    sized = write_advisory_size(spark, props, opts, table_name=table.name())
    with _job_tag(spark, op_id) as tag:
        try:
            with sized:
                if path == "arrow":
                    files = _write_arrow_path(table, projected, schema, spec, op_id, opts, props)
                else:
                    files = _write_native(table, projected, schema, spec, op_id, opts, created, props)
        except BaseException as e:  # KeyboardInterrupt mid-job too: no stray files
            _await_tasks_of(spark, tag)
            cleanup_operation_files(table, op_id, created)
            if isinstance(e, Exception) and not isinstance(e, FloeError) and _NULL_MARKER in str(e):
                detail = str(e).split(_NULL_MARKER + ": ", 1)[1].splitlines()[0].split(" SQLSTATE")[0]
                raise ValidationError(detail) from None
            raise
    if is_local(table.location()):
        _remove_local_tree(join(LocationProvider.for_table(table.location(), props).data_dir, f"{_STAGING_PREFIX}{op_id}"))
    return files


def write_dataframe(
    table: Table,
    df: DataFrame,
    *,
    mode: WriteMode = "append",
    overwrite_filter: BooleanExpression | str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
    options: Mapping[str, str] | None = None,
) -> Table:
    """Write ``df`` to ``table`` and commit one snapshot (schema changes first, then :func:`write_files`).

    Args:
        table: the target table (refreshed in place).
        df: the rows; columns match the table's by name.
        mode: ``append``; ``overwrite`` (rows matching ``overwrite_filter`` are replaced, all when None);
            ``dynamic`` (every partition ``df`` has rows in is replaced).
        overwrite_filter: for ``overwrite``.
        snapshot_properties: extra snapshot summary properties (``spark.app.id`` is always added).
        branch: target branch.
        options: ``mergeSchema`` (add columns / widen types first; default ``spark.sql.iceberg.merge-schema``,
            else false), ``check-nullability`` / ``check-ordering`` (floe.spark.write.session_settings), and the
            options of :func:`write_files`.

    Raises:
        ValidationError: the DataFrame does not fit the table (names the column and types), or a required
            column holds a null.
        CommitFailedError / CommitConflictError / CommitStateUnknownError: from the commit (the new files
            are deleted, except after CommitStateUnknownError, when the commit may have succeeded).
    """
    spark = df.sparkSession
    opts = with_session_settings(spark, options or {}, table_name=table.name())
    checks = schema_checks(table.properties, opts)
    changes = check_write_schema(
        table.schema(), from_spark_schema(df.schema), table_name=table.name(), merge_schema=merge_schema_requested(opts),
        format_version=table.format_version, spark_types=True,
        check_nullability=checks.nullability, check_ordering=checks.ordering,
    )
    apply_schema_changes(table, changes)
    files = write_files(table, df, options=opts)
    summary = {"spark.app.id": application_id(spark)}
    summary.update(snapshot_properties or {})
    return commit_files(table, files, mode=mode, overwrite_filter=overwrite_filter, snapshot_properties=summary, branch=branch)
