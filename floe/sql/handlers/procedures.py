"""``CALL catalog.system.<procedure>(...)``: Iceberg's snapshot-management and maintenance procedures.

Parameters and result columns are Iceberg's (Spark procedures docs): ``rollback_to_snapshot(table,
snapshot_id)``, ``rollback_to_timestamp(table, timestamp)``, ``set_current_snapshot(table, snapshot_id |
ref)``, ``cherrypick_snapshot(table, snapshot_id)``; maintenance (floe.maintenance):
``expire_snapshots(table, older_than, retain_last, max_concurrent_deletes, stream_results, snapshot_ids,
clean_expired_metadata)``, ``remove_orphan_files(table, older_than, location, dry_run,
max_concurrent_deletes)``, ``rewrite_manifests(table, use_caching, spec_id)`` and
``rewrite_data_files(table, strategy, sort_order, options, where)`` (the only one that needs Spark).
Arguments are positional or ``name => value``.
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


def _int_arg(args: dict[str, object], key: str) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{key} must be an integer, got {value!r}")
    return value


def _bool_arg(args: dict[str, object], key: str, default: bool) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise ValidationError(f"{key} must be a boolean, got {value!r}")
    return value


def _row(columns: list[str], result: object) -> ResultSet:
    return ResultSet(columns=columns, rows=[tuple(getattr(result, c) for c in columns)])


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


def _expire_snapshots(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    from floe.maintenance import expire_snapshots

    _bool_arg(args, "stream_results", False)  # validated only: deletions are listed on the driver anyway
    ids = args.get("snapshot_ids")
    if ids is not None and not isinstance(ids, (list, tuple)):
        ids = [ids]
    result = expire_snapshots(
        table,
        older_than_ms=None if args.get("older_than") is None else ctx.timestamp_ms(args["older_than"]),
        retain_last=_int_arg(args, "retain_last"),
        snapshot_ids=None if ids is None else [_snapshot_id({"snapshot_ids": i}, "snapshot_ids") for i in ids],
        max_concurrent_deletes=_int_arg(args, "max_concurrent_deletes"),
        clean_expired_metadata=_bool_arg(args, "clean_expired_metadata", False),
    )
    return _row(
        [
            "deleted_data_files_count",
            "deleted_position_delete_files_count",
            "deleted_equality_delete_files_count",
            "deleted_manifest_files_count",
            "deleted_manifest_lists_count",
            "deleted_statistics_files_count",
        ],
        result,
    )


def _remove_orphan_files(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    from floe.maintenance import remove_orphan_files

    location = args.get("location")
    if location is not None and not isinstance(location, str):
        raise ValidationError(f"location must be a string, got {location!r}")
    result = remove_orphan_files(
        table,
        older_than_ms=None if args.get("older_than") is None else ctx.timestamp_ms(args["older_than"]),
        location=location,
        dry_run=_bool_arg(args, "dry_run", False),
        max_concurrent_deletes=_int_arg(args, "max_concurrent_deletes"),
    )
    return ResultSet(columns=["orphan_file_location"], rows=[(p,) for p in result.orphan_file_locations])


def _rewrite_manifests(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    from floe.maintenance import rewrite_manifests

    _bool_arg(args, "use_caching", True)  # Spark caching of manifest entries: nothing to cache here
    result = rewrite_manifests(table, spec_id=_int_arg(args, "spec_id"))
    return _row(["rewritten_manifests_count", "added_manifests_count"], result)


def _rewrite_data_files(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    if args.get("sort_order") is not None:
        raise UnsupportedError(f"Not supported yet: rewrite_data_files with sort_order (table {table.name()})")
    options = args.get("options")
    if options is not None and not isinstance(options, dict):
        raise ValidationError(f"options must be a map of strings (map('k', 'v', ...)), got {options!r}")
    strategy, where = args.get("strategy") or "binpack", args.get("where")
    if not isinstance(strategy, str) or (where is not None and not isinstance(where, str)):
        raise ValidationError(f"strategy and where must be strings, got {strategy!r} and {where!r}")
    from floe.spark.rewrite_data_files import rewrite_data_files

    result = rewrite_data_files(table, spark=ctx.spark(), strategy=strategy, where=where, options=options)
    return _row(
        [
            "rewritten_data_files_count",
            "added_data_files_count",
            "rewritten_bytes_count",
            "failed_data_files_count",
            "removed_delete_files_count",
        ],
        result,
    )


PROCEDURES: dict[str, _Procedure] = {
    "rollback_to_snapshot": _Procedure(("table", "snapshot_id"), ("table", "snapshot_id"), _rollback_to_snapshot),
    "rollback_to_timestamp": _Procedure(("table", "timestamp"), ("table", "timestamp"), _rollback_to_timestamp),
    "set_current_snapshot": _Procedure(("table", "snapshot_id", "ref"), ("table",), _set_current_snapshot),
    "cherrypick_snapshot": _Procedure(("table", "snapshot_id"), ("table", "snapshot_id"), _cherrypick_snapshot),
    "expire_snapshots": _Procedure(
        (
            "table",
            "older_than",
            "retain_last",
            "max_concurrent_deletes",
            "stream_results",
            "snapshot_ids",
            "clean_expired_metadata",
        ),
        ("table",),
        _expire_snapshots,
    ),
    "remove_orphan_files": _Procedure(
        ("table", "older_than", "location", "dry_run", "max_concurrent_deletes"), ("table",), _remove_orphan_files
    ),
    "rewrite_manifests": _Procedure(("table", "use_caching", "spec_id"), ("table",), _rewrite_manifests),
    "rewrite_data_files": _Procedure(
        ("table", "strategy", "sort_order", "options", "where"), ("table",), _rewrite_data_files
    ),
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
