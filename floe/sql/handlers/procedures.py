"""``CALL catalog.system.<procedure>(...)``: binding arguments and running Iceberg's procedures.

Parameters and result columns are Iceberg's (Spark procedures docs). This module holds the snapshot and
branch procedures (``rollback_to_snapshot``, ``rollback_to_timestamp``, ``set_current_snapshot``,
``cherrypick_snapshot``, ``publish_changes``, ``fast_forward``, ``ancestors_of``) and ``register_table``;
maintenance, table migration and change-log procedures live in the ``procedures_*`` modules beside it.
Arguments are positional or ``name => value``.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from floe.errors import UnsupportedError, ValidationError
from floe.spec import properties as P
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.procedure_args import NameProcedure, Procedures, TableProcedure, snapshot_id_arg
from floe.sql.handlers.procedures_changelog import CHANGELOG_PROCEDURES
from floe.sql.handlers.procedures_maintenance import MAINTENANCE_PROCEDURES
from floe.sql.handlers.procedures_migration import MIGRATION_PROCEDURES
from floe.sql.identifiers import ResolvedTable, resolve_table
from floe.sql.parse_common import short_sql
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["PROCEDURES", "run_call"]


def _change(before: int | None, table: Table) -> ResultSet:
    return ResultSet(
        columns=["previous_snapshot_id", "current_snapshot_id"],
        rows=[(before, table.metadata.current_snapshot_id)],
    )


def _rollback_to_snapshot(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    before = table.metadata.current_snapshot_id
    table.rollback_to_snapshot(snapshot_id_arg(args))
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
        target = snapshot_id_arg(args)
    before = table.metadata.current_snapshot_id
    table.set_current_snapshot(target)
    return _change(before, table)


def _cherrypick_snapshot(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    source = snapshot_id_arg(args)
    table.cherry_pick(source)
    return ResultSet(
        columns=["source_snapshot_id", "current_snapshot_id"],
        rows=[(source, table.metadata.current_snapshot_id)],
    )


def _publish_changes(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    wap_id = str(args["wap_id"])
    staged = [s for s in table.metadata.snapshots if s.summary is not None and s.summary.get(P.WAP_ID) == wap_id]
    if not staged:
        raise ValidationError(f"Cannot apply unknown WAP ID {wap_id!r} to table {table.name()}")
    if len(staged) > 1:
        raise ValidationError(f"More than one snapshot of table {table.name()} has WAP ID {wap_id!r}")
    source = staged[0].snapshot_id
    table.cherry_pick(source)
    return ResultSet(columns=["source_snapshot_id", "current_snapshot_id"],
                     rows=[(source, table.metadata.current_snapshot_id)])


def _fast_forward(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    branch, to = str(args["branch"]), str(args["to"])
    previous = table.refs().get(branch)
    table.manage_snapshots().fast_forward(branch, to).commit()
    return ResultSet(columns=["branch_updated", "previous_ref", "updated_ref"],
                     rows=[(branch, previous.snapshot_id if previous else None, table.refs()[branch].snapshot_id)])


def _ancestors_of(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    start = snapshot_id_arg(args) if args.get("snapshot_id") is not None else table.metadata.current_snapshot_id
    if start is not None and table.metadata.snapshot_by_id(start) is None:
        raise ValidationError(f"Cannot find snapshot {start} in table {table.name()}")
    return ResultSet(columns=["snapshot_id", "timestamp"],
                     rows=[(s.snapshot_id, s.timestamp_ms) for s in table.metadata.ancestors_of(start)])


def _register_table(ctx: HandlerContext, ref: ResolvedTable, args: dict[str, object]) -> ResultSet:
    metadata_file = args["metadata_file"]
    if not isinstance(metadata_file, str) or not metadata_file.strip():
        raise ValidationError(f"metadata_file must be the location of a metadata JSON file, got {metadata_file!r}")
    table = ctx.catalog(ref.catalog).register_table(ref.identifier, metadata_file)
    snap = table.metadata.current_snapshot()
    summary = snap.summary.as_dict() if snap is not None and snap.summary is not None else {}
    return ResultSet(
        columns=["current_snapshot_id", "total_records_count", "total_data_files_count"],
        rows=[(snap.snapshot_id if snap else None, int(summary.get("total-records", 0)),
               int(summary.get("total-data-files", 0)))],
    )


PROCEDURES: Procedures = {
    "publish_changes": TableProcedure(("table", "wap_id"), ("table", "wap_id"), _publish_changes),
    "fast_forward": TableProcedure(("table", "branch", "to"), ("table", "branch", "to"), _fast_forward),
    "ancestors_of": TableProcedure(("table", "snapshot_id"), ("table",), _ancestors_of),
    "register_table": NameProcedure(("table", "metadata_file"), ("table", "metadata_file"), _register_table),
    "rollback_to_snapshot": TableProcedure(("table", "snapshot_id"), ("table", "snapshot_id"), _rollback_to_snapshot),
    "rollback_to_timestamp": TableProcedure(("table", "timestamp"), ("table", "timestamp"), _rollback_to_timestamp),
    "set_current_snapshot": TableProcedure(("table", "snapshot_id", "ref"), ("table",), _set_current_snapshot),
    "cherrypick_snapshot": TableProcedure(("table", "snapshot_id"), ("table", "snapshot_id"), _cherrypick_snapshot),
    **MAINTENANCE_PROCEDURES,
    **MIGRATION_PROCEDURES,
    **CHANGELOG_PROCEDURES,
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
        close = difflib.get_close_matches(name, PROCEDURES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else f" ({len(PROCEDURES)} procedures are supported)"
        raise UnsupportedError(f"Not supported yet: {what}{hint}")
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
    if isinstance(proc, NameProcedure):
        return proc.run(ctx, ref, args)
    return proc.run(ctx, ctx.load(ref), args)
