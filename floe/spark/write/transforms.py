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
from pyspark.sql.utils import is_remote

import floe
from floe.errors import UnsupportedError
from floe.spark.runtime.connect import refuse
from floe.spark.runtime.connect_columns import column_sql
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
    "murmur3_bytes_expression",
    "murmur3_long_expression",
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


_MASK32 = 0xFFFFFFFF
_LET_DEPTH = [0]


def _let(value: str, body: Callable[[str], str]) -> str:
    """SQL for ``body(value)`` with ``value`` computed once (a lambda over a one-element array), so the text
    stays linear in size where ``body`` uses its argument several times."""
    _LET_DEPTH[0] += 1
    name = f"_floe_w{_LET_DEPTH[0]}"
    try:
        return f"transform(array({value}), {name} -> {body(name)})[0]"
    finally:
        _LET_DEPTH[0] -= 1


def _mul32(a: str, c: int) -> str:
    """``a * c`` modulo 2^32 for ``a`` in [0, 2^32), in bigint without overflow (16-bit halves)."""
    return _let(a, lambda x: f"((({x} & 65535) * {c}L + shiftleft((shiftright({x}, 16) * {c}L) & 65535, 16)) & {_MASK32}L)")


def _rotl32(a: str, r: int) -> str:
    return _let(a, lambda x: f"((shiftleft({x}, {r}) & {_MASK32}L) | shiftright({x}, {32 - r}))")


def _mix_k1(k: str) -> str:
    return _mul32(_rotl32(_mul32(k, 0xCC9E2D51), 15), 0x1B873593)


def _mix_h1(h: str, k: str) -> str:
    return f"(({_mul32(_rotl32(f'({h} ^ {k})', 13), 5)} + {0xE6546B64}L) & {_MASK32}L)"


def _xor_shift(h: str, r: int) -> str:
    return _let(h, lambda x: f"({x} ^ shiftright({x}, {r}))")


def murmur3_long_expression(col: Column) -> Column:
    """murmur3_x86_32 (seed 0) of a bigint column's 8 little-endian bytes, as a signed int Column: the
    value Spark's ``Murmur3Hash(seed=0)`` gives, as SQL any session (Spark Connect) can send. Unsigned
    32-bit words are kept in bigints, so ANSI overflow checks never fire; SQL text rather than a Column
    tree, whose nesting exceeds the depth Connect's protobuf decoder accepts."""

    def hashed(v: str) -> str:
        low, high = f"({v} & {_MASK32}L)", f"(shiftright({v}, 32) & {_MASK32}L)"
        return _fmix(_mix_h1(_mix_h1("0L", _mix_k1(low)), _mix_k1(high)), "8L")

    return F.expr(_let(f"CAST({column_sql(col)} AS BIGINT)", hashed))


def _fmix(h: str, length: str) -> str:
    h = _xor_shift(f"({h} ^ {length})", 16)
    h = _xor_shift(_mul32(h, 0x85EBCA6B), 13)
    h = _xor_shift(_mul32(h, 0xC2B2AE35), 16)
    # the unsigned word as Java's int: values >= 2^31 are negative there
    return _let(h, lambda x: f"CAST(IF({x} >= {1 << 31}L, {x} - {1 << 32}L, {x}) AS INT)")


def _le_word(hexed: str, offset: str) -> str:
    """The little-endian unsigned word whose bytes start at (0-based) byte ``offset`` of the hex text
    ``hexed``; fewer than 4 bytes there give the word of those (murmur3's tail)."""
    parts = ", ".join(f"substr({hexed}, 2 * ({offset}) + {2 * i + 1}, 2)" for i in (3, 2, 1, 0))
    return f"CAST(conv(concat({parts}), 16, 10) AS BIGINT)"


def murmur3_bytes_expression(col: Column, *, text: bool) -> Column:
    """murmur3_x86_32 (seed 0) of a binary column's bytes (``text``: a string's UTF-8 bytes), as a signed
    int Column, in SQL any session (Spark Connect) can send: the 4-byte blocks folded with ``aggregate``,
    then the tail and the final mix, as the spec's bucket transform hashes them. Null in, null out."""
    source = f"encode({column_sql(col)}, 'UTF-8')" if text else column_sql(col)

    def hashed(b: str) -> str:
        def over_hex(hx: str) -> str:
            def over_blocks(n: str) -> str:
                blocks = f"filter(sequence(0, {n}), _floe_i -> _floe_i < {n})"
                body = _mix_h1("_floe_h", _mix_k1(_le_word(hx, "4 * _floe_i")))
                h = f"aggregate({blocks}, 0L, (_floe_h, _floe_i) -> {body})"
                tail = f"IF(octet_length({b}) % 4 = 0, 0L, {_mix_k1(_le_word(hx, f'4 * {n}'))})"
                return _fmix(f"({h} ^ {tail})", f"CAST(octet_length({b}) AS BIGINT)")

            return _let(f"CAST(octet_length({b}) DIV 4 AS INT)", over_blocks)

        return f"IF({b} IS NULL, CAST(NULL AS INT), {_let(f'hex({b})', over_hex)})"

    return F.expr(_let(source, hashed))


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
        # Spark Connect: no JVM to build Murmur3Hash with seed 0 in; the same hash as plain expressions
        hashed = murmur3_long_expression(as_long) if is_remote() else murmur3_seed0(as_long)
        if hashed is not None:
            # null in, null out: Murmur3Hash returns the seed for null, so mask it
            return F.when(col.isNull(), F.lit(None).cast("int")).otherwise(
                (hashed.bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(n)).cast("int")
            )
    if is_remote() and isinstance(source_type, (StringType, BinaryType, FixedType)):
        return (murmur3_bytes_expression(col, text=isinstance(source_type, StringType)).bitwiseAND(F.lit(0x7FFFFFFF))
                % F.lit(n)).cast("int")
    if is_remote():
        raise refuse(f"bucket[{n}] of a {source_type} column (an Arrow UDF in Python workers)")
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
