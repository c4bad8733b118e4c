"""Iceberg's Spark functions (``<catalog>.system.bucket``, ``truncate``, ``years``, ``months``, ``days``,
``hours``, ``iceberg_version``) bound to argument types, as Iceberg Java 1.10 binds them on Spark.

Spark types the arguments (floe.sql.functions asks it, see there); this module checks them as Java does
(same refusals, one line), and returns Spark SQL for the call over Arrow UDFs registered in the session.
The values come from floe.spec.transforms, the implementation partition values use: ``bucket`` hashes with
:meth:`BucketTransform.hashes_arrow` (the ``% N`` stays in SQL, so ``N`` may be a column, as in Java),
``truncate`` and the temporal functions run ``Transform.apply_arrow``. Result types are Java's: ``int``
for bucket/years/months/hours, ``date`` for days, the argument's type for truncate (``int`` for
tinyint/smallint, which Java widens).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from floe.errors import UnsupportedError, ValidationError
from floe.spark.runtime.connect import require_python_workers
from floe.spec.transforms import (
    DayTransform,
    HourTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = ["FUNCTIONS", "ArgInfo", "bind_call"]

FUNCTIONS = frozenset({"bucket", "truncate", "years", "months", "days", "hours", "iceberg_version"})

_JAVA_PACKAGE = "org.apache.iceberg.spark.functions."
_WIDTH_TYPES = ("tinyint", "smallint", "int")
_INTS = ("tinyint", "smallint", "int")
_BUCKET_VALUES = (*_INTS, "bigint", "date", "timestamp", "timestamp_ntz", "string", "binary")
_TRUNCATE_VALUES = (*_INTS, "bigint", "string", "binary")
_TEMPORAL = {"years": YearTransform(), "months": MonthTransform(), "days": DayTransform(), "hours": HourTransform()}
_TEMPORAL_CLASS = {"years": "Years", "months": "Months", "days": "Days", "hours": "Hours"}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """One argument as Spark analysed it: its type (``simpleString``), how Spark prints it in a result
    column name (``shown`` when the function takes the type as is, ``shown_cast`` when Spark casts it),
    and its value when it is a constant (``foldable``)."""

    spark_type: str
    shown: str
    shown_cast: str
    foldable: bool
    value: Any = None


@dataclass(frozen=True, slots=True)
class BoundCall:
    """A call bound to its argument types: the Spark SQL computing it and Java's result column name."""

    sql: str
    column_name: str


def _iceberg_type(spark_type: str) -> IcebergType:
    """The Iceberg type of a Spark argument type floe.spec.transforms computes over (Arrow values from Spark)."""
    m = _DECIMAL.fullmatch(spark_type)
    if m:
        return DecimalType(int(m.group(1)), int(m.group(2)))
    types: dict[str, IcebergType] = {
        "tinyint": IntegerType(), "smallint": IntegerType(), "int": IntegerType(), "bigint": LongType(),
        "date": DateType(), "timestamp": TimestamptzType(), "timestamp_ntz": TimestampType(),
        "string": StringType(), "binary": BinaryType(),
    }
    return types[spark_type]


def _java_type_name(spark_type: str) -> str:
    """Spark's Scala name of a type as Java's result column names print it (``DecimalType(9,2)``)."""
    m = _DECIMAL.fullmatch(spark_type)
    if m:
        return f"DecimalType({m.group(1)},{m.group(2)})"
    return {
        "tinyint": "ByteType", "smallint": "ShortType", "int": "IntegerType", "bigint": "LongType",
        "date": "DateType", "timestamp": "TimestampType", "timestamp_ntz": "TimestampNTZType",
        "string": "StringType", "binary": "BinaryType",
    }[spark_type]


def _refuse(name: str, args: list[ArgInfo], reason: str) -> ValidationError:
    types = ", ".join(a.spark_type for a in args)
    return ValidationError(f"Function '{name}' cannot process input: ({types}): {reason}")


def _widened(arg_sql: str, spark_type: str) -> tuple[str, str]:
    """tinyint/smallint values are taken as int, as Java's functions declare them."""
    if spark_type in ("tinyint", "smallint"):
        return f"CAST({arg_sql} AS INT)", "int"
    return arg_sql, spark_type


def _column_name(java_class: str, result: str, args: list[ArgInfo], declared: list[str], *, nulls: bool = True) -> str:
    shown = [a.shown if _java_type_name(a.spark_type) == d else a.shown_cast for a, d in zip(args, declared)]
    parts = [f"class {_JAVA_PACKAGE}{java_class}", result, "invoke", *shown, *declared,
             "false", "true" if nulls else "false", "true"]
    return f"staticinvoke({', '.join(parts)})"


def _udf_name(*parts: object) -> str:
    return "__floe_iceberg_" + "_".join(re.sub(r"\W", "_", str(p)) for p in parts)


def _register(spark: SparkSession, name: str, transform: Transform | None, source: IcebergType,
              result_type: str) -> None:
    """Register the Arrow UDF ``name``: ``transform.apply_arrow`` (None: the bucket hash, masked positive)."""
    from pyspark.sql import functions as F

    from floe.spark.write.transforms import ensure_workers_import_floe
    from floe.spec.transforms import BucketTransform

    require_python_workers(spark, f"Iceberg's SQL function {name}")
    ensure_workers_import_floe(spark)
    if spark.catalog.functionExists(name):  # registered by an earlier statement of this session
        return

    def run(values: pa.Array) -> pa.Array:
        import numpy as np
        import pyarrow as pa

        from floe.spec.transforms._arrow import from_numpy, validity

        if transform is None:
            hashes = BucketTransform(1).hashes_arrow(source, values)
            return from_numpy((hashes.astype(np.int64) & 0x7FFFFFFF).astype(np.int32), validity(values), pa.int32())
        out = transform.apply_arrow(source, values)
        return out.cast(pa.date32()) if result_type == "date" else out

    import pyarrow as pa

    run.__annotations__ = {"values": pa.Array, "return": pa.Array}  # Spark reads the UDF kind from these
    udf = F.arrow_udf(run, result_type)  # type: ignore[attr-defined]  # pyspark>=4.1, not in its stubs
    spark.udf.register(name, udf)


