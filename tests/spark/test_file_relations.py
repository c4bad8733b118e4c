"""How Floe hands files to Spark's file sources (floe.spark.scan.file_uris.file_relation).

With the files' sizes known (from the manifests), files go to Spark as a file sink log of statuses
(floe.spark.scan.file_status_log), however few, so none is looked up; names Hadoop could print differently are listed by
Spark as before. Either way every file is read once, rows carry the URIs reported_uris gives, no column is
inferred from ``k=v`` folders, and a missing file fails the read whatever the session's settings.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from floe.spark.scan.file_status_log import loggable_uri
from floe.spark.scan.file_uris import file_relation, reported_uris

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MANY = 40  # more than Spark lists without a job (floe.spark.scan.file_uris._listed_on_driver)


def _files(folder: Path, names: list[str]) -> tuple[list[str], dict[str, int]]:
    folder.mkdir(parents=True, exist_ok=True)
    locations = []
    for k, name in enumerate(names):
        pq.write_table(pa.table({"x": [k], "cat": [f"file-{k}"]}), str(folder / name))
        locations.append(str(folder / name))
    return locations, {x: os.path.getsize(x) for x in locations}


def _epoch_times(relation: DataFrame) -> set[bool]:
    rows = relation.select(F.col("_metadata.file_modification_time")).collect()
    return {r[0] == datetime.datetime(1970, 1, 1) for r in rows}


def test_many_files_with_sizes_are_handed_over_not_looked_up(spark: SparkSession, tmp_path: Path) -> None:
    # ``cat=a`` folders must not add or replace a column: the file's own ``cat`` values come back.
    locations, sizes = _files(tmp_path / "data" / "cat=a", [f"{k:03d}.parquet" for k in range(MANY)])
    relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes)
    assert relation.columns == ["x", "cat"]
    uris = reported_uris(relation, locations, table_name="t")
    rows = relation.select("x", "cat", F.col("_metadata.file_path")).collect()
    assert sorted((r[0], r[1]) for r in rows) == [(k, f"file-{k}") for k in range(MANY)]
    assert {r[0]: r[2] for r in rows} == {k: uris[loc] for k, loc in enumerate(locations)}
    # Statuses came from Floe (no modification time), not from the file system.
    assert _epoch_times(relation) == {True}


@pytest.mark.parametrize("count", [1, 2, 5])
def test_a_few_files_with_sizes_are_handed_over_too(spark: SparkSession, tmp_path: Path, count: int) -> None:
    # A read makes one or two relations on every query: the log is the faster way for a single file too.
    locations, sizes = _files(tmp_path / "few", [f"{k}.parquet" for k in range(count)])
    relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes)
    assert sorted(r[0] for r in relation.select("x").collect()) == list(range(count))
    assert _epoch_times(relation) == {True}
    # Without sizes Spark lists them (one path passed as it is, several as one string split in the JVM).
    listed = file_relation(spark, "parquet", "x long, cat string", locations)
    assert sorted(r[0] for r in listed.select("x").collect()) == list(range(count))
    assert _epoch_times(listed) == {False}


@pytest.mark.parametrize("interval", ["1", "3"])
def test_statuses_are_read_whatever_the_sessions_log_compaction_interval(
    spark: SparkSession, tmp_path: Path, interval: str
) -> None:
    locations, sizes = _files(tmp_path / "d", [f"{k:03d}.parquet" for k in range(MANY)])
    spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", interval)
    try:
        relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes)
    finally:
        spark.conf.unset("spark.sql.streaming.fileSink.log.compactInterval")
    assert sorted(r[0] for r in relation.select("x").collect()) == list(range(MANY))
    assert _epoch_times(relation) == {True}


def test_names_hadoop_might_respell_are_listed_by_spark(spark: SparkSession, tmp_path: Path) -> None:
    names = [f"{k:03d}.parquet" for k in range(MANY - 1)] + ["a b%41.parquet"]
    locations, sizes = _files(tmp_path / "d", names)
    assert loggable_uri(locations[-1]) is None and loggable_uri(locations[0]) == "file://" + locations[0]
    relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes)
    uris = reported_uris(relation, locations, table_name="t")
    rows = relation.select("x", F.col("_metadata.file_path")).collect()
    assert {r[0]: r[1] for r in rows} == {k: uris[loc] for k, loc in enumerate(locations)}
    assert _epoch_times(relation) == {False}


def test_a_file_named_twice_is_read_once(spark: SparkSession, tmp_path: Path) -> None:
    locations, sizes = _files(tmp_path / "d", [f"{k:03d}.parquet" for k in range(MANY)])
    relation = file_relation(spark, "parquet", "x long, cat string", locations + locations[:3], sizes)
    assert sorted(r[0] for r in relation.select("x").collect()) == list(range(MANY))


@pytest.mark.parametrize("with_sizes", [True, False], ids=["statuses", "listed"])
def test_a_missing_file_fails_even_when_the_session_skips_missing_files(
    spark: SparkSession, tmp_path: Path, with_sizes: bool
) -> None:
    locations, sizes = _files(tmp_path / "d", [f"{k:03d}.parquet" for k in range(MANY)])
    relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes if with_sizes else None)
    os.remove(locations[7])
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
    try:
        with pytest.raises(Exception, match="007.parquet"):
            relation.collect()
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")


def test_a_size_the_file_does_not_have_leaves_the_files_to_sparks_listing(spark: SparkSession, tmp_path: Path) -> None:
    # Spark keeps to the row groups inside the size it is handed: a short size must not reach it.
    locations, sizes = _files(tmp_path / "d", [f"{k:03d}.parquet" for k in range(MANY)])
    big = str(tmp_path / "d" / "big.parquet")
    pq.write_table(pa.table({"x": list(range(100, 1100)), "cat": ["big"] * 1000}), big, row_group_size=100)
    locations.append(big)
    sizes[big] = os.path.getsize(big) // 2
    relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes)
    assert sorted(r[0] for r in relation.select("x").collect()) == list(range(MANY)) + list(range(100, 1100))
    assert _epoch_times(relation) == {False}


def test_loggable_uris() -> None:
    assert loggable_uri("s3a://bucket/warehouse/db/t/data/k=1/00000-0-a1.parquet") == (
        "s3a://bucket/warehouse/db/t/data/k=1/00000-0-a1.parquet"
    )
    for location in ["/a//b.parquet", "/a/./b.parquet", "/a/../b.parquet", "/a/b c.parquet", "/a/%41.parquet",
                     "/a/ü.parquet", "relative/b.parquet", "/a/b:c.parquet", "/a/b/"]:
        assert loggable_uri(location) is None, location


def _relation_option(relation: DataFrame, key: str) -> str | None:
    leaf = relation._jdf.queryExecution().analyzed().collectLeaves().head()  # the LogicalRelation
    value = leaf.relation().options().get(key)
    return str(value.get()) if value.isDefined() else None


@pytest.mark.parametrize("count", [3, MANY], ids=["listed", "status-log"])
def test_local_parquet_is_read_without_vectored_io(spark: SparkSession, tmp_path: Path, count: int) -> None:
    """Parquet's vectored reads cost local files a thread handoff per range (file_uris._LOCAL_PARQUET):
    a relation over local files turns them off, and still reads every row."""
    locations, sizes = _files(tmp_path / "t", [f"{k}.parquet" for k in range(count)])
    relation = file_relation(spark, "parquet", "x long, cat string", locations, sizes)
    assert _relation_option(relation, "parquet.hadoop.vectored.io.enabled") == "false"
    assert sorted(r[0] for r in relation.select("x").collect()) == list(range(count))
    orc = tmp_path / "o"
    spark.createDataFrame([(1,)], "x long").write.orc(str(orc))
    orc_files = [str(p) for p in orc.glob("*.orc")]
    assert _relation_option(file_relation(spark, "orc", "x long", orc_files), "parquet.hadoop.vectored.io.enabled") is None
