"""Scan tasks read with pyarrow inside Spark's Python workers, returned to Spark as Arrow batches.

The data plane for what Spark's own file sources cannot read: locations without a Hadoop file system
(``s3://`` with no hadoop-aws, floe.spark.runtime.storage), Avro data files, ORC files with position deletes and
tasks with ORC or Avro delete files, and the ``format("iceberg")`` data source. Each Spark partition is a
:class:`TaskGroup`: tasks bin-packed by size with everything reading them needs (FileIO properties, the
location of every file, schemas, name mapping), read by floe.scan.arrow_read with deletes applied by the
spec's rules. Spark checks each batch's Arrow schema against the declared one exactly, so values are
conformed to it (:func:`to_spark_arrow`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from floe.expressions.base import AlwaysTrue
from floe.io.fileio import FileIO
from floe.io.name_mapping import NameMapping
from floe.scan.arrow_read import ReadContext, read_task_rows
from floe.scan.tasks import FileScanTask
from floe.spark.runtime.connect import require_python_workers
from floe.spark.write.transforms import ensure_workers_import_floe
from floe.spec.schema import Schema

__all__ = [
    "SPARK_ARROW_TIMEZONE",
    "TaskGroup",
    "files_in_workers",
    "make_task_group",
    "pack_tasks",
    "read_context",
    "read_group",
    "to_spark_arrow",
    "worker_frame",
]

_HEX = np.array([f"{i:02x}".encode() for i in range(256)], dtype="S2").view(np.uint8).reshape(256, 2)
# Spark's batch check builds the expected Arrow schema with this zone (pyspark.sql.worker.
# plan_data_source_read: to_arrow_schema(return_type, timezone="UTC")); TimestampType needs one.
SPARK_ARROW_TIMEZONE = "UTC"


@dataclass(frozen=True)
class TaskGroup(InputPartition):
    """One Spark partition: a group of file scan tasks and what reading them needs (picklable).

    ``position_columns`` names two columns added after the projection: each row's data file (its path
    as the manifest spells it) and its position in that file; None adds nothing.
    """

    index: int
    tasks: tuple[FileScanTask, ...]
    locations: Mapping[str, str]
    io_properties: Mapping[str, str]
    table_schema: Schema
    projection: Schema
    mapping_json: str | None
    table_name: str
    case_sensitive: bool
    position_columns: tuple[str, str] | None = None


def make_task_group(
    index: int,
    tasks: Sequence[FileScanTask],
    *,
    io: FileIO,
    table_schema: Schema,
    projection: Schema,
    name_mapping: NameMapping | None,
    location_of: Callable[[str], str],
    table_name: str,
    case_sensitive: bool,
    position_columns: tuple[str, str] | None = None,
) -> TaskGroup:
    """A group reading ``tasks`` (residuals dropped: the caller's Spark plan re-applies every filter)."""
    locs: dict[str, str] = {}
    for t in tasks:
        locs[t.data_file.file_path] = location_of(t.data_file.file_path)
        for e in t.deletes:
            locs[e.data_file.file_path] = location_of(e.data_file.file_path)
    kept = tuple(
        FileScanTask(t.data_file, t.data_sequence_number, t.deletes, AlwaysTrue(), t.start, t.length, t.spec)
        for t in tasks
    )
    return TaskGroup(
        index, kept, locs, dict(io.properties), table_schema, projection,
        name_mapping.to_json() if name_mapping is not None else None, table_name, case_sensitive, position_columns,
    )


def _task_bytes(task: FileScanTask) -> int:
    return task.length if task.length > 0 else task.data_file.file_size_in_bytes


def pack_tasks(tasks: Sequence[FileScanTask], groups: int) -> list[list[FileScanTask]]:
    """``tasks`` in at most ``groups`` groups of similar byte size (largest first, each to the lightest group)."""
    n = max(1, min(groups, len(tasks)))
    heap = [(0, i) for i in range(n)]
    out: list[list[FileScanTask]] = [[] for _ in range(n)]
    for t in sorted(tasks, key=_task_bytes, reverse=True):
        load, i = heapq.heappop(heap)
        out[i].append(t)
        heapq.heappush(heap, (load + _task_bytes(t), i))
    return [g for g in out if g]


def read_context(group: TaskGroup) -> ReadContext:
    """What reading ``group``'s tasks needs, in the worker."""
    locs = dict(group.locations)
    return ReadContext(
        io=FileIO(group.io_properties),
        table_schema=group.table_schema,
        projection=group.projection,
        name_mapping=NameMapping.from_json(group.mapping_json) if group.mapping_json else None,
        location_of=lambda path: locs.get(path, path),
        case_sensitive=group.case_sensitive,
        table_name=group.table_name,
    )


def read_group(group: TaskGroup, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of every task of ``group`` as batches of exactly ``target`` (Spark's Arrow schema)."""
    ctx = read_context(group)
    for t in group.tasks:
        rows, positions = read_task_rows(ctx, t)
        if group.position_columns is not None:
            file_col, pos_col = group.position_columns
            rows = rows.append_column(file_col, pa.array([t.data_file.file_path] * rows.num_rows, pa.string()))
            rows = rows.append_column(pos_col, pa.array(positions, pa.int64()))
        yield from to_spark_arrow(rows, target).to_batches()


def worker_frame(spark: SparkSession, groups: Sequence[TaskGroup], schema: T.StructType) -> DataFrame:
    """A DataFrame whose i-th Spark partition reads ``groups[i]`` in a Python worker."""
    require_python_workers(spark, "Reading files Spark's own sources cannot (storage it cannot reach, ORC or Avro deletes)")
    ensure_workers_import_floe(spark)
    by_index = {g.index: g for g in groups}
    target = to_arrow_schema(schema, timezone=SPARK_ARROW_TIMEZONE)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from read_group(by_index[i], target)

    ids = spark.range(0, len(groups), numPartitions=max(len(groups), 1)).selectExpr("CAST(id AS INT) AS id")
    return ids.mapInArrow(read, schema)


def files_in_workers(
    spark: SparkSession,
    io: FileIO,
    locations: Sequence[str],
    read_file: Callable[[FileIO, str], pa.Table],
    schema: T.StructType,
) -> DataFrame:
    """The rows ``read_file`` (a picklable function) reads from each location, one Spark task per file."""
    require_python_workers(spark, "Reading files Spark's own sources cannot (storage it cannot reach)")
    ensure_workers_import_floe(spark)
    properties = dict(io.properties)
    files = list(locations)
    target = to_arrow_schema(schema, timezone=SPARK_ARROW_TIMEZONE)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        worker_io = FileIO(properties)
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from to_spark_arrow(read_file(worker_io, files[i]), target).to_batches()

    ids = spark.range(0, len(files), numPartitions=max(len(files), 1)).selectExpr("CAST(id AS INT) AS id")
    return ids.mapInArrow(read, schema)


# -- Arrow values as Spark declares them -----------------------------------------------------------------
def _uuid_strings(arr: pa.Array) -> pa.Array:
    """16-byte uuids (extension or fixed_size_binary(16)) as their canonical text, vectorized."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    n = len(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)[storage.offset * 16 : (storage.offset + n) * 16]
    hexed = _HEX[raw.reshape(n, 16)].reshape(n, 32)
    text = np.insert(hexed, [8, 12, 16, 20], ord("-"), axis=1)  # 8-4-4-4-12 (RFC 4122 text form)
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    out = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(text.tobytes()))
    return pc.if_else(storage.is_null(), pa.scalar(None, pa.string()), out) if storage.null_count else out


def _is_uuid(t: pa.DataType) -> bool:
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    return bool(pa.types.is_fixed_size_binary(storage) and storage.byte_width == 16)


def _rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """A list/map array's offsets starting at 0 (int32), and the child range they cover.

    Offsets of a sliced array index into the whole child; pyarrow rebuilds with a null mask only from
    offsets that start at 0.
    """
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    return pa.array(offsets - lo, pa.int32()), lo, hi


def _conform(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as exactly ``target``: uuids become text, nested values are converted recursively.

    Spark checks each batch's Arrow schema against the declared one exactly (names, nullability, time
    zone, time unit), so leaves are cast and containers rebuilt with the target's field names.
    """
    src = arr.type
    if src == target:
        return arr
    if pa.types.is_string(target) and _is_uuid(src):
        return _uuid_strings(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target) and pa.types.is_struct(src):
        flat = arr.flatten()  # children with the parent's validity folded in
        children = [_conform(flat[i], target.field(i).type) for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(src):
        offsets, lo, hi = _rebased_offsets(arr)
        keys = _conform(arr.keys.slice(lo, hi - lo), target.key_type)
        items = _conform(arr.items.slice(lo, hi - lo), target.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) and (pa.types.is_list(src) or pa.types.is_large_list(src)):
        offsets, lo, hi = _rebased_offsets(arr)
        values = _conform(arr.values.slice(lo, hi - lo), target.value_type)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(src, pa.BaseExtensionType):
        arr = arr.storage
    return arr.cast(target)


def to_spark_arrow(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Exactly the Arrow schema Spark expects for the declared schema (see :func:`_conform`)."""
    cols = [_conform(table.column(i).combine_chunks(), f.type) for i, f in enumerate(target)]
    return pa.Table.from_arrays(cols, schema=target)
