"""floe.spark.write.dataframe_write.write_files: Spark writes data files and hands back their DataFiles, committing nothing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import floe
from floe.errors import ValidationError
from floe.io.locations import to_local_path
from floe.spark.write.dataframe_write import write_files
from floe.spec.partitioning import PartitionSpecBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int32()), ("name", pa.string())])


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> floe.Catalog:
    cat = floe.load_catalog("wf", type="hadoop", warehouse=str(tmp_path_factory.mktemp("write_files") / "wh"))
    cat.create_namespace("db")
    return cat


def _partitioned(catalog: floe.Catalog, name: str) -> floe.Table:
    t = catalog.create_table(f"db.{name}_tmp", SCHEMA)
    spec = PartitionSpecBuilder(t.schema()).identity("g").build()
    return catalog.create_table(f"db.{name}", SCHEMA, partition_spec=spec)


def _df(spark: SparkSession, n: int, parts: int) -> DataFrame:
    return spark.range(0, n, numPartitions=parts).select(
        "id", (F.col("id") % 3).cast("int").alias("g"), F.concat(F.lit("n"), F.col("id")).alias("name")
    )


def _files_under(table: floe.Table) -> set[Path]:
    root = Path(to_local_path(table.location())) / "data"
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


@pytest.mark.parametrize("path", ["native", "arrow"])
def test_write_files_returns_partitioned_files_and_commits_nothing(
    spark: SparkSession, catalog: floe.Catalog, path: str
) -> None:
    t = _partitioned(catalog, f"ret_{path}")
    files = write_files(t, _df(spark, 300, 3), options={"write-path": path})
    assert t.refresh().current_snapshot() is None
    assert {Path(to_local_path(f.file_path)) for f in files} == _files_under(t)
    assert sum(f.record_count for f in files) == 300
    assert {f.partition for f in files} == {(0,), (1,), (2,)}
    assert all(f"/data/g={f.partition[0]}/" in f.file_path for f in files)
    op = t.new_append()
    for f in files:
        op.append_file(f)
    op.commit()
    got = t.scan().to_arrow().sort_by("id")
    assert got["id"].to_pylist() == list(range(300))
    assert got["g"].to_pylist() == [i % 3 for i in range(300)]


def test_write_files_target_file_size_option_rolls_files(spark: SparkSession, catalog: floe.Catalog) -> None:
    t = catalog.create_table("db.size", SCHEMA)
    one_task = _df(spark, 3000, 1)
    assert len(write_files(t, one_task)) == 1
    # the native writer's rows-per-file estimate has a floor of 1000 rows
    rolled = write_files(t, one_task, options={"target-file-size-bytes": "1"})
    assert len(rolled) == 3
    assert sum(f.record_count for f in rolled) == 3000
    with pytest.raises(ValidationError, match="target-file-size-bytes"):
        write_files(t, one_task, options={"target-file-size-bytes": "big"})
    assert t.refresh().current_snapshot() is None


@pytest.mark.parametrize("path", ["native", "arrow"])
def test_write_files_failure_deletes_every_file_it_wrote(spark: SparkSession, catalog: floe.Catalog, path: str) -> None:
    t = _partitioned(catalog, f"fail_{path}")

    @F.udf("long")
    def boom(x: int) -> int:
        if x == 250:  # in the last of three input tasks: the others have written their files by then
            raise RuntimeError("boom at 250")
        return x

    df = _df(spark, 300, 3).select(boom("id").alias("id"), "g", "name")
    with pytest.raises(Exception, match="boom at 250"):
        write_files(t, df, options={"write-path": path, "distribution-mode": "none"})
    assert _files_under(t) == set()
    assert list((Path(to_local_path(t.location())) / "data").glob(".floe-staging-*")) == []
    assert t.refresh().current_snapshot() is None


def test_write_files_refuses_columns_the_table_lacks(spark: SparkSession, catalog: floe.Catalog) -> None:
    t = catalog.create_table("db.narrow", SCHEMA)
    wide = _df(spark, 3, 1).withColumn("extra", F.lit(1))
    with pytest.raises(ValidationError, match="extra"):
        write_files(t, wide, options={"mergeSchema": "true"})  # evolving the schema would be a commit
    assert len(t.refresh().schema().fields) == 3
