"""Spark Connect sessions (``SparkSession.builder.remote(...)``): what differs from a session with a JVM.

A Connect session has no Py4J gateway: no ``sparkContext``, ``_jvm``, ``_jsparkSession``, ``_jdf`` or
``_jc``. Floe's planning and commits already run in the client's Python; the data path uses only the public
DataFrame API (``spark.read.parquet`` of the planned files, joins on ``_metadata.file_path`` /
``_metadata.row_index``, Parquet writes with the partition values as expressions), which Connect
serializes. The few places that reach into the JVM ask :func:`is_connect` and take a public-API way
instead, or refuse with :func:`refuse` (one line naming the feature).

What needs Python in the server's workers (Arrow UDFs and ``mapInArrow`` tasks that import Floe, the
``iceberg`` Python data source) is refused on Connect: the server is assumed to have nothing of Floe's.
"""

from __future__ import annotations

from typing import Any

from floe.errors import UnsupportedError

__all__ = ["application_id", "is_connect", "refuse", "require_python_workers"]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its class lives in ``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def application_id(spark: Any) -> str:
    """The Spark application id, from the SparkContext or, on Connect, from the server's conf."""
    if is_connect(spark):
        return str(spark.conf.get("spark.app.id", "connect"))
    return str(spark.sparkContext.applicationId)


def refuse(feature: str) -> UnsupportedError:
    """The one-line refusal for ``feature`` on a Spark Connect session (raise it)."""
    return UnsupportedError(
        f"{feature} is not supported on a Spark Connect session (it needs Floe in the server's JVM or Python "
        "workers); use a classic SparkSession for it (README, Spark Connect)"
    )


def require_python_workers(spark: Any, feature: str) -> None:
    """Refuse ``feature`` on a Spark Connect session: it runs Floe in Spark's Python workers, which are the
    server's there (and need not have Floe)."""
    if is_connect(spark):
        raise refuse(f"{feature} (Floe code in Spark's Python workers)")
