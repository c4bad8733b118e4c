"""The Spark SQL of the seed book (002, chapters 3, 4 and 6), statement by statement, through Floe's SQL engine.

``hdfs://bigdata185:9000/dw/iceberg`` becomes a local warehouse; the catalog is configured exactly as the
book's spark-defaults.conf does (``spark.sql.catalog.hadoop_catalog.type=hadoop``). Each test checks what
the book says the statements do: rows after every insert/overwrite/delete, snapshot counts and
operations in ``.history``/``.snapshots``, time travel rows and the rollback procedures' results.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.errors import NoSuchTableError, UnsupportedError
from floe.sql import ResultSet
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HISTORY_JOIN = """
SELECT
    h.made_current_at,
    s.operation,
    h.snapshot_id,
    h.is_current_ancestor,
    s.summary['spark.app.id']
 FROM hadoop_catalog.db.sensordata.history h
 JOIN hadoop_catalog.db.sensordata.snapshots s
   ON h.snapshot_id = s.snapshot_id
ORDER BY made_current_at
"""

CREATE_SENSORDATA = """
CREATE TABLE sensordata(
  sensor_id STRING,
  ts BIGINT,
  temperature DOUBLE,
  dt STRING
) USING iceberg
PARTITIONED BY(dt)
"""


@pytest.fixture
def session(tmp_path: Path, spark: SparkSession) -> SqlSession:
    """The book's hadoop_catalog (warehouse on local disk), USE hadoop_catalog; CREATE DATABASE db; USE db."""
    cfg = FloeConfig.load(
        {
            "spark.sql.catalog.hadoop_catalog": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.hadoop_catalog.type": "hadoop",
            "spark.sql.catalog.hadoop_catalog.warehouse": str(tmp_path / "dw" / "iceberg"),
            "spark.sql.session.timeZone": "UTC",
        },
        environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")},
        cwd=tmp_path,
    )
    s = make_session(cfg, spark=spark)
    s.sql("use hadoop_catalog; create database db; use db;")
    return s


def run(session: SqlSession, sql: str) -> ResultSet:
    return session.sql(sql)[-1]


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    return sorted(run(session, sql).rows, key=repr)


def test_seed_ch3_ddl_create_desc_alter_ctas_drop(session: SqlSession) -> None:
    session.sql(
        CREATE_SENSORDATA
        + "TBLPROPERTIES ('read.split.target-size'='134217728', 'read.split.metadata-target-size'='33554432')"
    )
    desc = run(session, "DESC sensordata")
    assert desc.columns == ["col_name", "data_type", "comment"]
    assert [r[:2] for r in desc.rows[:4]] == [
        ("sensor_id", "string"), ("ts", "bigint"), ("temperature", "double"), ("dt", "string"),
    ]
    assert ("# Partitioning", "", "") in desc.rows
    assert ("Part 0", "dt", "") in desc.rows
    formatted = {r[0]: r[1] for r in run(session, "DESC FORMATTED sensordata").rows}
    assert formatted["Provider"] == "iceberg"
    assert formatted["Location"].endswith("/dw/iceberg/db/sensordata")
    assert "read.split.target-size=134217728" in str(formatted["Table Properties"])

    run(session, "ALTER TABLE sensordata UNSET TBLPROPERTIES ('read.split.target-size')")
    props = dict(run(session, "SHOW TBLPROPERTIES sensordata").rows)
    assert "read.split.target-size" not in props
    assert props["read.split.metadata-target-size"] == "33554432"
    run(session, "ALTER TABLE sensordata SET TBLPROPERTIES ('read.split.target-size'='134217728')")
    assert dict(run(session, "SHOW TBLPROPERTIES sensordata").rows)["read.split.target-size"] == "134217728"

    run(session, "ALTER TABLE sensordata ADD COLUMNS (new_column string comment 'new_column docs')")
    assert ("new_column", "string", "new_column docs") in run(session, "DESC sensordata").rows
    run(session, "ALTER TABLE sensordata DROP COLUMN new_column")
    assert "new_column" not in [r[0] for r in run(session, "DESC sensordata").rows]

    run(session, "INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01')")
    run(session, "CREATE TABLE hadoop_catalog.db.sensordata_like USING iceberg AS SELECT * FROM sensordata")
    assert rows(session, "SELECT * FROM sensordata_like") == [("sensor_01", 1635743301, -12.1, "2021-12-01")]
    assert [r[:2] for r in run(session, "DESC sensordata_like").rows[:4]][1] == ("ts", "bigint")
    run(session, "DROP TABLE hadoop_catalog.db.sensordata_like")
    run(session, "DROP TABLE sensordata")
    assert run(session, "SHOW TABLES").rows == []


