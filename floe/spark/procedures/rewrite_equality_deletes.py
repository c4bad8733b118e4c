"""``rewrite_equality_deletes``: equality deletes turned into position deletes (deletion vectors on v3).

Planning and the commit are :mod:`floe.maintenance.equality_delete_conversion`. Each batch (one key, whole
partitions) is one read of its data files' key columns with positions, kept where the batch's equality
deletes match them (the read path's equality join as a semi join, or its key array negated: null-safe on
exactly the key columns, ``data_seq < delete_seq``, same partition or global; position deletes already
applied), written as position delete files on the driver (v2; file-scoped files replace the data file's
earlier ones) or as deletion vectors merged with the file's vector (v3), and committed as a row delta that
removes the batch's equality delete files. A conflict with a
concurrent commit (a named data file or a removed delete file gone, a data file the deletes apply to
added) deletes what the batch wrote, and the rest is planned again from the new head, up to
:data:`MAX_CONFLICTS` times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from floe.errors import CommitConflictError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.maintenance.equality_delete_conversion import (
    ConversionBatch,
    RewriteEqualityDeletesResult,
    commit_conversion,
    plan_equality_conversion,
)
from floe.scan.arrow_read import ReadContext, deleted_positions_of, name_mapping_of
from floe.scan.tasks import FileScanTask
from floe.spark.row_level.commits import write_deletes
from floe.spark.row_level.position_deletes import per_file_granularity, write_position_deletes_on_driver
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import attach
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN
from floe.spark.scan.table_read import dataframe_for_scan
from floe.spec.manifest import DataFile, FileContent
from floe.table.table import Table
from floe.write.commit import deleted_on_failure

__all__ = ["DRIVER_POSITIONS", "MAX_CONFLICTS", "rewrite_equality_deletes"]

MAX_CONFLICTS = 3  # plans again after a conflicting concurrent commit at most this many times
# Equality delete rows of a batch up to which the positions they match (about as many, for keys that name one
# row each) are collected and written on the driver; beyond it Spark writes them.
DRIVER_POSITIONS = 4_000_000


def _convert(session: SparkSession, table: Table, snapshot_id: int | None, batch: ConversionBatch) -> tuple[list[DataFile], list[DataFile]]:
    """The position deletes (or vectors) naming the rows the batch's deletes match, and those they replace."""
    if not batch.tasks:
        return [], []  # the deletes apply to no live data file: they are only removed
    schema = table.schema()
    keys = tuple(schema.find_column_name(i) or "" for i in batch.equality_ids)
    scan = table.scan(snapshot_id=snapshot_id, selected_fields=keys, case_sensitive=True)
    rows = dataframe_for_scan(session, scan, list(batch.tasks), with_position=True, equality_matches=True)
    if table.format_version >= 3 or sum(e.data_file.record_count for e in batch.deletes) > DRIVER_POSITIONS:
        return write_deletes(table, rows, batch.tasks)  # v3 vectors are built on the driver by that writer
    return _write_on_driver(table, rows, batch.tasks)


def _write_on_driver(table: Table, rows: DataFrame, tasks: Sequence[FileScanTask]) -> tuple[list[DataFile], list[DataFile]]:
    """Position delete files for ``rows``' positions, collected (as Arrow) and written by pyarrow on the
    driver; at file granularity each replaces its data file's earlier file-scoped delete files, their
    positions merged in (as :func:`floe.spark.row_level.position_deletes.with_replaced_deletes` does in Spark).

    Measured on bench/cdc's table at 200k rows (88 data files, 80 equality delete files): the Spark write of
    the same positions (a grouped write, then every footer read back) took about 7 s of a 13 s conversion.
    """
    positions = _by_file(rows.select(ROW_FILE_COLUMN, ROW_POS_COLUMN).toArrow())
    per_file = per_file_granularity(table)
    replaced: list[DataFile] = []
    if per_file:
        earlier = [
            (t, mine) for t in tasks if t.data_file.file_path in positions
            for mine in [tuple(e for e in t.deletes if e.data_file.content == FileContent.POSITION_DELETES
                               and e.data_file.referenced_data_file == t.data_file.file_path)] if mine
        ]
        schema = table.schema()
        ctx = ReadContext(io=table.io, table_schema=schema, projection=schema,
                          name_mapping=name_mapping_of(dict(table.properties), schema), location_of=lambda p: p)
        with ThreadPoolExecutor(max_workers=8) as pool:
            found = list(pool.map(lambda x: deleted_positions_of(ctx, FileScanTask(x[0].data_file, x[0].data_sequence_number, x[1])), earlier))
        for (t, mine), old in zip(earlier, found, strict=True):
            path = t.data_file.file_path
            if old is not None:
                positions[path] = np.concatenate([positions[path], old])
            replaced += [e.data_file for e in mine]
    return write_position_deletes_on_driver(table, positions, tasks, per_file=per_file, spark=rows.sparkSession), replaced


