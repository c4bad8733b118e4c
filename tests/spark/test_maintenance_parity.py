"""Maintenance procedures behaving as Iceberg Java 1.10 on Spark 3.5 does (the rules behind scenarios 13, 15).

Each test checks one fact through SQL CALL on small tables: rewrite_manifests skipping a compact table,
rewrite_data_files' options and strategies (sort, z-order), rewrite_position_delete_files,
remove_orphan_files' guard and prefix handling, and compute_table_stats' Puffin file.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from floe.errors import UnsupportedError, ValidationError
from floe.io.locations import to_local_path
from floe.io.puffin import read_footer
from floe.sql import ResultSet
from floe.sql.engine import SqlSession
from floe.table.table import Table


def run(session: SqlSession, sql: str) -> ResultSet:
    return session.sql(sql)[-1]


def table(session: SqlSession, name: str) -> Table:
    t = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t


def make(session: SqlSession, name: str, inserts: int = 3, props: str = "") -> Table:
    session.sql(f"DROP TABLE IF EXISTS {name}")
    extra = f", {props}" if props else ""
    session.sql(
        f"CREATE TABLE {name} (id BIGINT, name STRING, category STRING) USING iceberg PARTITIONED BY (category) "
        f"TBLPROPERTIES ('format-version'='2'{extra})"
    )
    for i in range(inserts):
        session.sql(f"INSERT INTO {name} VALUES ({2 * i}, 'n{2 * i}', 'x'), ({2 * i + 1}, 'n{2 * i + 1}', 'y')")
    return table(session, name)


def data_files(t: Table) -> list[str]:
    return sorted(f.file_path for task in t.refresh().scan().plan_files() for f in [task.data_file])


# -- rewrite_manifests --------------------------------------------------------------------------------
def test_rewrite_manifests_compact_table_returns_zero(session: SqlSession) -> None:
    make(session, "rm")
    assert run(session, "CALL floe.system.rewrite_manifests('db.rm')").rows == [(3, 1)]
    assert run(session, "CALL floe.system.rewrite_manifests('db.rm')").rows == [(0, 0)]


def test_rewrite_manifests_compact_table_commits_nothing(session: SqlSession) -> None:
    t = make(session, "rm2")
    run(session, "CALL floe.system.rewrite_manifests('db.rm2')")
    before = t.refresh().metadata.current_snapshot_id
    run(session, "CALL floe.system.rewrite_manifests(table => 'db.rm2', spec_id => 0)")
    assert t.refresh().metadata.current_snapshot_id == before


# -- rewrite_data_files -------------------------------------------------------------------------------
def test_rewrite_data_files_where_double_quoted_string_parses(session: SqlSession) -> None:
    make(session, "wq")
    result = run(session, """CALL floe.system.rewrite_data_files(table => 'db.wq', where => 'id = 2 and name = "n2"')""")
    assert result.rows == [(0, 0, 0, 0, 0)]


def test_rewrite_data_files_remove_dangling_deletes_accepted(session: SqlSession) -> None:
    make(session, "dd")
    result = run(
        session,
        "CALL floe.system.rewrite_data_files(table => 'db.dd', options => map('min-input-files', '2', "
        "'remove-dangling-deletes', 'true'))",
    )
    assert result.rows[0][:2] == (6, 2)


def test_rewrite_data_files_rewrite_all_takes_single_files(session: SqlSession) -> None:
    make(session, "ra")
    run(session, "CALL floe.system.rewrite_data_files(table => 'db.ra', options => map('min-input-files', '2'))")
    result = run(session, "CALL floe.system.rewrite_data_files(table => 'db.ra', options => map('rewrite-all', 'true'))")
    assert result.rows[0][:2] == (2, 2)


def test_rewrite_data_files_max_files_to_rewrite_limits(session: SqlSession) -> None:
    make(session, "mf")
    result = run(
        session,
        "CALL floe.system.rewrite_data_files(table => 'db.mf', options => map('rewrite-all', 'true', "
        "'max-files-to-rewrite', '4'))",
    )
    assert result.rows[0][0] == 4


def _jobs_between(spark: SparkSession, t0: float, t1: float) -> list[tuple[float, float, str | None]]:
    """(start, end) epoch seconds and job group of the Spark jobs submitted in [t0, t1]."""
    store = spark.sparkContext._jsc.sc().statusStore()  # type: ignore[union-attr]
    out = []
    it = store.jobsList(None).iterator()
    while it.hasNext():
        job = it.next()
        sub, end = job.submissionTime(), job.completionTime()
        if sub.isDefined() and end.isDefined() and t0 <= sub.get().getTime() / 1000 <= t1:
            group = job.jobGroup()
            out.append((sub.get().getTime() / 1000, end.get().getTime() / 1000, str(group.get()) if group.isDefined() else None))
    return sorted(out)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_rewrite_data_files_groups_run_as_concurrent_jobs(session: SqlSession, spark: SparkSession, concurrency: int) -> None:
    """max-concurrent-file-group-rewrites: the partitions' groups are Spark jobs running at the same time
    (one at a time with 1); the rows and the files per partition are the same either way."""
    name = f"cg{concurrency}"
    session.sql(f"DROP TABLE IF EXISTS {name}")
    session.sql(f"CREATE TABLE {name} (id BIGINT, category STRING) USING iceberg PARTITIONED BY (category)")
    for i in range(3):
        session.sql(f"INSERT INTO {name} SELECT id, concat('c', CAST(id % 4 AS STRING)) FROM range({i * 1000}, {(i + 1) * 1000})")
    before = run(session, f"SELECT * FROM {name} ORDER BY id").rows
    t0 = time.time()
    spark.sparkContext.setJobGroup(f"maintenance-{name}", "compaction")  # the groups' threads take it too
    try:
        result = run(session, f"CALL floe.system.rewrite_data_files(table => 'db.{name}', options => map("
                     f"'min-input-files', '2', 'max-concurrent-file-group-rewrites', '{concurrency}'))")
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    jobs = _jobs_between(spark, t0, time.time())
    assert {g for _, _, g in jobs} == {f"maintenance-{name}"}
    jobs = [(s, e) for s, e, _ in jobs]
    assert result.rows[0][:2] == (12, 4)
    assert run(session, f"SELECT * FROM {name} ORDER BY id").rows == before
    assert [len([f for f in data_files(table(session, name)) if f"category=c{p}" in f]) for p in range(4)] == [1] * 4
    overlapping = any(b[0] < a[1] for a, b in itertools.pairwise(jobs))
    assert overlapping == (concurrency > 1), jobs


def test_rewrite_data_files_unknown_option_refused(session: SqlSession) -> None:
    make(session, "uo", inserts=1)
    with pytest.raises(ValidationError, match="no-such-option"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.uo', options => map('no-such-option', '1'))")


def test_rewrite_data_files_sort_option_refused_for_binpack(session: SqlSession) -> None:
    make(session, "so", inserts=1)
    with pytest.raises(ValidationError, match="compression-factor"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.so', options => map('compression-factor', '2'))")


def test_rewrite_data_files_unknown_strategy_refused(session: SqlSession) -> None:
    make(session, "us", inserts=1)
    with pytest.raises(ValidationError, match="unsupported strategy: nope"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.us', strategy => 'nope')")


def test_rewrite_data_files_other_output_spec_refused(session: SqlSession) -> None:
    make(session, "os", inserts=1)
    session.sql("ALTER TABLE os ADD PARTITION FIELD bucket(2, id)")
    with pytest.raises(UnsupportedError, match="output-spec-id 0"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.os', options => map('output-spec-id', '0'))")


def test_rewrite_data_files_sort_without_table_order_refused(session: SqlSession) -> None:
    make(session, "su", inserts=1)
    with pytest.raises(ValidationError, match="Cannot sort data without a valid sort order"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.su', strategy => 'sort')")


def test_rewrite_data_files_sort_order_writes_sorted_files(session: SqlSession) -> None:
    t = make(session, "sd")
    run(
        session,
        "CALL floe.system.rewrite_data_files(table => 'db.sd', strategy => 'sort', "
        "sort_order => 'id DESC NULLS LAST,name ASC NULLS FIRST', options => map('rewrite-all', 'true'))",
    )
    ids = [pq.read_table(to_local_path(p)).column("id").to_pylist() for p in data_files(t)]
    assert all(i == sorted(i, reverse=True) for i in ids)
    assert sum(len(i) for i in ids) == 6


def test_rewrite_data_files_sort_uses_table_order(session: SqlSession) -> None:
    t = make(session, "st")
    session.sql("ALTER TABLE st WRITE ORDERED BY name DESC")
    run(session, "CALL floe.system.rewrite_data_files(table => 'db.st', strategy => 'sort', options => map('rewrite-all', 'true'))")
    names = [pq.read_table(to_local_path(p)).column("name").to_pylist() for p in data_files(t)]
    assert all(n == sorted(n, reverse=True) for n in names)


def test_rewrite_data_files_zorder_keeps_rows(session: SqlSession) -> None:
    make(session, "zo")
    before = sorted(run(session, "SELECT * FROM zo").rows)
    result = run(
        session,
        "CALL floe.system.rewrite_data_files(table => 'db.zo', strategy => 'sort', sort_order => 'zorder(id,name)', "
        "options => map('rewrite-all', 'true'))",
    )
    assert result.rows[0][:2] == (6, 2)
    assert sorted(run(session, "SELECT * FROM zo").rows) == before


def test_rewrite_data_files_zorder_orders_by_interleaved_bits(session: SqlSession) -> None:
    session.sql("DROP TABLE IF EXISTS zu")
    session.sql("CREATE TABLE zu (a BIGINT, b BIGINT) USING iceberg")
    session.sql("INSERT INTO zu VALUES (3, 3), (0, 1)")
    session.sql("INSERT INTO zu VALUES (1, 0), (0, 0)")
    t = table(session, "zu")
    run(session, "CALL floe.system.rewrite_data_files(table => 'db.zu', sort_order => 'zorder(a, b)', options => map('rewrite-all', 'true'))")
    got = pq.read_table(to_local_path(data_files(t)[0])).to_pylist()
    assert [(r["a"], r["b"]) for r in got] == [(0, 0), (0, 1), (1, 0), (3, 3)]


def test_rewrite_data_files_mixed_zorder_and_columns_refused(session: SqlSession) -> None:
    make(session, "zm", inserts=1)
    with pytest.raises(ValidationError, match="Cannot mix identity sort columns and a Zorder"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.zm', sort_order => 'zorder(id), name')")


def test_rewrite_data_files_delete_threshold_drops_obsolete_deletes(session: SqlSession) -> None:
    make(session, "mor", props="'write.delete.mode'='merge-on-read'")
    session.sql("DELETE FROM mor WHERE id = 0")
    session.sql("INSERT INTO mor VALUES (9, 'n9', 'x')")  # the rewrite's sequence number is now above the delete's
    run(session, "CALL floe.system.rewrite_data_files(table => 'db.mor', options => map('rewrite-all', 'true'))")
    assert run(session, "SELECT count(*) FROM floe.db.mor.delete_files").rows == [(0,)]


# -- rewrite_position_delete_files -------------------------------------------------------------------
def two_deletes(session: SqlSession, name: str) -> None:
    """Two data files of partition x, a position delete file for each (the files keep other rows)."""
    make(session, name, inserts=0, props="'write.delete.mode'='merge-on-read'")
    session.sql(f"INSERT INTO {name} VALUES (0, 'a', 'x'), (2, 'b', 'x'), (4, 'c', 'x')")
    session.sql(f"INSERT INTO {name} VALUES (6, 'd', 'x'), (8, 'e', 'x')")
    session.sql(f"DELETE FROM {name} WHERE id = 0")
    session.sql(f"DELETE FROM {name} WHERE id = 6")


def test_rewrite_position_delete_files_without_deletes_returns_zero(session: SqlSession) -> None:
    make(session, "pd0", inserts=1)
    assert run(session, "CALL floe.system.rewrite_position_delete_files('db.pd0')").rows == [(0, 0, 0, 0)]


@pytest.mark.parametrize(("granularity", "added"), [("file", 2), ("partition", 1)])
def test_rewrite_position_delete_files_follows_the_delete_granularity(session: SqlSession, granularity: str, added: int) -> None:
    """As Iceberg Java's rewrite (checked with jsql, 1.10.2): at file granularity, the default, one delete file per
    data file, at partition granularity one for the partition; here a third delete joins the first file's."""
    two_deletes(session, "pd")
    session.sql(f"ALTER TABLE pd SET TBLPROPERTIES ('write.delete.granularity'='{granularity}')")
    session.sql("DELETE FROM pd WHERE id = 2")
    result = run(session, "CALL floe.system.rewrite_position_delete_files(table => 'db.pd', options => map('rewrite-all', 'true'))")
    assert result.rows[0][:2] == ((2 if granularity == "file" else 3), added)
    t = table(session, "pd")
    files = {e.data_file.file_path: e.data_file for task in t.refresh().scan().plan_files() for e in task.deletes}
    assert sorted(f.record_count for f in files.values()) == ([1, 2] if granularity == "file" else [3])
    if granularity == "file":  # each names its one data file
        assert {f.referenced_data_file for f in files.values()} == {task.data_file.file_path for task in t.scan().plan_files()}
    assert sorted(r[0] for r in run(session, "SELECT id FROM pd").rows) == [4, 8]