def test_seed_ch3_dml_insert_overwrite_dynamic_static_delete(session: SqlSession) -> None:
    session.sql(CREATE_SENSORDATA)
    run(session, "INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01')")
    assert rows(session, "SELECT * FROM sensordata") == [("sensor_01", 1635743301, -12.1, "2021-12-01")]
    # 2.2.2: the overwrite refreshes the partition
    run(session, "INSERT OVERWRITE sensordata VALUES('sensor_02',1635743301,23.6,'2021-12-01')")
    assert rows(session, "SELECT * FROM sensordata") == [("sensor_02", 1635743301, 23.6, "2021-12-01")]
    # 2.2.3: dynamic overwrite mode
    run(session, "SET spark.sql.sources.partitionOverwriteMode=dynamic")
    session.sql(CREATE_SENSORDATA.replace("sensordata(", "sensordata_01("))
    run(session, "INSERT INTO sensordata VALUES('sensor_02',1638421701,-22.2,'2021-12-02')")
    two = [("sensor_02", 1635743301, 23.6, "2021-12-01"), ("sensor_02", 1638421701, -22.2, "2021-12-02")]
    assert rows(session, "SELECT * FROM sensordata") == two
    run(session, "INSERT OVERWRITE sensordata_01 SELECT * FROM sensordata")
    assert rows(session, "SELECT * FROM sensordata_01") == two
    # 2.2.4: static overwrite of one named partition
    run(
        session,
        "INSERT OVERWRITE sensordata_01 PARTITION(dt='2021-12-31') SELECT sensor_id,ts,temperature FROM sensordata",
    )
    assert rows(session, "SELECT * FROM sensordata_01") == sorted(
        two + [("sensor_02", 1635743301, 23.6, "2021-12-31"), ("sensor_02", 1638421701, -22.2, "2021-12-31")],
        key=repr,
    )
    # 2.2.5: deleting whole partitions is a metadata-only delete; the data files stay on disk
    files_before = rows(session, "SELECT file_path FROM hadoop_catalog.db.sensordata_01.files")
    run(session, "DELETE FROM sensordata_01 WHERE dt>='2021-12-01'")
    assert rows(session, "SELECT * FROM sensordata_01") == []
    assert all(Path(str(p[0]).removeprefix("file:")).exists() for p in files_before)
    snaps = run(session, "SELECT operation, summary FROM hadoop_catalog.db.sensordata_01.snapshots")
    assert [r[0] for r in snaps.rows] == ["overwrite", "overwrite", "delete"]
    assert snaps.rows[-1][1]["deleted-data-files"] == "3"
    assert "added-data-files" not in snaps.rows[-1][1]
    # 2.2.6: UPDATE (not available on the book's Spark 3.0; copy-on-write here)
    run(session, "UPDATE sensordata SET ts=1631349225,sensor_id='sensor_27' WHERE dt='2021-12-01'")
    assert rows(session, "SELECT * FROM sensordata") == [
        ("sensor_02", 1638421701, -22.2, "2021-12-02"), ("sensor_27", 1631349225, 23.6, "2021-12-01"),
    ]


