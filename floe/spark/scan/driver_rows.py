"""Small tables the driver holds (file -> sequence number, file -> URI) handed to Spark as Arrow, or as a
literal map in the plan when they are few entries, and empty frames of a schema.

A list of tuples becomes a Python RDD: every query using it then runs a job in Python workers just to
produce a few rows (about 0.1-0.2 s each on a 2-core machine). An Arrow table is shipped to the JVM once.
Even an empty list becomes an RDD whose collect runs a job; an empty frame is a local relation made in the
JVM (Spark's ``createDataFrame(java.util.List, StructType)``), which any schema Spark parses can type.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from floe.expressions.to_spark_sql import spark_string
from floe.spark.runtime.connect import is_connect
from floe.spark.runtime.java_classes import java_class
from floe.spark.scan.row_columns import quoted

__all__ = [
    "INLINE_ENTRIES", "LONG_ARRAY_COLUMN", "STRING_ARRAY_COLUMN", "DriverBytes", "arrow_frame", "driver_bytes", "driver_frame", "empty_frame",
    "literal_lookup", "long_array_frame", "looked_up", "note_driver_bytes", "spark_xxhash64",
]

# Keys up to which a lookup is a literal map in the plan (:func:`looked_up`) rather than a
# relation joined by broadcast: the relation is a Spark job of its own (about 0.05 s with its scheduling),
# while Spark looks a key up in a literal map by comparing it with each key in turn (a few ns per key).
INLINE_ENTRIES = 16
# The one column of :func:`long_array_frame`'s relation.
LONG_ARRAY_COLUMN = "_floe_words"
STRING_ARRAY_COLUMN = "_floe_strings"  # beside it, when strings go with the words


@dataclass
class DriverBytes:
    """Bytes of the rows the driver handed Spark while a DataFrame was built (:func:`driver_bytes`)."""

    total: int = 0


# The count of the DataFrame being built on this thread, if one is counted.
_BUILT = threading.local()


@contextmanager
def driver_bytes() -> Iterator[DriverBytes]:
    """Counts the bytes of rows the driver hands Spark while the block builds a DataFrame (its plan holds
    them for as long as it lives); an enclosing count gets them too."""
    outer: DriverBytes | None = getattr(_BUILT, "count", None)
    _BUILT.count = count = DriverBytes()
    try:
        yield count
    finally:
        _BUILT.count = outer
        if outer is not None:
            outer.total += count.total


def note_driver_bytes(n: int) -> None:
    """Adds ``n`` bytes the driver handed Spark (or a relation reused from a cache) to the count, if any."""
    count: DriverBytes | None = getattr(_BUILT, "count", None)
    if count is not None:
        count.total += n


def arrow_frame(spark: SparkSession, table: pa.Table, schema: T.StructType | str | None = None) -> DataFrame:
    """``spark.createDataFrame(table[, schema])``, its bytes counted (:func:`driver_bytes`)."""
    note_driver_bytes(table.nbytes)
    return spark.createDataFrame(table) if schema is None else spark.createDataFrame(table, schema)


def driver_frame(spark: SparkSession, columns: Mapping[str, pa.Array], *, required: Collection[str] = ()) -> DataFrame:
    """A relation of the given columns (equal lengths; their Arrow types become the Spark types), the
    ``required`` ones typed non-null."""
    schema = pa.schema([pa.field(name, a.type, nullable=name not in required) for name, a in columns.items()])
    table = pa.table(dict(columns), schema=schema)
    if not table.num_rows and is_connect(spark):  # Connect infers no schema from an empty Arrow table
        return spark.createDataFrame([], schema=from_arrow_schema(schema))
    return arrow_frame(spark, table)


def empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """No rows of ``schema`` (nullability and field metadata kept) as a local relation: no job to collect."""
    if is_connect(spark):  # Connect sends the schema with the (empty) local relation
        return spark.createDataFrame([], schema)
    session = spark._jsparkSession
    rows = java_class(spark._jvm, "java.util.ArrayList")()
    return DataFrame(session.createDataFrame(rows, session.parseDataType(schema.json())), spark)


def looked_up(df: DataFrame, key: str, keys: Sequence[str], values: Mapping[str, pa.Array]) -> DataFrame:
    """The rows of ``df`` whose ``key`` column holds one of ``keys``, with ``values`` added (a column per
    name, the value at the key's index; no nulls): from literal maps in the plan for a few keys, else from
    a relation joined by broadcast."""
    if len(keys) > INLINE_ENTRIES:
        lookup = driver_frame(df.sparkSession, {"_floe_lookup_key": pa.array(keys, pa.string()), **values})
        return df.join(F.broadcast(lookup), F.col(quoted(key)) == F.col("_floe_lookup_key")).drop("_floe_lookup_key")
    added = [literal_lookup(key, keys, column).alias(name) for name, column in values.items()]
    return df.select("*", *added).where(F.col(quoted(next(iter(values)))).isNotNull())


def literal_lookup(key: str, keys: Sequence[str], values: pa.Array) -> Column:
    """The value at the index of column ``key``'s string in ``keys``, null for any other string: a literal
    map in the plan (for a few keys: Spark compares with each in turn)."""
    text = pa.types.is_string(values.type)
    entries = ", ".join(
        f"{spark_string(k)}, {spark_string(v) if text else int(v)}" for k, v in zip(keys, values.to_pylist(), strict=True)
    )
    return F.expr(f"map({entries})[{quoted(key)}]").cast(_SPARK_TYPES[str(values.type)])


_SPARK_TYPES = {"string": "string", "int32": "int", "int64": "bigint"}


def long_array_frame(spark: SparkSession, words: np.ndarray, strings: Sequence[str | None] | None = None) -> DataFrame:
    """``words`` (64-bit) as a one-row local relation of an array<bigint> (and ``strings``, if given, as an
    array<string> in :data:`STRING_ARRAY_COLUMN`), joined by broadcast: Spark collects it once per query
    without a job, plans print the relation rather than its values (the SQL status store keeps the plans'
    text), and values read from it are not literals in the generated code. Shipped as Arrow (through a
    file, and kept as Spark's binary row format: for 10 MB, 0.03-0.09 s to build and 0.12 s a query, against
    0.15-0.3 s and 0.15-0.2 s for a ``long[]`` through py4j, which Spark boxes element by element)."""
    values = pa.array([np.ascontiguousarray(words).view(np.int64)], pa.list_(pa.field("element", pa.int64(), nullable=False)))
    columns = [values]
    fields = [pa.field(LONG_ARRAY_COLUMN, values.type, nullable=False)]
    if strings is not None:
        columns.append(pa.array([list(strings)], pa.list_(pa.string())))
        fields.append(pa.field(STRING_ARRAY_COLUMN, columns[-1].type, nullable=False))
    return arrow_frame(spark, pa.table(columns, schema=pa.schema(fields)))


# Strings up to which spark_xxhash64 calls Spark's hash function once each through py4j (about 0.7 ms a
# string) rather than collecting a query over a local relation (about 65 ms whatever the count).
_DIRECT_HASHES = 64
_XXHASH64_SEED = 42  # Spark's xxhash64(...) seed


def spark_xxhash64(spark: SparkSession, values: Sequence[str]) -> list[int]:
    """Spark's ``xxhash64`` of each string, computed by Spark on the driver: its own function called for a
    few strings (classic sessions), else a query over a local relation (no job)."""
    if not values:
        return []
    if len(values) <= _DIRECT_HASHES and not is_connect(spark):
        jvm = spark._jvm
        xxh64 = java_class(jvm, "org.apache.spark.sql.catalyst.expressions.XXH64")
        utf8 = java_class(jvm, "org.apache.spark.unsafe.types.UTF8String")
        return [int(xxh64.hashUTF8String(utf8.fromString(v), _XXHASH64_SEED)) for v in values]
    rows = driver_frame(spark, {"v": pa.array(list(values), pa.string())}).select(F.xxhash64("v").alias("h")).collect()
    return [int(r["h"]) for r in rows]
