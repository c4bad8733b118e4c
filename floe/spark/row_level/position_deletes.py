"""Position delete files written by Spark (merge-on-read DELETE, UPDATE and MERGE).

A position delete file lists ``(file_path, pos)`` pairs: the data file's path exactly as its manifest
spells it and the row's 0-based position in that file (spec: "Position Delete Files"). Rows are sorted by
``file_path`` then ``pos`` (the spec requires it so readers can merge them), both columns are required and
carry the reserved field ids 2147483546 and 2147483545, and a delete file lives in the partition (and spec)
of the data files it references, so the files are grouped by (spec id, partition tuple).

The positions come from Spark's ``_metadata.row_index`` (exact across row groups and splits, DESIGN.md
section 5); the read path gives each row its data file's path as the manifest spells it
(floe.spark.scan.scan_frames, ``with_position=True``). Each group's rows go to one Spark task, sorted. For
:data:`WORKER_WRITE_GROUPS` groups or more, pyarrow writes each group's file in a Python worker with full
metrics (bounds on ``file_path`` let readers skip delete files that cannot apply; ``referenced_data_file``
is set when a file names one data file), in Iceberg's layout with the ``-deletes`` suffix. Spark's own Parquet writer is slower at this by an order of
magnitude: a delete file is small and many are written at once (one per data file at file granularity),
and on a local warehouse Hadoop forks a ``chmod`` for every file and checksum it creates (measured on
local[2], a DELETE of 1% of 20M rows into 960 delete files: the write's stage 11.5 s through Spark's
writer, 0.7-0.9 s through pyarrow; the DELETE 14.4 s, then 2.8 s).
For fewer groups (where starting the Python workers would cost more than the files), and on Spark
Connect (whose Python workers are the server's), Spark's writer writes one file per group
(``partitionBy`` on the group id), the driver reads the footers for the metrics and moves local files
to Iceberg's layout.
If anything fails, every file this write created is deleted. Positions the driver already holds (observed
by a change's write: :mod:`floe.spark.row_level.observed_positions`) are written by pyarrow on the driver instead, in
the same groups and order.
"""

from __future__ import annotations

import itertools
import pickle
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from floe.errors import ValidationError
from floe.io.arrow_schema import schema_to_arrow
from floe.io.fileio import FileIO
from floe.io.locations import basename, is_local, join, to_local_path
from floe.scan.arrow_read import ReadContext, deleted_positions_of, name_mapping_of
from floe.scan.tasks import FileScanTask
from floe.spark.runtime.connect import is_connect, require_python_workers
from floe.spark.runtime.storage import configure_native_s3, spark_reaches
from floe.spark.scan.driver_rows import driver_frame, looked_up
from floe.spark.scan.file_uris import spark_location
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN
from floe.spark.types import FIELD_ID_METADATA_KEY
from floe.spark.write.advisory import write_advisory_size
from floe.spark.write.dataframe_write import cleanup_operation_files
from floe.spark.write.parquet_options import spark_parquet_options
from floe.spark.write.session_settings import session_write_properties
from floe.spark.write.transforms import ensure_workers_import_floe
from floe.spec import properties as P
from floe.spec.manifest import POSITION_DELETE_FILE_PATH_ID, POSITION_DELETE_POS_ID, DataFile, FileContent
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType
from floe.write.locations import LocationProvider, data_file_name
from floe.write.parquet_files import ParquetFileWriter, ParquetSettings, data_file_from_footer

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "POSITION_DELETE_SCHEMA",
    "WORKER_WRITE_GROUPS",
    "ScopedDeletes",
    "deleted_positions",
    "per_file_granularity",
    "with_replaced_deletes",
    "with_scoped_positions",
    "write_position_deletes",
    "write_position_deletes_on_driver",
]