def _by_file(rows: pa.Table) -> dict[str, np.ndarray]:
    """Positions grouped by data file path (sorted by the writer)."""
    if rows.num_rows == 0:
        return {}
    encoded = pc.dictionary_encode(rows.column(0).combine_chunks())
    index = encoded.indices.to_numpy(zero_copy_only=False)
    pos = rows.column(1).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    counts = np.bincount(index, minlength=len(encoded.dictionary))
    parts = np.split(pos[np.argsort(index, kind="stable")], np.cumsum(counts)[:-1])
    return {str(encoded.dictionary[i].as_py()): parts[i] for i in range(len(counts)) if counts[i]}


@without_call_sites()
def rewrite_equality_deletes(
    table: Table,
    *,
    spark: SparkSession | None = None,
    where: BooleanExpression | str | None = None,
    options: Mapping[str, Any] | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
) -> RewriteEqualityDeletesResult:
    """Convert ``table``'s live equality deletes (in the partitions ``where`` selects) into position deletes.

    Args:
        spark: the session (default: the active one).
        where: a filter on partition source columns choosing the partitions converted (default all; global
            deletes are converted only without one).
        options: ``max-file-group-size-bytes`` (data bytes per batch, default 100 GiB).
        snapshot_properties: extra summary properties of each commit.

    Raises:
        ValidationError: an unknown or invalid option, a ``where`` naming a non-partition column.
        CommitConflictError: concurrent commits conflicted more than :data:`MAX_CONFLICTS` times.
        UnsupportedError: a data file Spark cannot read natively with positions (ORC, Avro, an object
            store without a Hadoop file system).
    """
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValidationError(f"rewrite_equality_deletes of table {table.name()} needs an active SparkSession")
    attach(session)
    rewritten = added_count = removed = rewritten_bytes = 0
    conflicts = 0
    done = False
    while not done:
        table.refresh()
        plan = plan_equality_conversion(table, where=where, options=options)
        touched: set[str] = set()  # data files whose deletes this plan's commits changed
        try:
            # Every batch validates from the planned snapshot: the batches before it changed nothing it
            # depends on, and a concurrent commit before them must still be seen. A batch (another key)
            # reaching a file an earlier one gave new deletes is planned again first: its merge with the
            # file's deletes must start from the new ones.
            done = True
            for batch in plan.batches:
                if any(t.data_file.file_path in touched for t in batch.tasks):
                    done = False
                    break
                touched |= {t.data_file.file_path for t in batch.tasks}
                added: list[DataFile] = []
                with deleted_on_failure(table.io, added):
                    new, replaced = _convert(session, table, plan.snapshot_id, batch)
                    added += new
                    commit_conversion(
                        table, plan.snapshot_id, batch, new, replaced, snapshot_properties=snapshot_properties
                    )
                rewritten += len(batch.deletes)
                rewritten_bytes += sum(e.data_file.file_size_in_bytes for e in batch.deletes)
                added_count += len(new)
                removed += len(replaced)
        except CommitConflictError:
            done = False
            conflicts += 1
            if conflicts > MAX_CONFLICTS:
                raise
    return RewriteEqualityDeletesResult(rewritten, added_count, removed, rewritten_bytes)
