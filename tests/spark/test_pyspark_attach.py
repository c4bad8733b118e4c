"""floe.spark.attach on the shared session: catalogs from runtime confs, floe.spark.sql, routing, bad input.

Catalog confs are runtime SQL settings, so each test sets its own catalog on the one shared session and
removes it afterwards (tests/spark/test_pyspark_programs.py covers builder-configured sessions).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _sql_helpers import hadoop_lake
from pyspark.sql import SparkSession

import floe.spark
from floe.errors import NoSuchTableError, UnsupportedError, ValidationError
from floe.spark.runtime.configure import interpreter_has_floe


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """A Hadoop catalog ``lake_<n>`` configured the Iceberg way on the shared session, with table db.t."""
    with hadoop_lake(spark, tmp_path, "lake") as name:
        spark.sql(f"CREATE TABLE {name}.db.t (id BIGINT, s STRING) USING iceberg")
        spark.sql(f"INSERT INTO {name}.db.t VALUES (1, 'a'), (2, 'b')")
        yield name


def test_sql_returns_lazy_native_queries_and_result_frames(spark: SparkSession, lake: str) -> None:
    query = floe.spark.sql(spark, f"SELECT id FROM {lake}.db.t WHERE id > 1")
    assert "FileScan parquet" in query._jdf.queryExecution().executedPlan().toString()
    assert [r.id for r in query.collect()] == [2]
    assert floe.spark.sql(spark, f"CREATE TABLE {lake}.db.u (x INT) USING iceberg").columns == []
    snapshots = floe.spark.sql(spark, f"SELECT snapshot_id FROM {lake}.db.t.snapshots").collect()
    call = floe.spark.sql(spark, f"CALL {lake}.system.rollback_to_snapshot('db.t', {snapshots[0][0]})")
    assert call.columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert spark.table(f"{lake}.db.t").count() == 2  # both rows came in one INSERT


def test_statement_results_are_collected_without_a_spark_job(spark: SparkSession, lake: str) -> None:
    # A DDL/DML result (no columns), a CALL's rows and an empty table's scan are local relations: collecting
    # them must not start a job (an RDD-backed empty frame cost 0.1-0.2 s per statement).
    tracker = spark.sparkContext.statusTracker()
    spark.sql(f"CREATE TABLE {lake}.db.e (id BIGINT NOT NULL, s STRING) USING iceberg")
    results = [
        spark.sql(f"DELETE FROM {lake}.db.t WHERE id = 2"),
        spark.sql(f"CALL {lake}.system.expire_snapshots(table => 'db.t', retain_last => 5)"),
        spark.table(f"{lake}.db.e"),  # a table without snapshots: an empty frame of its schema
    ]
    before = set(tracker.getJobIdsForGroup())
    collected = [r.collect() for r in results]
    assert set(tracker.getJobIdsForGroup()) == before
    assert collected[0] == []
    assert results[0].columns == []
    assert len(collected[1]) == 1
    assert collected[2] == []
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in results[2].schema.fields] == [
        ("id", "bigint", False), ("s", "string", True)]


def test_transparent_mode_can_be_switched_off(spark: SparkSession, lake: str) -> None:
    spark.conf.set("spark.floe.transparent", "false")
    try:
        with pytest.raises(Exception, match="PLUGIN_CLASS_NOT_FOUND"):  # Spark itself: no Iceberg jar
            spark.table(f"{lake}.db.t").collect()
    finally:
        spark.conf.unset("spark.floe.transparent")
    assert spark.table(f"{lake}.db.t").count() == 2
    floe.spark.detach(spark)
    try:
        with pytest.raises(Exception, match="PLUGIN_CLASS_NOT_FOUND"):
            spark.sql(f"SELECT * FROM {lake}.db.t").collect()
    finally:
        floe.spark.attach(spark)
    assert spark.sql(f"SELECT count(*) FROM {lake}.db.t").collect()[0][0] == 2


def test_a_temp_view_shadows_a_table_of_the_current_floe_catalog_as_in_spark(spark: SparkSession, lake: str) -> None:
    # Spark resolves a one-part name to a temporary view before the current catalog's table, whatever the
    # case it is written in; Floe asks the session's catalog for the view (the lookup is on every statement).
    spark.sql(f"USE {lake}.db")
    try:
        assert spark.sql("SELECT count(*) FROM t").collect()[0][0] == 2  # the Floe table
        spark.createDataFrame([(10,), (20,), (30,)], "id bigint").createOrReplaceTempView("t")
        try:
            assert sorted(r[0] for r in spark.sql("SELECT id FROM t").collect()) == [10, 20, 30]
            assert sorted(r[0] for r in spark.sql("SELECT id FROM T WHERE id > 10").collect()) == [20, 30]
        finally:
            spark.catalog.dropTempView("t")
        assert spark.sql("SELECT count(*) FROM t").collect()[0][0] == 2
    finally:
        spark.sql("USE spark_catalog.default")


def test_unknown_catalog_is_named_not_just_a_missing_table(spark: SparkSession, lake: str) -> None:
    with pytest.raises(NoSuchTableError, match="no catalog named 'nocat' is configured"):
        floe.spark.sql(spark, "SELECT * FROM nocat.db.t")
    with pytest.raises(NoSuchTableError, match="no catalog named 'nocat' is configured"):
        floe.spark.read(spark, "nocat.db.t")


def test_catalog_confs_floe_cannot_honour_name_the_key(spark: SparkSession, tmp_path: Path) -> None:
    key = "spark.sql.catalog.badcat"
    try:
        spark.conf.set(key, "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"{key}.catalog-impl", "org.apache.iceberg.nessie.NessieCatalog")
        with pytest.raises(ValidationError, match=r"badcat\.catalog-impl=org\.apache\.iceberg\.nessie\.NessieCatalog"):
            floe.spark.attach(spark)
    finally:
        spark.conf.unset(f"{key}.catalog-impl")
        spark.conf.unset(key)
    floe.spark.attach(spark)


def test_write_options_floe_does_not_honour_are_refused_and_nothing_is_written(spark: SparkSession, lake: str) -> None:
    before = spark.sql(f"SELECT count(*) FROM {lake}.db.t.snapshots").collect()[0][0]
    df = spark.createDataFrame([(3, "c")], "id bigint, s string")
    with pytest.raises(UnsupportedError, match="write option 'fanout-enabled'"):
        df.writeTo(f"{lake}.db.t").option("fanout-enabled", "true").append()
    with pytest.raises(ValidationError, match="invalid advisory-partition-size '0'"):
        df.writeTo(f"{lake}.db.t").option("advisory-partition-size", "0").append()
    assert spark.sql(f"SELECT count(*) FROM {lake}.db.t.snapshots").collect()[0][0] == before
    # Iceberg's write options that Floe's writer honours
    df.writeTo(f"{lake}.db.t").option("snapshot-property.app", "etl").option("distribution-mode", "hash") \
        .option("target-file-size-bytes", "1048576").option("advisory-partition-size", "1048576").append()
    summary = spark.sql(f"SELECT summary FROM {lake}.db.t.snapshots ORDER BY committed_at DESC LIMIT 1").collect()[0][0]
    assert summary["app"] == "etl"


def test_attach_points_python_workers_at_an_interpreter_with_floe(spark: SparkSession, lake: str) -> None:
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is None or system == sys.executable or interpreter_has_floe(system):
        pytest.skip("no Python interpreter without Floe on this machine")
    sc = spark.sparkContext
    before = sc.pythonExec
    try:
        sc.pythonExec = system  # as a session built without PYSPARK_PYTHON would have it
        sc._floe_python_checked = None  # type: ignore[attr-defined]
        floe.spark.attach(spark)
        assert sc.pythonExec == sys.executable
        spark.conf.set("spark.floe.transparent", "false")  # the Python data source path, in workers
        rows = spark.read.format("iceberg").load(f"{lake}.db.t").collect()
        assert sorted(r.id for r in rows) == [1, 2]
    finally:
        spark.conf.unset("spark.floe.transparent")
        sc.pythonExec = before
        floe.spark.attach(spark)


def test_inspect_gives_metadata_tables_as_dataframes(spark: SparkSession, lake: str) -> None:
    inspect = floe.spark.inspect(spark, f"{lake}.db.t")
    assert [r.operation for r in inspect.snapshots().collect()] == ["append"]
    assert inspect.files().count() == spark.sql(f"SELECT * FROM {lake}.db.t.files").count() >= 1
    assert inspect.history().columns == spark.sql(f"SELECT * FROM {lake}.db.t.history").columns
