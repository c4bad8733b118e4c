"""Transparent mode: a PySpark program written for Iceberg on Spark runs on Floe tables unchanged.

Spark's own entry points are wrapped once, at class level, and act differently only for a session that
:func:`install` marked (``floe.spark.attach`` / ``floe.spark.session`` do) and only for what names a Floe
catalog (floe.spark.runtime.sql_session.routes_to_floe); everything else reaches Spark's original method
untouched. Setting ``spark.floe.transparent=false`` on a session (or ``floe.spark.detach(spark)``)
switches it off there.

- ``spark.sql(text)``: statements naming Floe tables run through Floe's SQL (queries stay lazy, native
  scans); others, and anything Floe cannot parse, go to Spark.
- ``spark.table(name)`` / ``spark.read.table(name)``: a Floe table (or metadata table, branch, tag) as
  a native DataFrame.
- ``spark.read.format("iceberg").load(name or path)``: the native scan (time-travel options mapped);
  options only the Python data source understands keep that path.
- ``df.writeTo(name)``: a :class:`FloeWriterV2` for Floe tables (append, overwrite(condition),
  overwritePartitions, create, replace, createOrReplace, with using/partitionedBy/tableProperty).
- ``df.write.format("iceberg")...saveAsTable(name)`` / ``insertInto(name)`` / ``save(name)`` on Floe tables
  through Floe's native writer; ``save`` of a location or with inline ``catalog.*`` options uses the
  ``iceberg`` data source, which carries the session's catalogs to its workers.
- ``df.writeStream...toTable(name)`` / ``.format("iceberg")...start(name or path)``: Floe's exactly-once
  streaming sink (floe.spark.streaming.sink) as the query's foreachBatch, with the trigger, query name and
  checkpoint location the program set.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, DataFrameReader, DataFrameWriter, SparkSession
from pyspark.sql.classic.dataframe import (
    DataFrame as ClassicDataFrame,  # the class sessions with a JVM create
)
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from floe.catalog.names import is_location, load_table_by_name, split_name
from floe.errors import (
    FloeError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.expressions.parser import parse_filter
from floe.spark.runtime.configure import note_catalog_conf_change, session_config
from floe.spark.runtime.connect import is_connect, refuse
from floe.spark.runtime.connect_columns import column_sql, is_connect_column
from floe.spark.runtime.sql_session import (
    floe_sql_state,
    is_floe_name,
    is_inside_floe,
    routes_to_floe,
    run_statement,
)
from floe.spark.scan.table_read import load_table, read
from floe.spark.streaming.sink import StreamSink, sink_options, start_stream
from floe.spark.write.session_settings import SESSION_WRITE_OPTIONS
from floe.sql import commands as c
from floe.sql.lexer import split_statements
from floe.sql.parser import parse_statement
from floe.table.table import Table
from floe.write import write
from floe.write.upsert_mode import UPSERT_OPTION

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["TRANSPARENT_CONF", "FloeWriterV2", "detach", "install", "is_active"]

TRANSPARENT_CONF = "spark.floe.transparent"
_FORMATS = ("iceberg", "floe")
# DataFrameReader options the native read maps to floe.spark.read arguments.
_READ_OPTIONS = {
    "snapshot-id": ("snapshot_id", int),
    "as-of-timestamp": ("as_of_timestamp", int),
    "branch": ("branch", str),
    "tag": ("tag", str),
    "start-snapshot-id": ("start_snapshot_id", int),
    "end-snapshot-id": ("end_snapshot_id", int),
}
_SNAPSHOT_PROPERTY = "snapshot-property."
# Write options of writeTo / save, lower case: Iceberg's Spark write options Floe's writers honour.
_WRITE_OPTIONS = {UPSERT_OPTION, "target-file-size-bytes", "advisory-partition-size", *SESSION_WRITE_OPTIONS}


def is_active(spark: SparkSession) -> bool:
    """Whether transparent mode is on for this session (and we are not inside a Floe statement)."""
    if is_inside_floe() or not getattr(spark, "_floe_transparent", False):
        return False
    return str(spark.conf.get(TRANSPARENT_CONF, "true")).lower() != "false"


def install(spark: SparkSession) -> None:
    """Route this session's Iceberg-facing calls to Floe (idempotent; the class wrappers go in once)."""
    if is_connect(spark):
        from floe.spark.runtime.connect_routing import wrap_connect_classes

        wrap_connect_classes()
    else:
        _wrap_classes()
    spark._floe_transparent = True  # type: ignore[attr-defined]


