"""The write side of Floe's Python data source (``format("iceberg")`` / ``format("floe")``).

    df.write.format("iceberg").mode("append").save("db.t")          # or a table location
    df.write.format("iceberg").mode("overwrite").save("db.t")       # replace every row
    df.write.format("iceberg").mode("overwrite").option("overwrite-mode", "dynamic").save("db.t")
    df.write.format("iceberg").mode("overwrite").option("overwrite-filter", "day = 3").save("db.t")
    INSERT INTO / INSERT OVERWRITE on ``CREATE TEMPORARY VIEW v USING iceberg OPTIONS (path '<table>')``
    (not ``CREATE TABLE ... USING iceberg``: Spark keeps no options for Python data source tables, so
    such a table fails with a message saying so; see floe.spark.datasource.reader.table_source)

Tables are named by location (a table folder) or identifier; identifiers resolve through
:func:`resolve_table` (``catalog.<key>`` options, else Floe's configuration, floe.config).

Each Spark task runs floe.write.TaskWriter over its Arrow batches and returns its DataFiles as a
pickled commit message; a failing task deletes the files it opened.

Settings: the options ``mergeSchema``, ``compression-codec`` / ``compression-level``, ``check-nullability`` /
``check-ordering`` (floe.spark.write.session_settings). This runs in Python workers, which have no session:
the session's ``spark.sql.iceberg.*`` settings reach only a Floe-aware session's writes (``floe.spark.attach``),
which take ``format("iceberg")`` on Spark's native writer.

Distribution and order: Spark gives Python data sources no way to request a distribution or an ordering
(no ``RequiresDistributionAndOrdering`` counterpart), so ``write.distribution-mode`` has no effect here and the
``distribution-mode`` option is refused: each task writes the rows Spark hands it, as they come.
The task writer fans out (one open file per partition the task has seen), so a task writes at most one
file per partition per ``write.target-file-size-bytes``, and a table gets up to (input tasks x partitions)
new files; ``df.repartition(<partition source columns>)`` before the write, or ``table.append(df)``
(floe.spark.write.dataframe_write, which does honour the distribution mode), gives one file per partition. Memory stays
bounded whatever the number of partitions: buffered rows across the open files are capped by the task
writer's memory budget (the largest buffer is flushed as a row group when it is exceeded); beyond that an
open file holds only its Parquet writer's state and row-group metadata. Rows are not
sorted (sorting a task's rows would hold them all), so the files record no sort order id, as Iceberg
expects of files not written in the table's sort order. ``commit()`` (on the driver side)
commits ONE snapshot; ``abort()`` deletes the files of the tasks that did report, then every file named
with this write's operation id (tasks that finished without reporting). Python data sources cannot take
``df.writeTo(...)`` (DataFrameWriterV2 needs a catalog table, which Python sources cannot provide in
pyspark 4.3): use ``table.append(df)`` / ``table.dynamic_partition_overwrite(df)`` or the forms above.
Spark's native-writer fast path (floe.spark.write.dataframe_write) is 2-3x faster than this Python-worker path.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from floe.catalog.names import is_location, load_table_by_name, split_name
from floe.errors import UnsupportedError, ValidationError
from floe.spark.datasource.reader import config_from_options, table_source
from floe.spark.types import from_spark_schema
from floe.spark.write.dataframe_write import ArrowWriteTask, cleanup_operation_files
from floe.spark.write.session_settings import (
    DISTRIBUTION_MODE_OPTION,
    check_write_options,
    compression_properties,
    merge_schema_requested,
    option_value,
    schema_checks,
)
from floe.spec import properties as P
from floe.spec.sort_order import UNSORTED_ORDER_ID
from floe.write.commit import WriteMode, apply_schema_changes, commit_files
from floe.write.locations import LocationProvider
from floe.write.schema_check import check_write_schema
from floe.write.upsert_mode import UPSERT_OPTION, upsert_requested

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["FilesMessage", "IcebergWriter", "resolve_table"]

_CATALOG_PREFIX = "catalog."


def resolve_table(options: Mapping[str, str]) -> Table:
    """The table a data source's options name (``path``): a location, or ``[catalog.]namespace.table``.

    ``catalog.<key>`` options (``catalog.type``, ``catalog.uri``, ``catalog.warehouse``, ...) define the
    catalog inline, named by ``catalog-name`` (SQL catalogs key their tables by it); otherwise the name
    resolves by floe.catalog.names.resolve_table_identifier (``catalog.ns.t`` in a configured catalog,
    else ``ns.t`` in the default catalog).

    Raises:
        ValidationError: no table named.
        NoSuchTableError: the table does not exist.
    """
    from floe.catalog import load_catalog

    opts = {str(k): str(v) for k, v in options.items()}
    source = table_source(opts, action="write")
    inline = {k[len(_CATALOG_PREFIX) :]: v for k, v in opts.items() if k.startswith(_CATALOG_PREFIX)}
    if inline and not is_location(source):
        name = opts.get("catalog-name", "default")
        return load_catalog(name, **inline).load_table(split_name(source))
    return load_table_by_name(source, config=config_from_options(opts))


@dataclass
class FilesMessage(WriterCommitMessage):
    """A task's commit message: its DataFiles, pickled."""

    files: bytes


