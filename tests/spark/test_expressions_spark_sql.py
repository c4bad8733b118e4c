"""Spark evaluates the SQL from ``to_spark_sql`` exactly as Floe's row evaluator does (nulls, NaN,
typed literals, LIKE escapes, quoted and nested columns)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import TYPE_CHECKING

from floe.expressions import bind, convert_literal, evaluate, parse_filter, rewrite_not, to_spark_sql
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "dt", DateType()),
    NestedField(6, "ts", TimestampType()),
    NestedField(7, "tz", TimestamptzType()),
    NestedField(8, "dec", DecimalType(9, 2)),
    NestedField(9, "b", BinaryType()),
    NestedField(10, "point", StructType(NestedField(11, "x", IntegerType()))),
    NestedField(12, "a b", IntegerType()),
)
EPOCH = dt.datetime(1970, 1, 1)
F01 = float(convert_literal(0.1, FloatType(), column="f"))  # type: ignore[arg-type]  # 0.1 as float32 holds it
UTC = dt.timezone.utc

# (id, s, d, f, dt, ts, tz, dec, b, point.x, a b) in Floe's representation
ROWS = [
    (1, "abc", 1.5, F01, 18962, 1638352800000000, 1638352800000000, Decimal("1.50"), b"\x01\x02", 1, 7),
    (2, None, math.nan, math.nan, None, None, None, None, None, None, None),
    (3, "a%b_c", -2.0, 2.5, 0, 0, -1, Decimal("-3.25"), b"", 5, 0),
    (4, "it's", None, None, -1, -86400000000, 86400000000, Decimal("2.00"), b"\xff", 3, None),
    (5, "ab\\c", math.inf, 1.0, 18963, 1638400000000000, 1638316800000000, Decimal("0.01"), b"\x01", None, 3),
]

FILTERS = [
    "id = 3",
    "id != 3",
    "s = 'abc'",
    "s != 'abc'",
    "s like 'ab%'",
    "s not like 'ab%'",
    "s like 'a\\%b%'",
    "s like 'ab\\\\%'",
    "s = 'it\\'s'",
    "s in ('abc', 'it\\'s')",
    "s not in ('abc', 'zz')",
    "s is null",
    "d > 1",
    "d >= -2",
    "d < 2",
    "d <= 1.5",
    "d = 1.5",
    "d != 1.5",
    "d is nan",
    "d is not nan",
    "not (d > 1)",
    "f = 0.1",
    "f > 0.5",
    "f in (0.1, 2.5)",
    "dt = '2021-12-01'",
    "dt < '1970-01-01'",
    "dt >= '2021-12-01'",
    "ts = '2021-12-01T10:00:00'",
    "ts < '1970-01-01T00:00:00'",
    "ts >= '2021-12-01T00:00:00'",
    "tz = '2021-12-01T11:00:00+01:00'",
    "tz < '1970-01-01T00:00:00Z'",
    "tz > '2021-12-01T00:00:00+00:00'",
    "dec = 1.5",
    "dec > 0",
    "dec in (2, -3.25)",
    "b = X'0102'",
    "b < X'02'",
    "b != X''",
    "point.x < 4",
    "point.x is null",
    "`a b` in (0, 3)",
    "not (`a b` = 7 or id in (4, 5))",
    "id < 3 and (s is not null or d is nan)",
]


def _spark_value(col: str, v: object) -> object:
    if v is None:
        return None
    if col == "dt":
        return dt.date(1970, 1, 1) + dt.timedelta(days=v)  # type: ignore[arg-type]
    if col == "ts":
        return EPOCH + dt.timedelta(microseconds=v)  # type: ignore[arg-type]
    if col == "tz":
        return (EPOCH + dt.timedelta(microseconds=v)).replace(tzinfo=UTC)  # type: ignore[arg-type]
    if col == "b":
        return bytearray(v)  # type: ignore[arg-type]
    return v


def test_to_spark_sql_matches_row_evaluator(spark: SparkSession) -> None:
    from pyspark.sql import types as T

    SBinary, SDate, SDecimal, SDouble, SFloat = (
        T.BinaryType,
        T.DateType,
        T.DecimalType,
        T.DoubleType,
        T.FloatType,
    )
    SInt, SLong, SString, StructField, SStruct = (
        T.IntegerType,
        T.LongType,
        T.StringType,
        T.StructField,
        T.StructType,
    )
    TimestampNTZType, STimestamp = T.TimestampNTZType, T.TimestampType

    spark_schema = SStruct(
        [
            StructField("id", SLong(), False),
            StructField("s", SString()),
            StructField("d", SDouble()),
            StructField("f", SFloat()),
            StructField("dt", SDate()),
            StructField("ts", TimestampNTZType()),
            StructField("tz", STimestamp()),
            StructField("dec", SDecimal(9, 2)),
            StructField("b", SBinary()),
            StructField("point", SStruct([StructField("x", SInt())])),
            StructField("a b", SInt()),
        ]
    )
    names = ["id", "s", "d", "f", "dt", "ts", "tz", "dec", "b", "x", "a b"]
    data = []
    for row in ROWS:
        values = [_spark_value(n, v) for n, v in zip(names, row)]
        values[9] = None if row[9] is None else (row[9],)
        data.append(tuple(values))
    df = spark.createDataFrame(data, spark_schema)
    bound = [bind(SCHEMA, parse_filter(text)) for text in FILTERS]
    columns = [f"coalesce({to_spark_sql(b)}, false) AS c{i}" for i, b in enumerate(bound)]
    got = {r["id"]: r for r in df.selectExpr("id", *columns).collect()}
    for i, (text, b) in enumerate(zip(FILTERS, bound)):
        rewritten = rewrite_not(b)
        for row in ROWS:
            as_tuple = (*row[:9], None if row[9] is None else (row[9],), row[10])
            expected = evaluate(rewritten, as_tuple)
            assert got[row[0]][f"c{i}"] == expected, f"{text} -> {to_spark_sql(b)} on row {row[0]}"
