"""ORC data files read natively by Spark: each file's columns get Iceberg ids, then are renamed and cast.

Spark's ORC reader matches columns by name and has no ``_metadata.row_index``: each file's schema is read
on the driver (the file tail only), its columns get ids (``iceberg.id`` attributes, else the name mapping,
else the schema's names), and files with the same schema are read together by their own names, then
renamed/cast to the read schema (:func:`orc_read_plan`). Files with position deletes (which need row
positions) stay on the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.io.arrow_schema import field_id_of
from floe.io.fileio import FileIO
from floe.io.name_mapping import NameMapping
from floe.scan.arrow_read import orc_schema_with_ids
from floe.spark.runtime.connect import is_connect, refuse
from floe.spark.runtime.java_classes import java_class
from floe.spark.scan.row_columns import quoted
from floe.spark.types import to_spark_type
from floe.spec.schema import Schema
from floe.spec.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = ["OrcNotNative", "TimeZones", "lazy_time_zones", "orc_read_plan", "probe_orc_schemas"]


class OrcNotNative(Exception):
    """A file column Spark's ORC reader cannot return as the table's type (read on the driver instead)."""


def probe_orc_schemas(io: FileIO, locations: list[str], mapping: NameMapping) -> dict[str, pa.Schema]:
    """ORC file schemas with field ids, read in parallel."""
    from pyarrow import orc  # imported on first ORC read only

    def probe(loc: str) -> tuple[str, pa.Schema]:
        with io.new_input(loc).open() as fo:
            schema = orc.ORCFile(fo).schema
        return loc, orc_schema_with_ids(schema, mapping)

    with ThreadPoolExecutor(8) as pool:
        return dict(pool.map(probe, locations))


_Convert = Callable[[Column], Column] | None  # None: the column is already the table's type


@dataclass(frozen=True)
class TimeZones:
    """Spark reads ORC TIMESTAMP (no zone) as wall time in the JVM's zone; turning it back needs both zones."""

    session: str
    jvm: str

    def wall_time(self, col: Column) -> Column:
        ntz = col.cast(T.TimestampNTZType())
        if self.session == self.jvm:
            return ntz
        return F.convert_timezone(F.lit(self.session), F.lit(self.jvm), ntz)


def _orc_primitive(at: pa.DataType) -> T.DataType:
    if pa.types.is_boolean(at):
        return T.BooleanType()
    if pa.types.is_int8(at):
        return T.ByteType()
    if pa.types.is_int16(at):
        return T.ShortType()
    if pa.types.is_int32(at):
        return T.IntegerType()
    if pa.types.is_int64(at):
        return T.LongType()
    if pa.types.is_float32(at):
        return T.FloatType()
    if pa.types.is_float64(at):
        return T.DoubleType()
    if pa.types.is_decimal(at):
        return T.DecimalType(at.precision, at.scale)
    if pa.types.is_string(at) or pa.types.is_large_string(at):
        return T.StringType()
    if pa.types.is_binary(at) or pa.types.is_large_binary(at) or pa.types.is_fixed_size_binary(at):
        return T.BinaryType()
    if pa.types.is_date32(at):
        return T.DateType()
    if pa.types.is_timestamp(at):
        return T.TimestampType()
    raise OrcNotNative(str(at))


