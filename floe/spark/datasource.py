"""Floe's Python data source for Spark, registered as ``iceberg`` and ``floe``.

``spark.read.format("iceberg").load("db.t" or "/path/to/table")`` with options ``snapshot-id``,
``as-of-timestamp``, ``branch``, ``tag``, ``start-snapshot-id``, ``end-snapshot-id``. The reader lives in
floe.spark.datasource_read; the write side is added in its own module.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, DataSourceReader

from floe.spark.datasource_read import IcebergReader, scan_from_options, spark_schema_for
from floe.spark.session import register_session_hook

__all__ = ["FILTER_PUSHDOWN_CONF", "FloeDataSource", "IcebergDataSource", "register_data_source"]

# Spark 4.1+: Python data sources receive filters through pushFilters only with this setting.
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class IcebergDataSource(DataSource):
    """``format("iceberg")``: Iceberg tables read (and, with the write module, written) by Floe."""

    @classmethod
    def name(cls) -> str:
        return "iceberg"

    def schema(self) -> T.StructType:
        return spark_schema_for(scan_from_options(self.options))

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return IcebergReader(self.options, schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> DataSourceArrowWriter:
        """The batch writer (floe.spark.datasource_write)."""
        from floe.spark.datasource_write import IcebergWriter

        return IcebergWriter(self.options, schema, overwrite)


class FloeDataSource(IcebergDataSource):
    """The same source under the name ``floe``."""

    @classmethod
    def name(cls) -> str:
        return "floe"


def register_data_source(spark: SparkSession) -> None:
    """Register the ``iceberg`` and ``floe`` formats on ``spark`` and enable filter pushdown (idempotent)."""
    if getattr(spark, "_floe_data_source_registered", False):
        return
    spark.dataSource.register(IcebergDataSource)
    spark.dataSource.register(FloeDataSource)
    if spark.conf.isModifiable(FILTER_PUSHDOWN_CONF):
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark._floe_data_source_registered = True  # type: ignore[attr-defined]


register_session_hook(register_data_source)
