"""MERGE INTO, copy-on-write: the target's live rows are joined with the source and rewritten in one commit.

Semantics are Spark's: a target row matched by a source row takes the first ``WHEN MATCHED`` clause whose
condition holds (UPDATE or DELETE; no clause keeps it); a source row without a target row takes the first
``WHEN NOT MATCHED`` clause (INSERT); a target row without a source row takes the first ``WHEN NOT MATCHED
BY SOURCE`` clause. A target row matched by more than one source row is an error when a MATCHED clause
exists (Spark's MERGE_CARDINALITY_VIOLATION). Because the ON condition is arbitrary SQL, every data file
of the current snapshot is rewritten, and the overwrite commit conflicts with any data committed since
the target was read. A MERGE with only NOT MATCHED inserts appends the new rows and rewrites nothing.
The merged rows are written by Spark executors (floe.spark.write.write_files); only the cardinality check
brings anything to the driver (at most one row id).

Merge-on-read (``write.merge.mode=merge-on-read``, format v2+): target rows that an UPDATE or DELETE clause
touches get position deletes (floe.spark.position_deletes), updated and inserted rows go to new data files,
untouched rows stay where they are; one row delta commits both (floe.sql.handlers.dml.row_delta_commit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.expressions.base import AlwaysTrue
from floe.spec import properties as P
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.dml import (
    change_message,
    merge_on_read,
    plan_candidates,
    quote,
    rewrite_commit,
    row_delta_commit,
    spark_type,
    write_dataframe,
)
from floe.sql.handlers.query import query_dataframe
from floe.sql.parser import short_sql
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["run_merge"]

_TID = "__floe_tid"  # target row id: NULL on the joined side means "no target row"
_SRC = "__floe_src"  # source marker: NULL means "no source row"


def _target_column(table: Table, name: str, target_alias: str, what: str) -> str:
    parts = name.split(".")
    if len(parts) == 2 and parts[0].lower() == target_alias.lower():
        parts = parts[1:]
    found = table.schema().find_field_or_none(parts[-1], False) if len(parts) == 1 else None
    if found is None:
        raise ValidationError(f"{what}: table {table.name()} has no column {name!r}")
    return found.name


def _clause_values(
    table: Table, clause: c.MergeClause, t: str, s: str, what: str, source_columns: set[str]
) -> dict[str, str]:
    """Target column -> new value SQL for an UPDATE / INSERT clause (missing columns: keep / NULL)."""
    names = [f.name for f in table.schema().fields]
    if clause.star:
        missing = [n for n in names if n.lower() not in source_columns]
        if missing and clause.action == "insert":
            raise ValidationError(f"{what}: INSERT * needs source column {missing[0]!r}")
        return {n: f"{quote(s)}.{quote(n)}" for n in names if n.lower() in source_columns}
    if clause.action == "update":
        out = {}
        for a in clause.assignments:
            col = _target_column(table, a.column, t, what)
            if col in out:
                raise ValidationError(f"{what}: column {col!r} is assigned twice")
            out[col] = a.value.sql
        return out
    if len(clause.insert_columns) != len(clause.insert_values):
        raise ValidationError(f"{what}: INSERT has {len(clause.insert_columns)} columns but {len(clause.insert_values)} values")
    out = {}
    for col_name, value in zip(clause.insert_columns, clause.insert_values):
        col = _target_column(table, col_name, t, what)
        out[col] = value.sql
    for f in table.schema().fields:
        if f.required and f.name not in out:
            raise ValidationError(f"{what}: INSERT gives no value for required column {f.name!r}")
    return out


def run_merge(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``MERGE INTO target USING source ON cond WHEN ...``."""
    assert isinstance(stmt, c.Merge)
    what = short_sql(stmt.sql) or "MERGE INTO"
    table = ctx.load(stmt.target)
    t = stmt.target_alias or stmt.target[-1]
    s = stmt.source_alias or (stmt.source_table.name[-1] if stmt.source_table is not None else "source")
    if t.lower() == s.lower():
        raise ValidationError(f"{what}: target and source need different names (use AS aliases)")
    if not stmt.clauses:
        raise ValidationError(f"{what}: no WHEN clause")
    mor = merge_on_read(table, P.MERGE_MODE, what)
    spark = ctx.spark()
    from pyspark.sql import functions as F

    from floe.spark.read import dataframe_for_scan
    from floe.spark.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN
    from floe.spark.types import to_spark_schema

    source = query_dataframe(ctx, stmt.source, what=what)
    source_columns = {n.lower() for n in source.columns}
    snapshot_id, tasks = plan_candidates(table, AlwaysTrue())
    with spark_errors(what):
        if tasks:
            target = dataframe_for_scan(spark, table.scan(snapshot_id=snapshot_id), tasks, with_position=mor)
        else:
            target = spark.createDataFrame([], to_spark_schema(table.schema()))
        target = target.withColumn(_TID, F.monotonically_increasing_id())
        source = source.withColumn(_SRC, F.lit(True))
    tv, sv = ctx.temp_view(target, "merge_target"), ctx.temp_view(source, "merge_source")
    try:
        on = stmt.on.sql
        t_in, s_in = f"{quote(t)}.{_TID} IS NOT NULL", f"{quote(s)}.{_SRC} IS NOT NULL"
        presence = {"matched": f"{t_in} AND {s_in}", "not_matched": f"NOT ({t_in})", "not_matched_by_source": f"NOT ({s_in})"}
        whens, deletes, inserts, updates = [], [], [], []
        values: list[dict[str, str]] = []
        for i, clause in enumerate(stmt.clauses, start=1):
            cond = f" AND coalesce(({clause.condition.sql}), false)" if clause.condition is not None else ""
            whens.append(f"WHEN {presence[clause.match]}{cond} THEN {i}")
            if clause.action == "delete":
                deletes.append(i)
            if clause.action == "insert":
                inserts.append(i)
            if clause.action == "update":
                updates.append(i)
            values.append({} if clause.action == "delete" else _clause_values(table, clause, t, s, what, source_columns))
        action = "CASE " + " ".join(whens) + " ELSE 0 END"
        cols = []
        for f in table.schema().fields:
            branches = []
            for i, (clause, vals) in enumerate(zip(stmt.clauses, values), start=1):
                if clause.action == "update" and f.name in vals:
                    branches.append(f"WHEN {i} THEN {vals[f.name]}")
                elif clause.action == "insert":
                    branches.append(f"WHEN {i} THEN {vals.get(f.name, 'NULL')}")
            keep = f"{quote(t)}.{quote(f.name)}"
            expr = f"CASE ({action}) {' '.join(branches)} ELSE {keep} END" if branches else keep
            type_name = spark_type(f).simpleString()
            cols.append(f"CAST({expr} AS {type_name}) AS {quote(f.name)}")
        kept = f"{t_in} AND ({action}) NOT IN ({', '.join(map(str, deletes or [-1]))})"
        added = f"NOT ({t_in}) AND ({action}) IN ({', '.join(map(str, inserts or [-1]))})"
        join = f"{quote(tv)} AS {quote(t)} FULL OUTER JOIN {quote(sv)} AS {quote(s)} ON {on}"
        insert_only = all(cl.match == "not_matched" for cl in stmt.clauses)
        changed = f"{t_in} AND ({action}) IN ({', '.join(map(str, updates + deletes or [-1]))})"
        updated = f"{t_in} AND ({action}) IN ({', '.join(map(str, updates or [-1]))})"
        gone = None  # merge-on-read: positions of the target rows an UPDATE or DELETE clause touches
        with spark_errors(what):
            if any(cl.match == "matched" for cl in stmt.clauses):
                dup = spark.sql(
                    f"SELECT {quote(t)}.{_TID} FROM {quote(tv)} AS {quote(t)} JOIN {quote(sv)} AS {quote(s)} ON {on} "
                    f"GROUP BY {quote(t)}.{_TID} HAVING count(*) > 1 LIMIT 1"
                ).collect()
                if dup:
                    raise ValidationError(
                        f"{what}: a target row matches more than one source row (MERGE_CARDINALITY_VIOLATION)"
                    )
            if mor and not insert_only:
                # Untouched target rows stay in their files; touched ones are deleted by position.
                rows = spark.sql(f"SELECT {', '.join(cols)} FROM {join} WHERE ({updated}) OR ({added})")
                position = ", ".join(f"{quote(t)}.{c}" for c in (ROW_FILE_COLUMN, ROW_POS_COLUMN))
                gone = spark.sql(f"SELECT {position} FROM {join} WHERE {changed}") if tasks else None
            else:
                rows = spark.sql(f"SELECT {', '.join(cols)} FROM {join} WHERE {added if insert_only else f'({kept}) OR ({added})'}")
        before = table.metadata.current_snapshot_id
        # Spark executors write the rows while the views exist (a Connect session resolves them lazily).
        if insert_only:
            write_dataframe(ctx, table, rows, mode="append", what=what)
            return ResultSet.empty(change_message(table, before, "Inserted"))
        if mor:
            row_delta_commit(
                ctx, table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=gone, new_rows=rows,
                expr=AlwaysTrue(), what=what,
            )
            return ResultSet.empty(_merge_message(table, before))
        rewrite_commit(ctx, table, snapshot_id=snapshot_id, removed=tasks, new_rows=rows, expr=AlwaysTrue(), what=what)
        return ResultSet.empty(_merge_message(table, before))
    finally:
        ctx.drop_views([tv, sv])


def _merge_message(table: Table, before: int | None) -> str:
    snap = table.metadata.current_snapshot()
    if snap is None or snap.snapshot_id == before:
        return f"{table.name()}: no change"
    summary = snap.summary.as_dict() if snap.summary is not None else {}
    if "added-position-deletes" in summary:
        return (
            f"Merged into {table.name()}: deleted {summary['added-position-deletes']} rows by position, "
            f"added {summary.get('added-records', '0')} (snapshot {snap.snapshot_id})"
        )
    return (
        f"Merged into {table.name()}: rewrote {summary.get('deleted-records', '0')} rows as "
        f"{summary.get('added-records', '0')} (snapshot {snap.snapshot_id})"
    )

