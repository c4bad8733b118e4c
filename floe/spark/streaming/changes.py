"""Applying a changelog DataFrame to a table with equality and position deletes (CDC), in Spark tasks.

``apply_changes(table, df, op_column=...)`` takes rows shaped like the table plus an operation column
(+I, -U, +U, -D as Flink's RowKind; Spark changelog views' insert / delete / update_preimage /
update_postimage), routes every row by its key (the table's identifier fields) so all changes of a key
reach one task in their order, and runs floe.write.delta_writer.DeltaTaskWriter there: inserts go to
data files, deletes of keys written in this commit become position deletes (deletion vectors on v3),
other deletes equality deletes. The driver only commits: one row delta, with the caller's summary
properties (the streaming sink adds its query and epoch ids).

Order: within a key, changes apply in the order of ``order_by`` when given, else in the DataFrame's own
order (a monotonically increasing id taken before the shuffle).
"""

from __future__ import annotations

import pickle
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from floe.errors import FloeError, UnsupportedError, ValidationError
from floe.io.fileio import FileIO
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import attach
from floe.spark.runtime.connect import require_python_workers
from floe.spark.streaming.conversion_schedule import (
    SCHEDULE_OPTION,
    run_scheduled_conversion,
    schedule_commit_count,
)
from floe.spark.types import from_spark_schema
from floe.spark.write.dataframe_write import cleanup_operation_files, project_to_table
from floe.spark.write.session_settings import (
    CHECK_NULLABILITY_OPTION,
    CHECK_ORDERING_OPTION,
    COMPRESSION_CODEC_OPTION,
    COMPRESSION_LEVEL_OPTION,
    merge_schema_requested,
    schema_checks,
    session_write_properties,
    with_session_settings,
)
from floe.spark.write.transforms import ensure_workers_import_floe
from floe.spec import properties as P
from floe.spec.manifest import DataFile, FileContent
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.write.commit import apply_schema_changes, deleted_on_failure
from floe.write.delta_writer import DeltaTaskWriter, change_kinds, check_upsert_keys
from floe.write.locations import LocationProvider
from floe.write.schema_check import check_write_schema
from floe.write.upsert_mode import UPSERT_OPTION, check_upsert_table

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["ChangesResult", "apply_changes", "upsert_dataframe"]

_OP = "__floe_op"
_CHANGE_ERROR = re.compile(r"Changes for table [^\n]*")
_ORDER = "__floe_order"


@dataclass(frozen=True)
class ChangesResult:
    """What one apply committed: rows written, keys deleted, files added (none when nothing changed)."""

    snapshot_id: int | None
    rows_inserted: int
    keys_deleted: int
    data_files: int
    equality_delete_files: int
    position_delete_files: int


@dataclass(frozen=True)
class _DeltaTask:
    """The picklable job of one Spark task: apply its ordered changes, return the files it wrote."""

    schema: Schema
    spec: PartitionSpec
    key_field_ids: tuple[int, ...]
    upsert: bool
    properties: dict[str, str]
    locations: LocationProvider
    io_properties: dict[str, str]
    format_version: int
    table_name: str
    operation_id: str
    op_column: str  # the user's name for it, in messages

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid, tid = (ctx.partitionId(), ctx.taskAttemptId()) if ctx is not None else (0, 0)
        writer = DeltaTaskWriter(
            schema=self.schema, spec=self.spec, key_field_ids=self.key_field_ids, upsert=self.upsert,
            properties=self.properties, locations=self.locations, io=FileIO(self.io_properties),
            format_version=self.format_version, table_name=self.table_name, partition_id=pid, task_id=tid,
            operation_id=self.operation_id,
        )
        try:
            for batch in batches:
                kinds = change_kinds(batch.column(_OP), table_name=self.table_name, column=self.op_column)
                writer.write(batch.drop_columns([_OP]), kinds)
            files = writer.close()
        except BaseException:
            writer.abort()
            raise
        yield pa.RecordBatch.from_pydict(
            {"files": [pickle.dumps(files)], "inserted": [writer.rows_inserted], "deleted": [writer.keys_deleted]},
            schema=pa.schema([("files", pa.binary()), ("inserted", pa.int64()), ("deleted", pa.int64())]),
        )


def key_field_ids(table: Table, keys: Sequence[str] | None) -> tuple[int, ...]:
    """The key columns' field ids: ``keys`` when given, else the table's identifier fields."""
    schema = table.schema()
    if keys:
        ids = []
        for name in keys:
            f = schema.find_field_or_none(name)
            if f is None:
                raise ValidationError(f"Key column {name!r} is not a column of table {table.name()}")
            ids.append(f.field_id)
        return tuple(ids)
    if not schema.identifier_field_ids:
        raise ValidationError(
            f"Table {table.name()} has no identifier fields: run ALTER TABLE {table.name()} SET IDENTIFIER FIELDS "
            "<columns>, or pass the key columns"
        )
    return tuple(schema.identifier_field_ids)


