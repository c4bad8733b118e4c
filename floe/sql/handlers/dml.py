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

from floe.errors import ValidationError
from floe.expressions.base import BooleanExpression, and_
from floe.expressions.builders import equal_to, is_null
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.query import query_dataframe
from floe.sql.parser import short_sql
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from floe.table.table import Table

__all__ = [
    "change_message",
    "conform_dataframe",
    "quote",
    "run_delete",
    "run_insert",
    "run_update",
    "snapshot_properties",
    "spark_type",
    "write_dataframe",
]


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def snapshot_properties(ctx: HandlerContext) -> dict[str, str]:
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
            snapshot_properties=snapshot_properties(ctx),
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
    # By position, as Spark's INSERT maps a query: the query's own names may repeat or collide.
    positional = [f"__floe_in{i}" for i in range(len(df.columns))]
    df = df.toDF(*positional)
    source = dict(zip(targets, positional))
    out = []
    for f in schema.fields:
        t = spark_type(f)
        if f.name in source:
            out.append(F.col(source[f.name]).cast(t).alias(f.name))
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
        # One in-memory relation: one task writes it (one file, as Iceberg Java writes), not one per row.
        return ctx.spark().sql(sql).coalesce(1)


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


def _check_columns(table: Table, node: exp.Expression, what: str) -> None:
    """Fail early (before Spark runs) on a condition naming a column the table does not have."""
    names = {f.name.lower() for f in table.schema().fields}
    for col in node.find_all(exp.Column):
        if col.name and col.name.lower() not in names and not col.find_ancestor(exp.Subquery):
            raise ValidationError(f"{what}: table {table.name()} has no column {col.name!r}")


def run_delete(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``DELETE FROM t [WHERE cond]``: floe.spark.row_level.delete_rows (metadata-only where whole files match)."""
    assert isinstance(stmt, c.Delete)
    what = short_sql(stmt.sql) or "DELETE"
    table = ctx.load(stmt.table)
    cond_sql: str | None = None
    if stmt.where is not None:
        node = _unqualified(stmt.where.node)
        _check_columns(table, node, what)
        cond_sql = node.sql(dialect="spark")
    from floe.spark.row_level import delete_rows  # pyspark loads only when a row-level change runs

    before = table.metadata.current_snapshot_id
    with spark_errors(what):
        changed = delete_rows(table, cond_sql, spark=ctx.spark, snapshot_properties=snapshot_properties(ctx), what=what)
    if not changed:
        return ResultSet.empty(f"{table.name()}: no rows match, nothing deleted")
    return ResultSet.empty(change_message(table.refresh(), before, "Deleted"))


def run_update(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``UPDATE t SET c = expr, ... [WHERE cond]``: floe.spark.row_level.update_rows."""
    assert isinstance(stmt, c.Update)
    what = short_sql(stmt.sql) or "UPDATE"
    table = ctx.load(stmt.table)
    by_name = {f.name.lower(): f for f in table.schema().fields}
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
    cond_sql: str | None = None
    if stmt.where is not None:
        node = _unqualified(stmt.where.node)
        _check_columns(table, node, what)
        cond_sql = node.sql(dialect="spark")
    from floe.spark.row_level import update_rows  # pyspark loads only when a row-level change runs

    before = table.metadata.current_snapshot_id
    with spark_errors(what):
        changed = update_rows(table, sets, cond_sql, spark=ctx.spark(), what=what)
    if not changed:
        return ResultSet.empty(f"{table.name()}: no rows match, nothing updated")
    return ResultSet.empty(change_message(table.refresh(), before, "Updated"))
