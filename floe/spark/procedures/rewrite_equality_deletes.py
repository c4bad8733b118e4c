"""``rewrite_equality_deletes``: equality deletes turned into position deletes (deletion vectors on v3).

Planning and the commit are :mod:`floe.maintenance.equality_delete_conversion`. Each batch (one key, whole
partitions) is one read of its data files' key columns with positions, kept where the batch's equality
deletes match them (the read path's equality join as a semi join: null-safe on exactly the key columns,
``data_seq < delete_seq``, same partition or global; position deletes already applied), written by the
same writers as a merge-on-read DELETE (file-scoped delete files or vectors replace the data file's earlier
ones), and committed as a row delta that removes the batch's equality delete files. A conflict with a
concurrent commit (a named data file or a removed delete file gone, a data file the deletes apply to
added) deletes what the batch wrote, and the rest is planned again from the new head, up to
:data:`MAX_CONFLICTS` times.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from floe.errors import CommitConflictError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.maintenance.equality_delete_conversion import (
    ConversionBatch,
    RewriteEqualityDeletesResult,
    commit_conversion,
    plan_equality_conversion,
)
from floe.spark.row_level.commits import write_deletes
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import attach
from floe.spark.scan.table_read import dataframe_for_scan
from floe.spec.manifest import DataFile
from floe.table.table import Table
from floe.write.commit import deleted_on_failure

__all__ = ["MAX_CONFLICTS", "rewrite_equality_deletes"]

MAX_CONFLICTS = 3  # plans again after a conflicting concurrent commit at most this many times


def _convert(session: SparkSession, table: Table, snapshot_id: int | None, batch: ConversionBatch) -> tuple[list[DataFile], list[DataFile]]:
    """The position deletes (or vectors) naming the rows the batch's deletes match, and those they replace."""
    if not batch.tasks:
        return [], []  # the deletes apply to no live data file: they are only removed
    schema = table.schema()
    keys = tuple(schema.find_column_name(i) or "" for i in batch.equality_ids)
    scan = table.scan(snapshot_id=snapshot_id, selected_fields=keys, case_sensitive=True)
    rows = dataframe_for_scan(session, scan, list(batch.tasks), with_position=True, equality_matches=True)
    return write_deletes(table, rows, batch.tasks)


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
