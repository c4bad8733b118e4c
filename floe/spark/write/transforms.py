"""Iceberg partition transforms as Spark Column expressions, native (no Python) wherever they can be exact.

Results are the spec's partition values (spec "Partition Transforms"): ``year``/``month``/``day``/``hour``
give years/months/days/hours since 1970-01-01 00:00 UTC as ints (floored for earlier instants; ``day``
gives the day number, the integer behind its ``date`` result type); ``bucket`` gives ints in [0, N);
``truncate`` and ``identity`` keep the source type.

Native expressions and why they are exact:
- timestamps become epoch microseconds with ``unix_micros`` (``timestamp``/timestamptz: an instant, no
  session time zone involved) or ``timestamp_diff(MICROSECOND, 1970-01-01, ts)`` (``timestamp_ntz``);
  floors use ``m - pmod(m, unit)`` (exact long arithmetic), then one division of an exact multiple;
  dates become day numbers with ``unix_date``; months/years come from the UTC date.
- ``truncate`` on int/long is ``v - pmod(v, W)``; on decimals ``v - pmod(v, W * 10^-scale)`` (the same as
  on the unscaled value); on strings Spark's ``substring`` counts code points (UTF8String) and on
  binary bytes, as the spec requires.
- ``bucket`` on int/long/date/timestamp hashes the value as an 8-byte little-endian long with
  murmur3_x86_32 seed 0. Spark's ``Murmur3Hash`` expression over a LONG computes exactly that, but SQL
  ``hash()`` fixes seed 42, so the expression is built through the JVM with seed 0 (classic sessions).
- ``bucket`` on string/binary/decimal/uuid/time uses a vectorized Arrow UDF calling
  :meth:`BucketTransform.apply_arrow`: Spark hashes byte arrays with ``hashUnsafeBytes``, which folds
  the trailing 1-3 bytes differently from standard murmur3, and hashes decimals by their unscaled long
  or Java bytes inconsistently with the spec's minimal big-endian two's complement. The same UDF is the
  fallback for every bucket in Spark Connect sessions (no JVM access).
"""

from __future__ import annotations

import importlib.metadata
import tempfile
import threading
import zipfile
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import SparkContext
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import floe
from floe.errors import UnsupportedError
from floe.spark.runtime.java_classes import java_class
from floe.spark.types import to_spark_type
from floe.spec.partitioning import PartitionField
from floe.spec.schema import Schema
from floe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

__all__ = [
    "arrow_bucket_udf",
    "ensure_workers_import_floe",
    "epoch_micros",
    "murmur3_seed0",
    "partition_column",
    "source_column",
    "transform_column",
]

_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = 86_400_000_000
_NATIVE_BUCKET = (IntegerType, LongType, DateType, TimestampType, TimestamptzType)


def source_column(schema: Schema, source_id: int) -> Column:
    """The Spark column of a (possibly struct-nested) source field, by field id."""
    path = schema.accessor_path(source_id)
    top = schema.find_field(path[0])
    col = F.col(f"`{top.name.replace('`', '``')}`")
    parent: IcebergType = top.field_type
    for child_id in path[1:]:
        assert isinstance(parent, StructType)
        child = parent.field(child_id)
        assert child is not None
        col = col.getField(child.name)
        parent = child.field_type
    return col


_SHIPPED_APPS: set[str] = set()
_ZIP: list[str] = []


def _floe_installed() -> bool:
    try:
        importlib.metadata.distribution("floe")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def ensure_workers_import_floe(spark: SparkSession) -> None:
    """Make Python workers able to import ``floe`` (UDFs, mapInArrow and data-source tasks need it).

    When floe is an installed distribution (pip, editable included) workers import it like the driver.
    When it runs from a source tree (tests, ``PYTHONPATH``), the package is zipped once per process and
    added with ``addPyFile``, which also reaches executors in other JVMs (``local-cluster``, clusters).
    """
    if _floe_installed():
        return
    sc = getattr(spark, "sparkContext", None)
    if sc is None:  # Spark Connect: the server's workers must have floe installed
        return
    with _SHIPPING:  # concurrent group rewrites call this from several threads
        _ship_floe(sc)


_SHIPPING = threading.Lock()


def _ship_floe(sc: SparkContext) -> None:
    app = sc.applicationId
    if app in _SHIPPED_APPS:
        return
    if not _ZIP:
        root = Path(floe.__file__).resolve().parent
        target = Path(tempfile.mkdtemp(prefix="floe-pyfiles-")) / "floe.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in root.rglob("*"):
                if f.is_file() and f.suffix in (".py", ".typed") and "__pycache__" not in f.parts:
                    zf.write(f, Path("floe") / f.relative_to(root))
        _ZIP.append(str(target))
    sc.addPyFile(_ZIP[0])
    _SHIPPED_APPS.add(app)


def _jvm_session() -> Any | None:
    spark = SparkSession.getActiveSession()
    jvm = getattr(spark, "_jvm", None) if spark is not None else None
    return jvm


def murmur3_seed0(col: Column) -> Column | None:
    """Spark's ``Murmur3Hash([col], seed=0)`` as a Column, or None when the session has no JVM (Connect)."""
    jvm = _jvm_session()
    if jvm is None:
        return None
    utils = java_class(jvm, "org.apache.spark.sql.classic.ExpressionUtils")
    expr = utils.expression(col._jc)
    exprs = java_class(jvm, "java.util.ArrayList")([expr])
    children = java_class(jvm, "scala.jdk.javaapi.CollectionConverters").asScala(exprs).toSeq()
    hashed = java_class(jvm, "org.apache.spark.sql.catalyst.expressions.Murmur3Hash")(children, 0)
    return Column(utils.column(hashed))


