"""Floe inside PySpark programs: the public Spark API of Floe.

- :func:`session` builds a SparkSession configured for Floe; :func:`attach` makes an existing one Floe's
  (catalogs from its Iceberg-style confs, Python workers, the ``iceberg`` data source, transparent mode).
- :func:`read` reads a table as a native DataFrame; :func:`sql` runs Floe SQL and returns DataFrames.
- :func:`detach` switches transparent mode off for a session (Spark's methods behave as without Floe).

This package's namespace is a facade: ``sql`` and transparent mode are the SQL front end (floe.sql)
running inside the session; the modules of floe.spark below it never import floe.sql.
"""

from floe.spark import datasource as _datasource  # noqa: F401 - registers the data source session hook
from floe.spark.configure import attach, register_session_hook, session
from floe.spark.read import read
from floe.sql.spark_session import sql
from floe.sql.transparent import detach, install

register_session_hook(install)

__all__ = ["attach", "detach", "read", "session", "sql"]
