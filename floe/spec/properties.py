"""Every table property key Floe reads or writes, with its default, in one place.

Names are the spec's / Iceberg Java's ``TableProperties`` keys so tables stay interchangeable with other
engines. Sizes are bytes, durations milliseconds. Use :func:`property_int` / :func:`property_bool` to read a
typed value from a table's string properties map with the right default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from floe.errors import UnsupportedError, ValidationError

__all__ = [
    "COMMIT_MAX_RETRY_WAIT_MS",
    "COMMIT_MAX_RETRY_WAIT_MS_DEFAULT",
    "COMMIT_MIN_RETRY_WAIT_MS",
    "COMMIT_MIN_RETRY_WAIT_MS_DEFAULT",
    # commit
    "COMMIT_NUM_RETRIES",
    "COMMIT_NUM_RETRIES_DEFAULT",
    "COMMIT_NUM_STATUS_CHECKS",
    "COMMIT_NUM_STATUS_CHECKS_DEFAULT",
    "COMMIT_TOTAL_RETRY_TIME_MS",
    "COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT",
    "COPY_ON_WRITE",
    "CURRENT_SNAPSHOT_ID",
    # write
    "DEFAULT_FILE_FORMAT",
    "DEFAULT_FILE_FORMAT_DEFAULT",
    "DEFAULT_FORMAT_VERSION",
    "DELETE_DEFAULT_FILE_FORMAT",
    "DELETE_DISTRIBUTION_MODE",
    "DELETE_GRANULARITY",
    "DELETE_GRANULARITY_DEFAULT",
    "DELETE_ISOLATION_LEVEL",
    "DELETE_MODE",
    "DELETE_PARQUET_COMPRESSION",
    "DELETE_PARQUET_COMPRESSION_LEVEL",
    "DELETE_PARQUET_DICT_SIZE_BYTES",
    "DELETE_PARQUET_PAGE_ROW_LIMIT",
    "DELETE_PARQUET_PAGE_SIZE_BYTES",
    "DELETE_PARQUET_ROW_GROUP_SIZE_BYTES",
    "DELETE_TARGET_FILE_SIZE_BYTES",
    "DELETE_TARGET_FILE_SIZE_BYTES_DEFAULT",
    "ENCRYPTION_TABLE_KEY",
    # metadata / format
    "FORMAT_VERSION",
    "GC_ENABLED",
    "GC_ENABLED_DEFAULT",
    "ISOLATION_LEVEL_DEFAULT",
    "LOCATION_PROPERTIES",
    "MANIFEST_MERGE_ENABLED",
    "MANIFEST_MERGE_ENABLED_DEFAULT",
    "MANIFEST_MIN_MERGE_COUNT",
    "MANIFEST_MIN_MERGE_COUNT_DEFAULT",
    "MANIFEST_TARGET_SIZE_BYTES",
    "MANIFEST_TARGET_SIZE_BYTES_DEFAULT",
    "MAX_REF_AGE_MS",
    "MAX_REF_AGE_MS_DEFAULT",
    # snapshot expiry / gc
    "MAX_SNAPSHOT_AGE_MS",
    "MAX_SNAPSHOT_AGE_MS_DEFAULT",
    "MERGE_DISTRIBUTION_MODE",
    "MERGE_ISOLATION_LEVEL",
    "MERGE_MODE",
    "MERGE_ON_READ",
    "METADATA_COMPRESSION",
    "METADATA_COMPRESSION_DEFAULT",
    "METADATA_DELETE_AFTER_COMMIT_ENABLED",
    "METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT",
    "METADATA_PREVIOUS_VERSIONS_MAX",
    "METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT",
    "METRICS_MAX_INFERRED_COLUMN_DEFAULTS",
    "METRICS_MAX_INFERRED_COLUMN_DEFAULTS_DEFAULT",
    "METRICS_MODE_COLUMN_PREFIX",
    "METRICS_MODE_DEFAULT",
    "METRICS_MODE_DEFAULT_DEFAULT",
    "MIN_SNAPSHOTS_TO_KEEP",
    "MIN_SNAPSHOTS_TO_KEEP_DEFAULT",
    "OBJECT_STORE_ENABLED",
    "OBJECT_STORE_ENABLED_DEFAULT",
    "OBJECT_STORE_PATH",
    "PARQUET_BLOOM_FILTER_ADAPTIVE_ENABLED",
    "PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX",
    "PARQUET_BLOOM_FILTER_COLUMN_FPP_DEFAULT",
    "PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX",
    "PARQUET_BLOOM_FILTER_COLUMN_NDV_PREFIX",
    "PARQUET_BLOOM_FILTER_MAX_BYTES",
    "PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT",
    "PARQUET_CODECS",
    "PARQUET_COLUMN_STATS_ENABLED_PREFIX",
    "PARQUET_COMPRESSION",
    "PARQUET_COMPRESSION_DEFAULT",
    "PARQUET_COMPRESSION_LEVEL",
    "PARQUET_COMPRESSION_LEVELS",
    "PARQUET_DICT_SIZE_BYTES",
    "PARQUET_DICT_SIZE_BYTES_DEFAULT",
    "PARQUET_PAGE_ROW_LIMIT",
    "PARQUET_PAGE_ROW_LIMIT_DEFAULT",
    "PARQUET_PAGE_SIZE_BYTES",
    "PARQUET_PAGE_SIZE_BYTES_DEFAULT",
    "PARQUET_ROW_GROUP_SIZE_BYTES",
    "PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT",
    "RESERVED_PROPERTIES",
    "ROW_LEVEL_MODE_DEFAULT",
    "ROW_LINEAGE",
    "SCHEMA_NAME_MAPPING_DEFAULT",
    "SNAPSHOT_ID_INHERITANCE_ENABLED",
    "SPARK_WRITE_ACCEPT_ANY_SCHEMA",
    "SPARK_WRITE_ADVISORY_PARTITION_SIZE_BYTES",
    "SPLIT_LOOKBACK",
    "SPLIT_LOOKBACK_DEFAULT",
    "SPLIT_OPEN_FILE_COST",
    "SPLIT_OPEN_FILE_COST_DEFAULT",
    # read
    "SPLIT_SIZE",
    "SPLIT_SIZE_DEFAULT",
    "SUPPORTED_FORMAT_VERSIONS",
    "UPDATE_DISTRIBUTION_MODE",
    "UPDATE_ISOLATION_LEVEL",
    "UPDATE_MODE",
    "UUID",
    "WAP_ID",
    "WRITE_AUDIT_PUBLISH_ENABLED",
    "WRITE_DATA_LOCATION",
    "WRITE_DISTRIBUTION_MODE",
    "WRITE_DISTRIBUTION_MODE_DEFAULT",
    "WRITE_FOLDER_STORAGE_LOCATION",
    "WRITE_LOCATION_PROVIDER_IMPL",
    "WRITE_METADATA_LOCATION",
    "WRITE_OBJECT_STORAGE_LOCATION",
    "WRITE_PARTITION_SUMMARY_LIMIT",
    "WRITE_PARTITION_SUMMARY_LIMIT_DEFAULT",
    "WRITE_TARGET_FILE_SIZE_BYTES",
    "WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT",
    "check_location_provider",
    "check_written_format",
    "parquet_codec_and_level",
    "persisted_properties",
    "property_bool",
    "property_int",
    "property_probability",
    "property_str",
    "validate_compression",
    "validate_property_values",
]

# --- format / metadata ---------------------------------------------------------------------------
# Reserved: accepted at create time (they steer metadata) but never stored in the properties map.
FORMAT_VERSION = "format-version"
DEFAULT_FORMAT_VERSION = 2
SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
UUID = "uuid"
CURRENT_SNAPSHOT_ID = "current-snapshot-id"
RESERVED_PROPERTIES = frozenset(
    {
        FORMAT_VERSION,
        UUID,
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)

METADATA_COMPRESSION = "write.metadata.compression-codec"
METADATA_COMPRESSION_DEFAULT = "none"
METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT = 100
METADATA_DELETE_AFTER_COMMIT_ENABLED = "write.metadata.delete-after-commit.enabled"
METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT = False
SCHEMA_NAME_MAPPING_DEFAULT = "schema.name-mapping.default"

# --- write ---------------------------------------------------------------------------------------
DEFAULT_FILE_FORMAT = "write.format.default"
DEFAULT_FILE_FORMAT_DEFAULT = "parquet"
DELETE_DEFAULT_FILE_FORMAT = "write.delete.format.default"
WRITE_TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT = 512 * 1024 * 1024
DELETE_TARGET_FILE_SIZE_BYTES = "write.delete.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_BYTES_DEFAULT = 64 * 1024 * 1024
PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_DEFAULT = "zstd"
PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
# Delete files take write.delete.parquet.<x> where set, else write.parquet.<x> (codec, level and sizes).
DELETE_PARQUET_COMPRESSION = "write.delete.parquet.compression-codec"
DELETE_PARQUET_COMPRESSION_LEVEL = "write.delete.parquet.compression-level"
DELETE_PARQUET_ROW_GROUP_SIZE_BYTES = "write.delete.parquet.row-group-size-bytes"
DELETE_PARQUET_PAGE_SIZE_BYTES = "write.delete.parquet.page-size-bytes"
DELETE_PARQUET_DICT_SIZE_BYTES = "write.delete.parquet.dict-size-bytes"
DELETE_PARQUET_PAGE_ROW_LIMIT = "write.delete.parquet.page-row-limit"
PARQUET_PAGE_ROW_LIMIT = "write.parquet.page-row-limit"
PARQUET_PAGE_ROW_LIMIT_DEFAULT = 20_000
PARQUET_COLUMN_STATS_ENABLED_PREFIX = "write.parquet.stats-enabled.column."  # + column name: false drops its stats
WRITE_LOCATION_PROVIDER_IMPL = "write.location-provider.impl"  # a Java class: refused (Floe cannot load one)
PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT = 128 * 1024 * 1024
PARQUET_PAGE_SIZE_BYTES = "write.parquet.page-size-bytes"
PARQUET_PAGE_SIZE_BYTES_DEFAULT = 1024 * 1024
PARQUET_DICT_SIZE_BYTES = "write.parquet.dict-size-bytes"
PARQUET_DICT_SIZE_BYTES_DEFAULT = 2 * 1024 * 1024
# Bloom filters, per column (+ the column's Iceberg name, as `st.x` or `arr.element`): enabled (true|false), the
# false-positive probability and the expected number of distinct values; without an NDV the bitset takes the
# whole max-bytes, as parquet-mr sizes it for Iceberg Java.
PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX = "write.parquet.bloom-filter-enabled.column."
PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX = "write.parquet.bloom-filter-fpp.column."
PARQUET_BLOOM_FILTER_COLUMN_FPP_DEFAULT = 0.01
PARQUET_BLOOM_FILTER_COLUMN_NDV_PREFIX = "write.parquet.bloom-filter-ndv.column."
PARQUET_BLOOM_FILTER_MAX_BYTES = "write.parquet.bloom-filter-max-bytes"
PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT = 1024 * 1024
# parquet-mr sizes each filter for the chunk's actual NDV (smallest candidate that keeps the FPP); pyarrow always does.
PARQUET_BLOOM_FILTER_ADAPTIVE_ENABLED = "write.parquet.bloom-filter-adaptive-enabled"
# The codecs Iceberg names, and the levels of those that have levels (both writers accept these ranges).
PARQUET_CODECS = ("zstd", "gzip", "snappy", "lz4", "brotli", "uncompressed", "none")
PARQUET_COMPRESSION_LEVELS = {"zstd": (-131072, 22), "gzip": (0, 9), "brotli": (0, 11)}
METRICS_MODE_DEFAULT = "write.metadata.metrics.default"
METRICS_MODE_DEFAULT_DEFAULT = "truncate(16)"
METRICS_MODE_COLUMN_PREFIX = "write.metadata.metrics.column."  # + column name
METRICS_MAX_INFERRED_COLUMN_DEFAULTS = "write.metadata.metrics.max-inferred-column-defaults"
METRICS_MAX_INFERRED_COLUMN_DEFAULTS_DEFAULT = 100
WRITE_DISTRIBUTION_MODE = "write.distribution-mode"
WRITE_DISTRIBUTION_MODE_DEFAULT = "hash"  # Java's default for partitioned tables: none | hash | range
# Row-level rewrites (copy-on-write DELETE/UPDATE/MERGE): hash (default) keeps each rewritten file's rows together
DELETE_DISTRIBUTION_MODE = "write.delete.distribution-mode"
UPDATE_DISTRIBUTION_MODE = "write.update.distribution-mode"
MERGE_DISTRIBUTION_MODE = "write.merge.distribution-mode"
OBJECT_STORE_ENABLED = "write.object-storage.enabled"
OBJECT_STORE_ENABLED_DEFAULT = False
OBJECT_STORE_PATH = "write.object-storage.path"  # deprecated: the data dir of the object-store layout
WRITE_PARTITION_SUMMARY_LIMIT = "write.summary.partition-limit"
WRITE_PARTITION_SUMMARY_LIMIT_DEFAULT = 0
WRITE_DATA_LOCATION = "write.data.path"
WRITE_METADATA_LOCATION = "write.metadata.path"
WRITE_FOLDER_STORAGE_LOCATION = "write.folder-storage.path"  # deprecated alias of write.data.path
WRITE_OBJECT_STORAGE_LOCATION = "write.object-storage.path"  # deprecated alias of write.data.path (object storage)
# Every property that names a folder files of the table are written to (Java's TableProperties)
LOCATION_PROPERTIES = (
    WRITE_DATA_LOCATION, WRITE_METADATA_LOCATION, WRITE_OBJECT_STORAGE_LOCATION, WRITE_FOLDER_STORAGE_LOCATION,
)
DELETE_MODE = "write.delete.mode"
DELETE_GRANULARITY = "write.delete.granularity"  # position deletes per data file (file) or per partition
DELETE_GRANULARITY_DEFAULT = "file"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
ROW_LEVEL_MODE_DEFAULT = COPY_ON_WRITE
DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"
ISOLATION_LEVEL_DEFAULT = "serializable"
SPARK_WRITE_ACCEPT_ANY_SCHEMA = "write.spark.accept-any-schema"
# The size Spark packs a write's shuffle partitions to (floe.spark.write.advisory); unset: Iceberg Java's estimate.
SPARK_WRITE_ADVISORY_PARTITION_SIZE_BYTES = "write.spark.advisory-partition-size-bytes"
WRITE_AUDIT_PUBLISH_ENABLED = "write.wap.enabled"
UPSERT_ENABLED = "write.upsert.enabled"  # CDC: every insert replaces its key (equality delete + insert)
UPSERT_ENABLED_DEFAULT = False
# Floe: after a change or upsert commit, run rewrite_equality_deletes once this many commits that added
# equality deletes have landed since the last conversion (0: never; the write option is
# ``rewrite-equality-deletes.commit-count``).
REWRITE_EQUALITY_DELETES_COMMIT_COUNT = "write.rewrite-equality-deletes.commit-count"
WAP_ID = "wap.id"  # snapshot summary key of a staged write-audit-publish snapshot

# --- commit --------------------------------------------------------------------------------------
COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_NUM_RETRIES_DEFAULT = 4
COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MIN_RETRY_WAIT_MS_DEFAULT = 100
COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_MAX_RETRY_WAIT_MS_DEFAULT = 60_000
COMMIT_TOTAL_RETRY_TIME_MS = "commit.retry.total-timeout-ms"
COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT = 30 * 60 * 1000
COMMIT_NUM_STATUS_CHECKS = "commit.status-check.num-retries"
COMMIT_NUM_STATUS_CHECKS_DEFAULT = 3
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100
MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MERGE_ENABLED_DEFAULT = True
SNAPSHOT_ID_INHERITANCE_ENABLED = "compatibility.snapshot-id-inheritance.enabled"

# --- read ----------------------------------------------------------------------------------------
SPLIT_SIZE = "read.split.target-size"
SPLIT_SIZE_DEFAULT = 128 * 1024 * 1024
SPLIT_OPEN_FILE_COST = "read.split.open-file-cost"
SPLIT_OPEN_FILE_COST_DEFAULT = 4 * 1024 * 1024
SPLIT_LOOKBACK = "read.split.planning-lookback"
SPLIT_LOOKBACK_DEFAULT = 10

# --- snapshot expiry and garbage collection --------------------------------------------------------
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 60 * 60 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
MAX_REF_AGE_MS_DEFAULT = 2**63 - 1  # Java: Long.MAX_VALUE, i.e. refs never expire by default
GC_ENABLED = "gc.enabled"
GC_ENABLED_DEFAULT = True

# --- v3 ------------------------------------------------------------------------------------------
ENCRYPTION_TABLE_KEY = "encryption.key-id"
ROW_LINEAGE = "row-lineage"  # informational: v3 tables always track row lineage


_BOOLEAN_KEYS = frozenset({
    METADATA_DELETE_AFTER_COMMIT_ENABLED, OBJECT_STORE_ENABLED, MANIFEST_MERGE_ENABLED, GC_ENABLED,
    SPARK_WRITE_ACCEPT_ANY_SCHEMA, WRITE_AUDIT_PUBLISH_ENABLED, SNAPSHOT_ID_INHERITANCE_ENABLED, UPSERT_ENABLED,
    PARQUET_BLOOM_FILTER_ADAPTIVE_ENABLED,
})
_INTEGER_KEYS = frozenset({
    METADATA_PREVIOUS_VERSIONS_MAX, WRITE_TARGET_FILE_SIZE_BYTES, DELETE_TARGET_FILE_SIZE_BYTES,
    PARQUET_ROW_GROUP_SIZE_BYTES, PARQUET_PAGE_SIZE_BYTES, PARQUET_DICT_SIZE_BYTES, METRICS_MAX_INFERRED_COLUMN_DEFAULTS,
    WRITE_PARTITION_SUMMARY_LIMIT, COMMIT_NUM_RETRIES, COMMIT_MIN_RETRY_WAIT_MS, COMMIT_MAX_RETRY_WAIT_MS,
    COMMIT_TOTAL_RETRY_TIME_MS, COMMIT_NUM_STATUS_CHECKS, MANIFEST_MIN_MERGE_COUNT, MANIFEST_TARGET_SIZE_BYTES,
    SPLIT_SIZE, SPLIT_OPEN_FILE_COST, SPLIT_LOOKBACK, MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP, MAX_REF_AGE_MS,
    REWRITE_EQUALITY_DELETES_COMMIT_COUNT, PARQUET_BLOOM_FILTER_MAX_BYTES, PARQUET_PAGE_ROW_LIMIT,
    DELETE_PARQUET_ROW_GROUP_SIZE_BYTES, DELETE_PARQUET_PAGE_SIZE_BYTES, DELETE_PARQUET_DICT_SIZE_BYTES,
    DELETE_PARQUET_PAGE_ROW_LIMIT, SPARK_WRITE_ADVISORY_PARTITION_SIZE_BYTES,
})
_NON_NEGATIVE_KEYS = frozenset({REWRITE_EQUALITY_DELETES_COMMIT_COUNT})
_POSITIVE_KEYS = frozenset({PARQUET_BLOOM_FILTER_MAX_BYTES, SPARK_WRITE_ADVISORY_PARTITION_SIZE_BYTES})
_CHOICES = {
    DELETE_MODE: (COPY_ON_WRITE, MERGE_ON_READ),
    UPDATE_MODE: (COPY_ON_WRITE, MERGE_ON_READ),
    MERGE_MODE: (COPY_ON_WRITE, MERGE_ON_READ),
    WRITE_DISTRIBUTION_MODE: ("none", "hash", "range"),
    DELETE_DISTRIBUTION_MODE: ("none", "hash", "range"),
    DELETE_GRANULARITY: ("file", "partition"),
    UPDATE_DISTRIBUTION_MODE: ("none", "hash", "range"),
    MERGE_DISTRIBUTION_MODE: ("none", "hash", "range"),
    DELETE_ISOLATION_LEVEL: ("serializable", "snapshot"),
    UPDATE_ISOLATION_LEVEL: ("serializable", "snapshot"),
    MERGE_ISOLATION_LEVEL: ("serializable", "snapshot"),
    PARQUET_COMPRESSION: PARQUET_CODECS,
    DELETE_PARQUET_COMPRESSION: PARQUET_CODECS,
}


def validate_property_values(properties: Mapping[str, str]) -> None:
    """Refuse values Floe would fail on later: booleans, integers and choices of the keys it reads.

    Iceberg Java parses some of these leniently (``maybe`` reads as false); Floe refuses them when they
    are set, naming the key, rather than store them and fail every later write.

    Raises:
        ValidationError: a value of the wrong kind (names the key, the value and what is expected).
    """
    for key, value in properties.items():
        if key in _BOOLEAN_KEYS or key.startswith((PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX,
                                                    PARQUET_COLUMN_STATS_ENABLED_PREFIX)):
            property_bool(properties, key, False)
        elif key in _INTEGER_KEYS:
            number = property_int(properties, key, 0)
            if number < 0 and key in _NON_NEGATIVE_KEYS:
                raise ValidationError(f"Table property {key} must be an integer >= 0, got {value!r}")
            if number <= 0 and key in _POSITIVE_KEYS:
                raise ValidationError(f"Table property {key} must be a positive integer, got {value!r}")
        elif key in _CHOICES and str(value).strip().lower() not in _CHOICES[key]:
            raise ValidationError(f"Table property {key} must be one of {', '.join(_CHOICES[key])}, got {value!r}")
        elif key.startswith(PARQUET_BLOOM_FILTER_COLUMN_NDV_PREFIX) and property_int(properties, key, 1) <= 0:
            raise ValidationError(f"Table property {key} must be a positive integer, got {value!r}")
        elif key.startswith(PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX):
            property_probability(properties, key, PARQUET_BLOOM_FILTER_COLUMN_FPP_DEFAULT)
    for key in (DEFAULT_FILE_FORMAT, DELETE_DEFAULT_FILE_FORMAT):
        if key in properties:
            check_written_format(properties, key)
    if WRITE_LOCATION_PROVIDER_IMPL in properties:
        check_location_provider(properties)
    for key in (PARQUET_COMPRESSION_LEVEL, DELETE_PARQUET_COMPRESSION_LEVEL):
        if str(properties.get(key, "")).strip():
            property_int(properties, key, 0)


def check_written_format(properties: Mapping[str, str], key: str = DEFAULT_FILE_FORMAT, table_name: str = "") -> None:
    """Refuse a file format Floe does not write: its writers write Parquet (it reads ORC and Avro data files that
    other engines wrote). ``write.delete.format.default`` falls back to ``write.format.default``.

    Raises:
        UnsupportedError: names the table, the property and the format.
    """
    raw = properties.get(key)
    if raw is None and key == DELETE_DEFAULT_FILE_FORMAT:
        key, raw = DEFAULT_FILE_FORMAT, properties.get(DEFAULT_FILE_FORMAT)
    if raw is not None and str(raw).strip().lower() != "parquet":
        where = f"Table {table_name}: " if table_name else ""
        raise UnsupportedError(
            f"{where}{key}={raw} is not supported: Floe writes Parquet files only (it reads ORC and Avro files "
            f"other engines wrote); set {key}=parquet"
        )


def check_location_provider(properties: Mapping[str, str], table_name: str = "") -> None:
    """Refuse ``write.location-provider.impl``: it names a Java class, which Floe cannot load, and files placed by
    another provider would not be where that class puts them.

    Raises:
        UnsupportedError: names the table and the class.
    """
    impl = properties.get(WRITE_LOCATION_PROVIDER_IMPL)
    if impl is not None and str(impl).strip():
        where = f"Table {table_name}: " if table_name else ""
        raise UnsupportedError(
            f"{where}{WRITE_LOCATION_PROVIDER_IMPL}={impl} is not supported: Floe cannot load a Java location "
            f"provider; it places files by Iceberg's default layout or {OBJECT_STORE_ENABLED}=true"
        )


def parquet_codec_and_level(properties: Mapping[str, str], *, deletes: bool = False) -> tuple[str, str, str | None, str]:
    """(codec, codec key, level or None, level key) of data files or, with ``deletes``, of delete files (the
    ``write.delete.parquet.*`` keys where set, else the data files' ones, as Iceberg Java resolves them)."""
    codec_key = DELETE_PARQUET_COMPRESSION if deletes and DELETE_PARQUET_COMPRESSION in properties else PARQUET_COMPRESSION
    level_key = (
        DELETE_PARQUET_COMPRESSION_LEVEL if deletes and DELETE_PARQUET_COMPRESSION_LEVEL in properties
        else PARQUET_COMPRESSION_LEVEL
    )
    codec = str(properties.get(codec_key, PARQUET_COMPRESSION_DEFAULT)).strip().lower()
    raw = properties.get(level_key)
    level = str(raw).strip() if raw is not None and str(raw).strip() else None
    return codec, codec_key, level, level_key


def validate_compression(properties: Mapping[str, str], *, deletes: bool = False) -> None:
    """Refuse a compression level the codec cannot take: out of the codec's range, or set on a codec without
    levels (snappy, lz4, uncompressed), where Iceberg Java stores it and writes as if it were absent. A delete
    codec without levels that inherits the data files' level writes without one, as in Java.

    Raises:
        ValidationError: names both properties, the level and the codec's range.
    """
    codec, codec_key, raw, level_key = parquet_codec_and_level(properties, deletes=deletes)
    if raw is None:
        return
    level = property_int(properties, level_key, 0)
    bounds = PARQUET_COMPRESSION_LEVELS.get(codec)
    if bounds is None:
        if deletes and level_key == PARQUET_COMPRESSION_LEVEL and codec_key == DELETE_PARQUET_COMPRESSION:
            return
        raise ValidationError(
            f"Table property {level_key}={raw} has no effect with {codec_key}={codec}: "
            f"only {', '.join(PARQUET_COMPRESSION_LEVELS)} have levels (remove the level or change the codec)"
        )
    low, high = bounds
    if not low <= level <= high:
        raise ValidationError(f"Table property {level_key}={raw} is out of range for {codec} ({low} to {high})")


def property_str(properties: Mapping[str, str], key: str, default: str) -> str:
    """The string value of ``key``, or ``default`` when absent."""
    return properties.get(key, default)


def property_int(properties: Mapping[str, str], key: str, default: int) -> int:
    """The integer value of ``key``, or ``default`` when absent.

    Raises:
        ValidationError: the stored value is not an integer (names the key and value).
    """
    raw = properties.get(key)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"Table property {key} must be an integer, got {raw!r}") from None