def test_seed_ch3_metadata_tables_and_time_travel(session: SqlSession) -> None:
    session.sql(CREATE_SENSORDATA)
    run(session, "INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01')")
    run(session, "INSERT OVERWRITE sensordata VALUES('sensor_02',1635743301,23.6,'2021-12-01')")
    run(session, "INSERT INTO sensordata VALUES('sensor_02',1638421701,-22.2,'2021-12-02')")
    history = run(session, "SELECT * FROM hadoop_catalog.db.sensordata.history")
    assert history.columns == ["made_current_at", "snapshot_id", "parent_id", "is_current_ancestor"]
    assert len(history) == 3
    assert all(r[3] is True for r in history.rows)
    joined = run(session, HISTORY_JOIN)
    assert [r[1] for r in joined.rows] == ["append", "overwrite", "append"]
    assert all(str(r[4]).startswith("local-") for r in joined.rows)  # spark.app.id in every summary
    files = run(session, "SELECT file_path, partition, record_count FROM hadoop_catalog.db.sensordata.files")
    assert sorted((r[1]["dt"], r[2]) for r in files.rows) == [("2021-12-01", 1), ("2021-12-02", 1)]
    assert all("/data/dt=2021-12-0" in str(r[0]) for r in files.rows)
    manifests = run(session, "SELECT added_data_files_count FROM hadoop_catalog.db.sensordata.manifests")
    assert sum(int(str(r[0])) for r in manifests.rows) >= 1
    # 2.3.1.3: the data as of the overwrite snapshot (the book reads it with spark.read.option("snapshot-id"))
    overwrite_id = joined.rows[1][2]
    assert rows(session, f"SELECT * FROM sensordata VERSION AS OF {overwrite_id}") == [
        ("sensor_02", 1635743301, 23.6, "2021-12-01")
    ]
    first_at = joined.rows[0][0]
    assert isinstance(first_at, dt.datetime)
    stamp = (first_at + dt.timedelta(milliseconds=1)).isoformat(sep=" ", timespec="milliseconds")
    assert rows(session, f"SELECT * FROM sensordata TIMESTAMP AS OF '{stamp}'") == [
        ("sensor_01", 1635743301, -12.1, "2021-12-01")
    ]
    # metadata table of an older snapshot
    assert len(run(session, f"SELECT * FROM hadoop_catalog.db.sensordata.files VERSION AS OF {overwrite_id}")) == 1


@pytest.mark.parametrize(
    ("transform", "stamps", "partitions"),
    [
        ("days", (1639816497, 1639730097), {dt.date(2021, 12, 18), dt.date(2021, 12, 17)}),
        ("years", (1608194097, 1639730097), {50, 51}),  # years since 1970: 2020, 2021
        ("months", (1637138097, 1639730097), {622, 623}),  # months since 1970-01: 2021-11, 2021-12
    ],
)
def test_seed_ch3_hidden_partitions(
    session: SqlSession, transform: str, stamps: tuple[int, int], partitions: set[object]
) -> None:
    name = f"sensordata_{transform}"
    run(
        session,
        f"CREATE TABLE {name}(sensor_id STRING, ts TIMESTAMP, temperature DOUBLE) USING iceberg PARTITIONED BY({transform}(ts))",
    )
    a, b = stamps
    run(
        session,
        f"INSERT INTO {name} VALUES('sensor_01',CAST({a} AS TIMESTAMP),10.2),('sensor_01',CAST({b} AS TIMESTAMP),12.3)",
    )
    got = rows(session, f"SELECT sensor_id, unix_timestamp(ts), temperature FROM {name}")
    assert got == sorted([("sensor_01", a, 10.2), ("sensor_01", b, 12.3)], key=repr)
    files = run(session, f"SELECT partition FROM hadoop_catalog.db.{name}.files")
    assert {next(iter(r[0].values())) for r in files.rows} == partitions
    assert ("Part 0", f"{transform}(ts)", "") in run(session, f"DESC {name}").rows


def test_seed_ch4_crud_and_time_travel(session: SqlSession) -> None:
    session.sql(CREATE_SENSORDATA)
    run(session, "INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01')")
    run(session, "use hadoop_catalog.db")
    assert ("db", "sensordata", False) in run(session, "show tables").rows
    run(session, "drop table sensordata")
    session.sql(CREATE_SENSORDATA)
    assert rows(session, "SELECT * FROM sensordata") == []  # a fresh table: the dropped one's data is gone
    run(session, "INSERT INTO sensordata VALUES('sensor_01',1638351932,-0.2,'2021-12-01')")
    run(
        session,
        "INSERT INTO sensordata VALUES('sensor_03',1638351932,-23.2,'2021-12-01'),('sensor_02',1638351625,-5.2,'2021-12-02')",
    )
    three = [
        ("sensor_01", 1638351932, -0.2, "2021-12-01"),
        ("sensor_02", 1638351625, -5.2, "2021-12-02"),
        ("sensor_03", 1638351932, -23.2, "2021-12-01"),
    ]
    assert rows(session, "SELECT * FROM sensordata") == three
    run(session, "delete from sensordata")
    assert rows(session, "select * from sensordata") == []
    joined = run(session, HISTORY_JOIN)
    assert [r[1] for r in joined.rows] == ["append", "append", "delete"]
    before_delete = joined.rows[1][2]
    assert rows(session, f"SELECT * FROM sensordata VERSION AS OF {before_delete}") == three
    assert rows(session, f"SELECT * FROM hadoop_catalog.db.sensordata.snapshot_id_{before_delete}") == three


