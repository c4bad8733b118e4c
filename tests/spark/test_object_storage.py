"""The same Spark pipelines on a local warehouse and on S3 (moto's server on 127.0.0.1), through ``spark.sql``.

pyspark ships no hadoop-aws, so on S3 Floe's data plane moves the bytes with pyarrow in Spark's Python
workers (floe.spark.runtime.storage); the results must be the ones the local warehouse gives, checked against a
Python model of the rows. PyIceberg reads what Floe wrote on S3. The Hadoop catalog is refused there.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _lakes import Lake, attached_lake
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from floe.errors import UnsupportedError, ValidationError
from floe.io.fileio import FileIO
from floe.maintenance.orphan_files import remove_orphan_files
from floe.spark.runtime.storage import S3_DATA_PATH_CONF, s3a_settings, spark_reaches
from floe.spark.scan.table_read import load_table

ROWS = 400
SOURCE_VIEW = "object_storage_src"  # dropped after each test: the session is shared
DAY0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


# "s3": Floe's pip-only path (pyarrow in Spark's Python workers); "s3a": Spark's native S3A path, only in a
# session started with hadoop-aws on its classpath (test_object_storage_s3a.py runs this module so).
S3A_SESSION = os.environ.get("FLOE_TEST_S3A") == "1"


@pytest.fixture(params=["local", "s3", "s3a"] if S3A_SESSION else ["local", "s3"])
def lake(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[Lake]:
    with attached_lake(request, spark, tmp_path, request.param) as lake:
        yield lake
        spark.catalog.dropTempView(SOURCE_VIEW)


def _source(spark: SparkSession, start: int, count: int) -> None:
    """A temporary view (SOURCE_VIEW) of rows (id, ts, cat, v) with ids start .. start + count - 1."""
    (spark.range(start, start + count)
     .select(F.col("id"),
             (F.lit(DAY0.timestamp()) + (F.col("id") % 5) * 86400 + F.col("id")).cast("timestamp").alias("ts"),
             F.concat(F.lit("c"), (F.col("id") % 3).cast("string")).alias("cat"),
             (F.col("id") * 0.5).alias("v"))
     .createOrReplaceTempView(SOURCE_VIEW))


def _model(start: int, count: int) -> dict[int, tuple[str, float]]:
    return {i: (f"c{i % 3}", i * 0.5) for i in range(start, start + count)}


def _rows(lake: Lake, table: str) -> dict[int, tuple[str, float]]:
    return {int(r[0]): (str(r[1]), float(r[2])) for r in lake.sql(f"SELECT id, cat, v FROM {table}")}  # type: ignore[arg-type]


def _file_paths(lake: Lake, table: str) -> list[tuple[int, str]]:
    return [(int(c), str(p)) for c, p in lake.sql(f"SELECT content, file_path FROM {table}.files")]  # type: ignore[call-overload]


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_write_read_and_row_level_changes(lake: Lake, mode: str) -> None:
    t = f"{lake.name}.db.events"
    lake.sql(f"CREATE TABLE {t} (id bigint, ts timestamp, cat string, v double) USING iceberg "
             f"PARTITIONED BY (days(ts), bucket(4, id)) TBLPROPERTIES ('format-version'='2', "
             f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}')")
    _source(lake.spark, 0, ROWS)
    lake.sql(f"INSERT INTO {t} SELECT * FROM {SOURCE_VIEW}")
    first = lake.sql(f"SELECT snapshot_id FROM {t}.snapshots")[0][0]
    _source(lake.spark, ROWS, 100)
    lake.spark.table(SOURCE_VIEW).writeTo(t).append()
    model = _model(0, ROWS + 100)
    assert _rows(lake, t) == model

    lake.sql(f"DELETE FROM {t} WHERE id % 10 = 0")
    model = {k: v for k, v in model.items() if k % 10 != 0}
    lake.sql(f"UPDATE {t} SET v = v + 1 WHERE id % 10 = 1")
    model = {k: (c, v + 1 if k % 10 == 1 else v) for k, (c, v) in model.items()}
    _source(lake.spark, ROWS - 50, 100)  # 50 ids matched, 50 new
    lake.sql(f"MERGE INTO {t} t USING {SOURCE_VIEW} s ON t.id = s.id "
             "WHEN MATCHED AND s.id % 3 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v * 10 "
             "WHEN NOT MATCHED THEN INSERT *")
    for i in range(ROWS - 50, ROWS + 50):
        if i not in model:  # deleted above (a multiple of 10): inserted again
            model[i] = (f"c{i % 3}", i * 0.5)
        elif i % 3 == 0:
            del model[i]
        else:
            model[i] = (model[i][0], i * 0.5 * 10)
    assert _rows(lake, t) == model
    assert lake.sql(f"SELECT count(*) FROM {t} VERSION AS OF {first}") == [(ROWS,)]
    assert lake.sql(f"SELECT count(*) FROM {t} WHERE ts >= TIMESTAMP '2024-01-03' AND cat = 'c1'") == [
        (sum(1 for k, (c, _) in model.items() if c == "c1" and k % 5 >= 2),)
    ]
    files = _file_paths(lake, t)
    assert all(lake.warehouse in p for _, p in files)
    assert (any(c == 1 for c, _ in files)) == (mode == "merge-on-read")
    assert FileIO(lake.io_properties).exists(files[0][1])


def test_deletion_vectors_and_maintenance(lake: Lake) -> None:
    t = f"{lake.name}.db.dv"
    lake.sql(f"CREATE TABLE {t} (id bigint, ts timestamp, cat string, v double) USING iceberg PARTITIONED BY (cat) "
             "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')")
    for start in range(0, ROWS, 100):  # four small commits: something to compact
        _source(lake.spark, start, 100)
        lake.sql(f"INSERT INTO {t} SELECT * FROM {SOURCE_VIEW}")
    lake.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    model = {k: v for k, v in _model(0, ROWS).items() if k % 7 != 0}
    assert _rows(lake, t) == model
    assert {str(r[0]) for r in lake.sql(f"SELECT file_format FROM {t}.delete_files")} == {"PUFFIN"}

    rewritten = lake.sql(f"CALL {lake.name}.system.rewrite_data_files(table => 'db.dv', options => map('min-input-files', '2'))")
    assert rewritten[0][0] == 12
    assert rewritten[0][1] == 3  # 4 files in each of 3 partitions -> 1 each
    assert _rows(lake, t) == model
    lake.sql(f"CALL {lake.name}.system.rewrite_manifests('db.dv')")
    expired = lake.sql(f"CALL {lake.name}.system.expire_snapshots(table => 'db.dv', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert expired[0][0] >= 12  # the compacted data files are gone
    assert _rows(lake, t) == model
    live = {p for _, p in _file_paths(lake, t)}
    assert all(FileIO(lake.io_properties).exists(p) for p in live)

    stray = f"{lake.warehouse}/db/dv/data/cat=c0/stray.parquet"
    FileIO(lake.io_properties).new_output(stray).create().close()
    # The procedure refuses files younger than 24 hours (as Java): the Python API takes any cut-off.
    table = load_table(lake.spark, t)
    orphans = remove_orphan_files(table, older_than_ms=int(dt.datetime(2999, 1, 1, tzinfo=dt.UTC).timestamp() * 1000))
    assert [loc.rsplit("/", 1)[-1] for loc in orphans.orphan_file_locations] == ["stray.parquet"]
    assert not FileIO(lake.io_properties).exists(stray)
    assert _rows(lake, t) == model


def test_position_delete_files_compacted(lake: Lake) -> None:
    t = f"{lake.name}.db.pd"
    lake.sql(f"CREATE TABLE {t} (id bigint, ts timestamp, cat string, v double) USING iceberg "
             "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')")
    _source(lake.spark, 0, ROWS)
    lake.sql(f"INSERT INTO {t} SELECT * FROM {SOURCE_VIEW}")
    for k in (3, 5, 7):
        lake.sql(f"DELETE FROM {t} WHERE id % {k} = 0")
    model = {i: v for i, v in _model(0, ROWS).items() if i % 3 and i % 5 and i % 7}
    assert len(lake.sql(f"SELECT * FROM {t}.delete_files")) == 3
    result = lake.sql(f"CALL {lake.name}.system.rewrite_position_delete_files(table => 'db.pd', options => map('rewrite-all', 'true'))")
    assert (result[0][0], result[0][1]) == (3, 1)
    assert _rows(lake, t) == model
    deleted = lake.sql(f"SELECT count(*) FROM {t}.position_deletes")
    assert deleted == [(ROWS - len(model),)]


def test_streaming_sink_and_source(lake: Lake, tmp_path: Path) -> None:
    t = f"{lake.name}.db.stream"
    lake.sql(f"CREATE TABLE {t} (id bigint, ts timestamp, cat string, v double) USING iceberg PARTITIONED BY (cat)")
    feed = tmp_path / "feed"
    for start in (0, 100):
        _source(lake.spark, start, 100)
        lake.spark.table(SOURCE_VIEW).write.mode("append").parquet(str(feed))
    stream = lake.spark.readStream.schema(lake.spark.table(SOURCE_VIEW).schema).parquet(str(feed))
    (stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp-in"))
     .trigger(availableNow=True).toTable(t).awaitTermination())
    assert _rows(lake, t) == _model(0, 200)
    copied = tmp_path / "copied"
    (lake.spark.readStream.format("iceberg").load(t).writeStream.format("parquet")
     .option("checkpointLocation", str(tmp_path / "cp-out")).option("path", str(copied))
     .trigger(availableNow=True).start().awaitTermination())
    assert lake.spark.read.parquet(str(copied)).count() == 200


def test_pyiceberg_reads_what_floe_wrote(lake: Lake) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    t = f"{lake.name}.db.shared"
    lake.sql(f"CREATE TABLE {t} (id bigint, ts timestamp, cat string, v double) USING iceberg "
             "PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    _source(lake.spark, 0, ROWS)
    lake.sql(f"INSERT INTO {t} SELECT * FROM {SOURCE_VIEW}")
    lake.sql(f"DELETE FROM {t} WHERE id < 50")
    catalog = SqlCatalog(lake.name, uri=f"sqlite:///{lake.catalog_db}", warehouse=lake.warehouse, **lake.io_properties)
    read = catalog.load_table("db.shared").scan().to_arrow()
    assert sorted(read.column("id").to_pylist()) == list(range(50, ROWS))


def test_hadoop_catalog_on_object_store_is_refused(spark: SparkSession, s3_endpoint) -> None:  # type: ignore[no-untyped-def]
    from floe.catalog.hadoop import HadoopCatalog

    with pytest.raises(UnsupportedError, match="object store.*unsafe.*SQL or REST catalog"):
        HadoopCatalog("lake", warehouse=s3_endpoint.location("hadoop-wh"), **s3_endpoint.properties)


def test_data_path_moves_the_bytes(lake: Lake) -> None:
    """The path the fixture chose is the one that ran: Spark's native Parquet scan over ``s3a://`` files on
    the S3A path, the Python workers' scan on the pip-only path."""
    t = f"{lake.name}.db.path"
    lake.sql(f"CREATE TABLE {t} (id bigint, cat string) USING iceberg TBLPROPERTIES ('format-version'='2')")
    lake.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    plan = lake.spark.table(t)._jdf.queryExecution().executedPlan().toString()
    native = "FileScan parquet" in plan
    assert native == (not lake.warehouse.startswith("s3://")), plan
    if lake.warehouse.startswith("s3a://"):
        assert "s3a://" in plan, plan
    assert sorted(lake.sql(f"SELECT id, cat FROM {t}")) == [(1, "a"), (2, "b")]


