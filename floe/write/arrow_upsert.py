"""Upserting Arrow rows into a table from one process (no Spark): ``table.upsert(pa_table)``.

Semantics as PyIceberg's ``Table.upsert``: source rows match table rows on the join columns (default: the
table's identifier fields); a matched row is replaced only when a non-key column the source carries differs
(nulls equal nulls, NaN equals NaN); unmatched source rows are inserted. Source rows sharing a key are
refused, as are target rows sharing a matched key. Columns the source lacks keep the target's values on
update and are null on insert.

The change is copy-on-write, ONE overwrite snapshot: the scan planned with the source keys (partition and
column-bound pruning) yields the candidate files; they are read with their deletes applied, the files
holding a replaced row are removed and their remaining rows written again with the new rows. Nothing to
change means no snapshot.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import UnsupportedError, ValidationError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression, and_
from floe.expressions.builders import greater_than_or_equal, in_, less_than_or_equal
from floe.io.arrow_schema import arrow_to_schema, schema_to_arrow, without_field_ids
from floe.scan.arrow_read import read_task_to_arrow, scan_read_context
from floe.scan.tasks import FileScanTask
from floe.spec.schema import Schema
from floe.spec.types import DateType, IntegerType, LongType, StringType, TimestampType, TimestamptzType
from floe.table.row_changes import UpsertResult
from floe.write.arrow_data import conform
from floe.write.arrow_write import write_arrow_files
from floe.write.commit import deleted_on_failure
from floe.write.schema_check import check_write_schema

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["upsert_arrow"]

Rows = npt.NDArray[np.int64]

# Key types whose Arrow values are Floe literals as they are (dates and timestamps as days / micros).
_FILTERABLE = (IntegerType, LongType, StringType, DateType, TimestampType, TimestamptzType)
# Up to this many distinct keys the filter lists them (partition pruning through any transform, bucket too);
# beyond, projecting every key through the transforms costs more than it prunes, so a range prunes instead.
_IN_LIMIT = 10_000
_SOURCE_ROW, _TARGET_ROW = "\x00source_row", "\x00target_row"  # names no table column has
_READ_THREADS = 4


@dataclass(frozen=True)
class _Target:
    """Every live row of the candidate files (table schema) and the index of its file in ``tasks``."""

    tasks: list[FileScanTask]
    rows: pa.Table
    file_of: Rows


def upsert_arrow(
    table: Table,
    data: pa.Table | pa.RecordBatch,
    join_cols: Sequence[str] | None = None,
    *,
    update: bool = True,
    insert: bool = True,
) -> UpsertResult:
    """Update the rows of ``table`` whose key ``data`` matches and whose other columns differ, insert the rest.

    Args:
        table: the target table (refreshed in place by the commit).
        data: a pyarrow Table or RecordBatch; columns by name, cast as appends cast them.
        join_cols: the key columns (top-level); default: the table's identifier fields.
        update: replace matched rows that differ (PyIceberg's ``when_matched_update_all``).
        insert: insert unmatched rows (``when_not_matched_insert_all``).

    Returns:
        How many rows were updated and inserted (0 and 0: nothing was committed).

    Raises:
        ValidationError: no join columns, neither update nor insert, a schema mismatch, or a key held by two
            source rows (or two target rows).
        CommitConflictError: a concurrent commit changed the rows this upsert read (its files are deleted).
    """
    name = table.name()
    if not isinstance(data, (pa.Table, pa.RecordBatch)):
        raise ValidationError(f"Upsert into {name}: expected a pyarrow Table or RecordBatch, got {type(data).__name__}")
    if not update and not insert:
        raise ValidationError(f"Upsert into {name}: neither update nor insert is selected, nothing to do")
    schema = table.schema()
    keys = _join_columns(table, join_cols)
    missing = [k for k in keys if k not in data.schema.names]
    if missing:
        raise ValidationError(f"Upsert into {name}: join column {missing[0]!r} is not in the source")
    check_write_schema(
        schema, arrow_to_schema(without_field_ids(data.schema)), table_name=name, format_version=table.format_version
    )
    carried = [f.name for f in schema.fields if f.name in data.schema.names]
    source = conform(data, schema_to_arrow(schema), schema, table_name=name)
    _refuse_duplicates(source, keys, f"Upsert into {name}: the source has more than one row for a key of")
    snap = table.current_snapshot()
    expr = _key_filter(schema, source, keys)
    target = _read_candidates(table, None if snap is None else snap.snapshot_id, expr)
    s_rows, t_rows = _matches(source, target.rows, keys, name)
    if len(np.unique(s_rows)) != len(s_rows):
        raise ValidationError(f"Upsert into {name}: the table has more than one row for a key of ({', '.join(keys)})")
    if update and len(s_rows):
        differs = _differs(source, target.rows, s_rows, t_rows, [c for c in carried if c not in keys])
        s_changed, t_changed = s_rows[differs], t_rows[differs]
    else:
        s_changed = t_changed = np.zeros(0, dtype=np.int64)
    unmatched = np.ones(source.num_rows, dtype=bool)
    unmatched[s_rows] = False
    inserted = source.filter(pa.array(unmatched)) if insert else source.slice(0, 0)
    if not len(s_changed) and not inserted.num_rows:
        return UpsertResult(rows_updated=0, rows_inserted=0)
    touched = np.unique(target.file_of[t_changed])
    keep = np.isin(target.file_of, touched)
    keep[t_changed] = False
    updated = _updated_rows(source, target.rows, s_changed, t_changed, carried)
    rows = pa.concat_tables([target.rows.filter(pa.array(keep)), updated, inserted])
    files = write_arrow_files(table, rows)
    with deleted_on_failure(table.io, files):
        op = table.new_overwrite()
        for i in touched.tolist():
            task = target.tasks[i]
            op.delete_file(task.data_file)
            for e in task.deletes:
                if e.data_file.referenced_data_file == task.data_file.file_path:
                    op.delete_file(e.data_file)  # names only the removed file (as Java drops them)
        for f in files:
            op.add_file(f)
        # Validated against what was committed since the read: a concurrent change to a removed file, or new
        # rows or deletes the key filter may match, fail the commit instead of being lost or duplicated.
        op.validate_from_snapshot(None if snap is None else snap.snapshot_id)
        op.conflict_detection_filter(expr)
        op.commit()
    return UpsertResult(rows_updated=len(s_changed), rows_inserted=inserted.num_rows)


def _join_columns(table: Table, join_cols: Sequence[str] | None) -> list[str]:
    schema = table.schema()
    if join_cols is None:
        keys = [schema.find_column_name(i) or "" for i in schema.identifier_field_ids]
    else:
        keys = list(join_cols)
    if not keys:
        raise ValidationError(
            f"Upsert into {table.name()}: no join columns; pass join_cols or set the table's identifier fields"
        )
    top = {f.name: f.field_type for f in schema.fields}
    bad = next((k for k in keys if k not in top or not top[k].is_primitive), None)
    if bad is not None:
        raise ValidationError(
            f"Upsert into {table.name()}: join column {bad!r} is not a top-level primitive column "
            f"({top.get(bad, 'no such column')})"
        )
    return keys


def _refuse_duplicates(source: pa.Table, keys: list[str], what: str) -> None:
    counts = source.select(keys).group_by(keys).aggregate([([], "count_all")])
    if (pc.max(counts.column("count_all")).as_py() or 0) > 1:
        raise ValidationError(f"{what} ({', '.join(keys)})")


def _key_filter(schema: Schema, source: pa.Table, keys: list[str]) -> BooleanExpression:
    """A filter every table row matching a source key passes: pruning for the scan, conflicts for the commit."""
    expr: BooleanExpression = AlwaysTrue()
    for name in keys:
        t = schema.find_field(name).field_type
        if not isinstance(t, _FILTERABLE):
            continue
        col = pc.drop_null(source.column(name))
        if isinstance(t, DateType):
            col = col.cast(pa.int32())
        elif isinstance(t, (TimestampType, TimestamptzType)):
            col = col.cast(pa.int64())
        values = pc.unique(col)
        if not len(values):
            return AlwaysFalse()  # every source key is null: equality matches nothing
        if len(values) <= _IN_LIMIT:
            expr = and_(expr, in_(name, values.to_pylist()))
        else:
            bounds = pc.min_max(values)
            expr = and_(
                expr,
                greater_than_or_equal(name, bounds["min"].as_py()),
                less_than_or_equal(name, bounds["max"].as_py()),
            )
    return expr


def _read_candidates(table: Table, snapshot_id: int | None, expr: BooleanExpression) -> _Target:
    arrow_schema = schema_to_arrow(table.schema())
    if snapshot_id is None:
        return _Target([], arrow_schema.empty_table(), np.zeros(0, dtype=np.int64))
    scan = table.scan(row_filter=expr, snapshot_id=snapshot_id)
    tasks = list(scan.plan_files())
    ctx = scan_read_context(scan)

    def read(task: FileScanTask) -> pa.Table:
        # The whole file: its remainder is written again, so the key filter's residual does not apply.
        return read_task_to_arrow(ctx, dataclasses.replace(task, residual=AlwaysTrue())).cast(arrow_schema)

    if len(tasks) > 1:
        with ThreadPoolExecutor(max_workers=min(_READ_THREADS, os.cpu_count() or 1, len(tasks))) as pool:
            parts = list(pool.map(read, tasks))
    else:
        parts = [read(t) for t in tasks]
    counts = [p.num_rows for p in parts]
    return _Target(
        tasks,
        pa.concat_tables(parts) if parts else arrow_schema.empty_table(),
        np.repeat(np.arange(len(parts), dtype=np.int64), counts),
    )


def _joinable(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Extension columns (uuid) join on their storage values."""
    if isinstance(column.type, pa.BaseExtensionType):
        return pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
    return column


def _matches(source: pa.Table, target: pa.Table, keys: list[str], name: str) -> tuple[Rows, Rows]:
    """(source row, target row) of every pair with equal keys (null keys match nothing)."""
    if not target.num_rows or not source.num_rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty

    def indexed(rows: pa.Table, index: str) -> pa.Table:
        columns = [_joinable(rows.column(k)) for k in keys]
        return pa.table([*columns, pa.array(np.arange(rows.num_rows, dtype=np.int64))], names=[*keys, index])

    try:
        joined = indexed(source, _SOURCE_ROW).join(indexed(target, _TARGET_ROW), keys=keys, join_type="inner")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        raise UnsupportedError(f"Upsert into {name}: cannot match on ({', '.join(keys)}): {e}") from e
    return (
        joined.column(_SOURCE_ROW).to_numpy().astype(np.int64, copy=False),
        joined.column(_TARGET_ROW).to_numpy().astype(np.int64, copy=False),
    )


def _same(a: pa.ChunkedArray, b: pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    """Null-safe equality per row (NaN equals NaN, as Spark's ``<=>`` compares)."""
    try:
        eq: Any = pc.fill_null(pc.equal(a, b), False)
    except pa.ArrowNotImplementedError:
        # Nested values have no Arrow comparison: compare them as Python values.
        return np.fromiter((x == y for x, y in zip(a.to_pylist(), b.to_pylist())), dtype=bool, count=len(a))
    eq = pc.or_(eq, pc.and_(pc.is_null(a), pc.is_null(b)))
    if pa.types.is_floating(a.type):
        eq = pc.or_(eq, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return np.asarray(eq.to_numpy(zero_copy_only=False), dtype=bool)


def _differs(source: pa.Table, target: pa.Table, s_rows: Rows, t_rows: Rows, columns: list[str]) -> npt.NDArray[np.bool_]:
    """Which matched pairs differ in one of ``columns`` (the source's non-key columns)."""
    differs = np.zeros(len(s_rows), dtype=bool)
    s_idx, t_idx = pa.array(s_rows), pa.array(t_rows)
    for c in columns:
        differs |= ~_same(source.column(c).take(s_idx), target.column(c).take(t_idx))
    return differs


def _updated_rows(source: pa.Table, target: pa.Table, s_rows: Rows, t_rows: Rows, carried: list[str]) -> pa.Table:
    """The new version of each changed row: the source's columns, the target's for columns the source lacks."""
    s_idx, t_idx = pa.array(s_rows), pa.array(t_rows)
    columns = [
        (source if f.name in carried else target).column(f.name).take(s_idx if f.name in carried else t_idx)
        for f in source.schema
    ]
    return pa.Table.from_arrays(columns, schema=source.schema)