def _column(schema: Schema, field_id: int) -> Column:
    first, *rest = (schema.find_field(i).name for i in schema.accessor_path(field_id))
    col = F.col(f"`{first.replace('`', '``')}`")
    for name in rest:
        col = col.getField(name)
    return col


# Write options a changelog's write honours (its rows go to their key's task: no distribution or sizing options).
_CHANGES_WRITE_OPTIONS = {COMPRESSION_CODEC_OPTION, COMPRESSION_LEVEL_OPTION}


def _refuse_unknown(options: Mapping[str, str], known: set[str], what: str, where: str) -> None:
    """Refuse the first option (sorted) not in ``known`` (lower case), rather than drop it."""
    unknown = sorted(k for k in options if k.lower() not in known)
    if unknown:
        raise UnsupportedError(
            f"{what}: write option {unknown[0]!r} is not supported {where} (supported: {', '.join(sorted(known))})"
        )


@without_call_sites()
def apply_changes(
    table: Table,
    df: DataFrame,
    *,
    op_column: str = "op",
    keys: Sequence[str] | None = None,
    upsert: bool | None = None,
    order_by: str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
    rewrite_every: int | None = None,
    write_options: Mapping[str, str] | None = None,
) -> ChangesResult:
    """Apply the changelog ``df`` to ``table`` in one commit (a row delta).

    Args:
        table: the target table (format v2 or later; refreshed in place).
        df: the table's columns (by name) plus ``op_column``.
        op_column: the operation column (+I, -U, +U, -D; or insert, update_before/update_preimage,
            update_after/update_postimage, delete).
        keys: the key columns; default the table's identifier fields.
        upsert: every insert replaces its key (default: table property ``write.upsert.enabled``, false).
        order_by: a column giving the order of changes (e.g. ``_change_ordinal``); default the
            DataFrame's order.
        snapshot_properties: extra snapshot summary properties.
        branch: target branch.
        rewrite_every: run ``rewrite_equality_deletes`` after the commit once this many commits with
            equality deletes have landed since the last one (floe.spark.streaming.conversion_schedule;
            default: table property ``write.rewrite-equality-deletes.commit-count``, 0 never).
        write_options: ``compression-codec`` / ``compression-level`` for the files written (else the session's
            ``spark.sql.iceberg.compression-*``, else the table's properties).

    Raises:
        ValidationError: the table is v1, has no key, the DataFrame lacks the operation column or does not
            fit the table, or an operation value is unknown. Nothing is committed and every file written is
            deleted.
    """
    if table.format_version < 2:
        raise ValidationError(
            f"Table {table.name()} is format v1, which has no delete files: upgrade it "
            "(ALTER TABLE ... SET TBLPROPERTIES ('format-version'='2')) before applying changes"
        )
    columns = set(df.columns)
    if op_column not in columns:
        raise ValidationError(f"Changes for table {table.name()} have no operation column {op_column!r}")
    if order_by is not None and order_by not in columns:
        raise ValidationError(f"Changes for table {table.name()} have no order column {order_by!r}")
    _refuse_unknown(write_options or {}, _CHANGES_WRITE_OPTIONS, f"Changes for table {table.name()}", "when applying changes")
    key_ids = key_field_ids(table, keys)
    every = schedule_commit_count(table, branch=branch) if rewrite_every is None else rewrite_every
    if upsert is None:
        upsert = P.property_bool(table.properties, P.UPSERT_ENABLED, P.UPSERT_ENABLED_DEFAULT)
    schema, spec = table.schema(), table.spec()
    if upsert:
        check_upsert_keys(schema, spec, key_ids, table_name=table.name())
    rows = df.drop(op_column, *([order_by] if order_by else []))
    check_write_schema(
        schema, from_spark_schema(rows.schema), table_name=table.name(), merge_schema=False,
        format_version=table.format_version, spark_types=True,
    )
    spark = df.sparkSession
    attach(spark)
    require_python_workers(spark, "Applying changes (apply_changes, change and upsert streams, upsert tables)")
    ensure_workers_import_floe(spark)
    order = F.col(f"`{order_by}`") if order_by else F.monotonically_increasing_id()
    ordered = df.withColumn(_ORDER, order).withColumn(_OP, F.col(f"`{op_column}`").cast("string"))
    key_cols = [_column(schema, i) for i in key_ids]
    routed = (
        project_to_table(ordered, schema, table_name=table.name(), extra=(_OP, _ORDER))
        .repartition(*key_cols)
        .sortWithinPartitions(_ORDER)
        .drop(_ORDER)
    )
    props = session_write_properties(spark, table, write_options)  # the option's or session's codec and level
    op_id = str(uuid.uuid4())
    task = _DeltaTask(
        schema=schema, spec=spec, key_field_ids=key_ids, upsert=upsert, properties=props,
        locations=LocationProvider.for_table(table.location(), props), io_properties=dict(table.io.properties),
        format_version=table.format_version, table_name=table.name(), operation_id=op_id, op_column=op_column,
    )
    start = table.refresh().current_snapshot() if branch is None else table.snapshot_by_name(branch)
    try:
        out = routed.mapInArrow(task, "files binary, inserted long, deleted long").collect()
    except BaseException as e:
        cleanup_operation_files(table, op_id)
        found = _CHANGE_ERROR.search(str(e)) if isinstance(e, Exception) and not isinstance(e, FloeError) else None
        if found:
            raise ValidationError(found.group(0)) from None  # the task's one line, not a Python worker trace
        raise
    files: list[DataFile] = [f for r in out for f in pickle.loads(r["files"])]
    inserted = sum(int(r["inserted"]) for r in out)
    deleted = sum(int(r["deleted"]) for r in out)
    data = [f for f in files if f.content == FileContent.DATA]
    equality = [f for f in files if f.content == FileContent.EQUALITY_DELETES]
    positions = [f for f in files if f.content == FileContent.POSITION_DELETES]
    if not files:
        return ChangesResult(None, 0, 0, 0, 0, 0)
    summary = {"spark.app.id": spark.sparkContext.applicationId}
    summary.update(snapshot_properties or {})
    with deleted_on_failure(table.io, files):
        op = table.new_row_delta(branch=branch)
        for f in data:
            op.add_rows(f)
        for f in equality + positions:
            op.add_deletes(f)
        op.validate_from_snapshot(start.snapshot_id if start is not None else None)
        for k, v in summary.items():
            op.set(k, v)
        op.commit()
    if equality:
        run_scheduled_conversion(table, spark, every)
    head = table.current_snapshot() if branch is None else table.snapshot_by_name(branch)
    return ChangesResult(
        head.snapshot_id if head is not None else None, inserted, deleted, len(data), len(equality),
        len({f.file_path for f in positions}),
    )