def _orc_read_type(
    t: IcebergType, at: pa.DataType, zones: Callable[[], TimeZones]
) -> tuple[T.DataType, _Convert]:
    """The Spark type to request for a file column (its own names and types) and how to make it ``t``."""
    if isinstance(t, StructType):
        if not pa.types.is_struct(at):
            raise OrcNotNative(str(at))
        by_id = {field_id_of(at.field(i)): at.field(i) for i in range(at.num_fields)}
        requested: list[T.StructField] = []
        parts: list[tuple[NestedField, str | None, _Convert]] = []
        for c in t.fields:
            af = by_id.get(c.field_id)
            if af is None:
                parts.append((c, None, None))
                continue
            rt, conv = _orc_read_type(c.field_type, af.type, zones)
            requested.append(T.StructField(af.name, rt, True))
            parts.append((c, af.name, conv))
        if not requested:
            raise OrcNotNative("a struct none of whose fields the file has")
        if all(name == c.name and conv is None for c, name, conv in parts):
            return T.StructType(requested), None

        def struct(col: Column) -> Column:
            fields = []
            for c, name, conv in parts:
                if name is None:
                    v = F.lit(None).cast(to_spark_type(c.field_type, for_files=True))
                else:
                    v = col.getField(name) if conv is None else conv(col.getField(name))
                fields.append(v.alias(c.name))
            return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*fields))

        return T.StructType(requested), struct
    if isinstance(t, ListType):
        if not (pa.types.is_list(at) or pa.types.is_large_list(at)):
            raise OrcNotNative(str(at))
        rt, conv = _orc_read_type(t.element_type, at.value_type, zones)
        return T.ArrayType(rt, True), None if conv is None else (lambda col: F.transform(col, conv))
    if isinstance(t, MapType):
        if not pa.types.is_map(at):
            raise OrcNotNative(str(at))
        kt, kconv = _orc_read_type(t.key_type, at.key_type, zones)
        vt, vconv = _orc_read_type(t.value_type, at.item_type, zones)
        if kconv is None and vconv is None:
            return T.MapType(kt, vt, True), None

        def remap(col: Column) -> Column:
            out = col if kconv is None else F.transform_keys(col, lambda k, _v: kconv(k))
            return out if vconv is None else F.transform_values(out, lambda _k, v: vconv(v))

        return T.MapType(kt, vt, True), remap
    rt = _orc_primitive(at)
    target = to_spark_type(t, for_files=True)
    if rt == target and not (isinstance(target, T.TimestampType) and at.tz is None):
        return rt, None
    if isinstance(rt, T.TimestampType):
        if isinstance(target, T.TimestampNTZType):
            return rt, lambda col: zones().wall_time(col)
        if isinstance(target, T.TimestampType):  # a zone-less file column read as UTC, as Iceberg Java does
            return rt, lambda col: F.convert_timezone(
                F.lit("UTC"), F.lit(zones().session), zones().wall_time(col)
            ).cast(target)
        raise OrcNotNative(f"{at} as {target.simpleString()}")
    if not isinstance(target, (T.NumericType, T.StringType, T.BinaryType, T.BooleanType, T.DateType)):
        raise OrcNotNative(f"{at} as {target.simpleString()}")
    return rt, lambda col: col.cast(target)



def orc_read_plan(
    schema: pa.Schema, read_schema: Schema, names: dict[int, str], zones: Callable[[], TimeZones]
) -> tuple[T.StructType, list[Column]]:
    """The read schema of one ORC file layout (file names, file types) and the columns it becomes.

    ``names`` maps each top-level field id of ``read_schema`` to the name its column gets.

    Raises:
        OrcNotNative: a file column Spark's ORC reader cannot return as the table's type.
    """
    by_id = {field_id_of(f): f for f in schema}
    requested: list[T.StructField] = []
    columns: list[Column] = []
    for f in read_schema.fields:
        name = names[f.field_id]
        af = by_id.get(f.field_id)
        if af is None:
            columns.append(F.lit(None).cast(to_spark_type(f.field_type, for_files=True)).alias(name))
            continue
        rt, conv = _orc_read_type(f.field_type, af.type, zones)
        requested.append(T.StructField(af.name, rt, True))
        col = F.col(quoted(af.name))
        columns.append((col if conv is None else conv(col)).alias(name))
    if not requested:  # no column to read, only rows to count: a column no file has reads as nulls
        requested.append(T.StructField("_floe_rows", T.IntegerType(), True))
    return T.StructType(requested), columns


def lazy_time_zones(spark: SparkSession) -> Callable[[], TimeZones]:
    """The session and JVM time zones, looked up once and only when an ORC timestamp needs them.

    Executors are assumed to run with the driver JVM's default zone (true for local mode and for
    clusters configured alike)."""
    found: list[TimeZones] = []

    def get() -> TimeZones:
        if not found:
            session_tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
            if is_connect(spark):
                raise refuse("Reading timestamps of ORC data files (the server JVM's default time zone)")
            jvm = spark.sparkContext._jvm
            assert jvm is not None  # a classic session (the read path needs the JVM)
            found.append(TimeZones(session_tz, str(java_class(jvm, "java.util.TimeZone").getDefault().getID())))
        return found[0]

    return get