def test_seed_ch6_version_management_procedures(session: SqlSession) -> None:
    session.sql(CREATE_SENSORDATA)
    for sql in (
        "INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01')",
        "INSERT OVERWRITE sensordata VALUES('sensor_02',1635743301,23.6,'2021-12-01')",
        "INSERT INTO sensordata VALUES('sensor_02',1638421701,-22.2,'2021-12-02')",
        "DELETE FROM sensordata WHERE dt = '2021-12-02'",
        "INSERT INTO sensordata VALUES('sensor_03',1638421701,-22.2,'2021-12-03')",
    ):
        run(session, sql)
    versions = run(session, HISTORY_JOIN.replace("h.made_current_at", "s.committed_at").replace("made_current_at", "committed_at"))
    assert [r[1] for r in versions.rows] == ["append", "overwrite", "append", "delete", "append"]
    ids = [r[2] for r in versions.rows]
    assert rows(session, "SELECT * FROM sensordata") == [
        ("sensor_02", 1635743301, 23.6, "2021-12-01"), ("sensor_03", 1638421701, -22.2, "2021-12-03"),
    ]
    # 2.1.2.1 rollback_to_snapshot to the delete's snapshot
    result = run(session, f"CALL hadoop_catalog.system.rollback_to_snapshot('db.sensordata', {ids[3]})")
    assert result.columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert result.rows == [(ids[4], ids[3])]
    assert rows(session, "SELECT * FROM sensordata") == [("sensor_02", 1635743301, 23.6, "2021-12-01")]
    # 2.1.2.2 rollback_to_timestamp to the delete's commit time: the newest ancestor strictly older
    delete_at = versions.rows[3][0]
    stamp = delete_at.isoformat(sep=" ", timespec="milliseconds")
    result = run(session, f"CALL hadoop_catalog.system.rollback_to_timestamp('db.sensordata', TIMESTAMP '{stamp}')")
    assert result.rows == [(ids[3], ids[2])]
    assert rows(session, "SELECT * FROM sensordata") == [
        ("sensor_02", 1635743301, 23.6, "2021-12-01"), ("sensor_02", 1638421701, -22.2, "2021-12-02"),
    ]
    # 2.1.3 set_current_snapshot to the last append (not an ancestor of the current snapshot any more)
    result = run(session, f"CALL hadoop_catalog.system.set_current_snapshot('db.sensordata', {ids[4]})")
    assert result.rows == [(ids[2], ids[4])]
    assert rows(session, "SELECT * FROM sensordata") == [
        ("sensor_02", 1635743301, 23.6, "2021-12-01"), ("sensor_03", 1638421701, -22.2, "2021-12-03"),
    ]
    # named arguments, as Iceberg's docs write them
    result = run(
        session, f"CALL hadoop_catalog.system.rollback_to_snapshot(snapshot_id => {ids[1]}, table => 'db.sensordata')"
    )
    assert result.rows == [(ids[4], ids[1])]
    history = run(session, "SELECT snapshot_id, is_current_ancestor FROM hadoop_catalog.db.sensordata.history")
    assert len(history) == 9  # 5 commits + 4 ref changes, each a snapshot-log entry
    assert {r[0] for r in history.rows if r[1]} == {ids[0], ids[1]}