def bind_call(spark: SparkSession, name: str, arg_sql: list[str], args: list[ArgInfo]) -> BoundCall:
    """Spark SQL for ``<catalog>.system.<name>(args)`` given Spark's analysis of the arguments.

    Raises:
        ValidationError: the arguments are not what the function takes (Java's message).
        UnsupportedError: a ``truncate`` width that is not a constant.
    """
    if name == "iceberg_version":
        if args:
            raise _refuse(name, args, "Wrong number of inputs (expected none).")
        import floe

        cls = "IcebergVersionFunction$IcebergVersionFunctionImpl"
        return BoundCall(f"'{floe.__version__}'", _column_name(cls, "StringType", [], [], nulls=False))
    if name in ("bucket", "truncate"):
        return _bind_bucket(spark, arg_sql, args) if name == "bucket" else _bind_truncate(spark, arg_sql, args)
    if name in _TEMPORAL:
        return _bind_temporal(spark, name, arg_sql, args)
    raise UnsupportedError(f"Unknown Iceberg function {name!r}")


def _check_pair(name: str, args: list[ArgInfo], first: tuple[str, str], values: tuple[str, ...], expected: str) -> None:
    """Java's checks of (count or width, value) functions, with its messages."""
    if len(args) != 2:
        raise _refuse(name, args, f"Wrong number of inputs (expected {first[0]} and value).")
    if args[0].spark_type not in _WIDTH_TYPES:
        raise _refuse(name, args, f"Expected {first[1]} to be tinyint, shortint or int.")
    if args[1].spark_type not in values and not _DECIMAL.fullmatch(args[1].spark_type):
        raise _refuse(name, args, f"Expected {expected}.")


def _bind_bucket(spark: SparkSession, arg_sql: list[str], args: list[ArgInfo]) -> BoundCall:
    _check_pair("bucket", args, ("numBuckets", "number of buckets"), _BUCKET_VALUES,
                "column to be date, tinyint, smallint, int, bigint, decimal, timestamp, string, or binary")
    value, vtype = _widened(arg_sql[1], args[1].spark_type)
    source = _iceberg_type(vtype)
    udf = _udf_name("bucket_hash", vtype)
    _register(spark, udf, None, source, "int")
    kind = ("Int" if vtype in ("int", "date") else "Long" if vtype in ("bigint", "timestamp", "timestamp_ntz")
            else "Decimal" if isinstance(source, DecimalType) else "String" if vtype == "string" else "Binary")
    name = _column_name(f"BucketFunction$Bucket{kind}", "IntegerType", args, ["IntegerType", _java_type_name(vtype)])
    return BoundCall(f"({udf}({value}) % CAST({arg_sql[0]} AS INT))", name)


def _bind_truncate(spark: SparkSession, arg_sql: list[str], args: list[ArgInfo]) -> BoundCall:
    _check_pair("truncate", args, ("width", "truncation width"), _TRUNCATE_VALUES,
                "truncation col to be tinyint, shortint, int, bigint, decimal, string, or binary")
    w, v = args
    if not w.foldable:
        raise UnsupportedError(f"truncate: the width {arg_sql[0]} must be a constant in Floe (it is a column)")
    if not isinstance(w.value, int) or w.value <= 0:
        raise ValidationError(f"truncate: invalid width {w.value!r} (must be a positive int)")
    value, vtype = _widened(arg_sql[1], v.spark_type)
    source = _iceberg_type(vtype)
    udf = _udf_name("truncate", w.value, vtype)
    _register(spark, udf, TruncateTransform(w.value), source, vtype)
    kind = {"int": "Int", "bigint": "BigInt", "string": "String", "binary": "Binary"}.get(vtype, "Decimal")
    result = _java_type_name(vtype)
    name = _column_name(f"TruncateFunction$Truncate{kind}", result, args, ["IntegerType", result])
    return BoundCall(f"{udf}({value})", name)


def _bind_temporal(spark: SparkSession, name: str, arg_sql: list[str], args: list[ArgInfo]) -> BoundCall:
    if len(args) != 1:
        raise _refuse(name, args, "Wrong number of inputs (expected value).")
    (v,) = args
    accepted = ("timestamp", "timestamp_ntz") if name == "hours" else ("date", "timestamp", "timestamp_ntz")
    if v.spark_type not in accepted:
        what = "timestamp" if name == "hours" else "date or timestamp"
        raise _refuse(name, args, f"Expected value to be {what}: {v.spark_type}.")
    result = "date" if name == "days" else "int"
    udf = _udf_name(name, v.spark_type)
    _register(spark, udf, _TEMPORAL[name], _iceberg_type(v.spark_type), result)
    source = {"date": "Date", "timestamp": "Timestamp", "timestamp_ntz": "TimestampNtz"}[v.spark_type]
    unit = _TEMPORAL_CLASS[name]
    column = _column_name(f"{unit}Function${source}To{unit}Function", "DateType" if result == "date" else "IntegerType",
                          args, [_java_type_name(v.spark_type)])
    return BoundCall(f"{udf}({arg_sql[0]})", column)
