"""df.write.format("iceberg").save(location): on a Floe-aware session Floe's native writer, else the Python data
source's writer (both run every test here), and what pyspark 4.3 allows with the data source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe
import floe.spark.datasource.provider
from floe.spark.runtime.configure import attach
from floe.spark.runtime.transparent import TRANSPARENT_CONF
from floe.spec.partitioning import PartitionSpecBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int32()), ("name", pa.string())])


def _rows(table: floe.Table) -> list[dict[str, object]]:
    from pyiceberg.table import StaticTable

    data = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    return data.sort_by("id").to_pylist()


@pytest.fixture(params=["native", "datasource"])
def table(spark: SparkSession, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[floe.Table]:
    attach(spark)
    if request.param == "datasource":  # a session that is not Floe-aware: the Python data source writes
        spark.conf.set(TRANSPARENT_CONF, "false")
    try:
        yield _partitioned_table(tmp_path)
    finally:
        spark.conf.unset(TRANSPARENT_CONF)


def _partitioned_table(tmp_path: Path) -> floe.Table:
    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    spec = PartitionSpecBuilder(t.schema()).identity("g").build()
    cat.drop_table("db.t")
    return cat.create_table("db.t", SCHEMA, partition_spec=spec)


def _df(spark: SparkSession, start: int, n: int, groups: int = 3):  # type: ignore[no-untyped-def]
    return spark.range(start, start + n).select(
        "id", (F.col("id") % groups).cast("int").alias("g"), F.concat(F.lit("n"), F.col("id")).alias("name")
    )


def test_datasource_append_and_overwrite_modes(spark: SparkSession, table: floe.Table) -> None:
    loc = table.location()
    _df(spark, 0, 30).write.format("iceberg").mode("append").save(loc)
    table.refresh()
    assert [r["id"] for r in _rows(table)] == list(range(30))
    assert table.current_snapshot().summary.operation.value == "append"
    _df(spark, 100, 2, groups=1).write.format("iceberg").mode("overwrite").option("overwrite-mode", "dynamic").save(loc)
    table.refresh()
    assert sorted(r["id"] for r in _rows(table)) == sorted([i for i in range(30) if i % 3] + [100, 101])
    _df(spark, 200, 3).write.format("iceberg").mode("overwrite").option("overwrite-filter", "g = 1").save(loc)
    table.refresh()
    got = _rows(table)
    assert sorted(r["id"] for r in got if r["g"] == 1) == [202]
    _df(spark, 500, 2).write.format("iceberg").mode("overwrite").save(loc)
    table.refresh()
    assert [r["id"] for r in _rows(table)] == [500, 501]
    assert len(table.snapshots()) == 4


def test_datasource_failed_job_leaves_no_files(spark: SparkSession, table: floe.Table) -> None:
    loc = table.location()
    _df(spark, 0, 10).write.format("iceberg").mode("append").save(loc)
    table.refresh()
    before = {p for p in Path(loc, "data").rglob("*") if p.is_file()}

    @F.udf("long")
    def boom(x: int) -> int:
        if x == 1234:
            raise RuntimeError("boom at 1234")
        return x

    bad = spark.range(0, 3000, numPartitions=3).select(boom("id").alias("id"), F.lit(1).alias("g"), F.lit("x").alias("name"))
    with pytest.raises(Exception, match="boom at 1234"):
        bad.write.format("iceberg").mode("append").save(loc)
    table.refresh()
    assert len(table.snapshots()) == 1
    assert {p for p in Path(loc, "data").rglob("*") if p.is_file()} == before


def test_datasource_schema_mismatch_fails_before_writing(spark: SparkSession, table: floe.Table) -> None:
    bad = spark.createDataFrame([(1, "x")], "id long, g string")
    with pytest.raises(Exception, match=r"column 'g' has type string in the data but int"):
        bad.write.format("iceberg").mode("append").save(table.location())


def test_datasource_writeto_is_refused_by_spark(spark: SparkSession, table: floe.Table) -> None:
    # pyspark 4.3 gives Python data sources no options for catalog-table writes (writeTo, INSERT INTO a
    # table created USING iceberg), so the writer cannot tell which Iceberg table is meant.
    name = f"floe_dsw_{abs(hash(table.location())) % 10**8}"
    spark.sql(f"CREATE TABLE {name} (id long, g int, name string) USING iceberg OPTIONS (table '{table.location()}')")
    try:
        with pytest.raises(Exception, match="needs a table identifier or location"):
            _df(spark, 0, 3).writeTo(name).append()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_resolve_table_by_location_and_inline_catalog(tmp_path: Path) -> None:
    from floe.spark.datasource.writer import resolve_table

    cat = floe.load_catalog("r", type="sql", uri=f"sqlite:///{tmp_path}/r.db", warehouse=str(tmp_path / "rw"))
    cat.create_namespace("db")
    t = cat.create_table("db.x", SCHEMA)
    inline = {"path": "db.x", "catalog-name": "r", "catalog.type": "sql", "catalog.uri": f"sqlite:///{tmp_path}/r.db",
              "catalog.warehouse": str(tmp_path / "rw")}
    assert resolve_table(inline).location() == t.location()
    with pytest.raises(Exception, match="needs a table identifier or location"):
        resolve_table({})


def test_written_files_record_the_unsorted_order_as_iceberg_java_does(spark: SparkSession, table: floe.Table) -> None:
    # Iceberg Java's Spark writer records sort order 0 (unsorted) on every data file, sorted or not
    table.replace_sort_order().asc("id").commit()
    _df(spark, 0, 30).write.format("iceberg").mode("append").save(table.location())
    table.refresh()
    assert {t.data_file.sort_order_id for t in table.scan().plan_files()} == {0}
    table.append(_df(spark, 100, 30))  # floe.spark.write.dataframe_write sorts the rows (range distribution + local sort)
    added = {t.data_file.sort_order_id for t in table.scan(row_filter="id >= 100").plan_files()}
    assert added == {0}
    assert [r["id"] for r in _rows(table)] == [*range(30), *range(100, 130)]


def test_compression_option_on_both_paths_and_distribution_refused_by_the_data_source(
    spark: SparkSession, table: floe.Table, request: pytest.FixtureRequest
) -> None:
    import pyarrow.parquet as pq

    _df(spark, 0, 30).write.format("iceberg").mode("append").option("compression-codec", "snappy").save(table.location())
    table.refresh()
    paths = [t.data_file.file_path for t in table.scan().plan_files()]
    assert paths and {pq.ParquetFile(p.removeprefix("file:")).metadata.row_group(0).column(0).compression
                      for p in paths} == {"SNAPPY"}
    hashed = _df(spark, 30, 3).write.format("iceberg").mode("append").option("distribution-mode", "hash")
    if request.node.callspec.params["table"] == "datasource":
        # Spark's Python data source cannot ask for a distribution: refused, not ignored
        with pytest.raises(Exception, match="the distribution-mode option needs a Floe-aware session"):
            hashed.save(table.location())
        assert len(_rows(table.refresh())) == 30
    else:
        hashed.save(table.location())
        assert len(_rows(table.refresh())) == 33
