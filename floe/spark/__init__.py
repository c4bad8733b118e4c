"""Floe inside PySpark programs: the public Spark API of Floe.

- :func:`session` builds a SparkSession configured for Floe; :func:`attach` makes an existing one Floe's
  (catalogs from its Iceberg-style confs, Python workers, the ``iceberg`` data source, transparent mode).
- :func:`read` reads a table as a native DataFrame; :func:`sql` runs Floe SQL and returns DataFrames.
- :func:`inspect` gives a table's metadata tables as DataFrames (``table.inspect`` gives them as Arrow).
- :func:`apply_changes` applies a changelog DataFrame (+I/-U/+U/-D) with equality and position deletes;
  ``df.writeStream.format("iceberg")`` streams into tables (floe.spark.streaming.sink) on attached sessions.
- :func:`detach` switches transparent mode off for a session (Spark's methods behave as without Floe).

floe.spark sits above floe.sql: ``sql`` and transparent mode (floe.spark.runtime.sql_session,
floe.spark.runtime.transparent) run Floe's SQL inside the session, and the SQL handlers reach Spark only
through the engine registered here (floe.spark.runtime.sql_engine).

The rooms: ``runtime/`` (Floe inside the user's session), ``scan/`` (the read path), ``write/`` (the write
path), ``row_level/`` (DELETE, UPDATE, MERGE), ``datasource/`` (the Python data source), ``streaming/`` (sink,
source, CDC), ``procedures/`` (the Spark side of CALL procedures); ``types.py`` maps types for all of them.
This module is the one public face: the rooms are internal.
"""

from pyspark.sql import SparkSession

from floe.spark.datasource import provider as _datasource  # noqa: F401 - registers the data source session hook
from floe.spark.row_level.dml import SparkRowLevelEngine
from floe.spark.runtime.configure import attach, register_session_hook, session
from floe.spark.runtime.sql_session import sql
from floe.spark.runtime.transparent import detach, install
from floe.spark.scan.metadata_tables import SparkInspectTable
from floe.spark.scan.table_read import TableSource, read
from floe.spark.streaming.changes import apply_changes
from floe.sql.spark_engine import SparkEngine, register_spark_engine_loader
from floe.table.row_changes import register_row_level_engine

register_session_hook(install)
register_row_level_engine(SparkRowLevelEngine())


def _load_sql_engine() -> SparkEngine:
    # The procedures' modules (rewrite, migration, changelog ...) load when a statement first needs Spark.
    from floe.spark.runtime.sql_engine import SPARK_ENGINE

    return SPARK_ENGINE


register_spark_engine_loader(_load_sql_engine)


def inspect(spark: SparkSession, table: TableSource) -> SparkInspectTable:
    """The metadata tables of ``table`` (a Table, location or identifier) as DataFrames: ``.snapshots()`` ..."""
    return SparkInspectTable(spark, table)


__all__ = ["apply_changes", "attach", "detach", "inspect", "read", "session", "sql"]
