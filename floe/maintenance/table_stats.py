"""``compute_table_stats``, the metadata half: theta sketches -> a Puffin statistics file -> ``set-statistics``.

As Java's ``ComputeTableStatsSparkAction``: one ``apache-datasketches-theta-v1`` blob per column (its
field id, the snapshot's id and sequence number, zstd-compressed, property ``ndv`` = the sketch's
estimate rounded down), written to ``<metadata dir>/<snapshot id>-<uuid>.stats`` and registered as the
snapshot's statistics file (replacing any earlier one). The sketches come from the engine
(:mod:`floe.spark.procedures.table_stats`); sketches are Apache DataSketches compact theta sketches (seed 9001).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from floe.errors import ValidationError
from floe.io.locations import join
from floe.io.puffin_write import PuffinBlob, encode_puffin
from floe.spec.schema import Schema
from floe.spec.snapshot import BlobMetadata, Snapshot, StatisticsFile
from floe.spec.updates import SetStatistics
from floe.table.paths import metadata_dir
from floe.table.pending import StaticUpdates
from floe.table.table import Table

__all__ = ["THETA_BLOB_TYPE", "commit_table_stats", "stats_columns"]

THETA_BLOB_TYPE = "apache-datasketches-theta-v1"


def stats_columns(schema: Schema, columns: Sequence[str] | None, *, table_name: str) -> list[tuple[str, int]]:
    """(name, field id) of the columns to compute: the given ones, else every primitive top-level column.

    Raises:
        ValidationError: an unknown or non-primitive column, or no column at all (Java's checks).
    """
    if columns is None:
        chosen = [(f.name, f.field_id) for f in schema.fields if f.field_type.is_primitive]
    else:
        chosen = []
        for name in columns:
            field = schema.find_field_or_none(name)
            if field is None:
                raise ValidationError(f"Can't find column {name} in table {table_name}")
            if not field.field_type.is_primitive:
                raise ValidationError(f"Can't compute stats on non-primitive type column: {name} ({field.field_type})")
            chosen.append((name, field.field_id))
    if not chosen:
        raise ValidationError(f"No columns found to compute stats for table {table_name}")
    return chosen


def commit_table_stats(
    table: Table, snapshot: Snapshot, sketches: Mapping[int, tuple[bytes, float]], *, created_by: str
) -> StatisticsFile:
    """Write the Puffin file of ``sketches`` (field id -> (compact sketch, estimate)) and register it."""
    blobs = [
        PuffinBlob(
            THETA_BLOB_TYPE, (field_id,), snapshot.snapshot_id, snapshot.sequence_number or 0, data,
            compression_codec="zstd", properties={"ndv": str(int(estimate))},
        )
        for field_id, (data, estimate) in sketches.items()
    ]
    payload, footer_size, metas = encode_puffin(blobs, properties={"created-by": created_by})
    location = join(metadata_dir(table.metadata), f"{snapshot.snapshot_id}-{uuid.uuid4()}.stats")
    table.io.new_output(location).write_bytes(payload)
    stats = StatisticsFile(
        snapshot_id=snapshot.snapshot_id,
        statistics_path=location,
        file_size_in_bytes=len(payload),
        file_footer_size_in_bytes=footer_size,
        blob_metadata=tuple(
            BlobMetadata(m.type, m.snapshot_id, m.sequence_number, m.fields, dict(m.properties)) for m in metas
        ),
    )
    try:
        StaticUpdates(table, [SetStatistics(stats)]).commit()
    except Exception:
        table.io.delete_many([location])
        raise
    return stats