def test_s3_data_path_conf_chooses_the_path(spark: SparkSession) -> None:
    assert spark_reaches(spark, "/tmp/x")
    assert spark_reaches(spark, "file:/tmp/x")
    # pip's pyspark has no S3A file system; a session with hadoop-aws gets Spark's native path instead
    assert spark_reaches(spark, "s3://bucket/x") == S3A_SESSION
    try:
        spark.conf.set(S3_DATA_PATH_CONF, "python")
        assert not spark_reaches(spark, "s3a://bucket/x")
        assert spark_reaches(spark, "/tmp/x")
        spark.conf.set(S3_DATA_PATH_CONF, "native")
        if S3A_SESSION:
            assert spark_reaches(spark, "s3://bucket/x")
        else:
            with pytest.raises(ValidationError, match="data-path=native but Spark has no S3A file system"):
                spark_reaches(spark, "s3://bucket/x")
        spark.conf.set(S3_DATA_PATH_CONF, "fast")
        with pytest.raises(ValidationError, match="Invalid spark.floe.s3.data-path='fast'"):
            spark_reaches(spark, "s3://bucket/x")
    finally:
        spark.conf.unset(S3_DATA_PATH_CONF)


def test_s3a_settings_per_bucket() -> None:
    props = {"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key-id": "k", "s3.secret-access-key": "s",
             "s3.path-style-access": "true", "s3.region": "eu-west-1"}
    assert s3a_settings("s3://lake/wh/t", props) == {
        "fs.s3a.bucket.lake.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.bucket.lake.access.key": "k",
        "fs.s3a.bucket.lake.secret.key": "s",
        "fs.s3a.bucket.lake.endpoint.region": "eu-west-1",
        "fs.s3a.bucket.lake.path.style.access": "true",
        "fs.s3a.bucket.lake.connection.ssl.enabled": "false",
        "fs.s3a.bucket.lake.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    assert s3a_settings("/local/path", props) == {}
