"""The Spark engine Floe's SQL runs statements on, as an explicit registered dependency.

The statement handlers translate SQL (resolve names, check columns, build clause values); reading, writing
and the Spark-backed procedures are floe.spark's. floe.spark sits above floe.sql (its facade runs Floe SQL
inside Spark sessions), so floe.sql never imports it: ``import floe.spark`` registers its :class:`SparkEngine` through
:func:`register_spark_engine`, and entry points that should not pay for pyspark up front
(the CLI) register a loader instead (:func:`register_spark_engine_loader`), called on the first statement
that needs Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from floe.errors import UnsupportedError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import types as T

    from floe.spec.schema import Schema

__all__ = ["SparkEngine", "register_spark_engine", "register_spark_engine_loader", "spark_engine"]


@dataclass(frozen=True, slots=True)
class SparkEngine:
    """The floe.spark functions the handlers call (each documented where floe.spark defines it)."""

    # floe.spark.runtime.configure
    session: Callable[..., SparkSession]
    attach: Callable[..., SparkSession]
    # floe.spark.types
    from_spark_schema: Callable[..., Schema]
    to_spark_type: Callable[..., T.DataType]
    to_spark_schema: Callable[..., T.StructType]
    # floe.spark.scan.view_reads (floe.spark.read for a query's views), metadata_tables, metadata_columns
    read_for_view: Callable[..., DataFrame]
    metadata_table_df: Callable[..., DataFrame]
    metadata_columns: tuple[str, ...]
    # floe.spark.row_level.dml
    delete_rows: Callable[..., bool]
    update_rows: Callable[..., bool]
    merge_into: Callable[..., bool]
    merge_clause: Callable[..., Any]
    # floe.spark.streaming.changelog
    changelog_range: Callable[..., Any]
    changelog_dataframe: Callable[..., DataFrame]
    compute_updates: Callable[..., DataFrame]
    remove_carryovers: Callable[..., DataFrame]
    # procedures: floe.spark.procedures.rewrite_data_files, rewrite_position_deletes, rewrite_equality_deletes,
    # table_stats, import_files, table_migration
    rewrite_data_files: Callable[..., Any]
    rewrite_position_delete_files: Callable[..., Any]
    rewrite_equality_deletes: Callable[..., Any]
    compute_table_stats: Callable[..., Any]
    add_files: Callable[..., Any]
    snapshot_table: Callable[..., int]
    migrate_table: Callable[..., int]
    # floe.spark.runtime.iceberg_functions
    bind_call: Callable[..., Any]
    arg_info: Callable[..., Any]


_ENGINE: list[SparkEngine] = []
_LOADER: list[Callable[[], SparkEngine]] = []


def register_spark_engine(engine: SparkEngine) -> None:
    """Install the engine statements that need Spark run on (``import floe.spark`` does)."""
    _ENGINE[:] = [engine]


def register_spark_engine_loader(load: Callable[[], SparkEngine]) -> None:
    """Install a loader called the first time a statement needs Spark when no engine is registered yet."""
    _LOADER[:] = [load]


def spark_engine() -> SparkEngine:
    """The registered engine (loaded first if only a loader is registered).

    Raises:
        UnsupportedError: none is registered (the message says what to import).
    """
    if not _ENGINE and _LOADER:
        _ENGINE[:] = [_LOADER[0]()]
    if not _ENGINE:
        raise UnsupportedError("This statement runs on Spark: import floe.spark first (it registers the engine)")
    return _ENGINE[0]