def detach(spark: SparkSession) -> None:
    """Switch transparent mode off for this session (Spark's methods behave as without Floe)."""
    spark._floe_transparent = False  # type: ignore[attr-defined]


# -- names -------------------------------------------------------------------------------------------------
def _quoted(name: tuple[str, ...]) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in name)


def _floe_table_name(spark: SparkSession, name: str) -> tuple[str, ...] | None:
    """The parts of ``name`` when it names a table in a Floe catalog, else None."""
    if not isinstance(name, str) or is_location(name):
        return None
    try:
        parts = split_name(name)
    except ValidationError:
        return None
    return parts if is_floe_name(floe_sql_state(spark), "table", parts, spark) else None


def _select_all(spark: SparkSession, parts: tuple[str, ...], suffix: str = "") -> DataFrame:
    return run_statement(spark, parse_statement(f"SELECT * FROM {_quoted(parts)}{suffix}"))


def _load(spark: SparkSession, parts: tuple[str, ...]) -> Table:
    return floe_sql_state(spark).context.load(parts)


def _single_statement(text: str) -> c.Statement | None:
    """Floe's parse of a one-statement text, or None when Floe cannot parse it (Spark then runs it)."""
    try:
        parts = split_statements(text)
        if len(parts) != 1:
            return None
        return parse_statement(parts[0].sql, line=parts[0].line, col=parts[0].col)
    except FloeError:
        return None


