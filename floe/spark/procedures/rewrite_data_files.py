"""``rewrite_data_files`` (bin-pack, sort and z-order compaction) with Spark moving the bytes.

Python plans the groups (:mod:`floe.maintenance.binpack`, Java's planner rules). A bin-pack group of small
files is read and written by pyarrow in Spark's Python workers (:mod:`floe.spark.procedures.worker_binpack`);
otherwise Spark reads exactly each group's files with their deletes applied (:func:`floe.spark.scan.table_read.dataframe_for_scan` over the group's scan
tasks) and writes them with :func:`floe.spark.write.dataframe_write.write_files`, cut at Java's write size (halfway between
the target and the maximum file size). ``sort`` range-partitions each group into its expected number of
output files and sorts them by the given order (or the table's); ``zorder`` sorts by an interleaved-bits
value computed by an Arrow UDF (:mod:`floe.maintenance.zorder`). Python commits one ``replace`` snapshot.
Any failure before the commit lands deletes the files written; with ``partial-progress.enabled`` groups are
committed in up to ``partial-progress.max-commits`` batches and a failed batch is counted in
``failed_data_files_count`` (the call fails when more than ``partial-progress.max-failed-commits`` fail).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import CommitStateUnknownError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.maintenance.binpack import RewriteGroup
from floe.maintenance.dangling_deletes import remove_dangling_deletes
from floe.maintenance.rewrite_data_files import (
    DataRewritePlan,
    RewriteDataFilesResult,
    commit_rewrite,
    plan_rewrite,
)
from floe.maintenance.sort_order_arg import SortTerm, ZOrder, parse_sort_order
from floe.maintenance.zorder import interleave_bits, ordered_bytes
from floe.spark.procedures.group_rewrites import rewrite_groups
from floe.spark.procedures.worker_binpack import rewrite_in_workers, rewrites_in_workers
from floe.spark.runtime.configure import attach
from floe.spark.runtime.connect import require_python_workers
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, natively_positioned
from floe.spark.scan.table_read import dataframe_for_scan
from floe.spark.write.dataframe_write import USE_TABLE_ORDERING_OPTION, write_files
from floe.spark.write.layout import hidden_partition_columns
from floe.spark.write.transforms import ensure_workers_import_floe, source_column, transform_column
from floe.spec.manifest import DataFile
from floe.spec.sort_order import NullOrder, SortDirection
from floe.spec.transforms.parse import parse_transform
from floe.table.table import Table

__all__ = ["rewrite_data_files"]

_Z_COLUMN = "__floe_zvalue"


def _resolve_strategy(table: Table, strategy: str | None, sort_order: str | None) -> tuple[str, list[SortTerm] | ZOrder | None]:
    # Java's RewriteDataFilesProcedure.checkAndApplyStrategy: a sort order alone means sort.
    order = None if sort_order is None else parse_sort_order(sort_order)
    name = (strategy or ("sort" if order is not None else "binpack")).strip().lower()
    if name == "binpack":
        if order is not None:
            raise ValidationError(
                f"Cannot set rewrite mode, it has already been set to BIN-PACK (table {table.name()}, "
                f"sort_order {sort_order!r})"
            )
        return "binpack", None
    if name != "sort":
        raise ValidationError(
            f"unsupported strategy: {strategy} (table {table.name()}). Only binpack or sort is supported"
        )
    if isinstance(order, ZOrder):
        return "zorder", ZOrder(_zorder_columns(table, order))
    if not order:
        if not table.sort_order().is_sorted:
            raise ValidationError(
                f"Cannot sort data without a valid sort order, table '{table.name()}' is unsorted and no sort "
                "order is provided"
            )
        return "sort", None
    for term in order:
        table.schema().find_field(term.column, case_sensitive=False)
        parse_transform(term.transform)
    return "sort", order


def _zorder_columns(table: Table, order: ZOrder) -> tuple[str, ...]:
    # Java ignores identity partition columns: they are constant within a group.
    schema = table.schema()
    identity = {f.source_id for f in table.spec().fields if str(f.transform) == "identity"}
    kept = []
    for name in order.columns:
        field = schema.find_field_or_none(name, case_sensitive=False)
        if field is None:
            raise ValidationError(f"Cannot find column '{name}' in table schema of {table.name()}")
        if field.field_id not in identity:
            kept.append(schema.find_column_name(field.field_id) or name)
    if not kept:
        raise ValidationError(
            f"Cannot ZOrder table {table.name()}, all columns provided were identity partition columns and "
            "cannot be used"
        )
    return tuple(kept)


def _sort_columns(table: Table, terms: list[SortTerm] | None) -> list[Column]:
    schema = table.schema()
    out: list[Column] = []
    if terms is None:  # the table's own sort order
        for sf in table.sort_order().fields:
            col = transform_column(sf.transform, schema.find_type(sf.source_id), source_column(schema, sf.source_id))
            asc, first = sf.direction == SortDirection.ASC, sf.null_order == NullOrder.NULLS_FIRST
            out.append(_ordered(col, asc, first))
        return out
    for term in terms:
        field = schema.find_field(term.column, case_sensitive=False)
        col = transform_column(
            parse_transform(term.transform), field.field_type, source_column(schema, field.field_id)
        )
        out.append(_ordered(col, term.ascending, term.nulls_first))
    return out


def _ordered(col: Column, asc: bool, nulls_first: bool) -> Column:
    if asc:
        return col.asc_nulls_first() if nulls_first else col.asc_nulls_last()
    return col.desc_nulls_first() if nulls_first else col.desc_nulls_last()


def _z_input(df: DataFrame, name: str) -> Column:
    # Dates, timestamps and booleans as longs (their order), the rest as Arrow can take it.
    dtype = df.schema[name].dataType
    col = F.col(f"`{name.replace('`', '``')}`")
    if isinstance(dtype, T.DateType):
        return F.unix_date(col).cast("long")
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return F.unix_micros(col.cast("timestamp"))
    if isinstance(dtype, T.BooleanType):
        return col.cast("long")
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType)):
        return col
    if isinstance(dtype, (T.StringType, T.BinaryType)):
        return col.cast("binary")
    raise ValidationError(f"Cannot use column {name!r} of type {dtype.simpleString()} in ZOrdering, the type is unsupported")


def _z_value(df: DataFrame, columns: tuple[str, ...], var_length: int, max_output: int) -> Column:
    def zvalue(*arrays: pa.Array) -> pa.Array:
        parts = [ordered_bytes(a, var_length_contribution=var_length) for a in arrays]
        return pa.array(interleave_bits(parts, max_output), type=pa.binary())

    udf = F.arrow_udf(zvalue, T.BinaryType())  # type: ignore[attr-defined]
    return udf(*[_z_input(df, c) for c in columns])  # type: ignore[no-any-return]


def _rewrite_group(
    session: SparkSession,
    table: Table,
    plan: DataRewritePlan,
    group: RewriteGroup,
    mode: str,
    order: list[SortTerm] | ZOrder | None,
) -> list[DataFile]:
    opts = plan.options
    if mode == "binpack" and rewrites_in_workers(session, table, group):
        return rewrite_in_workers(session, table, plan.read_scan, group, opts.write_max_file_size)
    # v3: rewritten rows keep their row id and last-updated sequence number (spec "Row Lineage"); ids are
    # inherited from positions, so only natively positioned (Parquet) groups can keep them.
    lineage = table.format_version >= 3 and all(natively_positioned(t) for t in group.tasks)
    df = dataframe_for_scan(session, plan.read_scan, list(group.tasks), with_position=lineage, lineage=lineage)
    if lineage:
        df = df.drop(ROW_FILE_COLUMN, ROW_POS_COLUMN)
    write_options = {"target-file-size-bytes": str(opts.write_max_file_size)}
    if mode == "binpack":
        # As Java's bin-pack runner: each read split becomes one output file (splits sized input /
        # expected files), no shuffle unless the rows move to another spec.
        same_spec = all(t.data_file.spec_id == table.spec().spec_id for t in group.tasks)
        write_options["distribution-mode"] = "none" if same_spec else "range"
        df = df.coalesce(max(1, group.expected_output_files))
    else:
        partitions = max(1, group.expected_output_files * opts.shuffle_partitions_per_file)
        if isinstance(order, ZOrder):
            df = df.withColumn(_Z_COLUMN, _z_value(df, order.columns, opts.var_length_contribution, opts.max_output_size))
            keys = [F.col(_Z_COLUMN).asc_nulls_first()]
        else:
            keys = _sort_columns(table, order)
        # Led by the writer's own partition columns (same expressions), so Spark sees its required ordering
        # met and adds no sort of its own, which would make the optimizer drop this one.
        spec = table.spec()
        hidden = [c.asc_nulls_first() for _, c in hidden_partition_columns(spec, table.schema())] if spec.is_partitioned else []
        df = df.repartitionByRange(partitions, *hidden, *keys).sortWithinPartitions(*hidden, *keys)
        if opts.shuffle_partitions_per_file > 1:
            df = df.coalesce(group.expected_output_files)  # merges neighbouring ranges: order kept
        if isinstance(order, ZOrder):
            df = df.drop(_Z_COLUMN)
        write_options[USE_TABLE_ORDERING_OPTION] = "false"
    return write_files(table, df, options=write_options)


def rewrite_data_files(
    table: Table,
    *,
    spark: SparkSession | None = None,
    strategy: str | None = None,
    sort_order: str | None = None,
    where: BooleanExpression | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> RewriteDataFilesResult:
    """Compact ``table``'s files partition by partition into files near the target size (Java's rules).

    Args:
        spark: the session (default: the active one).
        strategy: ``binpack`` (default) or ``sort`` (the default when ``sort_order`` is given).
        sort_order: ``'col [ASC|DESC] [NULLS FIRST|LAST], ...'`` (transforms allowed) or ``'zorder(a, b)'``;
            with ``sort`` and no order, the table's sort order.
        where: only rewrite files that may hold rows matching this filter.
        options: Iceberg's ``rewrite_data_files`` options (see :mod:`floe.maintenance.rewrite_options`).

    Raises:
        ValidationError: an invalid strategy, sort order, option or filter.
        UnsupportedError: an ``output-spec-id`` other than the current spec.
        CommitConflictError: a concurrent commit removed a rewritten file or added deletes for it.
    """
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValidationError(f"rewrite_data_files of table {table.name()} needs an active SparkSession")
    mode, order = _resolve_strategy(table, strategy, sort_order)
    plan = plan_rewrite(table, where=where, options=options, strategy=mode)
    attach(session)
    if mode == "zorder":
        require_python_workers(session, "rewrite_data_files with the zorder strategy")
        ensure_workers_import_floe(session)
    removed_deletes = 0
    committed: list[tuple[RewriteGroup, list[DataFile]]] = []
    failed = 0
    if plan.groups:
        committed, failed, removed_deletes = _run(session, table, plan, mode, order)
    if plan.options.remove_dangling_deletes and plan.snapshot_id is not None:
        removed_deletes += remove_dangling_deletes(table)
    return RewriteDataFilesResult(
        rewritten_data_files_count=sum(len(g.tasks) for g, _ in committed),
        added_data_files_count=sum(len(files) for _, files in committed),
        rewritten_bytes_count=sum(g.size_bytes for g, _ in committed),
        failed_data_files_count=failed,
        removed_delete_files_count=removed_deletes,
    )


def _run(
    session: SparkSession,
    table: Table,
    plan: DataRewritePlan,
    mode: str,
    order: list[SortTerm] | ZOrder | None,
) -> tuple[list[tuple[RewriteGroup, list[DataFile]]], int, int]:
    """Rewrite and commit the groups; returns (committed groups and files, failed files, removed DVs)."""
    removed = 0

    def run(batch: list[RewriteGroup]) -> list[tuple[RewriteGroup, list[DataFile]]]:
        nonlocal removed
        done = rewrite_groups(
            batch, lambda g: _rewrite_group(session, table, plan, g, mode, order),
            concurrency=plan.options.max_concurrent_file_group_rewrites, io=table.io, spark=session,
        )
        try:
            removed += commit_rewrite(table, plan, done)
        except CommitStateUnknownError:
            raise  # the commit may have landed: its files must stay
        except BaseException:
            table.io.delete_many([f.file_path for _, files in done for f in files])
            raise
        return done

    groups = list(plan.groups)
    opts = plan.options
    if not opts.partial_progress_enabled:
        return run(groups), 0, removed
    size = math.ceil(len(groups) / opts.partial_progress_max_commits)
    batches = [groups[i : i + size] for i in range(0, len(groups), size)]
    committed: list[tuple[RewriteGroup, list[DataFile]]] = []
    failed_files = failed_commits = 0
    last_error: Exception | None = None
    for batch in batches:
        try:
            committed += run(batch)
        except CommitStateUnknownError:
            raise
        except Exception as e:  # noqa: BLE001 - partial progress: count the batch as failed, go on with the others
            failed_files += sum(len(g.tasks) for g in batch)
            failed_commits += 1
            last_error = e
            table.refresh()
    if last_error is not None and failed_commits > opts.max_failed_commits:
        raise ValidationError(
            f"partial-progress.enabled is true but {failed_commits} rewrite commits of table {table.name()} "
            f"failed, more than the {opts.max_failed_commits} allowed: {last_error}"
        ) from last_error
    return committed, failed_files, removed
