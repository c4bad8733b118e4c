"""How a write's advisory shuffle partition size is resolved: option, table property, then Iceberg Java's
estimate (expected file size times the shuffle's compression ratio, at least Spark's own advisory size)."""

from __future__ import annotations

import pytest

from floe.errors import ValidationError
from floe.spark.write.advisory import advisory_partition_bytes, shuffle_compression_ratio, spark_byte_size

MB = 1 << 20
PROPERTY = "write.spark.advisory-partition-size-bytes"


def test_spark_sizes_read_as_spark_reads_them() -> None:
    assert spark_byte_size("67108864b") == 64 * MB
    assert spark_byte_size("64MB") == spark_byte_size("64m") == 64 * MB
    assert spark_byte_size(" 1g ") == 1024 * MB
    assert spark_byte_size("4096") == 4096
    with pytest.raises(ValidationError, match="Invalid size '64 MiB'"):
        spark_byte_size("64 MiB")


def test_ratios_follow_the_shuffle_and_parquet_codecs() -> None:
    assert shuffle_compression_ratio("lz4", "zstd") == 3.0  # Spark's default shuffle codec, Iceberg's default codec
    assert shuffle_compression_ratio("none", "gzip") == 4.0
    assert shuffle_compression_ratio("zstd", "snappy") == 1.5
    assert shuffle_compression_ratio("LZ4", "Snappy") == 2.0
    assert shuffle_compression_ratio("lzf", "zstd") == 2.0  # a pair without an estimate
    assert shuffle_compression_ratio("lz4", "uncompressed") == 2.0


def test_default_is_expected_file_size_times_ratio_at_least_sparks() -> None:
    def size(props: dict[str, str], **kw: object) -> int:
        return advisory_partition_bytes(props, {}, shuffle_codec="lz4", spark_advisory=64 * MB, **kw)  # type: ignore[arg-type]

    assert size({}) == 384 * MB  # 128 MB x 3
    assert size({"write.parquet.compression-codec": "snappy"}) == 256 * MB
    assert size({}, deletes=True) == 96 * MB  # 32 MB x 3
    # delete files take write.delete.parquet.compression-codec where set, else the data files' codec
    assert size({"write.parquet.compression-codec": "snappy", "write.delete.parquet.compression-codec": "zstd"},
                deletes=True) == 96 * MB
    assert size({"write.parquet.compression-codec": "snappy"}, deletes=True) == 64 * MB  # Spark's 64 MB wins
    assert advisory_partition_bytes({}, {}, shuffle_codec="lz4", spark_advisory=1024 * MB) == 1024 * MB


def test_option_then_session_then_property_win_over_the_estimate() -> None:
    props = {PROPERTY: str(8 * MB)}
    assert advisory_partition_bytes(props, {}, shuffle_codec="lz4", spark_advisory=64 * MB) == 8 * MB
    assert advisory_partition_bytes(props, {"advisory-partition-size": "1000"}, shuffle_codec="lz4",
                                    spark_advisory=64 * MB) == 1000
    session = {"spark.sql.iceberg.advisory-partition-size": "2000"}
    assert advisory_partition_bytes(props, {}, shuffle_codec="lz4", spark_advisory=64 * MB, session=session) == 2000
    assert advisory_partition_bytes(props, {"advisory-partition-size": "1000"}, shuffle_codec="lz4",
                                    spark_advisory=64 * MB, session=session) == 1000
    with pytest.raises(ValidationError, match="invalid spark.sql.iceberg.advisory-partition-size '0'"):
        advisory_partition_bytes({}, {}, shuffle_codec="lz4", spark_advisory=1, session={
            "spark.sql.iceberg.advisory-partition-size": "0"})
    with pytest.raises(ValidationError, match=r"Table db\.t: invalid advisory-partition-size 'x'"):
        advisory_partition_bytes({}, {"advisory-partition-size": "x"}, shuffle_codec="lz4", spark_advisory=1,
                                 table_name="db.t")
    with pytest.raises(ValidationError, match=f"invalid {PROPERTY} '-1'"):
        advisory_partition_bytes({PROPERTY: "-1"}, {}, shuffle_codec="lz4", spark_advisory=1, table_name="db.t")
