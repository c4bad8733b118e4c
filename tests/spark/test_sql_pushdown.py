"""SQL queries read only the files their WHERE lets Floe's planner keep, and return Spark's rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _sql_helpers import hadoop_lake
from pyspark.sql import SparkSession

import floe.spark


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    with hadoop_lake(spark, tmp_path, "pd") as name:
        spark.sql(f"CREATE TABLE {name}.db.t (id BIGINT, dt STRING, v DOUBLE, ts TIMESTAMP) USING iceberg "
                  "PARTITIONED BY (dt)")
        for day in range(1, 5):
            spark.sql(f"INSERT INTO {name}.db.t VALUES ({day}, '2024-01-0{day}', double('NaN'), "
                      f"TIMESTAMP '2024-01-0{day} 00:30:00'), ({day + 10}, '2024-01-0{day}', {day}.0, NULL)")
        yield name


def _files(spark: SparkSession, sql: str) -> int:
    return len(floe.spark.sql(spark, sql).inputFiles())


def test_where_on_a_partition_column_reads_only_that_partition(spark: SparkSession, lake: str) -> None:
    assert _files(spark, f"SELECT * FROM {lake}.db.t") == 4
    assert _files(spark, f"SELECT id FROM {lake}.db.t WHERE dt = '2024-01-02'") == 1
    assert _files(spark, f"SELECT count(*) FROM {lake}.db.t WHERE dt >= '2024-01-03' AND id > 0") == 2
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {lake}.db.t WHERE dt = '2024-01-02'").collect()) == [2, 12]


def test_where_on_a_timestamp_reads_in_the_session_time_zone(spark: SparkSession, lake: str) -> None:
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:  # 2024-01-02 16:30 in Los Angeles is 2024-01-03 00:30 UTC: the row of day 3 and later ones
        rows = spark.sql(f"SELECT id FROM {lake}.db.t WHERE ts >= TIMESTAMP '2024-01-02 16:30:00'").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert sorted(r.id for r in rows) == [3, 4]


def test_left_join_anti_pattern_keeps_spark_rows(spark: SparkSession, lake: str) -> None:
    sql = (f"SELECT l.id FROM {lake}.db.t l LEFT JOIN {lake}.db.t r ON l.id = r.id + 10 "
           "WHERE r.id IS NULL AND l.dt <= '2024-01-02'")
    assert sorted(r.id for r in spark.sql(sql).collect()) == [1, 2]


def test_nan_rows_keep_spark_ordering(spark: SparkSession, lake: str) -> None:
    # Spark orders NaN above every number: v > 100 holds for the NaN rows, which file bounds do not count.
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {lake}.db.t WHERE v > 100").collect()) == [1, 2, 3, 4]