# -- SparkSession ---------------------------------------------------------------------------------------
def _session_sql(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def sql(self: SparkSession, sqlQuery: str, args: Any = None, **kwargs: Any) -> DataFrame:
        if args is not None or kwargs or not is_active(self):
            return original(self, sqlQuery, args, **kwargs)
        stmt = _single_statement(sqlQuery)
        if stmt is None:
            return original(self, sqlQuery, args, **kwargs)
        if isinstance(stmt, c.SetConf):
            note_catalog_conf_change(stmt.key)
        if routes_to_floe(self, stmt):
            return run_statement(self, stmt)
        if isinstance(stmt, c.UseStmt):
            floe_sql_state(self).floe_current = False  # USE of a Spark catalog or database
        return original(self, sqlQuery, args, **kwargs)

    return sql


def _table_reader(original: Callable[..., DataFrame], session_of: Callable[[Any], SparkSession]) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def table(self: Any, tableName: str) -> DataFrame:
        spark = session_of(self)
        parts = _floe_table_name(spark, tableName) if is_active(spark) else None
        if parts is None:
            return original(self, tableName)
        return _select_all(spark, parts)

    return table


# -- DataFrameReader ------------------------------------------------------------------------------------
def _recording(original: Callable[..., Any], attr: str, record: Callable[[Any, tuple[Any, ...], dict[str, Any]], None]) -> Callable[..., Any]:
    """Wrap a builder method so the Python object remembers what was set (Spark keeps it in the JVM)."""

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        record(self, args, kwargs)
        return original(self, *args, **kwargs)

    return method


def _record_format(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    source = args[0] if args else kwargs.get("source")
    obj._floe_format = str(source).lower()


def _record_option(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    named = {**dict(zip(("key", "value"), args)), **kwargs}
    obj.__dict__.setdefault("_floe_options", {})[str(named["key"]).lower()] = named["value"]


def _record_options(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    opts = obj.__dict__.setdefault("_floe_options", {})
    for key, value in kwargs.items():
        opts[str(key).lower()] = value


def _record_mode(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    mode = args[0] if args else kwargs.get("saveMode")
    obj._floe_mode = None if mode is None else str(mode).lower()


def _record_partition_by(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    cols = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    obj._floe_partition_by = [str(x) for x in cols]


def _reader_load(original: Callable[..., DataFrame], session_of: Callable[[Any], SparkSession] = lambda r: r._spark) -> Callable[..., DataFrame]:
    @functools.wraps(original)
    def load(self: Any, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> DataFrame:
        spark: SparkSession = session_of(self)
        fmt = (format or getattr(self, "_floe_format", "") or "").lower()
        if fmt not in _FORMATS or not isinstance(path, str) or schema is not None or not is_active(spark):
            return original(self, path, format, schema, **options)
        opts = {**getattr(self, "_floe_options", {}), **{k.lower(): v for k, v in options.items()}}
        if set(opts) - set(_READ_OPTIONS):
            if is_connect(spark):
                raise refuse(f"Read option(s) {', '.join(sorted(set(opts) - set(_READ_OPTIONS)))} (the iceberg data source)")
            return original(self, path, format, schema, **options)  # options only the data source knows
        kwargs = {_READ_OPTIONS[k][0]: _READ_OPTIONS[k][1](v) for k, v in opts.items() if v is not None}
        try:
            return read(spark, path, **kwargs)
        except NoSuchTableError:
            if is_location(path) or kwargs:
                raise
            return _select_all(spark, split_name(path))  # metadata tables, branch_/tag_ names

    return load


# -- DataFrame.writeTo --------------------------------------------------------------------------------
def _column_sql(col: Column | str) -> str:
    """A partitionedBy argument as Floe's DDL reads it: ``days(ts)``, ``bucket(16, id)``, ``col``."""
    if isinstance(col, str):
        return col
    if is_connect_column(col):
        return column_sql(col)
    java: Any = col._jc  # a classic session's Column wraps a JVM expression
    return str(java.toString())


def _condition_sql(df: DataFrame, condition: Column) -> str:
    """A Column condition as SQL text (Spark's analyzed filter over the written rows' schema)."""
    if is_connect_column(condition):  # no analyzed plan to ask: the expression's own SQL spelling
        return column_sql(condition)
    filtered: Any = df.limit(0).where(condition)
    plan = filtered._jdf.queryExecution().analyzed()
    return str(plan.condition().sql())


class FloeWriterV2:
    """``df.writeTo(name)`` for a Floe table: Spark's DataFrameWriterV2 calls, done by Floe."""

    def __init__(self, df: DataFrame, name: tuple[str, ...]) -> None:
        self._df = df
        self._name = name
        self._properties: dict[str, str] = {}
        self._partitioning: list[str] = []
        self._options: dict[str, str] = {}

    # -- configuration ----------------------------------------------------------------------------
    def using(self, provider: str) -> FloeWriterV2:
        if provider.lower() not in _FORMATS:
            raise UnsupportedError(f"Table {_quoted(self._name)} is an Iceberg table: using({provider!r}) is not possible")
        return self

    def option(self, key: str, value: object) -> FloeWriterV2:
        self._options[key] = str(value)
        return self

    def options(self, **options: object) -> FloeWriterV2:
        for k, v in options.items():
            self.option(k, v)
        return self

    def tableProperty(self, property: str, value: str) -> FloeWriterV2:
        self._properties[property] = str(value)
        return self

    def partitionedBy(self, col: Column | str, *cols: Column | str) -> FloeWriterV2:
        self._partitioning = [_column_sql(x) for x in (col, *cols)]
        return self

    def clusterBy(self, col: str, *cols: str) -> FloeWriterV2:
        raise UnsupportedError(f"Table {_quoted(self._name)}: clusterBy is not supported by Iceberg tables")

    # -- writes -----------------------------------------------------------------------------------
    def _snapshot_properties(self) -> dict[str, str]:
        unknown = [k for k in self._options if not k.startswith(_SNAPSHOT_PROPERTY) and k.lower() not in _WRITE_OPTIONS]
        if unknown:
            raise UnsupportedError(
                f"Table {_quoted(self._name)}: write option {unknown[0]!r} is not supported "
                f"(supported: {', '.join(sorted(_WRITE_OPTIONS))}, {_SNAPSHOT_PROPERTY}<key>)"
            )
        return {k[len(_SNAPSHOT_PROPERTY) :]: v for k, v in self._options.items() if k.startswith(_SNAPSHOT_PROPERTY)}

    def _write_options(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self._options.items() if k.lower() in _WRITE_OPTIONS}

    def _table(self) -> Table:
        return _load(self._df.sparkSession, self._name)

    def append(self) -> None:
        props = self._snapshot_properties()
        write(self._table(), self._df, mode="append", snapshot_properties=props or None, options=self._write_options())

    def overwrite(self, condition: Column) -> None:
        props = self._snapshot_properties()
        flt = parse_filter(_condition_sql(self._df, condition))
        write(self._table(), self._df, mode="overwrite", overwrite_filter=flt, snapshot_properties=props or None,
              options=self._write_options())

    def overwritePartitions(self) -> None:
        props = self._snapshot_properties()
        write(self._table(), self._df, mode="dynamic", snapshot_properties=props or None, options=self._write_options())

    def _create_as_select(self, verb: str) -> None:
        if self._options:
            self._snapshot_properties()  # refuses options Floe does not honour
        spark = self._df.sparkSession
        view = f"__floe_write_{id(self):x}"
        self._df.createOrReplaceTempView(view)
        try:
            parts = [f"{verb} {_quoted(self._name)} USING iceberg"]
            if self._partitioning:
                parts.append(f"PARTITIONED BY ({', '.join(self._partitioning)})")
            if self._properties:
                props = ", ".join(f"'{k}'='{v}'" for k, v in self._properties.items())
                parts.append(f"TBLPROPERTIES ({props})")
            parts.append(f"AS SELECT * FROM {view}")
            run_statement(spark, parse_statement(" ".join(parts)))
        finally:
            spark.catalog.dropTempView(view)

    def create(self) -> None:
        self._create_as_select("CREATE TABLE")

    def replace(self) -> None:
        self._table()  # Spark: replacing a missing table fails (here NoSuchTableError)
        self._create_as_select("CREATE OR REPLACE TABLE")

    def createOrReplace(self) -> None:
        self._create_as_select("CREATE OR REPLACE TABLE")


def _write_to(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def writeTo(self: DataFrame, table: str) -> Any:
        spark = self.sparkSession
        parts = _floe_table_name(spark, table) if is_active(spark) else None
        return original(self, table) if parts is None else FloeWriterV2(self, parts)

    return writeTo


# -- DataFrameWriter ----------------------------------------------------------------------------------
def _save_as_table(original: Callable[..., Any], frame_of: Callable[[Any], DataFrame] = lambda w: w._df) -> Callable[..., Any]:
    @functools.wraps(original)
    def saveAsTable(self: Any, name: str, format: str | None = None, mode: str | None = None,
                    partitionBy: Any = None, **options: Any) -> None:
        df: DataFrame = frame_of(self)
        spark = df.sparkSession
        parts = _floe_table_name(spark, name) if is_active(spark) else None
        fmt = (format or getattr(self, "_floe_format", None) or "iceberg").lower()
        if parts is None or fmt not in _FORMATS:
            original(self, name, format, mode, partitionBy, **options)
            return
        how = (mode or getattr(self, "_floe_mode", None) or "errorifexists").lower()
        writer = FloeWriterV2(df, parts).options(**{**getattr(self, "_floe_options", {}), **options})
        cols = partitionBy if partitionBy is not None else getattr(self, "_floe_partition_by", [])
        if cols:
            writer.partitionedBy(*([cols] if isinstance(cols, str) else list(cols)))
        try:
            floe_sql_state(spark).context.load(parts)
            exists = True
        except NoSuchTableError:
            exists = False
        if not exists:
            writer.create()
        elif how == "append":
            writer.append()
        elif how == "overwrite":
            writer.createOrReplace()
        elif how in ("error", "errorifexists", "default"):
            raise TableAlreadyExistsError(f"Table {_quoted(parts)} already exists (saveAsTable mode {how})")
        elif how != "ignore":
            raise ValidationError(f"Unknown save mode {how!r}: append, overwrite, ignore or errorifexists")
        return

    return saveAsTable


_OVERWRITE_OPTIONS = ("overwrite-mode", "overwrite-filter", "replacewhere")


def _save(original: Callable[..., Any], frame_of: Callable[[Any], DataFrame] = lambda w: w._df) -> Callable[..., Any]:
    """``df.write.format("iceberg").save(name or location)`` on a Floe table: Spark's native writer, as
    ``writeTo`` writes.

    Modes as the ``iceberg`` data source has them: ``append``; ``overwrite`` replaces every row, the rows of
    ``overwrite-filter`` (``replaceWhere``), or with ``overwrite-mode=dynamic`` the partitions written;
    ``errorifexists`` fails and ``ignore`` does nothing (the table exists). A location names a table folder
    (a Hadoop-catalog table, or one Floe created there). Inline catalogs (``catalog.*`` options) keep the
    data source.
    """

    @functools.wraps(original)
    def save(self: Any, path: str | None = None, format: str | None = None, mode: str | None = None,
             partitionBy: Any = None, **options: Any) -> None:
        df: DataFrame = frame_of(self)
        spark = df.sparkSession
        opts = {str(k): str(v) for k, v in {**getattr(self, "_floe_options", {}), **options}.items()}
        target = path if path is not None else opts.get("path")
        fmt = (format or getattr(self, "_floe_format", None) or "").lower()
        inline = any(k.lower().startswith("catalog") for k in opts)
        native = is_active(spark) and fmt in _FORMATS and not inline
        parts = _floe_table_name(spark, target) if native and isinstance(target, str) else None
        if parts is None and not (native and isinstance(target, str) and is_location(target)):
            if is_connect(spark) and fmt in _FORMATS:
                raise refuse(f"df.write.format({fmt!r}).save with catalog options, or on a session Floe is not attached to "
                             "(the iceberg data source)")
            original(self, path, format, mode, partitionBy, **options)
            return
        assert isinstance(target, str)
        how = (mode or getattr(self, "_floe_mode", None) or "errorifexists").lower()
        # NoSuchTableError when it does not exist, as the data source
        table = _load(spark, parts) if parts is not None else load_table_by_name(target, config=session_config(spark))
        label = _quoted(parts) if parts is not None else repr(target)
        writer = FloeWriterV2(df, parts if parts is not None else (target,)).options(
            **{k: v for k, v in opts.items() if k.lower() not in (*_OVERWRITE_OPTIONS, "path")}
        )
        props = writer._snapshot_properties()  # refuses options Floe does not honour
        write_opts = writer._write_options()
        lowered = {k.lower(): v for k, v in opts.items()}
        if how == "append":
            write(table, df, mode="append", snapshot_properties=props or None, options=write_opts)
        elif how == "overwrite":
            kind = lowered.get("overwrite-mode", "static").strip().lower()
            if kind not in ("static", "dynamic"):
                raise ValidationError(f"Invalid overwrite-mode {kind!r}: expected static or dynamic")
            flt = lowered.get("overwrite-filter") or lowered.get("replacewhere")
            write(table, df, mode="dynamic" if kind == "dynamic" else "overwrite",
                  overwrite_filter=None if kind == "dynamic" else flt, snapshot_properties=props or None,
                  options=write_opts)
        elif how in ("error", "errorifexists", "default"):
            raise TableAlreadyExistsError(f"Table {label} already exists (save mode {how})")
        elif how != "ignore":
            raise ValidationError(f"Unknown save mode {how!r}: append, overwrite, ignore or errorifexists")

    return save


def _insert_into(original: Callable[..., Any], frame_of: Callable[[Any], DataFrame] = lambda w: w._df) -> Callable[..., Any]:
    @functools.wraps(original)
    def insertInto(self: Any, tableName: str, overwrite: bool | None = None) -> None:
        df: DataFrame = frame_of(self)
        spark = df.sparkSession
        parts = _floe_table_name(spark, tableName) if is_active(spark) else None
        if parts is None:
            original(self, tableName, overwrite)
            return
        replace = overwrite if overwrite is not None else getattr(self, "_floe_mode", None) == "overwrite"
        view = f"__floe_insert_{id(self):x}"
        df.createOrReplaceTempView(view)
        try:  # Spark's insertInto matches columns by position, as SQL INSERT does
            verb = "INSERT OVERWRITE" if replace else "INSERT INTO"
            run_statement(spark, parse_statement(f"{verb} {_quoted(parts)} SELECT * FROM {view}"))
        finally:
            spark.catalog.dropTempView(view)
        return

    return insertInto


# -- DataStreamWriter -----------------------------------------------------------------------------------
def _record_output_mode(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    obj._floe_output_mode = str(args[0] if args else kwargs.get("outputMode"))


def _record_trigger(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    obj._floe_trigger = dict(kwargs)


def _record_query_name(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    obj._floe_query_name = str(args[0] if args else kwargs.get("queryName"))


def _stream_to_floe(writer: Any, df: DataFrame, parts: tuple[str, ...] | None, path: str | None,
                    output_mode: str | None, partition_by: Any, query_name: str | None,
                    options: dict[str, Any]) -> StreamingQuery:
    spark = df.sparkSession
    opts = {**getattr(writer, "_floe_options", {}), **{k.lower(): v for k, v in options.items()}}
    cols = partition_by if partition_by is not None else getattr(writer, "_floe_partition_by", [])
    cols = [cols] if isinstance(cols, str) else list(cols or [])
    if parts is not None:
        name = _quoted(parts)
        try:
            _load(spark, parts)
        except NoSuchTableError:  # Spark's toTable creates a missing table from the stream's schema
            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in df.schema.fields)
            partitioned = f" PARTITIONED BY ({', '.join(f'`{c}`' for c in cols)})" if cols else ""
            run_statement(spark, parse_statement(f"CREATE TABLE {name} ({columns}) USING iceberg{partitioned}"))

        def loader() -> Table:
            return _load(spark, parts)
    else:
        assert path is not None
        name = path
        loader = _location_loader(spark, path)
        loader()  # fails now, not in the first batch, when nothing is there
    sink = StreamSink(
        load_table=loader, table_name=name,
        output_mode=output_mode or getattr(writer, "_floe_output_mode", None) or "append",
        options=sink_options(opts, table_name=name),
    )
    return start_stream(
        df, sink, checkpoint_location=opts.get("checkpointlocation"), trigger=getattr(writer, "_floe_trigger", None),
        query_name=query_name or getattr(writer, "_floe_query_name", None),
    )


def _location_loader(spark: SparkSession, path: str) -> Callable[[], Table]:
    def loader() -> Table:
        table = load_table(spark, path)
        if not isinstance(table, Table):
            raise UnsupportedError(f"Cannot write a stream to {path}: the folder is a read-only copy of a table")
        return table

    return loader


def _stream_start(original: Callable[..., StreamingQuery]) -> Callable[..., StreamingQuery]:
    @functools.wraps(original)
    def start(self: Any, path: str | None = None, format: str | None = None, outputMode: str | None = None,
              partitionBy: Any = None, queryName: str | None = None, **options: Any) -> StreamingQuery:
        df: DataFrame = self._df
        spark = df.sparkSession
        fmt = (format or getattr(self, "_floe_format", "") or "").lower()
        target = path if path is not None else getattr(self, "_floe_options", {}).get("path")
        if fmt not in _FORMATS or not isinstance(target, str) or not is_active(spark):
            return original(self, path, format, outputMode, partitionBy, queryName, **options)
        parts = _floe_table_name(spark, target)
        if parts is None and not is_location(target):
            raise NoSuchTableError(f"Cannot write a stream to {target!r}: not a table of a Floe catalog nor a location")
        return _stream_to_floe(self, df, parts, None if parts else target, outputMode, partitionBy, queryName, options)

    return start


def _stream_to_table(original: Callable[..., StreamingQuery]) -> Callable[..., StreamingQuery]:
    @functools.wraps(original)
    def toTable(self: Any, tableName: str, format: str | None = None, outputMode: str | None = None,
                partitionBy: Any = None, queryName: str | None = None, **options: Any) -> StreamingQuery:
        df: DataFrame = self._df
        spark = df.sparkSession
        parts = _floe_table_name(spark, tableName) if is_active(spark) else None
        fmt = (format or getattr(self, "_floe_format", None) or "iceberg").lower()
        if parts is None or fmt not in _FORMATS:
            return original(self, tableName, format, outputMode, partitionBy, queryName, **options)
        return _stream_to_floe(self, df, parts, None, outputMode, partitionBy, queryName, options)

    return toTable


# -- installation ---------------------------------------------------------------------------------------
_WRAPPED = False


def _record_builder_calls(cls: type, recorders: dict[str, Callable[[Any, tuple[Any, ...], dict[str, Any]], None]]) -> None:
    for attr, record in recorders.items():
        setattr(cls, attr, _recording(getattr(cls, attr), attr, record))


def _wrap_classes() -> None:
    """Wrap Spark's classic API classes once per process."""
    global _WRAPPED
    if _WRAPPED:
        return
    SparkSession.sql = _session_sql(SparkSession.sql)  # type: ignore[method-assign]
    SparkSession.table = _table_reader(SparkSession.table, lambda s: s)  # type: ignore[method-assign]
    DataFrameReader.table = _table_reader(DataFrameReader.table, lambda r: r._spark)  # type: ignore[method-assign]
    _record_builder_calls(DataFrameReader, {"format": _record_format, "option": _record_option, "options": _record_options})
    DataFrameReader.load = _reader_load(DataFrameReader.load)  # type: ignore[method-assign]
    ClassicDataFrame.writeTo = _write_to(ClassicDataFrame.writeTo)  # type: ignore[method-assign]
    _record_builder_calls(DataFrameWriter, {
        "format": _record_format, "mode": _record_mode, "option": _record_option, "options": _record_options,
        "partitionBy": _record_partition_by,
    })
    DataFrameWriter.saveAsTable = _save_as_table(DataFrameWriter.saveAsTable)  # type: ignore[method-assign]
    DataFrameWriter.insertInto = _insert_into(DataFrameWriter.insertInto)  # type: ignore[method-assign]
    DataFrameWriter.save = _save(DataFrameWriter.save)  # type: ignore[method-assign]
    _record_builder_calls(DataStreamWriter, {
        "format": _record_format, "option": _record_option, "options": _record_options,
        "outputMode": _record_output_mode, "partitionBy": _record_partition_by, "trigger": _record_trigger,
        "queryName": _record_query_name,
    })
    DataStreamWriter.start = _stream_start(DataStreamWriter.start)  # type: ignore[method-assign]
    DataStreamWriter.toTable = _stream_to_table(DataStreamWriter.toTable)  # type: ignore[method-assign]
    _WRAPPED = True
