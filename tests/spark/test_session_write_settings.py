"""Iceberg's session write settings (``spark.sql.iceberg.distribution-mode``, ``.compression-codec``,
``.compression-level``, ``.merge-schema``, ``.check-nullability``, ``.check-ordering``) reach every Floe write as in
Iceberg Java: the write option, else the session's conf, else the table property. Bad values are refused in one
line and nothing is committed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _sql_helpers import hadoop_lake
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe.spark
from floe.errors import ValidationError
from floe.spark.row_level.commits import rewrite_distribution
from floe.spark.runtime.sql_session import floe_sql_state
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN
from floe.spark.write.session_settings import (
    CHECK_NULLABILITY_CONF,
    CHECK_ORDERING_CONF,
    COMPRESSION_CODEC_CONF,
    COMPRESSION_LEVEL_CONF,
    DISTRIBUTION_MODE_CONF,
    MERGE_SCHEMA_CONF,
)

pytestmark = pytest.mark.spark

_CONFS = (DISTRIBUTION_MODE_CONF, COMPRESSION_CODEC_CONF, COMPRESSION_LEVEL_CONF, MERGE_SCHEMA_CONF,
          CHECK_NULLABILITY_CONF, CHECK_ORDERING_CONF)


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """A Hadoop catalog on the shared session; the session's Iceberg write settings are unset after each test."""
    floe.spark.attach(spark)
    with hadoop_lake(spark, tmp_path, "sws") as name:
        try:
            yield name
        finally:
            for key in _CONFS:
                spark.conf.unset(key)


def _files(spark: SparkSession, name: str, content: int = 0) -> list[str]:
    """The current snapshot's files of one kind (0 data, 1 position deletes), from the files metadata table."""
    return [r[0] for r in spark.sql(f"SELECT file_path FROM {name}.files WHERE content = {content}").collect()]


def _codecs(paths: list[str]) -> set[str]:
    out: set[str] = set()
    for path in paths:
        md = pq.ParquetFile(path.removeprefix("file:")).metadata
        out |= {md.row_group(0).column(i).compression for i in range(md.num_columns)}
    return out


def _data_codecs(spark: SparkSession, name: str) -> set[str]:
    return _codecs(_files(spark, name))


