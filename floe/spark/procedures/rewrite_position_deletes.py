"""``rewrite_position_delete_files`` with Spark moving the bytes (Java's ``SparkRewritePositionDeleteRunner``).

Planning and the commit are :mod:`floe.maintenance.rewrite_position_deletes`. Each group's delete files
are read natively (``file_path``, ``pos``; in Python workers on stores Spark has no file system for), rows whose data file is no longer live are dropped (a left
semi join with the live data paths, as Java does), and the rest is written as new position delete files
of the group's partition by :func:`floe.spark.row_level.position_deletes.write_position_deletes` (sorted, full
``file_path`` bounds): at ``write.delete.granularity=file`` (the default) one per data file, each naming
its ``referenced_data_file``, as Java's rewrite writes them; at ``partition`` one per partition. A failure
before the commit lands deletes the files written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import CommitStateUnknownError, ValidationError
from floe.io.fileio import FileIO
from floe.maintenance.binpack import RewriteGroup
from floe.maintenance.rewrite_position_deletes import (
    PositionDeleteRewritePlan,
    RewritePositionDeletesResult,
    commit_position_delete_rewrite,
    partition_key,
    plan_position_delete_rewrite,
)
from floe.scan.delete_index import is_deletion_vector
from floe.scan.tasks import FileScanTask
from floe.spark.procedures.group_rewrites import rewrite_groups
from floe.spark.row_level.deletion_vectors import deletion_vectors_for
from floe.spark.row_level.position_deletes import (
    deleted_positions,
    per_file_granularity,
    write_position_deletes,
)
from floe.spark.runtime.configure import attach
from floe.spark.runtime.storage import configure_native_s3, spark_reaches
from floe.spark.scan.delete_joins import read_position_delete_rows
from floe.spark.scan.file_uris import file_relation
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN
from floe.spark.scan.worker_read import files_in_workers
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry
from floe.table.table import Table
from floe.write.commit import deleted_on_failure

__all__ = ["rewrite_position_delete_files"]

_GROUP = "_floe_group"  # floe.spark.row_level.position_deletes' group column: one group here


def _delete_rows(io: FileIO, location: str) -> pa.Table:
    paths, positions = read_position_delete_rows(io, location)
    return pa.table({"file_path": paths, "pos": positions})


def _rewrite_group(session: SparkSession, table: Table, plan: PositionDeleteRewritePlan, group: RewriteGroup) -> list[DataFile]:
    locations = [t.data_file.file_path for t in group.tasks]
    if all(spark_reaches(session, loc) for loc in locations):
        configure_native_s3(session, locations, table.io.properties)
        size_of = {t.data_file.file_path: t.data_file.file_size_in_bytes for t in group.tasks}
        rows = file_relation(session, "parquet", "file_path string, pos long", locations, size_of)
    else:
        schema = T.StructType([T.StructField("file_path", T.StringType()), T.StructField("pos", T.LongType())])
        rows = files_in_workers(session, table.io, locations, _delete_rows, schema)
    if per_file_granularity(table):
        # As Java's rewrite at file granularity: one delete file per live data file of the partition named.
        # The lookup keeps only rows naming one, so rows of data files gone are dropped with it.
        data_tasks = [FileScanTask(f, 0) for f in plan.data_files_by_partition.get(partition_key(group.tasks[0].data_file), ())]
        if not data_tasks:
            return []
        located = rows.select(F.col("file_path").alias(ROW_FILE_COLUMN), F.col("pos").alias(ROW_POS_COLUMN))
        return write_position_deletes(table, deleted_positions(located, data_tasks, per_file=True), data_tasks, per_file=True)
    live = session.createDataFrame(
        [(p,) for p in sorted(plan.live_data_paths)], T.StructType([T.StructField("live_path", T.StringType(), False)])
    )
    valid = rows.join(F.broadcast(live), rows["file_path"] == live["live_path"], "left_semi")
    # coalesce: never applied (the columns are required), but tells Spark they are non-null
    out = valid.select(
        F.coalesce(F.col("file_path"), F.lit("")).alias("file_path"),
        F.coalesce(F.col("pos").cast("long"), F.lit(-1).cast("long")).alias("pos"),
        F.lit(0).alias(_GROUP),
    )
    return write_position_deletes(table, out, list(group.tasks[:1]))


def rewrite_position_delete_files(
    table: Table, *, spark: SparkSession | None = None, options: Mapping[str, Any] | None = None
) -> RewritePositionDeletesResult:
    """Compact ``table``'s position delete files per partition, dropping deletes of data files gone.

    Args:
        spark: the session (default: the active one).
        options: Java's options for this action (``rewrite-all``, ``min-input-files``,
            ``target-file-size-bytes``, ``partial-progress.enabled``, ...).

    Raises:
        ValidationError: an unknown or invalid option.
        CommitConflictError: a rewritten delete file was removed concurrently.
    """
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValidationError(f"rewrite_position_delete_files of table {table.name()} needs an active SparkSession")
    if table.format_version >= 3:
        return _to_deletion_vectors(table)
    plan = plan_position_delete_rewrite(table, options=options)
    if not plan.groups:
        return RewritePositionDeletesResult(0, 0, 0, 0)
    attach(session)

    def run(batch: list[RewriteGroup]) -> list[tuple[RewriteGroup, list[DataFile]]]:
        done = rewrite_groups(
            batch, lambda g: _rewrite_group(session, table, plan, g),
            concurrency=plan.options.max_concurrent_file_group_rewrites, io=table.io, spark=session,
        )
        try:
            commit_position_delete_rewrite(table, plan, done)
        except CommitStateUnknownError:
            raise
        except BaseException:
            table.io.delete_many([f.file_path for _, files in done for f in files])
            raise
        return done

    groups = list(plan.groups)
    committed: list[tuple[RewriteGroup, list[DataFile]]] = []
    if not plan.options.partial_progress_enabled:
        committed = run(groups)
    else:
        size = math.ceil(len(groups) / plan.options.partial_progress_max_commits)
        for i in range(0, len(groups), size):
            try:
                committed += run(groups[i : i + size])
            except CommitStateUnknownError:
                raise
            except Exception:  # noqa: BLE001 - partial progress: a failed batch is skipped, as in Java
                table.refresh()
    return RewritePositionDeletesResult(
        rewritten_delete_files_count=sum(len(g.tasks) for g, _ in committed),
        added_delete_files_count=sum(len(files) for _, files in committed),
        rewritten_bytes_count=sum(g.size_bytes for g, _ in committed),
        added_bytes_count=sum(f.file_size_in_bytes for _, files in committed for f in files),
    )


def _to_deletion_vectors(table: Table) -> RewritePositionDeletesResult:
    """Format v3 takes no new position delete files (spec "Deletion Vectors"): the position delete files a
    table kept from v2 are rewritten as one deletion vector per data file they name (merged with the file's
    vector, if any) and removed, in one row delta."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return RewritePositionDeletesResult(0, 0, 0, 0)
    tasks = [t for t in table.scan(snapshot_id=snapshot.snapshot_id).plan_files() if any(_old_style(e) for e in t.deletes)]
    if not tasks:
        return RewritePositionDeletesResult(0, 0, 0, 0)
    vectors = deletion_vectors_for(table, {t.data_file.file_path: np.empty(0, np.int64) for t in tasks}, tasks)
    # every live data file a position delete file names now has a vector holding its rows: the files go
    old = {e.data_file.file_path: e.data_file for t in tasks for e in t.deletes if _old_style(e)}
    removed = {**old, **{f.file_path + f"@{f.content_offset}": f for f in vectors.replaced if f.file_format == FileFormat.PUFFIN}}
    with deleted_on_failure(table.io, vectors.added[:1]):
        op = table.new_row_delta()
        for f in removed.values():
            op.remove_deletes(f)
        for f in vectors.added:
            op.add_deletes(f)
        op.validate_from_snapshot(snapshot.snapshot_id)
        op.validate_data_files_exist(t.data_file.file_path for t in tasks)
        op.validate_no_conflicting_delete_files()
        op.commit()
    return RewritePositionDeletesResult(
        rewritten_delete_files_count=len(old),
        added_delete_files_count=len(vectors.added),
        rewritten_bytes_count=sum(f.file_size_in_bytes for f in old.values()),
        added_bytes_count=vectors.added[0].file_size_in_bytes if vectors.added else 0,
    )


def _old_style(entry: ManifestEntry) -> bool:
    return entry.data_file.content == FileContent.POSITION_DELETES and not is_deletion_vector(entry)