POSITION_DELETE_SCHEMA = Schema(
    NestedField(POSITION_DELETE_FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(POSITION_DELETE_POS_ID, "pos", LongType(), required=True),
)

_GROUP = "_floe_group"  # index of the (spec id, partition) group a row's data file belongs to
_NEW = "_floe_new"  # 1 for a position this change deletes, 0 for one an earlier delete file holds
_TOUCHED = "_floe_touched"  # 1 when the change deletes some position of the row's data file
_STAGING_PREFIX = ".floe-staging-"  # the data writer's prefix: its cleanup knows it
# Full bounds (not the table's truncate(16) default): readers compare the whole path (Iceberg Java agrees).
_METRICS = {P.METRICS_MODE_DEFAULT: "full"}
_DRIVER_WRITERS = 4  # threads writing delete files on the driver (write_position_deletes_on_driver)
# Groups (delete files) from which pyarrow in Python workers writes them rather than Spark's writer: the
# workers' first job in a session starts them (2-3 s on local[2], 0.4 s once warm), where Spark's writer
# spends 7-12 ms on every file (local[2], a local warehouse).
WORKER_WRITE_GROUPS = 200


def _group_key(f: DataFile, per_file: bool) -> tuple[Any, ...]:
    return (f.spec_id, tuple(f.partition), f.file_path if per_file else None)


def _groups(tasks: Sequence[FileScanTask], per_file: bool) -> list[tuple[Any, ...]]:
    return list(dict.fromkeys(_group_key(t.data_file, per_file) for t in tasks))


def per_file_granularity(table: Table) -> bool:
    """``write.delete.granularity``: ``file`` (Iceberg Java's default: one delete file per data file, which
    readers can skip exactly and later changes replace) or ``partition``."""
    value = str(table.properties.get(P.DELETE_GRANULARITY, P.DELETE_GRANULARITY_DEFAULT)).lower()
    return value == "file"


def deleted_positions(rows: DataFrame, tasks: Sequence[FileScanTask], *, per_file: bool = False) -> DataFrame:
    """``(file_path, pos, group)`` of ``rows`` (read with ``with_position=True`` from ``tasks``).

    ``file_path`` is the manifest's path of the row's data file (what the read path returns); the group
    indexes the (spec id, partition[, data file]) keys of the tasks in order of first appearance (what
    :func:`write_position_deletes` with the same ``per_file`` expects).
    """
    index = {g: i for i, g in enumerate(_groups(tasks, per_file))}
    by_path = {t.data_file.file_path: t.data_file for t in tasks}
    # Positions coming through an outer join (MERGE) are typed nullable, though never NULL for a target
    # row: after the filter the coalesce never applies, but it tells Spark the column is non-null, so it
    # is written as a required field. File paths are non-null for the same reason.
    located = rows.where(F.col(ROW_POS_COLUMN).isNotNull())
    keyed = located.select(
        F.col(ROW_FILE_COLUMN).alias("_floe_rfile"),
        F.coalesce(F.col(ROW_POS_COLUMN).cast("long"), F.lit(-1).cast("long")).alias("pos"),
    )
    groups = pa.array([index[_group_key(f, per_file)] for f in by_path.values()], pa.int32())
    grouped = looked_up(keyed, "_floe_rfile", list(by_path), {_GROUP: groups})
    return grouped.select(F.coalesce(F.col("_floe_rfile"), F.lit("")).alias("file_path"), "pos", _GROUP)


@dataclass(frozen=True)
class ScopedDeletes:
    """Positions to write at file granularity, with the file-scoped delete files they may replace.

    ``positions`` holds the new positions and, for each data file they touch, every position its
    file-scoped delete files name: the new delete file of a data file replaces them (as Iceberg Java
    maintains them), so a data file keeps one position delete file however often it is changed.
    """

    positions: DataFrame
    scoped: dict[str, list[DataFile]]  # data file path -> its file-scoped position delete files

    def replaced_by(self, written: Sequence[DataFile]) -> list[DataFile]:
        """The file-scoped delete files of the data files ``written`` (new per-file delete files) name."""
        out: dict[str, DataFile] = {}
        for f in written:
            for old in self.scoped.get(f.referenced_data_file or "", ()):
                out.setdefault(old.file_key, old)
        return list(out.values())


def with_replaced_deletes(table: Table, positions: DataFrame, tasks: Sequence[FileScanTask]) -> ScopedDeletes:
    """``positions`` (from :func:`deleted_positions` with ``per_file=True``) plus the positions of the
    file-scoped delete files of the data files among them.

    The earlier positions are read on the driver (pyarrow, in parallel) and go to Spark as Arrow, keyed by
    a small file index; a window over each data file's group keeps them only where the new positions touch
    that file, so no job runs to learn which files those are (the rows a scan returned are never among the
    positions already deleted, so the two sets are disjoint).
    """
    only = _file_scoped(tasks, lambda _: True)
    if not only:
        return ScopedDeletes(positions, {})  # nothing file-scoped to replace
    scoped = {t.data_file.file_path: [e.data_file for e in t.deletes] for t in only}
    found = _earlier_positions(table, only)
    counts = [0 if f is None else len(f) for f in found]
    if not sum(counts):
        return ScopedDeletes(positions, scoped)
    index = {g: i for i, g in enumerate(_groups(tasks, True))}
    spark = positions.sparkSession
    earlier = driver_frame(spark, {
        "_floe_fidx": pa.array(np.repeat(np.arange(len(only), dtype=np.int32), counts), pa.int32()),
        "pos": pa.array(np.concatenate([f for f in found if f is not None]), pa.int64()),
    }, required=("_floe_fidx", "pos"))
    files = driver_frame(spark, {
        "_floe_fidx": pa.array(range(len(only)), pa.int32()),
        "file_path": pa.array([t.data_file.file_path for t in only], pa.string()),
        _GROUP: pa.array([index[_group_key(t.data_file, True)] for t in only], pa.int32()),
    }, required=("_floe_fidx", "file_path", _GROUP))
    previous = earlier.join(F.broadcast(files), "_floe_fidx").select("file_path", "pos", _GROUP)
    both = positions.withColumn(_NEW, F.lit(1)).unionByName(previous.withColumn(_NEW, F.lit(0)))
    touched = both.withColumn(_TOUCHED, F.max(F.col(_NEW)).over(Window.partitionBy(_GROUP)))
    return ScopedDeletes(touched.where(F.col(_TOUCHED) == 1).drop(_NEW, _TOUCHED), scoped)


def with_scoped_positions(
    table: Table, positions: Mapping[str, np.ndarray], tasks: Sequence[FileScanTask]
) -> tuple[dict[str, np.ndarray], list[DataFile]]:
    """Positions the driver holds (data file path -> new deleted positions) with every position the
    file-scoped delete files of those data files name, and those delete files (which the new per-file
    delete files replace, as :func:`with_replaced_deletes` does for positions in Spark). The earlier
    positions are read on the driver (pyarrow, in parallel): a data file's delete file holds only its own."""
    out = {path: np.asarray(pos, np.int64) for path, pos in positions.items()}
    earlier = _file_scoped(tasks, lambda path: bool(len(out.get(path, ()))))
    if not earlier:
        return out, []
    for t, old in zip(earlier, _earlier_positions(table, earlier), strict=True):
        if old is not None and len(old):
            out[t.data_file.file_path] = np.concatenate([out[t.data_file.file_path], old])
    return out, list({e.data_file.file_key: e.data_file for t in earlier for e in t.deletes}.values())


def _file_scoped(tasks: Sequence[FileScanTask], wanted: Callable[[str], bool]) -> list[FileScanTask]:
    """One task per ``wanted`` data file that has file-scoped position delete files, holding only those."""
    out: dict[str, FileScanTask] = {}
    for t in tasks:
        path = t.data_file.file_path
        if path in out or not wanted(path):
            continue
        mine = tuple(e for e in t.deletes if e.data_file.content == FileContent.POSITION_DELETES
                     and e.data_file.referenced_data_file == path)
        if mine:
            out[path] = FileScanTask(t.data_file, t.data_sequence_number, mine)
    return list(out.values())


def _earlier_positions(table: Table, tasks: Sequence[FileScanTask]) -> list[np.ndarray | None]:
    """The positions each task's delete files name for its data file, read on the driver (pyarrow, in parallel)."""
    ctx = ReadContext(
        io=table.io, table_schema=table.schema(), projection=table.schema(),
        name_mapping=name_mapping_of(dict(table.properties), table.schema()), location_of=lambda p: p,
    )
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda t: deleted_positions_of(ctx, t), tasks))


