"""INSERT INTO / INSERT OVERWRITE, DELETE FROM and UPDATE, with Iceberg-on-Spark semantics.

* INSERT: the VALUES rows (evaluated by Spark, so ``CAST(1639816497 AS TIMESTAMP)`` works) or the query's
  rows are matched to the table's columns by position (or by the column list), cast to the table types,
  and written through the Spark write path as one snapshot.
* INSERT OVERWRITE: dynamic when ``spark.sql.sources.partitionOverwriteMode=dynamic`` (replace only the
  partitions the rows land in); static otherwise - the PARTITION clause's static values become the
  overwrite filter, and without one the whole table is replaced (Iceberg's Spark docs, "INSERT OVERWRITE").
* DELETE: files whose rows all match the condition (the strict partition projection or the strict
  metrics prove it) are dropped from metadata alone; files that only partly match are rewritten
  copy-on-write (read natively, matching rows filtered out, the rest written anew) and swapped in by one
  overwrite commit validated against concurrent changes since the scan.
* UPDATE: copy-on-write of every file that may hold matching rows.

Merge-on-read (``write.delete.mode`` / ``write.update.mode`` = ``merge-on-read``, format v2+): instead of
rewriting partly matching files, the matching rows' positions are written as position delete files
(floe.spark.position_deletes) and UPDATE writes only the updated rows as new data files; one row delta
commits them, validated against concurrent changes since the scan (files it deletes from must still exist,
no new data or deletes matching the condition). DELETE still drops wholly matching files from metadata.

Rewritten rows are written by Spark executors (floe.spark.write.write_files), never collected to the
driver; the new files are deleted if the commit fails (unless its outcome is unknown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from floe.errors import ParseError, UnsupportedError, ValidationError
from floe.expressions.base import AlwaysTrue, BooleanExpression, and_
from floe.expressions.builders import equal_to, is_null
from floe.spec import properties as P
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.query import query_dataframe
from floe.sql.parser import short_sql
from floe.sql.result import ResultSet
from floe.write.commit import deleted_on_failure

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from floe.scan.tasks import FileScanTask
    from floe.spec.manifest import DataFile
    from floe.table.table import Table

__all__ = [
    "change_message",
    "conform_dataframe",
    "merge_on_read",
    "plan_candidates",
    "quote",
    "rewrite_commit",
    "row_delta_commit",
    "run_delete",
    "run_insert",
    "run_update",
    "spark_type",
    "write_dataframe",
]


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _snapshot_properties(ctx: HandlerContext) -> dict[str, str]:
    """Iceberg's Spark writer records the application id in every snapshot summary (seed ch.3 queries it).

    Metadata-only commits do not start Spark for it: they record the id only when Spark already runs.
    """
    if not ctx.spark_started:
        return {}
    try:
        return {"spark.app.id": ctx.spark().sparkContext.applicationId}
    except Exception:  # noqa: BLE001 - a summary nicety must never fail a write (e.g. Spark Connect has no context)
        return {}


def write_dataframe(
    ctx: HandlerContext,
    table: Table,
    df: DataFrame,
    *,
    mode: str,
    overwrite_filter: BooleanExpression | None = None,
    what: str,
) -> Table:
    """Write ``df`` (already in the table's column order and types) as one snapshot."""
    from floe.write import write

    with spark_errors(what):
        return write(
            table,
            df,
            mode=mode,  # type: ignore[arg-type]
            overwrite_filter=overwrite_filter,
            snapshot_properties=_snapshot_properties(ctx),
        )


def spark_type(field: Any) -> Any:
    from floe.spark.types import to_spark_type

    return to_spark_type(field.field_type, column=field.name)


def conform_dataframe(
    table: Table,
    df: DataFrame,
    *,
    columns: Sequence[str] | None,
    static: Mapping[str, object],
    what: str,
) -> DataFrame:
    """``df``'s columns mapped to the table's by position (or by ``columns``), cast to the table types.

    Static partition values fill their columns; columns not given are NULL (an error if required).

    Raises:
        ValidationError: wrong number of columns, unknown or duplicate column names, a required column
            without a value.
    """
    from pyspark.sql import functions as F

    schema = table.schema()
    names = [f.name for f in schema.fields]
    lowered = {n.lower(): n for n in names}

    def canon(name: str) -> str:
        found = lowered.get(name.lower())
        if found is None:
            raise ValidationError(f"{what}: table {table.name()} has no column {name!r} (columns: {', '.join(names)})")
        return found

    static_cols = {canon(k): v for k, v in static.items()}
    if columns is not None:
        targets = [canon(n) for n in columns]
    else:
        targets = [n for n in names if n not in static_cols]
    if len(set(targets)) != len(targets):
        raise ValidationError(f"{what}: a column is given twice: {', '.join(targets)}")
    overlap = set(targets) & set(static_cols)
    if overlap:
        raise ValidationError(f"{what}: column {min(overlap)!r} is both a static partition and a data column")
    if len(df.columns) != len(targets):
        raise ValidationError(
            f"{what}: table {table.name()} expects {len(targets)} data columns ({', '.join(targets)}) "
            f"but the query gives {len(df.columns)}"
        )
    source = dict(zip(targets, df.columns))
    out = []
    for f in schema.fields:
        t = spark_type(f)
        if f.name in source:
            out.append(F.col(quote(source[f.name])).cast(t).alias(f.name))
        elif f.name in static_cols:
            out.append(F.lit(static_cols[f.name]).cast(t).alias(f.name))
        elif f.required:
            raise ValidationError(f"{what}: required column {f.name!r} of table {table.name()} gets no value")
        else:
            out.append(F.lit(None).cast(t).alias(f.name))
    return df.select(*out)


def _values_dataframe(ctx: HandlerContext, rows: tuple[tuple[c.SqlExpr, ...], ...], what: str) -> DataFrame:
    """The VALUES rows evaluated by Spark (one small local relation; no table is read)."""
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValidationError(f"{what}: VALUES rows have different numbers of values ({sorted(widths)})")
    sql = "VALUES " + ", ".join("(" + ", ".join(v.sql for v in row) + ")" for row in rows)
    with spark_errors(what):
        return ctx.spark().sql(sql)


def _static_filter(table: Table, static: Mapping[str, object]) -> BooleanExpression:
    schema = table.schema()
    parts: list[BooleanExpression] = []
    for key, value in static.items():
        name = schema.find_field(key, case_sensitive=False).name
        parts.append(is_null(name) if value is None else equal_to(name, value))
    return and_(*parts) if len(parts) > 1 else parts[0]


def run_insert(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``INSERT INTO|OVERWRITE t [PARTITION (...)] [(cols)] VALUES ... | query``."""
    assert isinstance(stmt, c.Insert)
    what = short_sql(stmt.sql) or "INSERT"
    table = ctx.load(stmt.table)
    static = {k: v for k, v in stmt.partition.items() if v is not None}
    if stmt.values is not None:
        df = _values_dataframe(ctx, stmt.values, what)
    elif stmt.query is not None:
        df = query_dataframe(ctx, stmt.query, what=what)
    else:
        raise ValidationError(f"{what}: nothing to insert")
    with spark_errors(what):
        data = conform_dataframe(table, df, columns=stmt.columns, static=static, what=what)
    before = table.metadata.current_snapshot_id
    if not stmt.overwrite:
        write_dataframe(ctx, table, data, mode="append", what=what)
    elif ctx.overwrite_mode() == "dynamic":
        write_dataframe(ctx, table, data, mode="dynamic", what=what)
    else:
        flt = _static_filter(table, static) if static else None
        write_dataframe(ctx, table, data, mode="overwrite", overwrite_filter=flt, what=what)
    return ResultSet.empty(change_message(table, before, "Inserted" if not stmt.overwrite else "Overwrote"))


def change_message(table: Table, before: int | None, verb: str) -> str:
    snap = table.metadata.current_snapshot()
    if snap is None or snap.snapshot_id == before:
        return f"{table.name()}: no change"
    summary = snap.summary.as_dict() if snap.summary is not None else {}
    added = summary.get("added-records", "0")
    deleted = summary.get("deleted-records", "0")
    # Merge-on-read commits delete rows by position instead of removing files.
    by_position = int(summary.get("added-position-deletes", "0"))
    if verb == "Deleted":
        return f"Deleted {int(deleted) + by_position} rows from {table.name()} (snapshot {snap.snapshot_id})"
    if verb == "Updated":
        if by_position:
            return f"Updated {by_position} rows of {table.name()} (snapshot {snap.snapshot_id})"
        return f"Updated {table.name()}: rewrote {deleted} rows (snapshot {snap.snapshot_id})"
    if verb == "Overwrote":
        return f"Overwrote {table.name()}: wrote {added} rows, replaced {deleted} (snapshot {snap.snapshot_id})"
    return f"{verb} {added} rows into {table.name()} (snapshot {snap.snapshot_id})"


# -- row-level changes -----------------------------------------------------------------------------------


def _unqualified(node: exp.Expression) -> exp.Expression:
    """The condition with ``alias.col`` / ``t.col`` qualifiers dropped (the target table is the only source)."""
    copy = node.copy()
    for col in copy.find_all(exp.Column):
        if col.args.get("table") is not None:
            col.set("table", None)
        for key in ("db", "catalog"):
            if col.args.get(key) is not None:
                col.set(key, None)
    return copy


def _floe_filter(sql: str) -> BooleanExpression | None:
    """The condition as a Floe expression for pruning, or None when it is beyond Floe's filter language."""
    from floe.expressions.parser import parse_filter

    try:
        return parse_filter(sql)
    except (ParseError, UnsupportedError):
        return None


def plan_candidates(table: Table, expr: BooleanExpression | None) -> tuple[int | None, list[FileScanTask]]:
    """The current snapshot id and the data files that may hold matching rows."""
    snap = table.metadata.current_snapshot()
    if snap is None:
        return None, []
    # Spark resolves column names case-insensitively; so does the pruning filter
    scan = table.scan(
        row_filter=expr if expr is not None else AlwaysTrue(), snapshot_id=snap.snapshot_id, case_sensitive=False
    )
    return snap.snapshot_id, list(scan.plan_files())


def _whole_file_matches(table: Table, task: FileScanTask, expr: BooleanExpression | None) -> bool:
    """Every row of the task's file matches: strict partition projection (residual true) or strict metrics."""
    from floe.expressions.metrics_evaluator import StrictMetricsEvaluator

    # Deletes attached to the file do not matter: if every row of the file matches, so do the live ones.
    if expr is None:
        return False  # the condition is beyond Floe's filters: only Spark can tell, so rewrite
    if isinstance(expr, AlwaysTrue) or isinstance(task.residual, AlwaysTrue):
        return True
    return StrictMetricsEvaluator(table.schema(), expr, case_sensitive=False).eval(task.data_file)


def _write_files(ctx: HandlerContext, table: Table, df: DataFrame, what: str) -> list[DataFile]:
    """Write ``df`` into new data files of ``table`` without committing them (copy-on-write rewrites).

    Spark writes them (floe.spark.write.write_files): no row reaches the driver. On failure the files are
    already deleted; after it the caller owns them (rewrite_commit deletes them if its commit fails).
    """
    from floe.spark.write import write_files

    with spark_errors(what):
        return write_files(table, df)


def rewrite_commit(
    ctx: HandlerContext,
    table: Table,
    *,
    snapshot_id: int | None,
    removed: list[FileScanTask],
    new_rows: DataFrame | None,
    expr: BooleanExpression | None,
    what: str,
) -> None:
    """Swap ``removed`` files for files holding ``new_rows``, validated against commits since ``snapshot_id``."""
    added = _write_files(ctx, table, new_rows, what) if new_rows is not None else []
    with deleted_on_failure(table.io, added):
        op = table.new_overwrite()
        op.case_sensitive(False)
        for t in removed:
            op.delete_file(t.data_file)
        for f in added:
            op.add_file(f)
        op.validate_from_snapshot(snapshot_id)
        if expr is not None:
            op.conflict_detection_filter(expr)
        for k, v in _snapshot_properties(ctx).items():
            op.set(k, v)
        op.commit()


def merge_on_read(table: Table, mode_property: str, what: str) -> bool:
    """Whether ``mode_property`` (``write.delete.mode`` etc.) asks for merge-on-read on ``table``.

    Raises:
        ValidationError: an unknown mode, or merge-on-read on a format v1 table (no delete files in v1).
    """
    mode = table.properties.get(mode_property, P.ROW_LEVEL_MODE_DEFAULT).strip().lower()
    if mode == P.COPY_ON_WRITE:
        return False
    if mode != P.MERGE_ON_READ:
        raise ValidationError(
            f"{what}: table {table.name()} has {mode_property}={mode!r}; expected {P.COPY_ON_WRITE} or {P.MERGE_ON_READ}"
        )
    if table.format_version < 2:
        raise ValidationError(
            f"{what}: table {table.name()} is format version 1 but {mode_property}={P.MERGE_ON_READ} needs "
            f"delete files (format version 2 or later); upgrade with ALTER TABLE ... SET TBLPROPERTIES "
            f"('format-version'='2') or set {mode_property}={P.COPY_ON_WRITE}"
        )
    return True


def row_delta_commit(
    ctx: HandlerContext,
    table: Table,
    *,
    snapshot_id: int | None,
    tasks: list[FileScanTask],
    deleted_rows: DataFrame | None,
    new_rows: DataFrame | None,
    dropped: Sequence[FileScanTask] = (),
    expr: BooleanExpression | None,
    what: str,
) -> None:
    """Merge-on-read: position deletes for ``deleted_rows`` (read from ``tasks`` with positions), new data
    files for ``new_rows``, ``dropped`` files removed whole; one row delta validated since ``snapshot_id``.
    """
    from floe.spark.position_deletes import deleted_positions, write_position_deletes

    written: list[DataFile] = []  # grows as files are written; the context deletes them all on failure
    with deleted_on_failure(table.io, written):
        if deleted_rows is not None:
            with spark_errors(what):
                written += write_position_deletes(table, deleted_positions(deleted_rows, tasks), tasks)
        deletes = list(written)
        rows = _write_files(ctx, table, new_rows, what) if new_rows is not None else []
        written += rows
        if not written and not dropped:
            return  # no row matched: nothing to commit
        op = table.new_row_delta()
        op.case_sensitive(False)
        for t in dropped:
            op.remove_deletes(t.data_file)  # removes any live file by path: here whole data files
        for f in deletes:
            op.add_deletes(f)
        for f in rows:
            op.add_rows(f)
        op.validate_from_snapshot(snapshot_id)
        if expr is not None:
            op.conflict_detection_filter(expr)
        # The new deletes name these files: a concurrent rewrite or delete of them must fail this commit.
        if deleted_rows is not None:
            op.validate_data_files_exist(t.data_file.file_path for t in tasks)
        op.validate_no_conflicting_data_files()
        op.validate_no_conflicting_delete_files()
        for k, v in _snapshot_properties(ctx).items():
            op.set(k, v)
        op.commit()


def _check_columns(table: Table, node: exp.Expression, what: str) -> None:
    """Fail early (before Spark runs) on a condition naming a column the table does not have."""
    names = {f.name.lower() for f in table.schema().fields}
    for col in node.find_all(exp.Column):
        if col.name and col.name.lower() not in names and not col.find_ancestor(exp.Subquery):
            raise ValidationError(f"{what}: table {table.name()} has no column {col.name!r}")


def run_delete(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``DELETE FROM t [WHERE cond]``: metadata-only where whole files match, else copy-on-write."""
    assert isinstance(stmt, c.Delete)
    what = short_sql(stmt.sql) or "DELETE"
    table = ctx.load(stmt.table)
    mor = merge_on_read(table, P.DELETE_MODE, what)
    cond_sql: str | None = None
    expr: BooleanExpression | None = AlwaysTrue()
    if stmt.where is not None:
        node = _unqualified(stmt.where.node)
        _check_columns(table, node, what)
        cond_sql = node.sql(dialect="spark")
        expr = _floe_filter(cond_sql)
    snapshot_id, tasks = plan_candidates(table, expr)
    before = table.metadata.current_snapshot_id
    if not tasks:
        return ResultSet.empty(f"{table.name()}: no rows match, nothing deleted")
    whole = [t for t in tasks if _whole_file_matches(table, t, expr)]
    partial = [t for t in tasks if t not in whole]
    if not partial:
        op = table.new_delete()
        op.case_sensitive(False)
        for t in whole:
            op.delete_file(t.data_file)
        op.validate_from_snapshot(snapshot_id)
        if expr is not None:
            op.conflict_detection_filter(expr).validate_no_conflicting_data()
        for k, v in _snapshot_properties(ctx).items():
            op.set(k, v)
        op.commit()
        return ResultSet.empty(change_message(table, before, "Deleted"))
    from floe.spark.read import dataframe_for_scan

    spark = ctx.spark()
    if mor:
        assert cond_sql is not None  # without a condition every file matches whole
        with spark_errors(what):
            rows = dataframe_for_scan(spark, table.scan(snapshot_id=snapshot_id), partial, with_position=True)
            matched = rows.where(f"({cond_sql})")  # NULL drops the row either way; no coalesce keeps pushdown
        row_delta_commit(
            ctx, table, snapshot_id=snapshot_id, tasks=partial, deleted_rows=matched, new_rows=None,
            dropped=whole, expr=expr, what=what,
        )
        return ResultSet.empty(change_message(table, before, "Deleted"))
    with spark_errors(what):
        rows = dataframe_for_scan(spark, table.scan(snapshot_id=snapshot_id), partial)
        keep = rows.where(f"NOT coalesce(({cond_sql}), false)") if cond_sql is not None else rows.limit(0)
    rewrite_commit(ctx, table, snapshot_id=snapshot_id, removed=whole + partial, new_rows=keep, expr=expr, what=what)
    return ResultSet.empty(change_message(table, before, "Deleted"))


def run_update(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``UPDATE t SET c = expr, ... [WHERE cond]``: copy-on-write of every file that may hold matching rows."""
    assert isinstance(stmt, c.Update)
    what = short_sql(stmt.sql) or "UPDATE"
    table = ctx.load(stmt.table)
    mor = merge_on_read(table, P.UPDATE_MODE, what)
    schema = table.schema()
    by_name = {f.name.lower(): f for f in schema.fields}
    sets: dict[str, str] = {}
    for a in stmt.assignments:
        parts = a.column.split(".")
        target = by_name.get(parts[-1].lower()) if len(parts) <= 2 else None
        if target is None:
            raise ValidationError(f"{what}: table {table.name()} has no column {a.column!r}")
        if target.name in sets:
            raise ValidationError(f"{what}: column {target.name!r} is assigned twice")
        value = _unqualified(a.value.node)
        _check_columns(table, value, what)
        sets[target.name] = value.sql(dialect="spark")
    cond_sql = "true"
    expr: BooleanExpression | None = AlwaysTrue()
    if stmt.where is not None:
        node = _unqualified(stmt.where.node)
        _check_columns(table, node, what)
        cond_sql = node.sql(dialect="spark")
        expr = _floe_filter(cond_sql)
    snapshot_id, tasks = plan_candidates(table, expr)
    before = table.metadata.current_snapshot_id
    if not tasks:
        return ResultSet.empty(f"{table.name()}: no rows match, nothing updated")
    from pyspark.sql import functions as F

    from floe.spark.read import dataframe_for_scan

    with spark_errors(what):
        rows = dataframe_for_scan(ctx.spark(), table.scan(snapshot_id=snapshot_id), tasks, with_position=mor)
        matched = F.coalesce(F.expr(f"({cond_sql})"), F.lit(False))
        if mor:
            rows = rows.where(F.expr(f"({cond_sql})"))  # only matching rows; a bare condition is pushed down
        cols = []
        for f in schema.fields:
            if f.name in sets:
                new = F.expr(sets[f.name]).cast(spark_type(f))
                cols.append(F.when(matched, new).otherwise(F.col(quote(f.name))).alias(f.name))
            else:
                cols.append(F.col(quote(f.name)))
        updated = rows.select(*cols)
    if mor:
        row_delta_commit(
            ctx, table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=rows, new_rows=updated, expr=expr, what=what
        )
        return ResultSet.empty(change_message(table, before, "Updated"))
    rewrite_commit(ctx, table, snapshot_id=snapshot_id, removed=tasks, new_rows=updated, expr=expr, what=what)
    return ResultSet.empty(change_message(table, before, "Updated"))
