"""``compute_table_stats`` with Spark computing the sketches (Java's ``NDVSketchUtil``).

Each Spark task builds one Apache DataSketches theta sketch per column over its rows (``mapInArrow``)
and returns them serialized; the driver unions them per column. Values are fed as DataSketches' Python
binding takes them: strings as text (hashed as their UTF-8 bytes, as Java hashes Iceberg's single-value
form), integers, dates and timestamps as 64-bit integers, floats as doubles, other types as text. So the
estimates (the ``ndv`` property) agree with Java's, while sketches of 4-byte types are not bit-identical.
The Puffin file and its commit are :mod:`floe.maintenance.table_stats`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.maintenance.table_stats import commit_table_stats, stats_columns
from floe.scan.table_scan import TableScan
from floe.spark.runtime.configure import attach
from floe.spark.runtime.connect import require_python_workers
from floe.spark.scan.table_read import dataframe_for_scan
from floe.spark.write.transforms import ensure_workers_import_floe
from floe.spec.snapshot import StatisticsFile
from floe.table.table import Table

__all__ = ["compute_table_stats", "partial_sketches"]

_LG_K = 12  # 4096 nominal entries, Java's UpdateSketch default


def _feed(value: object) -> int | float | str:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if hasattr(value, "toordinal") and not hasattr(value, "hour"):  # a date: days since the epoch
        return int(value.toordinal()) - 719163
    return str(value)


def partial_sketches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One serialized compact theta sketch per column of the task's rows (column index, sketch)."""
    import datasketches

    sketches: list[datasketches.update_theta_sketch] = []
    for batch in batches:
        if not sketches:
            sketches = [datasketches.update_theta_sketch(_LG_K) for _ in range(batch.num_columns)]
        for i, column in enumerate(batch.columns):
            if pa.types.is_timestamp(column.type):
                column = column.cast(pa.int64())
            sketch = sketches[i]
            for v in column.to_pylist():
                if v is not None:
                    sketch.update(_feed(v))
    yield pa.RecordBatch.from_pydict(
        {"idx": list(range(len(sketches))), "sketch": [s.compact(True).serialize() for s in sketches]},
        schema=pa.schema([("idx", pa.int32()), ("sketch", pa.binary())]),
    )


def compute_table_stats(
    table: Table, *, spark: SparkSession | None = None, snapshot_id: int | None = None, columns: Sequence[str] | None = None
) -> StatisticsFile | None:
    """Compute NDV sketches of ``columns`` (default: all primitive columns) at a snapshot and register them.

    Returns:
        The statistics file, or None for a table without snapshots (nothing to compute).

    Raises:
        ValidationError: an unknown snapshot or column (see :func:`floe.maintenance.table_stats.stats_columns`).
    """
    import datasketches

    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValidationError(f"compute_table_stats of table {table.name()} needs an active SparkSession")
    snap = table.metadata.current_snapshot() if snapshot_id is None else table.metadata.snapshot_by_id(snapshot_id)
    if snapshot_id is not None and snap is None:
        raise ValidationError(f"Snapshot not found: {snapshot_id} (table {table.name()})")
    if snap is None:
        return None
    schema = table.metadata.schema_by_id(snap.schema_id) if snap.schema_id is not None else table.schema()
    chosen = stats_columns(schema or table.schema(), columns, table_name=table.name())
    attach(session)
    require_python_workers(session, "compute_table_stats")
    ensure_workers_import_floe(session)
    df = dataframe_for_scan(session, TableScan.of(table, snapshot_id=snap.snapshot_id))
    names = [f"`{name.replace('`', '``')}`" for name, _ in chosen]
    rows = df.select(*names).mapInArrow(partial_sketches, "idx int, sketch binary").collect()
    unions = [datasketches.theta_union(_LG_K) for _ in chosen]
    for r in rows:
        unions[r["idx"]].update(datasketches.compact_theta_sketch.deserialize(bytes(r["sketch"])))
    sketches = {}
    for (_, field_id), union in zip(chosen, unions):
        result = union.get_result()
        sketches[field_id] = (bytes(result.serialize()), float(result.get_estimate()))
    return commit_table_stats(table, snap, sketches, created_by=f"Floe (Spark {session.version})")
