"""MERGE INTO: the statement translated into floe.spark.row_level.dml.merge_into (the engine and its semantics).

Semantics are Spark's: a target row matched by a source row takes the first ``WHEN MATCHED`` clause whose
condition holds (UPDATE or DELETE; no clause keeps it); a source row without a target row takes the first
``WHEN NOT MATCHED`` clause (INSERT); a target row without a source row takes the first ``WHEN NOT MATCHED
BY SOURCE`` clause. A target row matched by more than one source row is an error when a MATCHED clause
exists (Spark's MERGE_CARDINALITY_VIOLATION). ``UPDATE SET *`` / ``INSERT *`` take the source's columns of
the same names; this module resolves the clauses' columns against the table and checks them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import UnsupportedError, ValidationError
from floe.sql import commands as c
from floe.sql.functions import iceberg_calls
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.dml import change_message, newest_snapshot_id, quote, snapshot_properties
from floe.sql.handlers.query import query_dataframe
from floe.sql.parse_common import short_sql
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["run_merge"]


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
    """``MERGE INTO target USING source ON cond WHEN ...``: floe.spark.row_level.dml.merge_into."""
    assert isinstance(stmt, c.Merge)
    what = short_sql(stmt.sql) or "MERGE INTO"
    table, branch = ctx.load_for_write(stmt.target)
    t = stmt.target_alias or stmt.target[-1]
    s = stmt.source_alias or (stmt.source_table.name[-1] if stmt.source_table is not None else "source")
    if t.lower() == s.lower():
        raise ValidationError(f"{what}: target and source need different names (use AS aliases)")
    if not stmt.clauses:
        raise ValidationError(f"{what}: no WHEN clause")
    names = {n.lower() for n in ctx.session.catalog_names}
    exprs = [stmt.on, *(e for cl in stmt.clauses for e in (cl.condition, *(a.value for a in cl.assignments),
                                                           *cl.insert_values) if e is not None)]
    for clause_node in (e.node for e in exprs):
        calls = iceberg_calls(clause_node, lambda cat: cat.lower() in names)
        if calls:
            raise UnsupportedError(f"{what}: Iceberg functions ({calls[0].node.sql(dialect='spark')}) in MERGE "
                                   "conditions and values are not supported by Floe; use them in the USING query")
    engine = spark_engine()
    source = query_dataframe(ctx, stmt.source, what=what)
    source_columns = {n.lower() for n in source.columns}
    clauses = [
        engine.merge_clause(
            match=clause.match,
            action=clause.action,
            condition=clause.condition.sql if clause.condition is not None else None,
            values={} if clause.action == "delete" else _clause_values(table, clause, t, s, what, source_columns),
        )
        for clause in stmt.clauses
    ]
    before = newest_snapshot_id(table)
    with spark_errors(what):
        engine.merge_into(table, source, stmt.on.sql, clauses, target_alias=t, source_alias=s,
                   snapshot_properties=snapshot_properties(ctx, table), what=what, branch=branch)
    table = table.refresh()
    if all(cl.match == "not_matched" for cl in stmt.clauses):
        return ResultSet.empty(change_message(table, before, "Inserted"))
    return ResultSet.empty(_merge_message(table, before))


def _merge_message(table: Table, before: int | None) -> str:
    newest = newest_snapshot_id(table)
    snap = table.metadata.snapshot_by_id(newest) if newest is not None else None
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

