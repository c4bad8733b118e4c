"""Change-log procedures: ``create_changelog_view``.

As Iceberg 1.10's CreateChangelogViewProcedure: a Spark temporary view (``changelog_view``, default
```<table>_changes``` as Java names it) over the table's changes (floe.spark.streaming.changelog) in the range the
``options`` map selects (``start-snapshot-id``, ``end-snapshot-id``, ``start-timestamp``, ``end-timestamp``).
Carry-over rows are always removed; update images are computed when ``compute_updates`` (default: when
``identifier_columns`` are given), with the given identifier columns or the table's identifier fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.procedure_args import Procedures, TableProcedure, bool_arg
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from pyspark.sql import types as T

    from floe.table.table import Table

__all__ = ["CHANGELOG_PROCEDURES"]

_RANGE_OPTIONS = {
    "start-snapshot-id": "start_snapshot_id",
    "end-snapshot-id": "end_snapshot_id",
    "start-timestamp": "start_timestamp_ms",
    "end-timestamp": "end_timestamp_ms",
}


def _options(args: dict[str, object]) -> dict[str, int]:
    value = args.get("options")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"options must be a map of strings (map('k', 'v', ...)), got {value!r}")
    out: dict[str, int] = {}
    for key, raw in value.items():
        name = _RANGE_OPTIONS.get(str(key).lower())
        if name is None:
            continue  # read options (split sizes ...) change how rows are read, not which
        text = str(raw).strip()
        if not text.lstrip("-").isdigit():
            raise ValidationError(f"Option {key} must be a long, got {raw!r}")
        out[name] = int(text)
    return out


def _identifier_columns(args: dict[str, object]) -> list[str] | None:
    value = args.get("identifier_columns")
    if value is None:
        return None
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not all(isinstance(v, str) and v for v in items):
        raise ValidationError(f"identifier_columns must be an array of column names, got {value!r}")
    return [str(v) for v in items]


def _orderable(t: T.DataType) -> bool:
    from pyspark.sql import types as T

    if isinstance(t, T.MapType):
        return False
    if isinstance(t, T.ArrayType):
        return _orderable(t.elementType)
    if isinstance(t, T.StructType):
        return all(_orderable(f.dataType) for f in t.fields)
    return True


def _create_changelog_view(ctx: HandlerContext, table: Table, args: dict[str, object]) -> ResultSet:
    engine = spark_engine()
    spark = ctx.spark()
    rng = engine.changelog_range(table, **_options(args))
    df = engine.changelog_dataframe(spark, table, rng, errors_when_read=True)  # as Java: the view's read fails
    net_changes = bool_arg(args, "net_changes", False)
    given = _identifier_columns(args)
    identifiers = given if given is not None else table.schema().identifier_field_names
    unorderable = [f.name for f in df.schema.fields if not _orderable(f.dataType)]
    if not identifiers and unorderable:
        raise ValidationError(
            f"Identifier field is required as table {table.name()} contains unorderable columns: {', '.join(unorderable)}")
    if bool_arg(args, "compute_updates", given is not None):
        if net_changes:
            raise ValidationError(f"Changelog of {table.name()}: net changes cannot be computed with update images")
        df = engine.compute_updates(df, identifiers)
    else:
        df = engine.remove_carryovers(df, net_changes=net_changes)
    view = args.get("changelog_view")
    if view is not None and (not isinstance(view, str) or not view.strip()):
        raise ValidationError(f"changelog_view must be a view name, got {view!r}")
    name = view if isinstance(view, str) else f"`{table.identifier[-1]}_changes`"
    df.createOrReplaceTempView(name)
    return ResultSet(columns=["changelog_view"], rows=[(name,)])


CHANGELOG_PROCEDURES: Procedures = {
    "create_changelog_view": TableProcedure(
        ("table", "changelog_view", "options", "compute_updates", "identifier_columns", "net_changes"),
        ("table",),
        _create_changelog_view,
    ),
}
