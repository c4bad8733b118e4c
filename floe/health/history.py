"""Health history: one summary row per report, appended to a small Iceberg table (no Spark).

The table (default ``<namespace>.floe_health_history``, created on first use, format v2, unpartitioned)
has one row per recorded report: when, which table and snapshot, the score and its parts, file, delete,
manifest and snapshot counts, and the finding codes. Plot a trend with any reader, e.g.
``SELECT recorded_at, score FROM db.floe_health_history WHERE table_name = 'db.t' ORDER BY recorded_at``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from floe.health.report import HealthReport
from floe.health.statements import sql_string

if TYPE_CHECKING:
    import pyarrow as pa

    from floe.table.table import Table

__all__ = ["HISTORY_TABLE", "history_schema", "read_scores", "record", "summary_row"]

HISTORY_TABLE = "floe_health_history"


def history_schema() -> pa.Schema:
    """The history table's columns (pyarrow; Floe assigns field ids at create time)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("recorded_at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("table_name", pa.string(), nullable=False),
            pa.field("snapshot_id", pa.int64()),
            pa.field("score", pa.int32(), nullable=False),
            pa.field("file_size_part", pa.float64()),
            pa.field("equality_delete_part", pa.float64()),
            pa.field("position_delete_part", pa.float64()),
            pa.field("data_files", pa.int64()),
            pa.field("small_files", pa.int64()),
            pa.field("data_bytes", pa.int64()),
            pa.field("data_rows", pa.int64()),
            pa.field("position_delete_files", pa.int64()),
            pa.field("position_delete_rows", pa.int64()),
            pa.field("deletion_vectors", pa.int64()),
            pa.field("equality_delete_files", pa.int64()),
            pa.field("equality_delete_rows", pa.int64()),
            pa.field("manifests", pa.int64()),
            pa.field("snapshots", pa.int64()),
            pa.field("findings", pa.string()),
        ]
    )


def summary_row(report: HealthReport) -> dict[str, Any]:
    """The history row of one report (``recorded_at`` is the report's clock, in microseconds)."""
    d = report.deletes
    return {
        "recorded_at": report.generated_at_ms * 1000,
        "table_name": report.table,
        "snapshot_id": report.snapshot_id,
        "score": report.score,
        "file_size_part": report.score_parts.file_size,
        "equality_delete_part": report.score_parts.equality_deletes,
        "position_delete_part": report.score_parts.position_deletes,
        "data_files": report.data_files,
        "small_files": report.small_files,
        "data_bytes": report.data_bytes,
        "data_rows": report.data_rows,
        "position_delete_files": d.position_delete_files,
        "position_delete_rows": d.position_delete_rows,
        "deletion_vectors": d.dv_count,
        "equality_delete_files": d.equality_delete_files,
        "equality_delete_rows": d.equality_delete_rows,
        "manifests": report.manifests.count,
        "snapshots": report.snapshots.count,
        "findings": ",".join(f.code for f in report.findings),
    }


def record(catalog: Any, identifier: Sequence[str], reports: Sequence[HealthReport]) -> Table:
    """Append the reports' summary rows to the history table ``identifier``, creating it if missing.

    Args:
        catalog: a writable Floe catalog (``floe.load_catalog(...)``).
        identifier: the history table's namespace parts and name.

    Returns:
        The history table after the append (one snapshot for all reports).
    """
    import pyarrow as pa

    from floe.errors import NoSuchTableError

    ident = tuple(identifier)
    try:
        table: Table = catalog.load_table(ident)
    except NoSuchTableError:
        table = catalog.create_table(ident, schema=history_schema(), properties={"format-version": "2"})
    rows = [summary_row(r) for r in reports]
    schema = history_schema()
    data = pa.Table.from_pylist(rows, schema=schema)
    table.append(data)
    return table.refresh()


def read_scores(history: Table, table_name: str) -> list[tuple[int, int]]:
    """(recorded_at in ms, score) of every row recorded for ``table_name``, oldest first."""
    data = history.scan(f"table_name = {sql_string(table_name)}", selected_fields=("recorded_at", "score")).to_arrow()
    stamps = data.column("recorded_at").cast("int64").to_pylist()
    scores = data.column("score").to_pylist()
    return sorted((int(t) // 1000, int(s)) for t, s in zip(stamps, scores) if t is not None and s is not None)
