"""Iceberg metadata tables (history, snapshots, files, manifests, entries, partitions ...) as DataFrames.

The rows come from floe.scan.metadata_tables (Arrow, computed on the driver from metadata and manifests).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from floe.scan.metadata_tables import METADATA_TABLES, metadata_table
from floe.spark.runtime.connect import is_connect
from floe.spark.scan.table_read import TableSource, load_table

__all__ = ["METADATA_TABLE_NAMES", "SparkInspectTable", "metadata_table_df"]

METADATA_TABLE_NAMES = tuple(METADATA_TABLES)


def metadata_table_df(spark: SparkSession, table: TableSource, name: str, *, snapshot_id: int | None = None) -> DataFrame:
    """The metadata table ``name`` of ``table`` (a Table, location or identifier) as a Spark DataFrame.

    Raises:
        ValidationError: unknown metadata table name.
    """
    t = load_table(spark, table)
    rows = metadata_table(t, name, snapshot_id=snapshot_id)
    if not rows.num_rows and is_connect(spark):  # Connect infers no schema from an empty Arrow table
        return spark.createDataFrame([], schema=from_arrow_schema(rows.schema))
    return spark.createDataFrame(rows)


class SparkInspectTable:
    """The metadata tables of one table as Spark DataFrames (``floe.spark.inspect(spark, table)``)."""

    def __init__(self, spark: SparkSession, table: TableSource) -> None:
        self._spark = spark
        self._table = table

    def _frame(self, name: str, snapshot_id: int | None) -> DataFrame:
        return metadata_table_df(self._spark, self._table, name, snapshot_id=snapshot_id)

    def history(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``history`` metadata table as a DataFrame."""
        return self._frame("history", snapshot_id)

    def snapshots(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``snapshots`` metadata table as a DataFrame."""
        return self._frame("snapshots", snapshot_id)

    def refs(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``refs`` metadata table as a DataFrame."""
        return self._frame("refs", snapshot_id)

    def metadata_log_entries(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``metadata_log_entries`` metadata table as a DataFrame."""
        return self._frame("metadata_log_entries", snapshot_id)

    def manifests(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``manifests`` metadata table as a DataFrame."""
        return self._frame("manifests", snapshot_id)

    def all_manifests(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``all_manifests`` metadata table as a DataFrame."""
        return self._frame("all_manifests", snapshot_id)

    def files(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``files`` metadata table as a DataFrame."""
        return self._frame("files", snapshot_id)

    def data_files(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``data_files`` metadata table as a DataFrame."""
        return self._frame("data_files", snapshot_id)

    def delete_files(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``delete_files`` metadata table as a DataFrame."""
        return self._frame("delete_files", snapshot_id)

    def all_data_files(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``all_data_files`` metadata table as a DataFrame."""
        return self._frame("all_data_files", snapshot_id)

    def entries(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``entries`` metadata table as a DataFrame."""
        return self._frame("entries", snapshot_id)

    def partitions(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``partitions`` metadata table as a DataFrame."""
        return self._frame("partitions", snapshot_id)

    def all_files(self) -> DataFrame:
        """The ``all_files`` metadata table as a DataFrame."""
        return self._frame("all_files", None)

    def all_delete_files(self) -> DataFrame:
        """The ``all_delete_files`` metadata table as a DataFrame."""
        return self._frame("all_delete_files", None)

    def all_entries(self) -> DataFrame:
        """The ``all_entries`` metadata table as a DataFrame."""
        return self._frame("all_entries", None)

    def position_deletes(self, snapshot_id: int | None = None) -> DataFrame:
        """The ``position_deletes`` metadata table as a DataFrame."""
        return self._frame("position_deletes", snapshot_id)