def arrow_bucket_udf(num_buckets: int, source_type: IcebergType) -> Callable[[Column], Column]:
    """A vectorized Arrow UDF computing ``bucket[N]`` exactly as floe.spec.transforms does."""
    transform = BucketTransform(num_buckets)
    spark = SparkSession.getActiveSession()
    if spark is not None:
        ensure_workers_import_floe(spark)

    def bucket(values: pa.Array) -> pa.Array:
        if isinstance(source_type, UUIDType) and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            values = _uuid_strings_to_bytes(values)
        return transform.apply_arrow(source_type, values)

    udf: Callable[[Column], Column] = F.arrow_udf(bucket, T.IntegerType())  # type: ignore[attr-defined]  # pyspark>=4.1, not in its stubs
    return udf


def _uuid_strings_to_bytes(values: pa.Array) -> pa.Array:
    import uuid

    return pa.array([None if v is None else uuid.UUID(v).bytes for v in values.to_pylist()], pa.binary(16))


def epoch_micros(col: Column, source_type: IcebergType) -> Column:
    """Microseconds since 1970-01-01T00:00 (UTC) of a Spark timestamp / timestamp_ntz column."""
    if isinstance(source_type, TimestamptzType):
        return F.unix_micros(col)
    return F.timestamp_diff("MICROSECOND", F.lit("1970-01-01 00:00:00").cast("timestamp_ntz"), col)


def _floor_div(value: Column, unit: int) -> Column:
    # value - pmod(value, unit) is an exact multiple of unit; dividing it as double and rounding is exact
    # for every long because the double error is far below 0.5 at these magnitudes.
    return F.round((value - F.pmod(value, F.lit(unit))) / F.lit(unit)).cast("int")


def _epoch_days(col: Column, source_type: IcebergType) -> Column:
    if isinstance(source_type, DateType):
        return F.unix_date(col)
    return _floor_div(epoch_micros(col, source_type), _MICROS_PER_DAY)


def _utc_date(col: Column, source_type: IcebergType) -> Column:
    return col if isinstance(source_type, DateType) else F.date_from_unix_date(_epoch_days(col, source_type))


def _bucket(transform: BucketTransform, source_type: IcebergType, col: Column) -> Column:
    n = transform.num_buckets
    if isinstance(source_type, _NATIVE_BUCKET):
        if isinstance(source_type, (IntegerType, LongType)):
            as_long = col.cast("long")
        elif isinstance(source_type, DateType):
            as_long = F.unix_date(col).cast("long")
        else:
            as_long = epoch_micros(col, source_type)
        hashed = murmur3_seed0(as_long)
        if hashed is not None:
            # null in, null out: Murmur3Hash returns the seed for null, so mask it
            return F.when(col.isNull(), F.lit(None).cast("int")).otherwise(
                (hashed.bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(n)).cast("int")
            )
    return arrow_bucket_udf(n, source_type)(col)


def _truncate(transform: TruncateTransform, source_type: IcebergType, col: Column) -> Column:
    w = transform.width
    if isinstance(source_type, IntegerType):
        return (col - F.pmod(col, F.lit(w))).cast("int")
    if isinstance(source_type, LongType):
        return col - F.pmod(col, F.lit(w).cast("long"))
    if isinstance(source_type, (StringType, BinaryType, FixedType)):
        return F.substring(col, 1, w)
    if isinstance(source_type, DecimalType):
        p, s = source_type.precision, source_type.scale
        step = F.lit(Decimal(w).scaleb(-s)).cast(T.DecimalType(38, s))
        return (col - F.pmod(col, step)).cast(T.DecimalType(p, s))
    raise UnsupportedError(f"truncate[{w}] cannot apply to {source_type}")


def transform_column(transform: Transform, source_type: IcebergType, col: Column) -> Column:
    """The partition value of ``col`` (of Iceberg type ``source_type``) under ``transform``.

    Raises:
        UnsupportedError: the transform does not apply to the type.
    """
    if not transform.can_transform(source_type) and not isinstance(transform, VoidTransform):
        raise UnsupportedError(f"Transform {transform} cannot apply to {source_type}")
    if isinstance(transform, IdentityTransform):
        return col
    if isinstance(transform, VoidTransform):
        return F.lit(None).cast(to_spark_type(transform.result_type(source_type)))
    if isinstance(transform, BucketTransform):
        return _bucket(transform, source_type, col)
    if isinstance(transform, TruncateTransform):
        return _truncate(transform, source_type, col)
    if isinstance(transform, HourTransform):
        return _floor_div(epoch_micros(col, source_type), _MICROS_PER_HOUR)
    if isinstance(transform, DayTransform):
        return _epoch_days(col, source_type)
    if isinstance(transform, MonthTransform):
        d = _utc_date(col, source_type)
        return ((F.year(d) - F.lit(1970)) * F.lit(12) + F.month(d) - F.lit(1)).cast("int")
    if isinstance(transform, YearTransform):
        return (F.year(_utc_date(col, source_type)) - F.lit(1970)).cast("int")
    raise UnsupportedError(f"Transform {transform} has no Spark expression")


def partition_column(field: PartitionField, schema: Schema) -> Column:
    """The partition value column of one partition field over a DataFrame laid out as ``schema``."""
    source_type = schema.find_type(field.source_id)
    return transform_column(field.transform, source_type, source_column(schema, field.source_id))
