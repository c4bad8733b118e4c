"""Transparent mode on Spark Connect sessions: the same routing as floe.spark.runtime.transparent, installed
on Connect's own client classes (which are not subclasses of the classic ones).

The wrappers are transparent.py's; only where a Connect class keeps its session or rows elsewhere is an
accessor passed (a reader's session is ``_client``; a writer holds a logical plan, turned back into a
DataFrame). Streams into Floe tables are refused: Floe's sink runs as ``foreachBatch``, which Connect
executes in the server's Python, where Floe need not be.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from floe.spark.runtime import transparent as t
from floe.spark.runtime.connect import refuse

__all__ = ["wrap_connect_classes"]

_WRAPPED = [False]


def _frame_of_writer(writer: Any) -> Any:
    from pyspark.sql.connect.dataframe import DataFrame

    return DataFrame(writer._df, writer._spark)


def _refusing_stream(original: Callable[..., Any], target_arg: int) -> Callable[..., Any]:
    """A DataStreamWriter method that refuses to stream into a Floe table or with the iceberg format."""

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        spark = self._session
        fmt = str(kwargs.get("format") or getattr(self, "_floe_format", "") or "").lower()
        target = args[target_arg] if len(args) > target_arg else None
        named = isinstance(target, str) and t.is_active(spark) and t._floe_table_name(spark, target) is not None
        if (fmt in t._FORMATS and t.is_active(spark)) or named:
            raise refuse("A streaming write into an Iceberg table (Floe's sink runs as foreachBatch)")
        return original(self, *args, **kwargs)

    return method


def _refusing_stream_read(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def load(self: Any, *args: Any, **kwargs: Any) -> Any:
        fmt = str(kwargs.get("format") or self._format or "").lower()
        if fmt in t._FORMATS and t.is_active(self._client):
            raise refuse("A streaming read of an Iceberg table (the iceberg data source)")
        return original(self, *args, **kwargs)

    return load


def wrap_connect_classes() -> None:
    """Wrap Spark Connect's client classes once per process (Connect's modules import grpc: only here)."""
    if _WRAPPED[0]:
        return
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.connect.streaming.readwriter import DataStreamReader, DataStreamWriter

    SparkSession.sql = t._session_sql(SparkSession.sql)  # type: ignore[method-assign]
    SparkSession.table = t._table_reader(SparkSession.table, lambda s: s)  # type: ignore[method-assign]
    DataFrameReader.table = t._table_reader(DataFrameReader.table, lambda r: r._client)  # type: ignore[method-assign, assignment]
    t._record_builder_calls(DataFrameReader, {
        "format": t._record_format, "option": t._record_option, "options": t._record_options,
    })
    DataFrameReader.load = t._reader_load(DataFrameReader.load, lambda r: r._client)  # type: ignore[method-assign, assignment]
    DataFrame.writeTo = t._write_to(DataFrame.writeTo)  # type: ignore[method-assign]
    t._record_builder_calls(DataFrameWriter, {
        "format": t._record_format, "mode": t._record_mode, "option": t._record_option,
        "options": t._record_options, "partitionBy": t._record_partition_by,
    })
    DataFrameWriter.saveAsTable = t._save_as_table(DataFrameWriter.saveAsTable, _frame_of_writer)  # type: ignore[method-assign]
    DataFrameWriter.insertInto = t._insert_into(DataFrameWriter.insertInto, _frame_of_writer)  # type: ignore[method-assign]
    DataFrameWriter.save = t._save(DataFrameWriter.save, _frame_of_writer)  # type: ignore[method-assign]
    t._record_builder_calls(DataStreamWriter, {"format": t._record_format})
    DataStreamWriter.start = _refusing_stream(DataStreamWriter.start, 0)  # type: ignore[method-assign]
    DataStreamWriter.toTable = _refusing_stream(DataStreamWriter.toTable, 0)  # type: ignore[method-assign]
    DataStreamReader.load = _refusing_stream_read(DataStreamReader.load)  # type: ignore[method-assign]
    _WRAPPED[0] = True