def _mode(options: Mapping[str, str], overwrite: bool) -> tuple[WriteMode, str | None]:
    if not overwrite:
        return "append", None
    kind = options.get("overwrite-mode", "static").strip().lower()
    flt = options.get("overwrite-filter") or options.get("replaceWhere")
    if kind == "dynamic":
        return "dynamic", None
    if kind != "static":
        raise ValidationError(f"Invalid overwrite-mode {kind!r}: expected static or dynamic")
    return "overwrite", flt


class IcebergWriter(DataSourceArrowWriter):
    """Batch writer: tasks write data files with floe.write.TaskWriter; the driver commits one snapshot."""

    def __init__(self, options: Mapping[str, str], schema: T.StructType, overwrite: bool) -> None:
        self.options = {str(k): str(v) for k, v in options.items()}
        self.mode, self.overwrite_filter = _mode(self.options, overwrite)
        table = resolve_table(self.options)
        if upsert_requested(table, self.options):
            # The data source's tasks write plain data files: an upsert needs the delta writer's key routing.
            raise UnsupportedError(
                f"Table {table.name()} is in upsert mode ({P.UPSERT_ENABLED} or {UPSERT_OPTION}): Spark's Python "
                "data source cannot upsert; write through a Floe-aware session (floe.spark.attach(spark)) or "
                "table.append(df)"
            )
        if option_value(self.options, DISTRIBUTION_MODE_OPTION) is not None:
            raise UnsupportedError(
                f"Table {table.name()}: the {DISTRIBUTION_MODE_OPTION} option needs a Floe-aware session "
                "(floe.spark.attach(spark)): Spark's Python data source cannot ask for a distribution"
            )
        check_write_options(self.options, table_name=table.name())
        checks = schema_checks(table.properties, self.options)
        changes = check_write_schema(
            table.schema(), from_spark_schema(schema), table_name=table.name(),
            merge_schema=merge_schema_requested(self.options), format_version=table.format_version, spark_types=True,
            check_nullability=checks.nullability, check_ordering=checks.ordering,
        )
        apply_schema_changes(table, changes)
        props = compression_properties(table.properties, self.options, table_name=table.name())
        self.operation_id = str(uuid.uuid4())
        self.task = ArrowWriteTask(
            schema=table.schema(), spec=table.spec(), properties=props,
            locations=LocationProvider.for_table(table.location(), props), io_properties=dict(table.io.properties),
            table_name=table.name(), operation_id=self.operation_id,
            clustered=False,  # rows arrive in any order: fan out (module doc)
            sort_order_id=UNSORTED_ORDER_ID,  # the unsorted order, as Iceberg on Spark records on every data file
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid, tid = (ctx.partitionId(), ctx.taskAttemptId()) if ctx is not None else (0, 0)
        files = self.task.writer(pid, tid).write_all(iterator)  # deletes its own files on failure
        return FilesMessage(pickle.dumps(files))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = [f for m in messages if isinstance(m, FilesMessage) for f in pickle.loads(m.files)]
        table = resolve_table(self.options)
        commit_files(
            table, files, mode=self.mode, overwrite_filter=self.overwrite_filter,
            snapshot_properties={"floe.operation-id": self.operation_id},
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        reported = [f.file_path for m in messages if isinstance(m, FilesMessage) for f in pickle.loads(m.files)]
        cleanup_operation_files(resolve_table(self.options), self.operation_id, reported)
