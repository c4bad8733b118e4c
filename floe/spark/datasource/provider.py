"""Floe's Python data source for Spark, registered as ``iceberg`` and ``floe``.

``spark.read.format("iceberg").load("db.t" or "/path/to/table")`` with options ``snapshot-id``,
``as-of-timestamp``, ``branch``, ``tag``, ``start-snapshot-id``, ``end-snapshot-id``. The reader lives in
floe.spark.datasource.reader, the writer in floe.spark.datasource.writer.

The source runs in Spark's Python workers, which see neither the session's confs nor the driver's
environment. Each session therefore registers its own subclass whose class attribute holds the session's
catalogs (floe.spark.runtime.configure.session_config); Spark pickles a class made at run time by value, so the
catalogs travel with it to every worker, on any master. They reach the reader and writer as the
``SESSION_CATALOGS_OPTION`` option.
"""

from __future__ import annotations

import json

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, DataSourceReader, DataSourceStreamReader

from floe.errors import ValidationError
from floe.spark.datasource.reader import (
    SESSION_CATALOGS_OPTION,
    IcebergReader,
    config_from_options,
    scan_from_options,
    spark_schema_for,
)
from floe.spark.datasource.writer import IcebergWriter
from floe.spark.runtime.configure import register_session_hook, session_config
from floe.spark.runtime.connect import is_connect
from floe.spark.streaming.source import IcebergStreamReader

__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "SESSION_CATALOGS_OPTION",
    "FloeDataSource",
    "IcebergDataSource",
    "config_from_options",
    "register_data_source",
]

# Spark 4.1+: Python data sources receive filters through pushFilters only with this setting.
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class IcebergDataSource(DataSource):
    """``format("iceberg")``: Iceberg tables read (and, with the write module, written) by Floe."""

    session_catalogs: str | None = None  # set on each session's subclass (see the module docstring)

    def __init__(self, options: dict[str, str]) -> None:
        if self.session_catalogs is not None:
            options = {**options, SESSION_CATALOGS_OPTION: self.session_catalogs}
        super().__init__(options)

    @classmethod
    def name(cls) -> str:
        return "iceberg"

    def schema(self) -> T.StructType:
        return spark_schema_for(scan_from_options(self.options))

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return IcebergReader(self.options, schema)

    def streamReader(self, schema: T.StructType) -> DataSourceStreamReader:
        """The streaming reader of appended files (floe.spark.streaming.source)."""
        return IcebergStreamReader(self.options, schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> DataSourceArrowWriter:
        """The batch writer (floe.spark.datasource.writer)."""
        return IcebergWriter(self.options, schema, overwrite)


class FloeDataSource(IcebergDataSource):
    """The same source under the name ``floe``."""

    @classmethod
    def name(cls) -> str:
        return "floe"


# Per SparkContext, the catalogs last registered by a session that could (what its children inherit).
_REGISTERED: dict[int, str] = {}


def register_data_source(spark: SparkSession) -> None:
    """Register the ``iceberg`` and ``floe`` formats on ``spark`` with its catalogs (again when they change).

    Not on Spark Connect: the source's tasks would run in the server's Python workers, which need not have
    Floe; reads and writes there take the native paths, and what only the source does is refused.
    """
    if is_connect(spark):
        return
    config = session_config(spark)
    carried = json.dumps({"catalogs": config.catalogs, "default": config.default_catalog}, sort_keys=True)
    if getattr(spark, "_floe_data_source_registered", None) == (carried, spark.sparkContext.pythonExec):
        return
    context_key = id(spark.sparkContext)
    inherited = False
    for base in (IcebergDataSource, FloeDataSource):
        # A class made here (not importable by name) is pickled by value, its catalogs included.
        session_class = type(f"_Session{base.__name__}", (base,), {"session_catalogs": carried})
        try:
            spark.dataSource.register(session_class)
        except AnalysisException as e:
            # A session from newSession() inherits its parent's sources and may not replace them.
            if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
                raise
            inherited = True
            if _REGISTERED.get(context_key) != carried:
                raise ValidationError(
                    "this SparkSession (from newSession()) inherits Floe's 'iceberg' data source from its parent "
                    "session with other catalogs, and Spark does not let it replace it: configure the catalogs "
                    "before the parent session is attached, or give both sessions the same catalogs"
                ) from None
    if not inherited:
        _REGISTERED[context_key] = carried
    if spark.conf.isModifiable(FILTER_PUSHDOWN_CONF):
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark._floe_data_source_registered = (carried, spark.sparkContext.pythonExec)  # type: ignore[attr-defined]


register_session_hook(register_data_source)