def write_position_deletes(
    table: Table, positions: DataFrame, tasks: Sequence[FileScanTask], *, per_file: bool = False
) -> list[DataFile]:
    """Write ``positions`` (from :func:`deleted_positions` over ``tasks``) as position delete files; commit nothing.

    Returns:
        The delete files (none when ``positions`` is empty); the caller commits them and deletes them if
        its commit fails.

    Raises:
        ValidationError: ``positions`` has nullable columns (not from :func:`deleted_positions`). On any
            error every file created is deleted.
    """
    groups = _groups(tasks, per_file)
    spark = positions.sparkSession
    props = session_write_properties(spark, table)
    settings = ParquetSettings.from_properties(props, table_name=table.name(), deletes=True)
    locations = LocationProvider.for_table(table.location(), props)
    op_id = str(uuid.uuid4())
    many = len(groups) >= WORKER_WRITE_GROUPS and not is_connect(spark)
    if many or not spark_reaches(spark, locations.data_dir):
        return _write_in_workers(table, positions, groups, settings, locations, op_id)
    staging = join(locations.data_dir, f"{_STAGING_PREFIX}{op_id}")
    created: list[str] = [staging]
    out = _clustered(table, positions)
    configure_native_s3(positions.sparkSession, [staging], table.io.properties)
    try:
        with write_advisory_size(spark, props, {}, deletes=True, table_name=table.name()):
            _write_grouped(out, settings, staging)
        entries = [
            e for e in table.io.list_prefix(staging)
            if e.location.endswith(".parquet") and "/_temporary" not in e.location[len(staging):]
        ]
        entries.sort(key=lambda e: e.location)
        created.extend(e.location for e in entries)

        def describe(entry: Any) -> DataFile:
            group = int(entry.location[len(staging) + 1 :].split("/", 1)[0].split("=", 1)[1])
            spec_id, partition, _ = groups[group]
            fs, path = table.io.resolve(entry.location)
            with fs.open_input_file(path) as fh:
                md = pq.ParquetFile(fh).metadata
            return _as_delete_file(data_file_from_footer(
                md, location=entry.location, file_size=entry.size, schema=POSITION_DELETE_SCHEMA,
                properties=_METRICS, partition=partition, spec_id=spec_id,
            ))

        with ThreadPoolExecutor(max_workers=8) as pool:
            described = list(pool.map(describe, entries))
        empty = [f.file_path for f in described if f.record_count == 0]
        if empty:
            table.io.delete_many(empty)
        files = [f for f in described if f.record_count > 0]
        if is_local(staging):
            files = _move_to_layout(table, files, locations, op_id, created)
    except BaseException:
        cleanup_operation_files(table, op_id, created)
        raise
    if is_local(staging):
        shutil.rmtree(to_local_path(staging), ignore_errors=True)  # Spark's emptied staging directories
    return files