def _snapshots(spark: SparkSession, name: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {name}.snapshots").collect()[0][0])


def test_session_codec_sits_between_the_option_and_the_table_property(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.c"
    spark.sql(f"CREATE TABLE {t} (id bigint, s string) USING iceberg TBLPROPERTIES ('write.parquet.compression-codec'='zstd')")
    df = spark.range(100).selectExpr("id", "cast(id AS string) AS s")
    df.writeTo(t).append()
    assert _data_codecs(spark, t) == {"ZSTD"}  # the table property
    spark.conf.set(COMPRESSION_CODEC_CONF, "snappy")
    spark.sql(f"INSERT OVERWRITE {t} SELECT id, cast(id AS string) FROM range(100)")
    assert _data_codecs(spark, t) == {"SNAPPY"}  # the session over the property (SQL)
    df.writeTo(t).option("compression-codec", "gzip").overwritePartitions()
    assert _data_codecs(spark, t) == {"GZIP"}  # the option over the session
    spark.conf.unset(COMPRESSION_CODEC_CONF)
    df.writeTo(t).overwritePartitions()
    assert _data_codecs(spark, t) == {"ZSTD"}


def test_session_codec_reaches_merge_on_read_delete_files(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.d"
    spark.sql(f"CREATE TABLE {t} (id bigint, s string) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
              "'write.delete.parquet.compression-codec'='zstd')")
    spark.sql(f"INSERT INTO {t} SELECT id, cast(id AS string) FROM range(0, 20000, 1, 2)")
    spark.conf.set(COMPRESSION_CODEC_CONF, "snappy")
    spark.sql(f"DELETE FROM {t} WHERE id % 3 = 0")  # many rows: Spark writes the position deletes
    spark.sql(f"UPDATE {t} SET s = 'x' WHERE id = 7")  # one row: the driver writes them
    deletes = _files(spark, t, content=1)
    assert len(deletes) >= 2
    assert _codecs(deletes) == {"SNAPPY"}  # the session over write.delete.parquet.compression-codec
    assert spark.table(t).count() == 20000 - 6667


def test_bad_session_codec_or_level_is_refused_and_nothing_is_committed(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.b"
    spark.sql(f"CREATE TABLE {t} (id bigint) USING iceberg")
    before = _snapshots(spark, t)
    spark.conf.set(COMPRESSION_CODEC_CONF, "lzo")
    with pytest.raises(ValidationError, match=r"spark.sql.iceberg.compression-codec='lzo' is not a Parquet codec"):
        spark.range(3).writeTo(t).append()
    spark.conf.set(COMPRESSION_CODEC_CONF, "gzip")
    spark.conf.set(COMPRESSION_LEVEL_CONF, "15")
    with pytest.raises(ValidationError, match=r"compression level 15 is out of range for gzip \(0 to 9\)"):
        spark.sql(f"INSERT INTO {t} VALUES (1)")
    spark.conf.set(COMPRESSION_LEVEL_CONF, "high")
    with pytest.raises(ValidationError, match="compression-level='high' is not an integer"):
        spark.range(3).writeTo(t).append()
    spark.conf.set(DISTRIBUTION_MODE_CONF, "random")
    spark.conf.unset(COMPRESSION_LEVEL_CONF)
    with pytest.raises(ValidationError, match="distribution-mode='random' is not valid"):
        spark.range(3).writeTo(t).append()
    assert _snapshots(spark, t) == before
    spark.conf.unset(DISTRIBUTION_MODE_CONF)
    spark.conf.set(COMPRESSION_LEVEL_CONF, "9")
    spark.range(3).writeTo(t).append()  # gzip at 9: in range
    assert _data_codecs(spark, t) == {"GZIP"}


def test_session_distribution_mode_beats_the_table_property(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.p"
    spark.sql(f"CREATE TABLE {t} (id bigint, p int) USING iceberg PARTITIONED BY (p)")
    # 4 input tasks, each holding rows of all 4 partitions
    rows = spark.range(0, 4000, 1, 4).selectExpr("id", "cast(id % 4 AS int) AS p")
    rows.writeTo(t).append()
    assert len(_files(spark, t)) == 4  # hash (the default): a file per partition
    spark.conf.set(DISTRIBUTION_MODE_CONF, "none")
    rows.writeTo(t).append()
    assert len(_files(spark, t)) == 4 + 16  # none: a file per partition per task
    rows.writeTo(t).option("distribution-mode", "hash").append()
    assert len(_files(spark, t)) == 4 + 16 + 4  # the option over the session


def test_session_distribution_mode_beats_the_row_level_properties(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.r"
    spark.sql(f"CREATE TABLE {t} (id bigint) USING iceberg TBLPROPERTIES ('write.delete.distribution-mode'='range')")
    table = floe_sql_state(spark).context.load(tuple(t.split(".")))
    rows = spark.range(10).withColumn(ROW_FILE_COLUMN, F.lit("f")).withColumn(ROW_POS_COLUMN, F.col("id"))
    _, options = rewrite_distribution(table, rows, "DELETE")
    assert options == {"distribution-mode": "none"}  # range by file and position, done before the write
    spark.conf.set(DISTRIBUTION_MODE_CONF, "none")
    out, options = rewrite_distribution(table, rows, "DELETE")
    assert options == {"distribution-mode": "none"} and out is rows  # no shuffle at all
    spark.conf.set(DISTRIBUTION_MODE_CONF, "hash")
    _, options = rewrite_distribution(table, rows, "MERGE")
    assert options == {"distribution-mode": "none"}  # hash on an unpartitioned table has nothing to cluster by


def test_merge_schema_is_asked_for_by_the_option_or_the_session(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.m"
    spark.sql(f"CREATE TABLE {t} (id bigint, s string) USING iceberg TBLPROPERTIES ('write.spark.accept-any-schema'='true')")
    extra = spark.sql("SELECT CAST(1 AS bigint) id, 'a' s, 7 x")
    # Iceberg Java: accept-any-schema lets the data differ; mergeSchema asks for the change.
    with pytest.raises(ValidationError, match=r"column 'x' \(int\) is not in the table schema"):
        extra.writeTo(t).append()
    assert spark.table(t).columns == ["id", "s"]
    spark.conf.set(MERGE_SCHEMA_CONF, "true")
    extra.writeTo(t).append()
    assert spark.table(t).columns == ["id", "s", "x"]
    spark.conf.unset(MERGE_SCHEMA_CONF)
    spark.sql("SELECT CAST(2 AS bigint) id, 'b' s, 8 x, 9L y").writeTo(t).option("mergeSchema", "true").append()
    assert sorted(spark.table(t).collect()) == [(1, "a", 7, None), (2, "b", 8, 9)]
    spark.conf.set(MERGE_SCHEMA_CONF, "perhaps")
    with pytest.raises(ValidationError, match="merge-schema='perhaps' is not valid: expected true or false"):
        extra.writeTo(t).append()


def test_strict_schema_checks_on_accept_any_schema_tables(spark: SparkSession, lake: str) -> None:
    strict, plain = f"{lake}.db.strict", f"{lake}.db.plain"
    spark.sql(f"CREATE TABLE {strict} (id bigint NOT NULL, s string) USING iceberg "
              "TBLPROPERTIES ('write.spark.accept-any-schema'='true')")
    spark.sql(f"CREATE TABLE {plain} (id bigint NOT NULL, s string) USING iceberg")
    nullable = spark.createDataFrame([(1, "a")], "id bigint, s string")  # nullable columns
    swapped = spark.sql("SELECT 'b' s, CAST(2 AS bigint) id")
    # Iceberg Java on the same writes: refused on the accept-any-schema table, taken by name on the other one.
    with pytest.raises(ValidationError, match="column 'id' is required but nullable in the data"):
        nullable.writeTo(strict).append()
    with pytest.raises(ValidationError, match="column 's' comes before 'id' in the data but after it in the table"):
        swapped.writeTo(strict).append()
    nullable.writeTo(plain).append()
    swapped.writeTo(plain).append()
    spark.conf.set(CHECK_NULLABILITY_CONF, "false")
    spark.conf.set(CHECK_ORDERING_CONF, "false")
    nullable.writeTo(strict).append()
    swapped.writeTo(strict).append()
    # the option over the session
    with pytest.raises(ValidationError, match="required but nullable"):
        nullable.writeTo(strict).option("check-nullability", "true").append()
    # without the check, a null that is there still fails the write (Iceberg Java writes 0 in its place)
    before = _snapshots(spark, strict)
    with pytest.raises(ValidationError, match="id"):
        spark.sql("SELECT CAST(NULL AS bigint) id, 'z' s").writeTo(strict).append()
    assert _snapshots(spark, strict) == before
    assert sorted(spark.table(strict).collect()) == sorted(spark.table(plain).collect()) == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("in_workers", [True, False])
def test_compaction_takes_the_session_codec_on_either_path(
    spark: SparkSession, lake: str, monkeypatch: pytest.MonkeyPatch, in_workers: bool
) -> None:
    from floe.spark.procedures import rewrite_data_files, worker_binpack

    t = f"{lake}.db.k"
    spark.sql(f"CREATE TABLE {t} (id bigint, s string) USING iceberg")
    for k in range(3):  # small files of about 100 KB: a bin-pack group the workers may rewrite
        spark.sql(f"INSERT INTO {t} SELECT id, sha2(cast(id AS string), 256) FROM range({k * 3000}, {(k + 1) * 3000}, 1, 1)")
    ran: list[bool] = []
    real = worker_binpack.rewrite_in_workers

    def spy(*args: object, **kwargs: object) -> object:
        ran.append(True)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rewrite_data_files, "rewrite_in_workers", spy)
    monkeypatch.setattr(rewrite_data_files, "rewrites_in_workers", lambda *a: in_workers)
    spark.conf.set(COMPRESSION_CODEC_CONF, "snappy")
    spark.sql(f"CALL {lake}.system.rewrite_data_files(table => 'db.k', options => map('min-input-files', '2'))").collect()
    assert ran == ([True] if in_workers else [])
    assert len(_files(spark, t)) == 1 and _data_codecs(spark, t) == {"SNAPPY"}
    assert spark.table(t).count() == 9000
