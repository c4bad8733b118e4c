"""Iceberg metadata tables (history, snapshots, files, manifests, entries, partitions ...) as DataFrames.

The rows come from floe.scan.metadata_tables (Arrow, computed on the driver from metadata and manifests).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from floe.scan.metadata_tables import METADATA_TABLES, metadata_table

__all__ = ["METADATA_TABLE_NAMES", "metadata_table_df"]

METADATA_TABLE_NAMES = tuple(METADATA_TABLES)


def metadata_table_df(spark: SparkSession, table: object, name: str, *, snapshot_id: int | None = None) -> DataFrame:
    """The metadata table ``name`` of ``table`` (a Table, location or identifier) as a Spark DataFrame.

    Raises:
        ValidationError: unknown metadata table name.
    """
    from floe.spark.read import load_table

    t = load_table(spark, table)
    return spark.createDataFrame(metadata_table(t, name, snapshot_id=snapshot_id))