def _write_grouped(out: DataFrame, settings: ParquetSettings, staging: str) -> None:
    """Spark's Parquet writer over the clustered positions: one folder of files per group under ``staging``."""
    (
        out.write.mode("error")  # "error": the spelling Spark Connect also accepts
        .format("parquet")
        .options(**spark_parquet_options(settings))
        .option("parquet.block.size", str(settings.row_group_bytes))
        .option("parquet.page.size", str(settings.page_bytes))
        .option("parquet.dictionary.page.size", str(settings.dict_bytes))
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .partitionBy(_GROUP)
        .save(spark_location(staging))
    )


def _clustered(table: Table, positions: DataFrame, partitions: int | None = None) -> DataFrame:
    """The rows with the spec's field ids, each group in one Spark partition (of ``partitions``, or as many
    as adaptive execution makes of the shuffle), sorted by group, path and position."""
    # Both columns are non-nullable (a broadcast join's non-null path, Spark's row index), so they are
    # written as required fields; the ids are the spec's reserved ones.
    out = positions.select(
        F.col("file_path").alias("file_path", metadata={FIELD_ID_METADATA_KEY: POSITION_DELETE_FILE_PATH_ID}),
        F.col("pos").alias("pos", metadata={FIELD_ID_METADATA_KEY: POSITION_DELETE_POS_ID}),
        F.col(_GROUP),
    )
    if any(f.nullable for f in out.schema.fields[:2]):
        raise ValidationError(f"Table {table.name()}: position delete rows must have non-null file_path and pos")
    spread = out.repartition(F.col(_GROUP)) if partitions is None else out.repartition(partitions, F.col(_GROUP))
    return spread.sortWithinPartitions(_GROUP, "file_path", "pos")


