"""Floe inside PySpark programs: the public Spark API of Floe.

- :func:`session` builds a SparkSession configured for Floe; :func:`attach` makes an existing one Floe's
  (catalogs from its Iceberg-style confs, Python workers, the ``iceberg`` data source, transparent mode).
- :func:`read` reads a table as a native DataFrame; :func:`sql` runs Floe SQL and returns DataFrames.
- :func:`inspect` gives a table's metadata tables as DataFrames (``table.inspect`` gives them as Arrow).
- :func:`apply_changes` applies a changelog DataFrame (+I/-U/+U/-D) with equality and position deletes;
  ``df.writeStream.format("iceberg")`` streams into tables (floe.spark.streaming) on attached sessions.
- :func:`detach` switches transparent mode off for a session (Spark's methods behave as without Floe).

floe.spark sits above floe.sql: ``sql`` and transparent mode (floe.spark.sql_session, floe.spark.transparent)
run Floe's SQL inside the session, and the SQL handlers reach Spark only through the engine registered here
(floe.spark.sql_engine).
"""

from pyspark.sql import SparkSession

from floe.spark import datasource as _datasource  # noqa: F401 - registers the data source session hook
from floe.spark.changes import apply_changes
from floe.spark.configure import attach, register_session_hook, session
from floe.spark.metadata_tables import SparkInspectTable
from floe.spark.read import TableSource, read
from floe.spark.row_level import SparkRowLevelEngine
from floe.spark.sql_session import sql
from floe.spark.transparent import detach, install
from floe.sql.spark_engine import SparkEngine, register_spark_engine_loader
from floe.table.row_changes import register_row_level_engine

register_session_hook(install)
register_row_level_engine(SparkRowLevelEngine())


def _load_sql_engine() -> SparkEngine:
    # The procedures' modules (rewrite, migration, changelog ...) load when a statement first needs Spark.
    from floe.spark.sql_engine import SPARK_ENGINE

    return SPARK_ENGINE


register_spark_engine_loader(_load_sql_engine)


def inspect(spark: SparkSession, table: TableSource) -> SparkInspectTable:
    """The metadata tables of ``table`` (a Table, location or identifier) as DataFrames: ``.snapshots()`` ..."""
    return SparkInspectTable(spark, table)


__all__ = ["apply_changes", "attach", "detach", "inspect", "read", "session", "sql"]
