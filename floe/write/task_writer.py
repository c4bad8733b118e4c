"""The task writer: Arrow batches in, Parquet data files and their DataFile descriptors out (no Spark).

One task writer serves one writing task (a Spark task, or the driver for ``table.append(pa_table)``).
Per batch it computes partition tuples with the vectorized transforms, splits the rows by tuple and
hands each slice to that partition's open file (fanout: one open file per partition seen; clustered:
only the current partition's file stays open, for input sorted by partition). Files roll at
``write.target-file-size-bytes``. Memory holds at most the open files' buffered row groups, further
capped by ``memory_budget_bytes`` (the largest buffer is flushed as a row group when it is exceeded).
On error :meth:`abort` deletes every file the writer opened, closed or not.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from floe.errors import UnsupportedError
from floe.io.arrow_schema import schema_to_arrow
from floe.io.fileio import FileIO
from floe.spec.manifest import DataFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.row_lineage import LINEAGE_FIELDS
from floe.spec.schema import Schema, walk_fields
from floe.spec.types import DoubleType, FloatType, GeographyType, GeometryType, IcebergType
from floe.write.arrow_data import conform, split_by_partition
from floe.write.locations import LocationProvider, data_file_name
from floe.write.parquet_files import ParquetFileWriter, ParquetSettings

__all__ = ["DEFAULT_MEMORY_BUDGET_BYTES", "TaskWriter", "geospatial_columns", "refuse_geospatial"]

DEFAULT_MEMORY_BUDGET_BYTES = 512 * 1024 * 1024


def geospatial_columns(schema: Schema) -> list[tuple[str, IcebergType]]:
    """The geometry/geography columns of ``schema`` (name and type), which the Arrow writer cannot write."""
    return [(name, f.field_type) for name, f in walk_fields(schema.as_struct())
            if isinstance(f.field_type, (GeometryType, GeographyType))]


def refuse_geospatial(schema: Schema, table_name: str) -> None:
    """Refuse a schema with geometry/geography columns: pyarrow would write them as plain binary, not as
    Parquet's geospatial types the spec stores them as (Spark's writer does)."""
    found = geospatial_columns(schema)
    if found:
        name, field_type = found[0]
        raise UnsupportedError(
            f"Table {table_name}: column {name!r} is {field_type}: the Arrow writer cannot write Parquet's "
            "geospatial types; write it with Spark's writer (INSERT, writeTo, MERGE)"
        )


class TaskWriter:
    """Writes the rows one task receives into partitioned, rolling Parquet files."""

    def __init__(
        self,
        *,
        schema: Schema,
        spec: PartitionSpec,
        properties: Mapping[str, str],
        locations: LocationProvider,
        io: FileIO,
        table_name: str = "",
        partition_id: int = 0,
        task_id: int = 0,
        operation_id: str | None = None,
        clustered: bool = False,
        sort_order_id: int | None = None,
        memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
        lineage: bool = False,
    ) -> None:
        """Create a task writer.

        Args:
            schema: the table schema to write (files carry its field ids on every column).
            spec: the partition spec of the new files.
            properties: table properties (``write.parquet.*``, ``write.target-file-size-bytes``, metrics).
            locations: where files go.
            io: the table's FileIO.
            table_name: for error messages.
            partition_id: first number in file names (Spark partition id).
            task_id: second number in file names (Spark task attempt id).
            operation_id: the write's uuid (shared by all tasks of one write); default a new uuid.
            clustered: keep only the current partition's file open (input sorted by partition).
            sort_order_id: recorded on every file (the order the rows are sorted by, if any).
            memory_budget_bytes: cap on buffered Arrow bytes across the open files.
            lineage: the rows carry v3 row lineage (``_row_id``, ``_last_updated_sequence_number``: rows
                rewritten from the table), written as the spec's reserved columns after the table's.
        """
        self.schema, self.spec, self.properties = schema, spec, properties
        self.locations, self.io, self.table_name = locations, io, table_name
        self.partition_id, self.task_id = partition_id, task_id
        self.operation_id = operation_id or str(uuid.uuid4())
        self.clustered = clustered
        self.sort_order_id = sort_order_id
        self.memory_budget_bytes = memory_budget_bytes
        refuse_geospatial(schema, table_name)
        self.settings = ParquetSettings.from_properties(properties, table_name=table_name)
        # Files of rewritten rows carry their lineage columns too; metrics and partitions stay the table's.
        self.file_schema = Schema(*schema.fields, *LINEAGE_FIELDS, schema_id=schema.schema_id) if lineage else schema
        self.arrow_schema = schema_to_arrow(self.file_schema)
        self._count_nans = any(isinstance(f.field_type, (FloatType, DoubleType)) for _, f in walk_fields(schema.as_struct()))
        self._open: dict[tuple[Any, ...], ParquetFileWriter] = {}
        self._opened: list[str] = []  # every location ever opened (deleted on abort)
        self._done: list[DataFile] = []
        self._file_count = 0
        self._finished = False

    # -- writing ---------------------------------------------------------------------------------
    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Write rows (columns matched by name to the table schema, see floe.write.arrow_data.conform)."""
        if data.num_rows == 0:
            return
        table = conform(data, self.arrow_schema, self.file_schema, table_name=self.table_name)
        for partition, rows in split_by_partition(table, self.spec, self.schema):
            self._write_partition(partition, rows)
        self._enforce_budget()

    def write_partition(self, partition: tuple[Any, ...], rows: pa.Table) -> None:
        """Write rows already conformed to the file schema that all belong to ``partition``."""
        if rows.num_rows:
            self._write_partition(partition, rows)
            self._enforce_budget()

    def write_all(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> list[DataFile]:
        """Write every batch and close; on any error delete the files and re-raise."""
        try:
            for b in batches:
                self.write(b)
            return self.close()
        except BaseException:
            self.abort()
            raise

    def _write_partition(self, partition: tuple[Any, ...], rows: pa.Table) -> None:
        if self.clustered:
            for key in [k for k in self._open if k != partition]:
                self._done.append(self._open.pop(key).close())
        offset = 0
        while offset < rows.num_rows:
            writer = self._writer_for(partition)
            # Slice so one slice never overshoots the file's remaining room or a row group by much.
            room = max(self.settings.target_file_bytes - writer.estimated_size(), 1)
            budget = min(room, self.settings.row_group_bytes)
            remaining = rows.slice(offset)
            per_row = max(remaining.nbytes / max(remaining.num_rows, 1), 1.0)
            take = max(int(budget / per_row), 1)
            piece = remaining.slice(0, take)
            writer.write(piece)
            offset += piece.num_rows
            if writer.estimated_size() >= self.settings.target_file_bytes:
                self._done.append(self._open.pop(partition).close())

    def _writer_for(self, partition: tuple[Any, ...]) -> ParquetFileWriter:
        writer = self._open.get(partition)
        if writer is not None:
            return writer
        self._file_count += 1
        name = data_file_name(self.partition_id, self.task_id, self.operation_id, self._file_count)
        path = self.spec.partition_path(partition, self.schema) if self.spec.fields else ""
        location = self.locations.new_location(name, path)
        self._opened.append(location)
        writer = ParquetFileWriter(
            self.io,
            location,
            self.arrow_schema,
            self.settings,
            schema=self.schema,
            properties=self.properties,
            partition=partition,
            spec_id=self.spec.spec_id,
            sort_order_id=self.sort_order_id,
            count_nans=self._count_nans,
        )
        self._open[partition] = writer
        return writer

    def _enforce_budget(self) -> None:
        total = sum(w.buffered_bytes for w in self._open.values())
        while total > self.memory_budget_bytes:
            largest = max(self._open.values(), key=lambda w: w.buffered_bytes)
            total -= largest.buffered_bytes
            largest.flush()

    # -- finishing -------------------------------------------------------------------------------
    def close(self) -> list[DataFile]:
        """Close every open file; returns the DataFiles of all files written."""
        while self._open:
            _, writer = self._open.popitem()
            self._done.append(writer.close())
        self._finished = True
        return list(self._done)

    def abort(self) -> None:
        """Stop and delete every file this writer opened (best effort; files left are orphans)."""
        for writer in self._open.values():
            writer.abort()
        self._open.clear()
        self._done.clear()
        if self._opened:
            self.io.delete_many(self._opened)
        self._finished = True

    @property
    def opened_locations(self) -> list[str]:
        """Every file location this writer created."""
        return list(self._opened)

    def __enter__(self) -> TaskWriter:  # noqa: PYI034 - py3.10 has no typing.Self
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._finished:
            self.close()
