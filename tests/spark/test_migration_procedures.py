"""add_files, snapshot and migrate through SQL CALL: Spark Parquet tables and folders imported without
rewriting, checked by Floe's reads and by PyIceberg reading the resulting metadata."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _sql_helpers import rows, run, table
from pyspark.sql import SparkSession

from floe.errors import FloeError, UnsupportedError, ValidationError
from floe.serde.single_value import decode_bounds
from floe.spark.procedures.import_sources import parse_source_name
from floe.sql.engine import SqlSession

_N = itertools.count()


def spark_source(spark: SparkSession, tmp_path: Path, *, partitioned: bool = True) -> str:
    """A Spark Parquet table (external, in tmp_path) with rows 10/x/A, 11/y/B, 12/z/A; returns its name."""
    name = f"src_{next(_N)}"
    part = "PARTITIONED BY (p)" if partitioned else ""
    spark.sql(f"CREATE TABLE {name} (id bigint, data string, p string) USING parquet {part} "
              f"LOCATION '{tmp_path / name}'")
    spark.sql(f"INSERT INTO {name} VALUES (10, 'x', 'A'), (11, 'y', 'B'), (12, 'z', 'A')")
    return name


def iceberg_table(session: SqlSession, *, partitioned: bool = True) -> str:
    name = f"t_{next(_N)}"
    part = "PARTITIONED BY (p)" if partitioned else ""
    run(session, f"CREATE TABLE db.{name} (id bigint, data string, p string) USING iceberg {part}")
    return name


def test_parse_source_name_backticks_keep_dots() -> None:
    assert parse_source_name("`parquet`.`/a/b.c`") == ("parquet", "/a/b.c")


def test_add_files_partition_filter_adds_matching_files(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files(table => 'db.{dst}', source_table => '{src}', partition_filter => map('p', 'A'))")
    assert rows(session, f"SELECT id, data, p FROM db.{dst}") == [(10, "x", "A"), (12, "z", "A")]


def test_add_files_result_counts_files_and_no_partition_count(
        session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    result = run(session, f"CALL system.add_files('db.{dst}', '{src}')")
    assert (result.columns, result.rows[0][1]) == (["added_files_count", "changed_partition_count"], None)


def test_add_files_sets_name_mapping(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files('db.{dst}', '{src}')")
    assert "schema.name-mapping.default" in table(session, dst).properties


def test_add_files_partition_values_from_paths(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files('db.{dst}', '{src}')")
    parts = {r[0] for r in run(session, f"SELECT partition.p FROM db.{dst}.files").rows}
    assert parts == {"A", "B"}


def test_add_files_footer_metrics_through_mapping(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files('db.{dst}', '{src}', map('p', 'B'))")
    t = table(session, dst)
    files = list(t.scan().include_column_stats().plan_files())
    assert decode_bounds(files[0].data_file.lower_bounds, t.schema()) == {1: 11, 2: "y"}


def test_add_files_duplicates_refused(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files('db.{dst}', '{src}', map('p', 'A'))")
    with pytest.raises(ValidationError, match="already exist within the target table"):
        run(session, f"CALL system.add_files('db.{dst}', '{src}')")


def test_add_files_duplicates_allowed_when_unchecked(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files('db.{dst}', '{src}', map('p', 'B'))")
    run(session, f"CALL system.add_files(table => 'db.{dst}', source_table => '{src}', "
                 "partition_filter => map('p', 'B'), check_duplicate_files => false)")
    assert len(list(table(session, dst).scan().plan_files())) == 2


def test_file_listed_twice_is_read_twice(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    """Two manifest entries for one data file are two scan tasks: Java reads the rows twice, so does Floe
    (Spark's file listing would collapse the repeated path), also with a delete applied to both."""
    folder = tmp_path / f"flat_{next(_N)}"
    folder.mkdir()
    pq.write_table(pa.table({"id": [20, 21], "data": ["p", "q"]}), folder / "a.parquet")
    name = f"t_{next(_N)}"
    run(session, f"CREATE TABLE db.{name} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='2', "
                 "'write.delete.mode'='merge-on-read')")
    for _ in range(2):
        run(session, f"CALL system.add_files(table => 'db.{name}', source_table => '`parquet`.`{folder}`', "
                     "check_duplicate_files => false)")
    assert sorted(rows(session, f"SELECT * FROM db.{name}")) == [(20, "p"), (20, "p"), (21, "q"), (21, "q")]
    assert rows(session, f"SELECT count(*) FROM db.{name}") == [(4,)]
    run(session, f"DELETE FROM db.{name} WHERE id = 21")
    assert rows(session, f"SELECT * FROM db.{name}") == [(20, "p"), (20, "p")]


def test_add_files_spec_mismatch_refused(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session, partitioned=False)
    with pytest.raises(ValidationError, match="matches the partition columns"):
        run(session, f"CALL system.add_files('db.{dst}', '{src}')")


def test_add_files_filter_on_unknown_column_refused(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    with pytest.raises(ValidationError, match="not partitioned: nope"):
        run(session, f"CALL system.add_files('db.{dst}', '{src}', map('nope', 'A'))")


def test_add_files_unpartitioned_table_counts_partition(
        session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path, partitioned=False), iceberg_table(session, partitioned=False)
    assert run(session, f"CALL system.add_files('db.{dst}', '{src}')").rows[0][1] == 1


def test_add_files_flat_folder(session: SqlSession, tmp_path: Path) -> None:
    folder = tmp_path / f"flat_{next(_N)}"
    folder.mkdir()
    pq.write_table(pa.table({"id": [20, 21], "data": ["p", "q"]}), folder / "a.parquet")
    name = f"t_{next(_N)}"
    run(session, f"CREATE TABLE db.{name} (id bigint, data string) USING iceberg")
    run(session, f"CALL system.add_files('db.{name}', '`parquet`.`{folder}`')")
    assert rows(session, f"SELECT * FROM db.{name}") == [(20, "p"), (21, "q")]


def test_add_files_hive_folder_with_null_partition(session: SqlSession, tmp_path: Path) -> None:
    folder = tmp_path / f"hive_{next(_N)}"
    for value in ("1", "__HIVE_DEFAULT_PARTITION__"):
        (folder / f"k={value}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [int(value) if value == "1" else 0]}), folder / f"k={value}" / "f.parquet")
    name = f"t_{next(_N)}"
    run(session, f"CREATE TABLE db.{name} (id bigint, k int) USING iceberg PARTITIONED BY (k)")
    run(session, f"CALL system.add_files('db.{name}', '`parquet`.`{folder}`')")
    assert rows(session, f"SELECT id, k FROM db.{name}") == [(0, None), (1, 1)]


def test_add_files_orc_refused(session: SqlSession, tmp_path: Path) -> None:
    name = iceberg_table(session, partitioned=False)
    with pytest.raises(UnsupportedError, match="Parquet only"):
        run(session, f"CALL system.add_files('db.{name}', '`orc`.`{tmp_path}`')")


def test_add_files_missing_spark_table_refused(session: SqlSession) -> None:
    name = iceberg_table(session)
    with pytest.raises(FloeError, match="does not exist"):
        run(session, f"CALL system.add_files('db.{name}', 'no_such_source')")


def test_add_files_pyiceberg_reads_result(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, dst = spark_source(spark, tmp_path), iceberg_table(session)
    run(session, f"CALL system.add_files('db.{dst}', '{src}')")
    static = pytest.importorskip("pyiceberg.table").StaticTable.from_metadata(table(session, dst).metadata_location)
    assert sorted(static.scan().to_arrow().column("id").to_pylist()) == [10, 11, 12]


def test_snapshot_reads_source_rows(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, snap = spark_source(spark, tmp_path), f"snap_{next(_N)}"
    assert run(session, f"CALL system.snapshot('{src}', 'db.{snap}')").rows == [(3,)]
    assert rows(session, f"SELECT id FROM db.{snap}") == [(10,), (11,), (12,)]


def test_snapshot_marks_properties(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, snap = spark_source(spark, tmp_path), f"snap_{next(_N)}"
    run(session, f"CALL system.snapshot(source_table => '{src}', table => 'db.{snap}', properties => map('k', 'v'))")
    props = table(session, snap).properties
    assert (props["snapshot"], props["gc.enabled"], props["k"]) == ("true", "false", "v")


def test_snapshot_writes_leave_source_alone(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src, snap = spark_source(spark, tmp_path), f"snap_{next(_N)}"
    run(session, f"CALL system.snapshot('{src}', 'db.{snap}')")
    run(session, f"INSERT INTO db.{snap} VALUES (13, 'w', 'C')")
    assert spark.sql(f"SELECT count(*) FROM {src}").collect()[0][0] == 3


def test_snapshot_overlapping_location_refused(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src = spark_source(spark, tmp_path)
    with pytest.raises(ValidationError, match="overlap"):
        run(session, f"CALL system.snapshot('{src}', 'db.snap_{next(_N)}', '{tmp_path / src}/inner')")


def test_migrate_replaces_spark_table(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src = spark_source(spark, tmp_path)
    assert run(session, f"CALL system.migrate('{src}', backup_table_name => '{src}_bak')").rows == [(3,)]
    assert rows(session, f"SELECT id FROM db.{src}") == [(10,), (11,), (12,)]


def test_migrate_keeps_backup(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src = spark_source(spark, tmp_path)
    run(session, f"CALL system.migrate('{src}')")
    assert spark.catalog.tableExists(f"default.{src}_BACKUP_")


def test_migrate_drop_backup(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    src = spark_source(spark, tmp_path)
    run(session, f"CALL system.migrate(table => '{src}', drop_backup => true)")
    assert not spark.catalog.tableExists(f"default.{src}_BACKUP_")


def test_migrate_managed_table_refused(session: SqlSession, spark: SparkSession) -> None:
    name = f"managed_{next(_N)}"
    spark.sql(f"CREATE TABLE {name} (id bigint) USING parquet")
    with pytest.raises(ValidationError, match="managed Spark table"):
        run(session, f"CALL system.migrate('{name}')")
