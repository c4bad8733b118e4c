"""Maintenance procedures: ``expire_snapshots``, ``remove_orphan_files``, ``rewrite_manifests``,
``rewrite_data_files``, ``rewrite_position_delete_files``, ``rewrite_equality_deletes`` and
``compute_table_stats`` (floe.maintenance; file rewrites and statistics run on Spark)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.io.fileio import FileEntry
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.procedure_args import (
    Procedures,
    TableProcedure,
    bool_arg,
    int_arg,
    result_row,
    snapshot_id_arg,
)
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["MAINTENANCE_PROCEDURES"]


def _expire_snapshots(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    from floe.maintenance import expire_snapshots

    bool_arg(args, "stream_results", False)  # validated only: deletions are listed on the driver anyway
    ids = args.get("snapshot_ids")
    if ids is not None and not isinstance(ids, (list, tuple)):
        ids = [ids]
    result = expire_snapshots(
        table,
        older_than_ms=None if args.get("older_than") is None else ctx.timestamp_ms(args["older_than"]),
        retain_last=int_arg(args, "retain_last"),
        snapshot_ids=None if ids is None else [snapshot_id_arg({"snapshot_ids": i}, "snapshot_ids") for i in ids],
        max_concurrent_deletes=int_arg(args, "max_concurrent_deletes"),
        clean_expired_metadata=bool_arg(args, "clean_expired_metadata", False),
    )
    return result_row(
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


_ORPHAN_MIN_AGE_MS = 24 * 60 * 60 * 1000


def _testing(ctx: HandlerContext) -> bool:
    # Java skips its 24-hour guard when spark.testing is true; so do we, without starting Spark for it.
    value = ctx.session.conf.get("spark.testing")
    if value is None and ctx.spark_started:
        value = ctx.spark().conf.get("spark.testing", "false")
    return str(value).strip().lower() == "true"


def _string_map(args: dict[str, object], key: str) -> dict[str, str] | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValidationError(f"{key} must be a map of strings (map('k', 'v', ...)), got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _listed_from_view(ctx: HandlerContext, table: Table, view: str) -> list[FileEntry]:
    # Java's compareToFileList: a view with file_path (string) and last_modified (timestamp) columns.
    df = ctx.spark().table(view)
    missing = {"file_path", "last_modified"} - {f.name for f in df.schema.fields}
    if missing:
        raise ValidationError(
            f"file_list_view {view!r} for table {table.name()} lacks column(s) {', '.join(sorted(missing))}"
        )
    rows = df.selectExpr("file_path", "CAST(unix_micros(CAST(last_modified AS TIMESTAMP)) DIV 1000 AS BIGINT)").collect()
    return [FileEntry(str(r[0]), 0, int(r[1])) for r in rows if r[0] is not None and r[1] is not None]


def _remove_orphan_files(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    from floe.maintenance import remove_orphan_files

    location = _str_arg(args, "location")
    older_than = None if args.get("older_than") is None else ctx.timestamp_ms(args["older_than"])
    if older_than is not None and not _testing(ctx) and time.time() * 1000 - older_than < _ORPHAN_MIN_AGE_MS:
        raise ValidationError(
            f"Cannot remove orphan files of table {table.name()} with an interval less than 24 hours: a short "
            "interval may corrupt the table if other operations are happening at the same time (use the Python "
            "API floe.maintenance.remove_orphan_files for an arbitrary interval)"
        )
    mode = _str_arg(args, "prefix_mismatch_mode")
    view = _str_arg(args, "file_list_view")
    bool_arg(args, "prefix_listing", False)  # how the location is listed; the files found are the same
    result = remove_orphan_files(
        table,
        older_than_ms=older_than,
        location=location,
        dry_run=bool_arg(args, "dry_run", False),
        max_concurrent_deletes=_max_concurrent_deletes(args),
        prefix_mismatch_mode=mode or "ERROR",
        equal_schemes=_string_map(args, "equal_schemes"),
        equal_authorities=_string_map(args, "equal_authorities"),
        listed=None if view is None else _listed_from_view(ctx, table, view),
    )
    return ResultSet(columns=["orphan_file_location"], rows=[(p,) for p in result.orphan_file_locations])


def _max_concurrent_deletes(args: dict[str, object]) -> int | None:
    value = int_arg(args, "max_concurrent_deletes")
    if value is not None and value <= 0:
        raise ValidationError(f"max_concurrent_deletes should have value > 0, value: {value}")
    return value


def _rewrite_manifests(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    from floe.maintenance import rewrite_manifests

    bool_arg(args, "use_caching", True)  # Spark caching of manifest entries: nothing to cache here
    result = rewrite_manifests(table, spec_id=int_arg(args, "spec_id"))
    return result_row(["rewritten_manifests_count", "added_manifests_count"], result)


def _str_arg(args: dict[str, object], key: str) -> str | None:
    value = args.get(key)
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"{key} must be a string, got {value!r}")
    return value


def _rewrite_data_files(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    options = args.get("options")
    if options is not None and not isinstance(options, dict):
        raise ValidationError(f"options must be a map of strings (map('k', 'v', ...)), got {options!r}")
    result = spark_engine().rewrite_data_files(
        table,
        spark=ctx.spark(),
        strategy=_str_arg(args, "strategy"),
        sort_order=_str_arg(args, "sort_order"),
        where=_str_arg(args, "where"),
        options=options,
    )
    return result_row(
        [
            "rewritten_data_files_count",
            "added_data_files_count",
            "rewritten_bytes_count",
            "failed_data_files_count",
            "removed_delete_files_count",
        ],
        result,
    )


def _rewrite_position_delete_files(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    options = _string_map(args, "options")
    result = spark_engine().rewrite_position_delete_files(table, spark=ctx.spark(), options=options)
    return result_row(
        ["rewritten_delete_files_count", "added_delete_files_count", "rewritten_bytes_count", "added_bytes_count"],
        result,
    )


def _rewrite_equality_deletes(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    result = spark_engine().rewrite_equality_deletes(
        table, spark=ctx.spark(), where=_str_arg(args, "where"), options=_string_map(args, "options")
    )
    return result_row(
        [
            "rewritten_delete_files_count",
            "added_delete_files_count",
            "removed_delete_files_count",
            "rewritten_bytes_count",
        ],
        result,
    )


def _compute_table_stats(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    columns = args.get("columns")
    if columns is not None:
        if isinstance(columns, str):
            columns = [columns]
        if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
            raise ValidationError(f"columns must be an array of column names, got {columns!r}")
    stats = spark_engine().compute_table_stats(
        table,
        spark=ctx.spark(),
        snapshot_id=None if args.get("snapshot_id") is None else snapshot_id_arg(args),
        columns=None if columns is None else [str(c) for c in columns],
    )
    # Java returns no row when there is nothing to compute (a table without snapshots).
    return ResultSet(columns=["statistics_file"], rows=[] if stats is None else [(stats.statistics_path,)])


MAINTENANCE_PROCEDURES: Procedures = {
    "expire_snapshots": TableProcedure(
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
    "remove_orphan_files": TableProcedure(
        (
            "table",
            "older_than",
            "location",
            "dry_run",
            "max_concurrent_deletes",
            "file_list_view",
            "equal_schemes",
            "equal_authorities",
            "prefix_mismatch_mode",
            "prefix_listing",
        ),
        ("table",),
        _remove_orphan_files,
    ),
    "rewrite_manifests": TableProcedure(("table", "use_caching", "spec_id"), ("table",), _rewrite_manifests),
    "rewrite_data_files": TableProcedure(
        ("table", "strategy", "sort_order", "options", "where"), ("table",), _rewrite_data_files
    ),
    "rewrite_position_delete_files": TableProcedure(
        ("table", "options"), ("table",), _rewrite_position_delete_files
    ),
    "rewrite_equality_deletes": TableProcedure(
        ("table", "where", "options"), ("table",), _rewrite_equality_deletes
    ),
    "compute_table_stats": TableProcedure(("table", "snapshot_id", "columns"), ("table",), _compute_table_stats),
}
