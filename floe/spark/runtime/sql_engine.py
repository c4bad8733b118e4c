"""The Spark engine behind Floe's SQL statements (floe.sql.spark_engine), registered by ``import floe.spark``."""

from __future__ import annotations

from floe.spark.procedures.import_files import add_files
from floe.spark.procedures.rewrite_data_files import rewrite_data_files
from floe.spark.procedures.rewrite_equality_deletes import rewrite_equality_deletes
from floe.spark.procedures.rewrite_position_deletes import rewrite_position_delete_files
from floe.spark.procedures.table_migration import migrate_table, snapshot_table
from floe.spark.procedures.table_stats import compute_table_stats
from floe.spark.row_level.dml import MergeClause, delete_rows, merge_into, update_rows
from floe.spark.runtime.configure import attach, session
from floe.spark.runtime.iceberg_functions import ArgInfo, bind_call
from floe.spark.scan.metadata_columns import METADATA_COLUMNS
from floe.spark.scan.metadata_tables import metadata_table_df
from floe.spark.scan.view_reads import read_for_view
from floe.spark.streaming.changelog import (
    changelog_dataframe,
    changelog_range,
    compute_updates,
    remove_carryovers,
)
from floe.spark.types import from_spark_schema, to_spark_schema, to_spark_type
from floe.sql.spark_engine import SparkEngine

__all__ = ["SPARK_ENGINE"]

SPARK_ENGINE = SparkEngine(
    session=session,
    attach=attach,
    from_spark_schema=from_spark_schema,
    to_spark_type=to_spark_type,
    to_spark_schema=to_spark_schema,
    read_for_view=read_for_view,
    metadata_table_df=metadata_table_df,
    metadata_columns=METADATA_COLUMNS,
    delete_rows=delete_rows,
    update_rows=update_rows,
    merge_into=merge_into,
    merge_clause=MergeClause,
    changelog_range=changelog_range,
    changelog_dataframe=changelog_dataframe,
    compute_updates=compute_updates,
    remove_carryovers=remove_carryovers,
    rewrite_data_files=rewrite_data_files,
    rewrite_position_delete_files=rewrite_position_delete_files,
    rewrite_equality_deletes=rewrite_equality_deletes,
    compute_table_stats=compute_table_stats,
    add_files=add_files,
    snapshot_table=snapshot_table,
    migrate_table=migrate_table,
    bind_call=bind_call,
    arg_info=ArgInfo,
)
