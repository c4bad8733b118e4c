"""Writing Arrow data to a table from one process (no Spark): ``table.append(pa_table)`` and friends.

The rows are split by partition once, then the per-partition slices are written by a small thread pool
(pyarrow's Parquet encoder and compressor release the GIL), each thread with its own task writer.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

from floe.errors import ValidationError
from floe.expressions.base import BooleanExpression
from floe.io.arrow_schema import arrow_to_schema, schema_to_arrow, without_field_ids
from floe.spec.manifest import DataFile
from floe.write.arrow_data import conform, split_by_partition
from floe.write.commit import WriteMode, apply_schema_changes, commit_files
from floe.write.locations import LocationProvider
from floe.write.schema_check import check_write_schema
from floe.write.task_writer import TaskWriter

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["write_arrow", "write_arrow_files"]

_MAX_THREADS = 4


def _threads() -> int:
    return max(1, min(_MAX_THREADS, os.cpu_count() or 1))


def write_arrow_files(table: Table, data: pa.Table | pa.RecordBatch, *, operation_id: str | None = None) -> list[DataFile]:
    """Write ``data`` into new data files of ``table`` (not committed); on error nothing is left behind.

    Raises:
        ValidationError: the data does not fit the table schema.
    """
    schema, spec = table.schema(), table.spec()
    props = dict(table.properties)
    op_id = operation_id or str(uuid.uuid4())
    locations = LocationProvider.for_table(table.location(), props)
    arrow = conform(data, schema_to_arrow(schema), schema, table_name=table.name())
    if arrow.num_rows == 0:
        return []
    parts = split_by_partition(arrow, spec, schema)
    nthreads = _threads()
    chunks: list[list[tuple[tuple[object, ...], pa.Table]]] = [[] for _ in range(nthreads)]
    if len(parts) == 1:
        # One partition: contiguous slices, one per thread, when there is enough data to share.
        partition, rows = parts[0]
        nthreads = nthreads if rows.nbytes > 64 * 1024 * 1024 else 1
        step = -(-rows.num_rows // nthreads)
        for i in range(nthreads):
            chunks[i].append((partition, rows.slice(i * step, step)))
    else:
        loads = [0] * nthreads
        for partition, rows in sorted(parts, key=lambda p: -p[1].num_rows):
            i = loads.index(min(loads))
            chunks[i].append((partition, rows))
            loads[i] += rows.num_rows
        nthreads = sum(1 for c in chunks if c)
    writers = [
        TaskWriter(
            schema=schema,
            spec=spec,
            properties=props,
            locations=locations,
            io=table.io,
            table_name=table.name(),
            partition_id=i,
            task_id=0,
            operation_id=op_id,
            clustered=True,
        )
        for i in range(nthreads)
    ]

    def run(i: int) -> list[DataFile]:
        w = writers[i]
        for partition, rows in chunks[i]:
            w.write_partition(partition, rows)
        return w.close()

    try:
        if nthreads == 1:
            return run(0)
        with ThreadPoolExecutor(max_workers=nthreads) as pool:
            results = list(pool.map(run, range(nthreads)))
        return [f for r in results for f in r]
    except BaseException:
        for w in writers:
            w.abort()
        raise


def write_arrow(
    table: Table,
    data: pa.Table | pa.RecordBatch,
    *,
    mode: WriteMode = "append",
    overwrite_filter: BooleanExpression | str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
    merge_schema: bool = False,
) -> Table:
    """Check the schema, write the files and commit one snapshot.

    Args:
        table: the target table.
        data: a pyarrow Table or RecordBatch (columns by name).
        mode: ``append``, ``overwrite`` (rows matching ``overwrite_filter``, default all) or ``dynamic``.
        overwrite_filter: for ``overwrite``.
        snapshot_properties: extra snapshot summary properties.
        branch: target branch.
        merge_schema: add new columns / widen types first (``write.spark.accept-any-schema`` alone does not, as
            in Iceberg Java, where it lets the data differ and ``mergeSchema`` asks for the change).

    Raises:
        ValidationError: the data does not fit the table schema (names the column and types).
    """
    if not isinstance(data, (pa.Table, pa.RecordBatch)):
        raise ValidationError(f"Cannot write {type(data).__name__} to table {table.name()}: expected a pyarrow Table")
    merge = merge_schema
    data_schema = arrow_to_schema(without_field_ids(data.schema))  # matched by name, not id
    changes = check_write_schema(
        table.schema(), data_schema, table_name=table.name(), merge_schema=merge, format_version=table.format_version
    )
    apply_schema_changes(table, changes)
    files = write_arrow_files(table, data)
    return commit_files(
        table, files, mode=mode, overwrite_filter=overwrite_filter, snapshot_properties=snapshot_properties, branch=branch
    )