def _as_delete_file(f: DataFile) -> DataFile:
    """A written Parquet file described as a position delete file, as Iceberg Java describes them: column
    sizes and bounds only (counts say nothing a reader of deletes uses), the data file when it is one."""
    lower = (f.lower_bounds or {}).get(POSITION_DELETE_FILE_PATH_ID)
    upper = (f.upper_bounds or {}).get(POSITION_DELETE_FILE_PATH_ID)
    single = lower.decode("utf-8") if lower is not None and lower == upper else None
    return f.with_changes(
        content=FileContent.POSITION_DELETES, referenced_data_file=single, split_offsets=None,
        value_counts=None, null_value_counts=None, nan_value_counts=None, sort_order_id=None,
    )


@dataclass(frozen=True)
class _WorkerDeleteWriter:
    """The picklable job of a Spark task on a store Spark cannot write: one delete file per group it holds."""

    io_properties: dict[str, str]
    settings: ParquetSettings
    locations: LocationProvider
    operation_id: str
    groups: dict[int, tuple[int, tuple[Any, ...], str]]  # group -> (spec id, partition, partition path)
    driver_part: int = 0  # outside a Spark task: the number in the files' names (one per concurrent writer)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid, tid = (ctx.partitionId(), ctx.taskAttemptId()) if ctx is not None else (self.driver_part, 0)
        io = FileIO(self.io_properties)
        arrow_schema = schema_to_arrow(POSITION_DELETE_SCHEMA)
        files: list[DataFile] = []
        created: list[str] = []
        writer: ParquetFileWriter | None = None
        current = -1
        try:
            for batch in batches:
                group_ids = batch.column(2).to_numpy()
                cuts = [0, *(np.flatnonzero(np.diff(group_ids)) + 1).tolist(), batch.num_rows]
                for start, end in itertools.pairwise(cuts):
                    if start == end:
                        continue
                    group = int(group_ids[start])
                    if group != current:
                        if writer is not None:
                            files.append(_as_delete_file(writer.close()))
                        spec_id, partition, path = self.groups[group]
                        name = data_file_name(pid, tid, self.operation_id, len(created) + 1, suffix="deletes")
                        location = self.locations.new_location(name, path)
                        created.append(location)
                        writer = ParquetFileWriter(
                            io, location, arrow_schema, self.settings, schema=POSITION_DELETE_SCHEMA,
                            properties=_METRICS, partition=partition, spec_id=spec_id, count_nans=False,
                        )
                        current = group
                    rows = batch.slice(start, end - start)
                    assert writer is not None
                    writer.write(pa.RecordBatch.from_arrays([rows.column(0), rows.column(1)], schema=arrow_schema))
            if writer is not None:
                files.append(_as_delete_file(writer.close()))
        except BaseException:
            if writer is not None:
                writer.abort()
            io.delete_many(created)
            raise
        yield pa.RecordBatch.from_pydict({"files": [pickle.dumps(files)]}, schema=pa.schema([("files", pa.binary())]))


def _write_in_workers(
    table: Table, positions: DataFrame, groups: list[tuple[Any, ...]], settings: ParquetSettings,
    locations: LocationProvider, op_id: str,
) -> list[DataFile]:
    """:func:`write_position_deletes` through pyarrow in Python workers: a file per group, described
    by its writer (no footer read back, no file moved after).

    The groups are spread over as many tasks as Spark runs at once (a number of partitions adaptive
    execution keeps: a few thousand positions would otherwise coalesce into one task writing every file).
    """
    spark = positions.sparkSession
    require_python_workers(spark, "Writing position deletes to storage Spark cannot reach")
    partitions = max(1, min(len(groups), spark.sparkContext.defaultParallelism))
    job = _WorkerDeleteWriter(
        io_properties=dict(table.io.properties), settings=settings, locations=locations, operation_id=op_id,
        groups={i: (g[0], tuple(g[1]), _partition_path(table, g[0], tuple(g[1]))) for i, g in enumerate(groups)},
    )
    ensure_workers_import_floe(spark)
    try:
        rows = _clustered(table, positions, partitions).mapInArrow(job, "files binary").collect()
    except BaseException:
        cleanup_operation_files(table, op_id, [])
        raise
    return [f for r in rows for f in pickle.loads(r["files"])]