def test_seed_ch6_expire_snapshots_and_rewrite_manifests(session: SqlSession, tmp_path: Path) -> None:
    session.sql(CREATE_SENSORDATA)
    for sql in (
        "INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01')",
        "INSERT OVERWRITE sensordata VALUES('sensor_02',1635743301,23.6,'2021-12-01')",
        "INSERT INTO sensordata VALUES('sensor_02',1638421701,-22.2,'2021-12-02')",
        "DELETE FROM sensordata WHERE dt = '2021-12-02'",
        "INSERT INTO sensordata VALUES('sensor_03',1638421701,-22.2,'2021-12-03')",
    ):
        run(session, sql)
    expected = [("sensor_02", 1635743301, 23.6, "2021-12-01"), ("sensor_03", 1638421701, -22.2, "2021-12-03")]
    assert rows(session, "SELECT * FROM sensordata") == expected
    data_dir = tmp_path / "dw" / "iceberg" / "db" / "sensordata" / "data"
    files_before = {p for p in data_dir.rglob("*.parquet")}
    committed = [r[0] for r in run(session, "SELECT committed_at FROM hadoop_catalog.db.sensordata.snapshots ORDER BY committed_at").rows]
    # 2.2.1 expire everything older than the third commit, keeping 3 snapshots
    stamp = committed[2].isoformat(sep=" ", timespec="milliseconds")
    result = run(session, f"CALL hadoop_catalog.system.expire_snapshots('db.sensordata', TIMESTAMP '{stamp}', 3)")
    assert result.columns[:5] == [
        "deleted_data_files_count", "deleted_position_delete_files_count", "deleted_equality_delete_files_count",
        "deleted_manifest_files_count", "deleted_manifest_lists_count",
    ]
    deleted = dict(zip(result.columns, result.rows[0]))
    # the first insert's file was only needed by the two expired snapshots (the overwrite replaced it)
    assert deleted["deleted_data_files_count"] == 1
    assert deleted["deleted_manifest_lists_count"] == 2
    assert deleted["deleted_manifest_files_count"] >= 1
    assert len(files_before - set(data_dir.rglob("*.parquet"))) == 1
    after = run(session, HISTORY_JOIN.replace("h.made_current_at", "s.committed_at").replace("made_current_at", "committed_at"))
    assert [r[1] for r in after.rows] == ["append", "delete", "append"]  # nothing older than the cut-off is left
    assert min(r[0] for r in after.rows) >= committed[2]
    assert rows(session, "SELECT * FROM sensordata") == expected
    # 2.2.2 rewrite manifests: every data manifest of the current snapshot into one, a replace snapshot
    manifests = len(run(session, "SELECT * FROM hadoop_catalog.db.sensordata.manifests WHERE content = 0"))
    assert manifests > 1
    result = run(session, "CALL hadoop_catalog.system.rewrite_manifests('db.sensordata')")
    assert result.columns == ["rewritten_manifests_count", "added_manifests_count"]
    assert result.rows == [(manifests, 1)]
    # one manifest left: nothing to rewrite, no snapshot (as Iceberg Java)
    result = run(session, "CALL hadoop_catalog.system.rewrite_manifests('db.sensordata', false)")
    assert result.rows == [(0, 0)]
    ops = run(session, "SELECT operation FROM hadoop_catalog.db.sensordata.snapshots ORDER BY committed_at")
    assert [r[0] for r in ops.rows][-2:] == ["append", "replace"]
    assert len(run(session, "SELECT * FROM hadoop_catalog.db.sensordata.manifests")) == 1
    assert rows(session, "SELECT * FROM sensordata") == expected
    # migrate takes a Spark (Parquet) table; an Iceberg table is not one
    with pytest.raises(NoSuchTableError, match=r"Spark table db\.sensordata does not exist"):
        run(session, "CALL hadoop_catalog.system.migrate('db.sensordata')")


def test_seed_ch6_hive_storage_handler_declares_an_iceberg_table(session: SqlSession) -> None:
    """Seed ch.6 creates Iceberg tables from Hive with Iceberg's storage handler: Floe makes the same table."""
    run(session, "CREATE TABLE hive_t (id int) STORED BY 'org.apache.iceberg.mr.hive.HiveIcebergStorageHandler'")
    run(session, "INSERT INTO hive_t VALUES (1)")
    assert rows(session, "SELECT * FROM hive_t") == [(1,)]
    with pytest.raises(UnsupportedError):  # another storage handler is no Iceberg table
        run(session, "CREATE TABLE other_t (id int) STORED BY 'org.apache.hadoop.hive.hbase.HBaseStorageHandler'")