def test_rewrite_position_delete_files_keeps_rows_deleted(session: SqlSession) -> None:
    two_deletes(session, "pk")
    run(session, "CALL floe.system.rewrite_position_delete_files(table => 'db.pk', options => map('rewrite-all', 'true'))")
    assert sorted(r[0] for r in run(session, "SELECT id FROM pk").rows) == [2, 4, 8]


def test_rewrite_position_delete_files_unknown_option_refused(session: SqlSession) -> None:
    make(session, "pu", inserts=1)
    with pytest.raises(ValidationError, match="delete-file-threshold"):
        run(session, "CALL floe.system.rewrite_position_delete_files(table => 'db.pu', options => map('delete-file-threshold', '1'))")


# -- remove_orphan_files ------------------------------------------------------------------------------
def test_remove_orphan_files_refuses_interval_under_24_hours(session: SqlSession) -> None:
    make(session, "ro", inserts=1)
    with pytest.raises(ValidationError, match="interval less than 24 hours"):
        run(session, "CALL floe.system.remove_orphan_files(table => 'db.ro', older_than => TIMESTAMP '2100-01-01 00:00:00', dry_run => true)")


def test_remove_orphan_files_accepts_prefix_mismatch_mode(session: SqlSession) -> None:
    make(session, "rp", inserts=1)
    assert run(session, "CALL floe.system.remove_orphan_files(table => 'db.rp', prefix_mismatch_mode => 'IGNORE')").rows == []


