"""``CALL catalog.system.<procedure>(...)``: Iceberg's snapshot-management procedures, metadata only.

Parameters and result columns are Iceberg's (Spark procedures docs): ``rollback_to_snapshot(table,
snapshot_id)``, ``rollback_to_timestamp(table, timestamp)``, ``set_current_snapshot(table, snapshot_id |
ref)``, ``cherrypick_snapshot(table, snapshot_id)``; arguments positional or ``name => value``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from floe.errors import UnsupportedError, ValidationError
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext
from floe.sql.identifiers import resolve_table
from floe.sql.parser import short_sql
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["PROCEDURES", "run_call"]


@dataclass(frozen=True, slots=True)
class _Procedure:
    parameters: tuple[str, ...]
    required: tuple[str, ...]
    run: Callable[[HandlerContext, Table, dict[str, object]], ResultSet]


def _snapshot_id(args: dict[str, object], key: str = "snapshot_id") -> int:
    value = args[key]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{key} must be a snapshot id (a long), got {value!r}")
    return value


def _change(before: int | None, table: Table) -> ResultSet:
    return ResultSet(
        columns=["previous_snapshot_id", "current_snapshot_id"],
        rows=[(before, table.metadata.current_snapshot_id)],
    )


def _rollback_to_snapshot(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    before = table.metadata.current_snapshot_id
    table.rollback_to_snapshot(_snapshot_id(args))
    return _change(before, table)


def _rollback_to_timestamp(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    before = table.metadata.current_snapshot_id
    table.rollback_to_timestamp(ctx.timestamp_ms(args["timestamp"]))
    return _change(before, table)


def _set_current_snapshot(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    has_id, has_ref = args.get("snapshot_id") is not None, args.get("ref") is not None
    if has_id == has_ref:
        raise ValidationError("set_current_snapshot needs exactly one of snapshot_id and ref")
    if has_ref:
        snap = table.metadata.snapshot_by_name(str(args["ref"]))
        if snap is None:
            raise ValidationError(f"Table {table.name()} has no branch or tag {args['ref']!r}")
        target = snap.snapshot_id
    else:
        target = _snapshot_id(args)
    before = table.metadata.current_snapshot_id
    table.set_current_snapshot(target)
    return _change(before, table)


def _cherrypick_snapshot(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    source = _snapshot_id(args)
    table.cherry_pick(source)
    return ResultSet(
        columns=["source_snapshot_id", "current_snapshot_id"],
        rows=[(source, table.metadata.current_snapshot_id)],
    )


PROCEDURES: dict[str, _Procedure] = {
    "rollback_to_snapshot": _Procedure(("table", "snapshot_id"), ("table", "snapshot_id"), _rollback_to_snapshot),
    "rollback_to_timestamp": _Procedure(("table", "timestamp"), ("table", "timestamp"), _rollback_to_timestamp),
    "set_current_snapshot": _Procedure(("table", "snapshot_id", "ref"), ("table",), _set_current_snapshot),
    "cherrypick_snapshot": _Procedure(("table", "snapshot_id"), ("table", "snapshot_id"), _cherrypick_snapshot),
}


def run_call(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """Run a CALL: bind arguments, load the table (relative to the procedure's catalog), run the procedure."""
    assert isinstance(stmt, c.Call)
    name = stmt.procedure_name.lower()
    what = short_sql(stmt.sql) or f"CALL {name}"
    if len(stmt.procedure) >= 2 and stmt.procedure[-2].lower() != "system":
        raise ValidationError(f"{what}: procedures live in the 'system' namespace (CALL catalog.system.{name}(...))")
    proc = PROCEDURES.get(name)
    if proc is None:
        raise UnsupportedError(
            f"Not supported yet: {what} (procedures: {', '.join(sorted(PROCEDURES))})"
        )
    args = stmt.bind(proc.parameters)
    missing = [p for p in proc.required if args.get(p) is None]
    if missing:
        raise ValidationError(f"{what}: missing required argument {missing[0]!r}")
    table_arg = args["table"]
    if not isinstance(table_arg, str) or not table_arg.strip():
        raise ValidationError(f"{what}: table must be a table name string, got {table_arg!r}")
    catalog = stmt.catalog or ctx.session.current_catalog
    if catalog not in ctx.session.catalog_properties:
        raise ValidationError(f"{what}: unknown catalog {catalog!r}")
    # Iceberg resolves the table argument in the procedure's catalog, with the session namespace there.
    same = catalog == ctx.session.current_catalog
    ref = resolve_table(
        tuple(p.strip("`") for p in table_arg.split(".")),
        current_catalog=catalog,
        current_namespace=ctx.session.namespace() if same else ("default",),
        catalogs=ctx.session.catalog_properties,
    )
    table = ctx.load(ref)
    return proc.run(ctx, table, args)
