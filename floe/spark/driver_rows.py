"""Small tables the driver holds (file -> sequence number, file -> URI) handed to Spark as Arrow.

A list of tuples becomes a Python RDD: every query using it then runs a job in Python workers just to
produce a few rows (about 0.1-0.2 s each on a 2-core machine). An Arrow table is shipped to the JVM once.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

__all__ = ["driver_frame"]


def driver_frame(spark: SparkSession, columns: Mapping[str, pa.Array]) -> DataFrame:
    """A relation of the given columns (equal lengths; their Arrow types become the Spark types)."""
    return spark.createDataFrame(pa.table(dict(columns)))
