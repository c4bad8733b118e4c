"""Bucket numbers (of 1000) a Spark Connect session computes with Floe's SQL murmur3 (nothing of Floe's on the
server), for values the test also hashes with the spec's transform.

Usage: python bucket_hashes.py URL VALUES_JSON   ({"long": [...], "string": [...], "binary": [hex or null]})
Prints ``RESULT`` and the same keys with the bucket numbers.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from floe.spark.write.transforms import murmur3_bytes_expression, murmur3_long_expression

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
values = json.loads(sys.argv[2])


def buckets(rows: list[object], ddl: str, hashed: Column) -> list[object]:
    df = spark.createDataFrame([(v,) for v in rows], ddl)
    return [r[0] for r in df.select((hashed.bitwiseAND(F.lit(0x7FFFFFFF)) % 1000).alias("b")).collect()]


binaries = [None if v is None else bytes.fromhex(v) for v in values["binary"]]
print("RESULT " + json.dumps({
    "long": buckets(values["long"], "v bigint", murmur3_long_expression(F.col("v"))),
    "string": buckets(values["string"], "v string", murmur3_bytes_expression(F.col("v"), text=True)),
    "binary": buckets(binaries, "v binary", murmur3_bytes_expression(F.col("v"), text=False)),
}))
