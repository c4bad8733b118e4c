"""SparkSession set-up for Floe: a configured local session, or Floe's settings applied to the caller's.

Settings and why (measured facts in DESIGN.md section 5):
- ``spark.sql.parquet.fieldId.write.enabled`` / ``fieldId.read.enabled``: Spark writes Iceberg field ids
  and resolves columns by id, so renames and drops read correctly.
- ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS``: Iceberg timestamps are INT64 micros;
  Spark's default INT96 has neither the right type nor usable statistics.
- ``spark.sql.timeType.enabled``: Spark 4.1+ supports TIME (written as Parquet TIME(MICROS)) only behind
  this flag; Iceberg ``time`` columns need it.
- ``spark.sql.session.timeZone=UTC`` unless given: values of ``timestamptz`` print and collect the same
  everywhere.
- Arrow on, small shuffle partition count for local use, UI off, logs at WARN.

Engine integrations (the ``iceberg`` data source, catalogs) plug in through :func:`register_session_hook`;
every hook runs on each session returned by :func:`session` or :func:`attach`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from pyspark.sql import SparkSession

__all__ = ["REQUIRED_SQL_CONF", "attach", "register_session_hook", "session"]

# Runtime SQL settings Floe relies on; applied to new and existing sessions alike.
REQUIRED_SQL_CONF: dict[str, str] = {
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.timeType.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}

# Defaults for sessions Floe creates itself; any key in the caller's conf wins.
_LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.adaptive.enabled": "true",
}

_SessionHook = Callable[[SparkSession], None]
_SESSION_HOOKS: list[_SessionHook] = []


def register_session_hook(hook: _SessionHook) -> None:
    """Run ``hook(spark)`` on every session Floe creates or attaches to (idempotent per hook).

    This is the extension point for registering Floe's Spark data source and catalogs; hooks must
    be idempotent because :func:`attach` may be called on the same session more than once.
    """
    if hook not in _SESSION_HOOKS:
        _SESSION_HOOKS.append(hook)


def _on_session(spark: SparkSession) -> None:
    """Run the registered session hooks, in registration order."""
    for hook in _SESSION_HOOKS:
        hook(spark)


def session(conf: Mapping[str, str] | None = None, *, app_name: str = "floe") -> SparkSession:
    """A SparkSession configured for Floe (``local[*]`` unless ``spark.master`` is given).

    If a session is already active in this process, Spark returns it: static settings (master, UI)
    then keep their old values, and Floe's runtime SQL settings are applied to it.

    Args:
        conf: Spark settings; they override Floe's defaults (not the required SQL settings, which
            Floe needs to read and write Iceberg files correctly).
        app_name: the Spark application name.

    Returns:
        The session.
    """
    settings = {**_LOCAL_DEFAULTS, **dict(conf or {}), **REQUIRED_SQL_CONF}
    master = settings.pop("spark.master", "local[*]")
    if master.startswith("local"):
        _quiet_local_startup(settings)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return attach(spark, conf=conf)


def _quiet_local_startup(settings: dict[str, str]) -> None:
    """Keep a local session's start-up from printing log4j and hostname chatter (users' settings win)."""
    # Without SPARK_LOCAL_IP Spark warns that the hostname resolves to loopback on most laptops and CI.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers default to the `python3` on PATH, which need not be the interpreter (venv) Floe and
    # pyarrow are installed in; the driver's own interpreter always has them.
    if "spark.pyspark.python" not in settings:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if "spark.driver.extraJavaOptions" not in settings:
        log_conf = Path(__file__).with_name("log4j2.properties")
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log_conf.as_uri()}"


def attach(spark: SparkSession, *, conf: Mapping[str, str] | None = None) -> SparkSession:
    """Apply Floe's required runtime SQL settings (and ``conf``) to an existing session and run the hooks.

    Static settings in ``conf`` (those Spark refuses to change at runtime) are skipped.

    Returns:
        The same session.
    """
    for key, value in {**dict(conf or {}), **REQUIRED_SQL_CONF}.items():
        if spark.conf.isModifiable(key):
            spark.conf.set(key, value)
    _on_session(spark)
    return spark