# Options an upsert honours; any other write option is refused rather than dropped.
_UPSERT_WRITE_OPTIONS = {
    "mergeschema", "merge-schema", UPSERT_OPTION, "order-column", SCHEDULE_OPTION,
    COMPRESSION_CODEC_OPTION, COMPRESSION_LEVEL_OPTION, CHECK_NULLABILITY_OPTION, CHECK_ORDERING_OPTION,
}


@without_call_sites()
def upsert_dataframe(
    table: Table,
    df: DataFrame,
    *,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
    options: Mapping[str, str] | None = None,
    keys: Sequence[str] | None = None,
) -> ChangesResult:
    """Write ``df`` into an upsert table (floe.write.upsert_mode): each row replaces its key's row.

    Rows are applied in the DataFrame's order (or by the ``order-column`` option, which is not written), the
    last row of a key winning. ``keys``: the key columns (default: the table's identifier fields).

    Raises:
        UnsupportedError: a write option upsert mode does not honour.
        ValidationError: see :func:`floe.write.upsert_mode.check_upsert_table` and :func:`apply_changes`.
    """
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    _refuse_unknown(opts, _UPSERT_WRITE_OPTIONS, f"Upsert into table {table.name()}", "in upsert mode")
    check_upsert_table(table, "append", keys_given=bool(keys))
    every = schedule_commit_count(table, opts, branch=branch)
    settings = with_session_settings(df.sparkSession, opts, table_name=table.name())
    checks = schema_checks(table.properties, settings)
    order = opts.get("order-column")
    rows = df.drop(order) if order is not None and order in df.columns else df
    changes = check_write_schema(
        table.schema(), from_spark_schema(rows.schema), table_name=table.name(),
        merge_schema=merge_schema_requested(settings), format_version=table.format_version, spark_types=True,
        check_nullability=checks.nullability, check_ordering=checks.ordering,
    )
    apply_schema_changes(table, changes)
    op = "__floe_upsert_op"
    return apply_changes(
        table, df.withColumn(op, F.lit("+I")), op_column=op, keys=keys, upsert=True, order_by=order,
        snapshot_properties=snapshot_properties, branch=branch, rewrite_every=every,
        write_options={k: v for k, v in settings.items() if k.lower() in _CHANGES_WRITE_OPTIONS},
    )