def persisted_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties a new (or replacing) table stores: the given ones without the reserved keys, over the
    defaults Iceberg Java's catalogs store on every new table (``write.parquet.compression-codec=zstd``, so
    that engines whose built-in default is still gzip write zstd too)."""
    stored = {PARQUET_COMPRESSION: PARQUET_COMPRESSION_DEFAULT}
    stored.update((k, v) for k, v in properties.items() if k not in RESERVED_PROPERTIES)
    return stored


def property_probability(properties: Mapping[str, str], key: str, default: float) -> float:
    """The value of ``key`` as a probability strictly between 0 and 1, or ``default`` when absent.

    Raises:
        ValidationError: the stored value is not a number in (0, 1) (names the key and value).
    """
    raw = properties.get(key)
    if raw is None:
        return default
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise ValidationError(f"Table property {key} must be a number between 0 and 1 (exclusive), got {raw!r}")
    return value


def property_bool(properties: Mapping[str, str], key: str, default: bool) -> bool:
    """The boolean value of ``key`` (``true``/``false``, case-insensitive), or ``default`` when absent.

    Raises:
        ValidationError: the stored value is not a boolean (names the key and value).
    """
    raw = properties.get(key)
    if raw is None:
        return default
    low = str(raw).strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise ValidationError(f"Table property {key} must be true or false, got {raw!r}")
