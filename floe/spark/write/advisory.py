"""The size Spark's adaptive execution packs a write's shuffle partitions to, as Iceberg on Spark asks for it.

A write that shuffles (``hash`` or ``range`` distribution, position deletes grouped by file) ends in as many
tasks as adaptive execution makes of the shuffle, and each task writes its own files: the partition size decides
how many files a range-distributed write produces and how many partitions share a task. Iceberg Java hands Spark
an advisory size per write: the ``advisory-partition-size`` write option, else the session's
``spark.sql.iceberg.advisory-partition-size``, else ``write.spark.advisory-partition-size-bytes``, else the
expected file size (128 MB for data, 32 MB for deletes) times how much the shuffle's rows shrink when written
as compressed Parquet, and never below Spark's own ``spark.sql.adaptive.advisoryPartitionSizeInBytes``. Floe
resolves the same size and sets Spark's advisory size for the duration of the write's job (PySpark has no
per-shuffle advisory size).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.spec import properties as P

__all__ = [
    "ADVISORY_PARTITION_SIZE_OPTION",
    "ADVISORY_PARTITION_SIZE_SESSION_CONF",
    "advisory_partition_bytes",
    "shuffle_compression_ratio",
    "spark_byte_size",
    "write_advisory_size",
]

ADVISORY_PARTITION_SIZE_OPTION = "advisory-partition-size"  # Iceberg's Spark write option of the same name
ADVISORY_PARTITION_SIZE_SESSION_CONF = "spark.sql.iceberg.advisory-partition-size"  # Iceberg's SparkSQLProperties
SPARK_ADVISORY_CONF = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
_EXPECTED_DATA_FILE_BYTES = 128 * 1024 * 1024
_EXPECTED_DELETE_FILE_BYTES = 32 * 1024 * 1024

# How much a shuffle's bytes shrink once written as Parquet with a codec, by (shuffle codec, Parquet codec):
# Iceberg Java's estimates (SparkCompressionUtil), so both engines size a write's tasks alike. Other pairs: 2.
_COLUMNAR_RATIOS: dict[tuple[str, str], float] = {
    **{("none", out): 4.0 for out in ("zstd", "gzip", "zlib")},
    **{("none", out): 3.0 for out in ("snappy", "lz4")},
    **{("zstd", out): 2.0 for out in ("zstd", "gzip", "zlib")},
    **{("zstd", out): 1.5 for out in ("snappy", "lz4")},
    **{(shuffle, out): 3.0 for shuffle in ("snappy", "lz4") for out in ("zstd", "gzip", "zlib")},
    **{(shuffle, out): 2.0 for shuffle in ("snappy", "lz4") for out in ("snappy", "lz4")},
}
_DEFAULT_RATIO = 2.0

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
          "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}
_BYTE_STRING = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")


def spark_byte_size(text: str) -> int:
    """Bytes of a Spark size setting (``67108864``, ``64m``, ``64MB``; binary units, as Spark reads them).

    Raises:
        ValidationError: not a size.
    """
    m = _BYTE_STRING.match(text.lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValidationError(f"Invalid size {text!r}: expected bytes, optionally with a unit (b, k, m, g, t, p)")
    return int(m.group(1)) * _UNITS[m.group(2)]


def shuffle_compression_ratio(shuffle_codec: str, parquet_codec: str) -> float:
    """How many shuffle bytes make one byte of Parquet (``shuffle_codec`` is ``none`` when shuffles are not
    compressed)."""
    return _COLUMNAR_RATIOS.get((shuffle_codec.strip().lower(), parquet_codec.strip().lower()), _DEFAULT_RATIO)


def advisory_partition_bytes(
    properties: Mapping[str, str], options: Mapping[str, str], *, shuffle_codec: str, spark_advisory: int,
    deletes: bool = False, table_name: str = "", session: Mapping[str, str] | None = None,
) -> int:
    """The advisory shuffle partition size of a write of data files (or, with ``deletes``, delete files): the
    ``advisory-partition-size`` option, else the session's ``spark.sql.iceberg.advisory-partition-size``
    (in ``session``), else ``write.spark.advisory-partition-size-bytes``, else the expected file size times the
    shuffle's compression ratio, raised to Spark's own advisory size (Iceberg Java's order).

    Raises:
        ValidationError: the option, session setting or property is not a positive integer (names the table).
    """
    sources = (
        (ADVISORY_PARTITION_SIZE_OPTION, options), (ADVISORY_PARTITION_SIZE_SESSION_CONF, session or {}),
        (P.SPARK_WRITE_ADVISORY_PARTITION_SIZE_BYTES, properties),
    )
    for key, source in sources:
        raw = source.get(key)
        if raw is None:
            continue
        try:
            size = int(str(raw).strip())
        except ValueError:
            size = 0
        if size <= 0:
            raise ValidationError(f"Table {table_name}: invalid {key} {raw!r}: expected a positive number of bytes")
        return size
    codec = P.parquet_codec_and_level(properties, deletes=deletes)[0]
    expected = _EXPECTED_DELETE_FILE_BYTES if deletes else _EXPECTED_DATA_FILE_BYTES
    return max(int(expected * shuffle_compression_ratio(shuffle_codec, codec)), spark_advisory)


def _shuffle_codec(spark: SparkSession) -> str:
    if str(spark.conf.get("spark.shuffle.compress", "true")).strip().lower() == "false":
        return "none"
    return str(spark.conf.get("spark.io.compression.codec", "lz4"))


# Spark reads its advisory size from the session's configuration when a shuffle stage completes, so the
# size is set for the whole job. Writes that overlap in one session share the setting: the largest size any of
# them asked for holds until the last one ends, then the session's own value comes back.
@dataclass
class _Overlap:
    """The running writes of one session: the session's own advisory bytes and setting, and their sizes."""

    baseline: int
    setting: str | None  # the session's value of SPARK_ADVISORY_CONF, None when unset
    sizes: list[int] = field(default_factory=list)


_LOCK = threading.Lock()
_RUNNING: dict[int, _Overlap] = {}  # id(session) -> its running writes


@contextmanager
def write_advisory_size(
    spark: SparkSession, properties: Mapping[str, str], options: Mapping[str, str], *, deletes: bool = False,
    table_name: str = "",
) -> Iterator[int]:
    """Run a write's job with the advisory partition size Iceberg on Spark would ask for; yields the size.

    Raises:
        ValidationError: an invalid option, session setting or property (before anything is set).
    """
    key = id(spark)
    with _LOCK:
        running = _RUNNING.get(key) or _Overlap(
            spark_byte_size(str(spark.conf.get(SPARK_ADVISORY_CONF))), spark.conf.get(SPARK_ADVISORY_CONF, None)
        )
        chosen = spark.conf.get(ADVISORY_PARTITION_SIZE_SESSION_CONF, None)
        size = advisory_partition_bytes(
            properties, options, shuffle_codec=_shuffle_codec(spark), spark_advisory=running.baseline,
            deletes=deletes, table_name=table_name,
            session={} if chosen is None else {ADVISORY_PARTITION_SIZE_SESSION_CONF: chosen},
        )
        _RUNNING[key] = running
        running.sizes.append(size)
        spark.conf.set(SPARK_ADVISORY_CONF, str(max(running.sizes)))
    try:
        yield size
    finally:
        with _LOCK:
            running.sizes.remove(size)
            if running.sizes:
                spark.conf.set(SPARK_ADVISORY_CONF, str(max(running.sizes)))
            else:
                del _RUNNING[key]
                if running.setting is None:
                    spark.conf.unset(SPARK_ADVISORY_CONF)
                else:
                    spark.conf.set(SPARK_ADVISORY_CONF, running.setting)