def write_position_deletes_on_driver(
    table: Table, positions: Mapping[str, np.ndarray], tasks: Sequence[FileScanTask], *, per_file: bool,
    spark: SparkSession,
) -> list[DataFile]:
    """Write ``positions`` (data file path as its manifest spells it -> deleted positions; files of
    ``tasks``) as position delete files with pyarrow on the driver, grouped as :func:`write_position_deletes`
    groups them; commit nothing. For deletes the driver already holds: no Spark job, no footers read back.

    Raises:
        ValidationError: a path is not among the tasks' files. On any error every file created is deleted.
    """
    groups = _groups(tasks, per_file)
    index = {g: i for i, g in enumerate(groups)}
    by_path = {t.data_file.file_path: t.data_file for t in tasks}
    unknown = next((p for p in positions if p not in by_path), None)
    if unknown is not None:
        raise ValidationError(f"Table {table.name()}: deleted positions name {unknown}, which the change did not read")
    by_group: dict[int, list[str]] = {}
    for path in sorted(p for p, pos in positions.items() if len(pos)):
        by_group.setdefault(index[_group_key(by_path[path], per_file)], []).append(path)
    if not by_group:
        return []
    props = session_write_properties(spark, table)  # the session's codec and level, as a Spark write takes them
    op_id = str(uuid.uuid4())
    group_info = {i: (g[0], tuple(g[1]), _partition_path(table, g[0], tuple(g[1]))) for i, g in enumerate(groups)}

    def rows_of(group_ids: list[int]) -> Iterator[pa.RecordBatch]:
        for g in group_ids:
            for path in by_group[g]:
                pos = np.unique(positions[path].astype(np.int64, copy=False))  # sorted, as the spec asks
                yield pa.RecordBatch.from_arrays(  # path and group repeated by Arrow: no list of n strings
                    [pa.repeat(pa.scalar(path, pa.string()), len(pos)), pa.array(pos, pa.int64()),
                     pa.repeat(pa.scalar(g, pa.int32()), len(pos))],
                    names=["file_path", "pos", _GROUP],
                )

    # Groups dealt round-robin to a few writers (a file each per group: many small files write in parallel).
    ordered = sorted(by_group)
    shares = [ordered[k::_DRIVER_WRITERS] for k in range(min(_DRIVER_WRITERS, len(ordered)))]
    settings = ParquetSettings.from_properties(props, table_name=table.name(), deletes=True)
    jobs = [
        _WorkerDeleteWriter(
            io_properties=dict(table.io.properties), settings=settings,
            locations=LocationProvider.for_table(table.location(), props), operation_id=op_id, groups=group_info,
            driver_part=k,
        )
        for k in range(len(shares))
    ]

    def run(k: int) -> list[pa.RecordBatch]:
        return list(jobs[k](rows_of(shares[k])))

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(run, k) for k in range(len(jobs))]
    files: list[DataFile] = []
    error: BaseException | None = None
    for future in futures:  # a writer that fails deletes its own files; the others' go here
        try:
            files += [f for b in future.result() for f in pickle.loads(b.column(0)[0].as_py())]
        except BaseException as e:  # noqa: BLE001 - re-raised below, once every writer's files are known
            error = error or e
    if error is not None:
        table.io.delete_many([f.file_path for f in files])
        raise error
    return files


def _partition_path(table: Table, spec_id: int, partition: tuple[Any, ...]) -> str:
    spec = table.specs()[spec_id]
    try:
        return spec.partition_path(partition, table.schema()) if spec.fields else ""
    except ValidationError:
        return ""  # an old spec whose source column is gone: the file's place is cosmetic


def _move_to_layout(
    table: Table, files: list[DataFile], locations: LocationProvider, op_id: str, created: list[str]
) -> list[DataFile]:
    """``<data>/<partition path>/%05d-0-<op id>-%05d-deletes.parquet`` (local renames are cheap)."""
    counters: dict[int, int] = {}
    moved = []
    for f in files:
        try:
            part_id = int(basename(f.file_path).split("-")[1])  # part-00003-<uuid>.c000...parquet
        except (IndexError, ValueError):
            part_id = 0
        counters[part_id] = counters.get(part_id, 0) + 1
        path = _partition_path(table, f.spec_id, f.partition)
        target = locations.new_location(data_file_name(part_id, 0, op_id, counters[part_id], suffix="deletes"), path)
        created.append(target)
        table.io.rename(f.file_path, target)
        moved.append(f.with_changes(file_path=target))
    return moved
