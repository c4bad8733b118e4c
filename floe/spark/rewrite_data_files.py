"""``rewrite_data_files`` (bin-pack compaction) with Spark moving the bytes.

Python plans the groups (:mod:`floe.maintenance.binpack`); Spark reads exactly each group's files with
their deletes applied (:func:`floe.spark.read.dataframe_for_scan` over the group's scan tasks) and writes
them with :func:`floe.spark.write.write_files` at the target file size; Python commits one ``replace``
snapshot. Any failure before the commit lands deletes the files written; with ``partial-progress.enabled``
groups are committed in up to ``partial-progress.max-commits`` batches and a failed batch is counted in
``failed_data_files_count`` instead of failing the call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from floe.errors import CommitStateUnknownError, UnsupportedError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.maintenance.binpack import RewriteGroup
from floe.maintenance.rewrite_data_files import RewriteDataFilesResult, commit_rewrite, plan_rewrite
from floe.spark.configure import attach
from floe.spark.read import dataframe_for_scan
from floe.spark.write import write_files
from floe.spec.manifest import DataFile
from floe.table.table import Table

__all__ = ["rewrite_data_files"]


def rewrite_data_files(
    table: Table,
    *,
    spark: SparkSession | None = None,
    strategy: str = "binpack",
    where: BooleanExpression | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> RewriteDataFilesResult:
    """Compact ``table``'s small files partition by partition into files near the target size.

    Args:
        spark: the session (default: the active one).
        strategy: ``binpack`` (``sort`` and ``zorder`` are not supported).
        where: only rewrite files that may hold rows matching this filter.
        options: Iceberg's ``rewrite_data_files`` options (``target-file-size-bytes``, ``min-input-files``,
            ``min-file-size-bytes``, ``max-file-size-bytes``, ``rewrite-all``, ``delete-file-threshold``,
            ``max-file-group-size-bytes``, ``partial-progress.enabled``, ``partial-progress.max-commits``).

    Raises:
        UnsupportedError: a strategy other than binpack.
        ValidationError: invalid options or filter.
        CommitConflictError: a concurrent commit removed a rewritten file or added deletes for it.
    """
    if strategy.strip().lower() != "binpack":
        raise UnsupportedError(
            f"rewrite_data_files strategy {strategy!r} is not supported for table {table.name()} (only binpack)"
        )
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValidationError(f"rewrite_data_files of table {table.name()} needs an active SparkSession")
    attach(session)
    plan = plan_rewrite(table, where=where, options=options)
    if not plan.groups:
        return RewriteDataFilesResult(0, 0, 0, 0)
    write_options = {"target-file-size-bytes": str(plan.options.target_file_size_bytes)}

    def rewrite(group: RewriteGroup) -> list[DataFile]:
        df = dataframe_for_scan(session, plan.read_scan, list(group.tasks))
        return write_files(table, df, options=write_options)

    def run(batch: list[RewriteGroup]) -> list[tuple[RewriteGroup, list[DataFile]]]:
        done: list[tuple[RewriteGroup, list[DataFile]]] = []
        try:
            for group in batch:
                done.append((group, rewrite(group)))
            commit_rewrite(table, plan, done)
        except CommitStateUnknownError:
            raise  # the commit may have landed: its files must stay
        except BaseException:
            table.io.delete_many([f.file_path for _, files in done for f in files])
            raise
        return done

    groups = list(plan.groups)
    if not plan.options.partial_progress_enabled:
        batches = [groups]
    else:
        size = math.ceil(len(groups) / plan.options.partial_progress_max_commits)
        batches = [groups[i : i + size] for i in range(0, len(groups), size)]
    committed: list[tuple[RewriteGroup, list[DataFile]]] = []
    failed = 0
    last_error: Exception | None = None
    for batch in batches:
        if not plan.options.partial_progress_enabled:
            committed += run(batch)
            continue
        try:
            committed += run(batch)
        except CommitStateUnknownError:
            raise
        except Exception as e:  # noqa: BLE001 - partial progress: count the batch as failed, go on with the others
            failed += sum(len(g.tasks) for g in batch)
            last_error = e
            table.refresh()
    if last_error is not None and not committed:
        raise last_error
    return RewriteDataFilesResult(
        rewritten_data_files_count=sum(len(g.tasks) for g, _ in committed),
        added_data_files_count=sum(len(files) for _, files in committed),
        rewritten_bytes_count=sum(g.size_bytes for g, _ in committed),
        failed_data_files_count=failed,
    )
