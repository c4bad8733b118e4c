"""Floe inside PySpark programs: the public Spark API of Floe.

- :func:`session` builds a SparkSession configured for Floe; :func:`attach` makes an existing one Floe's
  (catalogs from its Iceberg-style confs, Python workers, the ``iceberg`` data source, transparent mode).
- :func:`read` reads a table as a native DataFrame; :func:`sql` runs Floe SQL and returns DataFrames.
- :func:`inspect` gives a table's metadata tables as DataFrames (``table.inspect`` gives them as Arrow).
- :func:`apply_changes` applies a changelog DataFrame (+I/-U/+U/-D) with equality and position deletes;
  ``df.writeStream.format("iceberg")`` streams into tables (floe.spark.streaming) on attached sessions.
- :func:`detach` switches transparent mode off for a session (Spark's methods behave as without Floe).

This package's namespace is a facade: ``sql`` and transparent mode are the SQL front end (floe.sql)
running inside the session; the modules of floe.spark below it never import floe.sql.
"""

from pyspark.sql import SparkSession

from floe.spark import datasource as _datasource  # noqa: F401 - registers the data source session hook
from floe.spark.changes import apply_changes
from floe.spark.configure import attach, register_session_hook, session
from floe.spark.metadata_tables import SparkInspectTable
from floe.spark.read import read
from floe.spark.row_level import SparkRowLevelEngine
from floe.sql.spark_session import sql
from floe.sql.transparent import detach, install
from floe.table.row_changes import register_row_level_engine

register_session_hook(install)
register_row_level_engine(SparkRowLevelEngine())


def inspect(spark: SparkSession, table: object) -> SparkInspectTable:
    """The metadata tables of ``table`` (a Table, location or identifier) as DataFrames: ``.snapshots()`` ..."""
    return SparkInspectTable(spark, table)


__all__ = ["apply_changes", "attach", "detach", "inspect", "read", "session", "sql"]
