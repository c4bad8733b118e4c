"""Floe's Parquet settings as options of Spark's Parquet writer (parquet-mr reads them from the job's
configuration), so that Spark-written files take the table's codec, level, page row limit, Bloom filters and
statistics settings as pyarrow's do."""

from __future__ import annotations

from floe.spec.parquet_columns import ColumnSettings
from floe.write.parquet_files import ParquetSettings

__all__ = ["spark_parquet_options"]

_SPARK_CODECS = {"none": "uncompressed", "uncompressed": "uncompressed"}
# Hadoop's zlib codec (parquet-mr's gzip) takes its level as the name of a ZlibCompressor.CompressionLevel.
_ZLIB_LEVELS = ("NO_COMPRESSION", "BEST_SPEED", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT",
                "BEST_COMPRESSION")


def spark_parquet_options(settings: ParquetSettings, columns: ColumnSettings | None = None) -> dict[str, str]:
    """``compression``, the codec's level, the page row limit and the per-column options for
    ``DataFrameWriter.options`` (sizes of row groups, pages and dictionaries are set by the caller)."""
    options = {
        "compression": _SPARK_CODECS.get(settings.compression, settings.compression),
        "parquet.page.row.count.limit": str(settings.page_rows),
    }
    level = settings.compression_level
    if level is not None and settings.compression == "zstd":
        options["parquet.compression.codec.zstd.level"] = str(level)
    elif level is not None and settings.compression == "gzip":
        options["zlib.compress.level"] = _ZLIB_LEVELS[level]
    elif level is not None and settings.compression == "brotli":
        options["compression.brotli.quality"] = str(level)
    if columns is None or not settings.column_settings:
        return options
    if columns.bloom_filters:
        options["parquet.bloom.filter.max.bytes"] = str(settings.bloom_filter_max_bytes)
        if settings.bloom_filter_adaptive:
            options["parquet.bloom.filter.adaptive.enabled"] = "true"
    for path in columns.without_statistics:
        options[f"parquet.column.statistics.enabled#{path}"] = "false"
    for c in columns.bloom_filters:
        options[f"parquet.bloom.filter.enabled#{c.parquet_path}"] = "true"
        options[f"parquet.bloom.filter.fpp#{c.parquet_path}"] = repr(c.fpp)
        if c.ndv is not None:
            options[f"parquet.bloom.filter.expected.ndv#{c.parquet_path}"] = str(c.ndv)
    return options
