"""floe.spark.write.transforms (native Spark expressions) against floe.transforms for random values."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import mmh3
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from floe.io.arrow_schema import type_to_arrow
from floe.spark.write.transforms import murmur3_seed0, transform_column
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)

COLUMNS = {
    "i": IntegerType(),
    "l": LongType(),
    "ntz": TimestampType(),
    "tz": TimestamptzType(),
    "d": DateType(),
    "s": StringType(),
    "dec": DecimalType(12, 2),
    "b": BinaryType(),
}
DDL = "i int, l long, ntz timestamp_ntz, tz timestamp, d date, s string, dec decimal(12,2), b binary"


def _random_rows(n: int, seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    epoch = dt.datetime(1970, 1, 1)
    rows: list[tuple[object, ...]] = []
    for k in range(n):
        us = rng.randint(-10**16, 10**16) if k % 3 else rng.randint(-10**11, 10**11)  # around the epoch too
        t = epoch + dt.timedelta(microseconds=us)
        rows.append((
            rng.randint(-2**31, 2**31 - 1),
            rng.randint(-2**63, 2**63 - 1),
            t,
            t.replace(tzinfo=dt.timezone.utc),
            t.date(),
            "".join(rng.choice("ab😀é€") for _ in range(rng.randint(0, 7))),
            Decimal(rng.randint(-10**9, 10**9)).scaleb(-2),
            bytes(rng.randrange(256) for _ in range(rng.randint(0, 9))),
        ))
    rows.append((None,) * len(COLUMNS))
    return rows


TRANSFORMS = [BucketTransform(16), BucketTransform(7), TruncateTransform(10), TruncateTransform(3), YearTransform(),
              MonthTransform(), DayTransform(), HourTransform()]


def test_spark_transforms_match_floe_transforms_for_random_values(spark: SparkSession) -> None:
    rows = _random_rows(400, seed=11)
    df = spark.createDataFrame(rows, DDL)
    cases = [(c, t, tr) for c, t in COLUMNS.items() for tr in TRANSFORMS if tr.can_transform(t)]
    assert len(cases) >= 30
    out = df.select(*[transform_column(tr, t, F.col(c)).alias(f"r{k}") for k, (c, t, tr) in enumerate(cases)]).toArrow()
    arrow_schema = pa.schema([(c, type_to_arrow(t)) for c, t in COLUMNS.items()])
    src = pa.Table.from_pylist([dict(zip(COLUMNS, r)) for r in rows], schema=arrow_schema)
    for k, (c, t, tr) in enumerate(cases):
        expected = tr.apply_arrow(t, src.column(c))
        if pa.types.is_date(expected.type):
            expected = expected.cast(pa.int32())  # the day transform's value is the day number
        assert out.column(f"r{k}").to_pylist() == expected.to_pylist(), f"{tr} on {t}"


def test_spark_identity_is_the_column(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1,), (None,)], "i int")
    assert [r[0] for r in df.select(transform_column(IdentityTransform(), IntegerType(), F.col("i"))).collect()] == [1, None]


@pytest.mark.parametrize("seed", [1, 2])
def test_murmur3_seed0_on_long_is_iceberg_hash(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.randint(-2**63, 2**63 - 1) for _ in range(200)] + [0, -1, 34, 2**63 - 1, -2**63]
    df = spark.createDataFrame([(v,) for v in values], "v long")
    hashed = murmur3_seed0(F.col("v"))
    assert hashed is not None
    got = [r[0] for r in df.select(hashed).collect()]
    assert got == [mmh3.hash(v.to_bytes(8, "little", signed=True), 0) for v in values]


def test_spark_string_hash_differs_from_murmur3_for_odd_lengths(spark: SparkSession) -> None:
    # Why strings use an Arrow UDF: Spark's Murmur3Hash folds trailing bytes unlike murmur3_x86_32.
    hashed = murmur3_seed0(F.col("s"))
    assert hashed is not None
    got = spark.createDataFrame([("iceberg",)], "s string").select(hashed).collect()[0][0]
    assert mmh3.hash(b"iceberg", 0) == 1210000089
    assert got != 1210000089


def test_partition_dir_values_decode_to_floe_values() -> None:
    from floe.spark.write.layout import decode_partition_dirs
    from floe.spec.partitioning import PartitionSpecBuilder
    from floe.spec.schema import Schema
    from floe.spec.types import NestedField

    schema = Schema(
        NestedField(1, "s", StringType()), NestedField(2, "d", DateType()), NestedField(3, "dec", DecimalType(9, 2)),
        NestedField(4, "b", BinaryType()), NestedField(5, "ts", TimestampType()),
    )
    spec = PartitionSpecBuilder(schema).identity("s").identity("d").identity("dec").identity("b").day("ts").build()
    rel = f"_floe_p0=x{'é/'.encode().hex()}/_floe_p1=-3/_floe_p2=x{b'-1.50'.hex()}/_floe_p3=x/_floe_p4=__HIVE_DEFAULT_PARTITION__"
    assert decode_partition_dirs(rel, spec, schema) == ("é/", -3, Decimal("-1.50"), b"", None)