def test_remove_orphan_files_accepts_equal_schemes(session: SqlSession) -> None:
    make(session, "rs", inserts=1)
    assert run(session, "CALL floe.system.remove_orphan_files(table => 'db.rs', equal_schemes => map('file', 'file1'))").rows == []


def test_remove_orphan_files_file_list_view_lists_stray(session: SqlSession, spark: SparkSession) -> None:
    t = make(session, "rv", inserts=1)
    stray = t.location() + "/data/stray.parquet"
    old = dt.datetime(2000, 1, 1)
    spark.createDataFrame([(stray, old)], "file_path string, last_modified timestamp").createOrReplaceTempView("listing")
    result = run(session, "CALL floe.system.remove_orphan_files(table => 'db.rv', file_list_view => 'listing', dry_run => true)")
    assert result.rows == [(stray,)]


# -- compute_table_stats ------------------------------------------------------------------------------
def test_compute_table_stats_registers_statistics_file(session: SqlSession) -> None:
    t = make(session, "cs")
    path = run(session, "CALL floe.system.compute_table_stats('db.cs')").rows[0][0]
    assert [s.statistics_path for s in t.refresh().metadata.statistics] == [path]


def test_compute_table_stats_blob_ndv(session: SqlSession) -> None:
    t = make(session, "cn")
    path = run(session, "CALL floe.system.compute_table_stats(table => 'db.cn', columns => array('category'))").rows[0][0]
    blobs = read_footer(t.io, path).blobs
    assert [(b.type, b.properties["ndv"]) for b in blobs] == [("apache-datasketches-theta-v1", "2")]


def test_compute_table_stats_file_in_metadata_dir(session: SqlSession) -> None:
    t = make(session, "cm", inserts=1)
    path = run(session, "CALL floe.system.compute_table_stats('db.cm')").rows[0][0]
    assert Path(to_local_path(path)).parent == Path(to_local_path(t.location())) / "metadata"
