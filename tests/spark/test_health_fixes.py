"""The statements ``floe.health`` suggests, run through Spark SQL: the findings go away and the score goes up.

Each table is degraded on purpose with one of Floe's write paths (pure-Python appends for streaming-like
tiny commits and for an upsert table's CDC batches, Spark SQL for merge-on-read deletes, a transaction of
appends for thousands of snapshots); the rows are checked unchanged by every fix.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import floe
import floe.spark
from floe.health import HealthReport
from floe.sql.engine import SqlSession
from floe.table.table import Table
from tests.unit._health_tables import many_snapshots, streaming_table

pytestmark = pytest.mark.spark


def _table(session: SqlSession, name: str) -> Table:
    t = session.catalog().load_table(name)  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t


def _rows(spark: SparkSession, t: Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in floe.spark.read(spark, t.refresh()).collect())


def _run(session: SqlSession, report: HealthReport, codes: tuple[str, ...]) -> HealthReport:
    """Run the statements of these findings (in the report's order) and return the table's new report."""
    for code in codes:
        f = report.finding(code)
        assert f is not None, f"{code} expected in {[x.code for x in report.findings]}"
        session.sql(f.statement)
    t = _table(session, report.table)
    return floe.health(t)


@pytest.mark.slow  # 500 commits, then Spark compacts 500 files: 30-40 s
def test_health_streaming_small_files_fixed_by_rewrite_data_files(session: SqlSession, spark: SparkSession) -> None:
    table = streaming_table(session.catalog(), "db.stream", appends=500)
    before = floe.health(table)
    f = before.finding("SMALL_FILES")
    assert f is not None
    assert f.statement == "CALL floe.system.rewrite_data_files(table => 'db.stream', where => \"dt = 'a' OR dt = 'b'\")"
    rows = _rows(spark, table)
    after = _run(session, before, ("SMALL_FILES",))
    assert after.finding("SMALL_FILES") is None
    assert after.data_files == f.files_after == 2
    assert after.score > before.score
    assert after.score_parts.file_size == 1.0
    assert _rows(spark, table) == rows
    print(f"streaming: score {before.score} -> {after.score}, data files {f.files_before} -> {after.data_files}")


@pytest.mark.slow  # 30 merge-on-read DELETE statements in Spark
def test_health_merge_on_read_30_delete_rounds(session: SqlSession, spark: SparkSession) -> None:
    session.sql(
        "CREATE TABLE db.mor (id BIGINT, dt STRING) USING iceberg PARTITIONED BY (dt) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.delete.granularity'='partition')"  # every round adds a delete file per partition
    )
    session.sql("INSERT INTO db.mor SELECT id, IF(id % 2 = 0, 'a', 'b') FROM range(3000)")
    for k in range(30):
        session.sql(f"DELETE FROM db.mor WHERE id % 100 = {k}")
    table = _table(session, "db.mor")
    before = floe.health(table)
    assert before.deletes.position_delete_files == 30  # one per round, in the partition of its ids' parity
    assert before.deletes.position_delete_rows == 900
    rows = before.finding("DELETED_ROWS")
    files = before.finding("POSITION_DELETE_FILES")
    assert rows is not None and files is not None
    assert rows.statement == (
        "CALL floe.system.rewrite_data_files(table => 'db.mor', where => \"dt = 'a' OR dt = 'b'\", "
        "options => map('delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))"
    )
    assert files.statement == (
        "CALL floe.system.rewrite_position_delete_files(table => 'db.mor', options => map('rewrite-all', 'true'))"
    )
    assert (files.files_before, files.files_after) == (30, 2)
    assert not rows.safe_now and "spark app" in rows.safe_reason  # the DELETEs were just committed
    expected = _rows(spark, table)
    after = _run(session, before, ("DELETED_ROWS", "POSITION_DELETE_FILES"))
    assert after.finding("DELETED_ROWS") is None
    assert after.finding("POSITION_DELETE_FILES") is None
    assert after.deletes.position_delete_files == 0
    assert after.score_parts.position_deletes == 1.0
    assert after.score > before.score
    assert _rows(spark, table) == expected
    print(f"merge-on-read: score {before.score} -> {after.score}, delete files {files.files_before} -> 0")


@pytest.mark.slow  # 10 merge-on-read DELETE statements in Spark, then a compaction
def test_health_v3_deletion_vectors_applied_by_rewrite(session: SqlSession, spark: SparkSession) -> None:
    session.sql(
        "CREATE TABLE db.dv (id BIGINT, dt STRING) USING iceberg PARTITIONED BY (dt) "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')"
    )
    session.sql("INSERT INTO db.dv SELECT id, IF(id % 2 = 0, 'a', 'b') FROM range(2000)")
    for k in range(10):
        session.sql(f"DELETE FROM db.dv WHERE id % 40 = {k}")
    table = _table(session, "db.dv")
    before = floe.health(table)
    assert (before.deletes.dv_count, before.deletes.position_delete_files) == (2, 0)  # one vector per data file
    assert before.deletes.dv_rows == 500 and before.deletes.dv_coverage == 1.0
    assert before.finding("POSITION_DELETE_FILES") is None
    expected = _rows(spark, table)
    after = _run(session, before, ("DELETED_ROWS",))
    assert after.finding("DELETED_ROWS") is None
    assert after.deletes.dv_count == 0
    assert after.score > before.score
    assert _rows(spark, table) == expected
    print(f"v3 vectors: score {before.score} -> {after.score}")


@pytest.mark.slow  # 12 upsert commits, a conversion and a compaction in Spark: 30 s
def test_health_equality_delete_cdc_table(session: SqlSession, spark: SparkSession) -> None:
    session.sql(
        "CREATE TABLE db.cdc (id BIGINT NOT NULL, dt STRING NOT NULL, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "USING iceberg PARTITIONED BY (dt) TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='true')"
    )
    table = _table(session, "db.cdc")
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), ("v", pa.string())])
    for batch in range(12):  # CDC batches re-writing half of the keys of the one before (no Spark)
        ids = list(range(batch * 50, batch * 50 + 100))
        table.append(pa.table({"id": ids, "dt": ["a" if i % 2 else "b" for i in ids], "v": [f"v{batch}"] * 100}, schema))
    table.refresh()
    before = floe.health(table)
    eq = before.finding("EQUALITY_DELETES")
    assert eq is not None
    assert eq.statement == "CALL floe.system.rewrite_equality_deletes(table => 'db.cdc', where => \"dt = 'a' OR dt = 'b'\")"
    assert eq.files_before == before.deletes.equality_delete_files >= 11
    expected = _rows(spark, table)
    converted = _run(session, before, ("EQUALITY_DELETES",))
    assert converted.finding("EQUALITY_DELETES") is None
    assert converted.deletes.equality_delete_files == 0
    assert converted.score > before.score  # equality deletes weigh 40, the position deletes they become 20
    assert _rows(spark, table) == expected
    # What remains (small files, the position deletes the conversion wrote) goes with the next statements.
    remaining = tuple(f.code for f in converted.findings if f.code in ("SMALL_FILES", "DELETED_ROWS", "POSITION_DELETE_FILES"))
    assert "SMALL_FILES" in remaining
    clean = _run(session, converted, remaining)
    assert not {f.code for f in clean.findings} & set(remaining)
    assert clean.score > converted.score
    assert _rows(spark, table) == expected
    print(f"cdc: score {before.score} -> {converted.score} -> {clean.score}, ran {('EQUALITY_DELETES', *remaining)}")


@pytest.mark.slow  # building 2,000 snapshots takes 15-20 s (a file write per commit)
def test_health_2000_snapshots_expired_and_manifests_rewritten(session: SqlSession, spark: SparkSession) -> None:
    table = many_snapshots(session.catalog(), "db.many", 2000)
    before = floe.health(table)
    assert before.finding("SNAPSHOTS_MANY") is not None and before.finding("MANIFESTS") is not None
    after = _run(session, before, ("SNAPSHOTS_MANY", "MANIFESTS"))
    assert after.snapshots.count == 100 + 1  # the last 100 kept, and the snapshot rewrite_manifests committed
    assert after.manifests.count == 1
    assert after.finding("SNAPSHOTS_MANY") is None and after.finding("MANIFESTS") is None
    assert after.score > before.score
    # the files are descriptors (never opened): the same live files before and after
    assert (after.data_files, after.data_rows) == (before.data_files, before.data_rows)
    print(f"2,000 snapshots: score {before.score} -> {after.score}, manifests {before.manifests.count} -> 1")
