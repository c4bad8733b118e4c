"""Table migration procedures: ``add_files``, ``snapshot`` and ``migrate`` (Parquet tables and folders).

Parameters and result columns are Iceberg 1.10's. Sources are Spark's (``src_tbl``, ``db.t``,
``spark_catalog.db.t``) or, for ``add_files``, a folder (``` `parquet`.`/path` ```); the work is in
floe.spark.procedures.import_files and floe.spark.procedures.table_migration. ``snapshot`` and ``migrate`` create their table in
the procedure's catalog under the name the ``table`` argument resolves to there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.procedure_args import (
    NameProcedure,
    Procedures,
    TableProcedure,
    bool_arg,
    int_arg,
    result_row,
)
from floe.sql.identifiers import ResolvedTable
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["MIGRATION_PROCEDURES"]


def _string(args: dict[str, object], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{key} must be a non-empty string, got {value!r}")
    return value


def _string_map(args: dict[str, object], key: str) -> dict[str, str]:
    value = args.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"{key} must be a map of strings (map('k', 'v', ...)), got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _parallelism(args: dict[str, object]) -> int:
    value = int_arg(args, "parallelism")
    if value is not None and value < 1:
        raise ValidationError(f"parallelism should be larger than 0, got {value}")
    return value or 1


def _add_files(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    source = _string(args, "source_table")
    assert source is not None  # required
    result = spark_engine().add_files(
        table,
        spark=ctx.spark(),
        source_table=source,
        partition_filter=_string_map(args, "partition_filter"),
        check_duplicate_files=bool_arg(args, "check_duplicate_files", True),
        parallelism=_parallelism(args),
    )
    return result_row(["added_files_count", "changed_partition_count"], result)


def _snapshot(ctx: HandlerContext, ref: ResolvedTable, args: dict[str, object]) -> ResultSet:
    source = _string(args, "source_table")
    assert source is not None  # required
    if source == args["table"]:
        raise ValidationError("Cannot create a snapshot with the same name as the source of the snapshot")
    bool_arg(args, "ignore_missing_files", False)  # listed files exist: nothing is missing to ignore
    count = spark_engine().snapshot_table(
        ctx.spark(),
        ctx.catalog(ref.catalog),
        ref.identifier,
        source_table=source,
        location=_string(args, "location"),
        properties=_string_map(args, "properties"),
        parallelism=_parallelism(args),
    )
    return ResultSet(columns=["imported_files_count"], rows=[(count,)])


def _migrate(ctx: HandlerContext, ref: ResolvedTable, args: dict[str, object]) -> ResultSet:
    bool_arg(args, "ignore_missing_files", False)
    if len(ref.identifier) == 3 and ref.identifier[0].lower() == "spark_catalog":
        # Spark's own catalog names the source; the Iceberg table takes its database and name in Floe's catalog
        ref = ctx.resolve(tuple(ref.identifier[1:]))
        ctx.catalog(ref.catalog).create_namespace_if_not_exists(ref.identifier[:-1])  # as CREATE TABLE does
    count = spark_engine().migrate_table(
        ctx.spark(),
        ctx.catalog(ref.catalog),
        ref.identifier,
        source_table=str(args["table"]),
        properties=_string_map(args, "properties"),
        drop_backup=bool_arg(args, "drop_backup", False),
        backup_table_name=_string(args, "backup_table_name"),
        parallelism=_parallelism(args),
    )
    return ResultSet(columns=["migrated_files_count"], rows=[(count,)])


MIGRATION_PROCEDURES: Procedures = {
    "add_files": TableProcedure(
        ("table", "source_table", "partition_filter", "check_duplicate_files", "parallelism"),
        ("table", "source_table"),
        _add_files,
    ),
    "snapshot": NameProcedure(
        ("source_table", "table", "location", "properties", "parallelism", "ignore_missing_files"),
        ("source_table", "table"),
        _snapshot,
    ),
    "migrate": NameProcedure(
        ("table", "properties", "drop_backup", "backup_table_name", "parallelism", "ignore_missing_files"),
        ("table",),
        _migrate,
    ),
}
