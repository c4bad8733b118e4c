"""Spark integration: the only package importing pyspark.

``floe.spark.read(spark, table, ...)`` returns a native DataFrame; importing this package registers the
``iceberg``/``floe`` Python data source on every session made by ``floe.spark.session``.
"""

from floe.spark import datasource as _datasource  # noqa: F401 - registers the data source session hook
from floe.spark.read import read

__all__ = ["read"]
