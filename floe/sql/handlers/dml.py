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
(floe.spark.row_level.position_deletes) and UPDATE writes only the updated rows as new data files; one row delta
commits them, validated against concurrent changes since the scan (files it deletes from must still exist,
no new data or deletes matching the condition). DELETE still drops wholly matching files from metadata.

Rewritten rows are written by Spark executors (floe.spark.write.dataframe_write.write_files), never collected to the
driver; the new files are deleted if the commit fails (unless its outcome is unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from floe.errors import ValidationError
from floe.expressions.base import BooleanExpression, and_
from floe.expressions.builders import equal_to, is_null
from floe.expressions.to_spark_sql import spark_string
from floe.serde.json_types import default_to_json
from floe.spec import properties as P
from floe.spec.types import BinaryType, FixedType
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.query import expression_views, query_dataframe
from floe.sql.parse_common import short_sql
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from floe.table.table import Table

__all__ = [
    "change_message",
    "conform_dataframe",
    "newest_snapshot_id",
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


def snapshot_properties(ctx: HandlerContext, table: Table | None = None) -> dict[str, str]:
    """Iceberg's Spark writer records the application id in every snapshot summary (seed ch.3 queries it),
    and ``wap.id`` (which stages the snapshot) when ``spark.wap.id`` applies to ``table``.

    Metadata-only commits do not start Spark for it: they record the id only when Spark already runs.
    """
    out: dict[str, str] = {}
    wap_id = ctx.wap_settings(table)[0] if table is not None else None
    if wap_id is not None:
        out[P.WAP_ID] = wap_id
    if not ctx.spark_started:
        return out
    with suppress(Exception):  # a summary nicety must never fail a write
        spark = ctx.spark()  # Spark Connect has no SparkContext: its server's conf names the application
        app = spark.sparkContext.applicationId if hasattr(spark, "sparkContext") else spark.conf.get("spark.app.id")
        out["spark.app.id"] = str(app)
    return out


def write_dataframe(
    ctx: HandlerContext,
    table: Table,
    df: DataFrame,
    *,
    mode: str,
    overwrite_filter: BooleanExpression | None = None,
    what: str,
    branch: str | None = None,
) -> Table:
    """Write ``df`` (already in the table's column order and types) as one snapshot on ``branch``."""
    from floe.write import write

    with spark_errors(what):
        return write(
            table,
            df,
            mode=mode,  # type: ignore[arg-type]
            overwrite_filter=overwrite_filter,
            snapshot_properties=snapshot_properties(ctx, table),
            branch=branch,
        )


def spark_type(field: Any) -> Any:
    return spark_engine().to_spark_type(field.field_type, column=field.name)


def conform_dataframe(
    table: Table,
    df: DataFrame,
    *,
    columns: Sequence[str] | None,
    static: Mapping[str, object],
    what: str,
    by_name: bool = False,
) -> DataFrame:
    """``df``'s columns mapped to the table's by position (by ``columns``, or ``by_name``), cast to the table
    types. Static partition values fill their columns; a column with a v3 write-default is left out (the
    write fills it); every other column needs data, as in Spark.

    Raises:
        ValidationError: wrong number of columns, unknown or duplicate column names, a column without data.
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
    if by_name:
        columns = list(df.columns)
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
        elif f.write_default is not None:
            continue  # the write projects the table's columns and fills this one with its write-default
        else:  # as Spark's INSERT with a column list or BY NAME: every column needs data (no defaults)
            raise ValidationError(
                f"{what}: cannot write to table {table.name()}: no data for column {f.name!r} "
                "(INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_FIND_DATA)"
            )
    return df.select(*out)


def _values_dataframe(ctx: HandlerContext, rows: tuple[tuple[c.SqlExpr, ...], ...], what: str) -> DataFrame:
    """The VALUES rows evaluated by Spark (one small local relation; no table is read)."""
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValidationError(f"{what}: VALUES rows have different numbers of values ({sorted(widths)})")
    sql = "VALUES " + ", ".join("(" + ", ".join(v.sql for v in row) + ")" for row in rows)
    with spark_errors(what):
        # Spark's local relation, split as Spark splits it (min(rows, default parallelism) tasks): the
        # table's distribution mode then decides the files, as in Iceberg Java.
        return ctx.spark().sql(sql)


def _defaults_filled(table: Table, stmt: c.Insert, static: Mapping[str, object]) -> tuple[tuple[c.SqlExpr, ...], ...]:
    """The VALUES rows with each ``DEFAULT`` replaced by its column's v3 write-default (NULL without one)."""
    assert stmt.values is not None
    if not any(v.sql.upper() == "DEFAULT" for row in stmt.values for v in row):
        return stmt.values
    schema = table.schema()
    statics = {k.lower() for k in static}
    names = list(stmt.columns) if stmt.columns else [f.name for f in schema.fields if f.name.lower() not in statics]

    def literal(position: int) -> c.SqlExpr:
        f = schema.find_field(names[position], case_sensitive=False) if position < len(names) else None
        if f is None or f.write_default is None:
            return c.SqlExpr(sql="NULL", node=exp.Null())
        text = default_to_json(f.field_type, f.write_default)
        value = spark_string(str(text)) if isinstance(text, str) else str(text)
        sql = f"CAST({value} AS {spark_type(f).simpleString()})"
        if isinstance(f.field_type, (BinaryType, FixedType)):
            sql = f"X'{text}'"
        return c.SqlExpr(sql=sql, node=exp.Null())

    return tuple(tuple(literal(i) if v.sql.upper() == "DEFAULT" else v for i, v in enumerate(row)) for row in stmt.values)


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
    table, branch = ctx.load_for_write(stmt.table)
    static = {k: v for k, v in stmt.partition.items() if v is not None}
    if stmt.values is not None:
        df = _values_dataframe(ctx, _defaults_filled(table, stmt, static), what)
    elif stmt.query is not None:
        df = query_dataframe(ctx, stmt.query, what=what)
    else:
        raise ValidationError(f"{what}: nothing to insert")
    with spark_errors(what):
        data = conform_dataframe(table, df, columns=stmt.columns, static=static, what=what, by_name=stmt.by_name)
    before = newest_snapshot_id(table)
    if not stmt.overwrite:
        write_dataframe(ctx, table, data, mode="append", what=what, branch=branch)
    elif ctx.overwrite_mode() == "dynamic":
        write_dataframe(ctx, table, data, mode="dynamic", what=what, branch=branch)
    else:
        flt = _static_filter(table, static) if static else None
        write_dataframe(ctx, table, data, mode="overwrite", overwrite_filter=flt, what=what, branch=branch)
    return ResultSet.empty(change_message(table, before, "Inserted" if not stmt.overwrite else "Overwrote"))


def newest_snapshot_id(table: Table) -> int | None:
    """The id of the table's newest snapshot: writes to a branch, or staged (WAP) writes, do not move main."""
    snap = max(table.metadata.snapshots, key=lambda x: x.sequence_number or x.timestamp_ms, default=None)
    return snap.snapshot_id if snap is not None else None


def change_message(table: Table, before: int | None, verb: str) -> str:
    newest = newest_snapshot_id(table)
    snap = table.metadata.snapshot_by_id(newest) if newest is not None else None
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


TARGET_ALIAS = "__floe_target"  # the target rows' alias, for subqueries that refer to them (correlated)


def _target_qualifiers(table: Table, alias: str | None) -> set[str]:
    return {n.lower() for n in (alias, table.name().split(".")[-1]) if n}


def _row_expression(table: Table, node: exp.Expression, alias: str | None, what: str) -> exp.Expression:
    """A condition or value over the target's rows, in the form the row-level engine evaluates it.

    Outside subqueries, ``t.col`` (the target's alias or name) becomes ``col`` and anything else dotted
    is a struct field (``loc.lat``); inside subqueries ``t.col`` refers to the target row, aliased
    :data:`TARGET_ALIAS`. A top-level column the table does not have fails before Spark runs.
    """
    qualifiers = _target_qualifiers(table, alias)
    names = {f.name.lower() for f in table.schema().fields}
    copy = node.copy()
    for col in list(copy.find_all(exp.Column)):
        qualifier = col.args.get("table")
        is_target = qualifier is not None and qualifier.name.lower() in qualifiers
        inside_subquery = col.find_ancestor(exp.Select) is not None
        if is_target:
            col.set("table", exp.to_identifier(TARGET_ALIAS) if inside_subquery else None)
            for key in ("db", "catalog"):
                col.set(key, None)
        if inside_subquery or not col.name:
            continue
        top = col.name if col.args.get("table") is None else col.args["table"].name
        if top.lower() not in names:
            raise ValidationError(f"{what}: table {table.name()} has no column {top!r}")
    return copy


@contextmanager
def _views(ctx: HandlerContext, node: exp.Expression | None, table: Table) -> Iterator[str | None]:
    """The expression's Spark SQL, its subqueries' tables registered as views for the block (None: no node)."""
    if node is None:
        yield None
        return
    with expression_views(ctx, node, _target_frame(ctx, table)) as sql:
        yield sql


def _target_frame(ctx: HandlerContext, table: Table) -> Callable[[], DataFrame]:
    """No rows with the table's columns, as a DML expression sees them (types Iceberg function calls)."""

    def frame() -> DataFrame:
        spark = ctx.spark()
        return spark.createDataFrame([], spark_engine().to_spark_schema(table.schema())).alias(TARGET_ALIAS)

    return frame


def run_delete(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``DELETE FROM t [WHERE cond]``: floe.spark.row_level.dml.delete_rows (metadata-only where whole files match)."""
    assert isinstance(stmt, c.Delete)
    what = short_sql(stmt.sql) or "DELETE"
    table, branch = ctx.load_for_write(stmt.table)
    node = _row_expression(table, stmt.where.node, stmt.alias, what) if stmt.where is not None else None
    before = newest_snapshot_id(table)
    with _views(ctx, node, table) as cond_sql, spark_errors(what):
        changed = spark_engine().delete_rows(table, cond_sql, spark=ctx.spark, snapshot_properties=snapshot_properties(ctx, table),
                              what=what, target_alias=TARGET_ALIAS, branch=branch, commit_unmatched=True)
    if not changed:
        return ResultSet.empty(f"{table.name()}: no rows match, nothing deleted")
    return ResultSet.empty(change_message(table.refresh(), before, "Deleted"))


def run_update(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``UPDATE t SET c = expr, ... [WHERE cond]``: floe.spark.row_level.dml.update_rows."""
    assert isinstance(stmt, c.Update)
    what = short_sql(stmt.sql) or "UPDATE"
    table, branch = ctx.load_for_write(stmt.table)
    qualifiers = _target_qualifiers(table, stmt.alias)
    values: dict[str, exp.Expression] = {}
    for a in stmt.assignments:
        parts = a.column.split(".")
        if len(parts) > 1 and parts[0].lower() in qualifiers:
            parts = parts[1:]  # t.col: the target's alias or name
        column = ".".join(parts)
        if column.lower() in (k.lower() for k in values):
            raise ValidationError(f"{what}: column {column!r} is assigned twice")
        values[column] = _row_expression(table, a.value.node, stmt.alias, what)
    node = _row_expression(table, stmt.where.node, stmt.alias, what) if stmt.where is not None else None
    before = newest_snapshot_id(table)
    with ExitStack() as stack:
        frame = _target_frame(ctx, table)
        sets = {column: stack.enter_context(expression_views(ctx, value, frame)) for column, value in values.items()}
        cond_sql = stack.enter_context(_views(ctx, node, table))
        with spark_errors(what):
            changed = spark_engine().update_rows(table, sets, cond_sql, spark=ctx.spark(), what=what, target_alias=TARGET_ALIAS,
                                  branch=branch, snapshot_properties=snapshot_properties(ctx, table),
                                  commit_unmatched=True)
    if not changed:
        return ResultSet.empty(f"{table.name()}: no rows match, nothing updated")
    return ResultSet.empty(change_message(table.refresh(), before, "Updated"))
