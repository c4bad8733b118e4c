"""INSERT / DELETE / UPDATE / SELECT semantics beyond the seeds: column lists, overwrite modes, copy-on-write
deletes and their conflict validation, metrics-only deletes, branches/tags, joins, EXPLAIN."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from floe.errors import CommitConflictError, ValidationError
from floe.io.locations import to_local_path
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    return sorted(session.sql(sql)[-1].rows, key=repr)


def ops(session: SqlSession, table: str) -> list[object]:
    result = session.sql(f"SELECT operation FROM floe.db.{table}.snapshots ORDER BY committed_at")[-1]
    return [r[0] for r in result.rows]


def test_insert_column_list_static_partition_and_overwrite_modes(session: SqlSession) -> None:
    session.sql("CREATE TABLE ins (id BIGINT, name STRING, dt STRING) USING iceberg PARTITIONED BY (dt)")
    session.sql("INSERT INTO ins (name, id, dt) VALUES ('a', 1, 'd1'), ('b', 2, 'd2')")
    session.sql("INSERT INTO ins PARTITION (dt = 'd3') VALUES (3, 'c')")
    with pytest.raises(ValidationError, match="no data for column 'name'"):  # as Spark: no NULL fill
        session.sql("INSERT INTO ins (id, dt) SELECT id + 10, dt FROM ins WHERE dt = 'd1'")
    session.sql("INSERT INTO ins (id, dt, name) SELECT id + 10, dt, NULL FROM ins WHERE dt = 'd1'")
    assert rows(session, "SELECT * FROM ins") == [
        (1, "a", "d1"), (11, None, "d1"), (2, "b", "d2"), (3, "c", "d3"),
    ]
    # static overwrite with a PARTITION clause replaces that partition only
    session.sql("INSERT OVERWRITE ins PARTITION (dt = 'd1') VALUES (4, 'x')")
    assert rows(session, "SELECT id, dt FROM ins") == [(2, "d2"), (3, "d3"), (4, "d1")]
    # dynamic overwrite replaces the partitions present in the rows
    session.sql("SET spark.sql.sources.partitionOverwriteMode=dynamic")
    session.sql("INSERT OVERWRITE ins VALUES (5, 'y', 'd2')")
    assert rows(session, "SELECT id, dt FROM ins") == [(3, "d3"), (4, "d1"), (5, "d2")]
    # static overwrite without PARTITION replaces the whole table
    session.sql("SET spark.sql.sources.partitionOverwriteMode=static")
    session.sql("INSERT OVERWRITE ins SELECT 6, 'z', 'd9'")
    assert rows(session, "SELECT * FROM ins") == [(6, "z", "d9")]
    assert ops(session, "ins") == ["append", "append", "append", "overwrite", "overwrite", "overwrite"]


def test_delete_copy_on_write_rewrites_only_partly_matching_files(session: SqlSession) -> None:
    session.sql("CREATE TABLE cow (id BIGINT, dt STRING) USING iceberg PARTITIONED BY (dt)")
    session.sql("INSERT INTO cow VALUES (1, 'a'), (2, 'a'), (3, 'b')")
    files_before = {r[0]: r[1] for r in session.sql("SELECT partition['dt'], file_path FROM floe.db.cow.files")[-1].rows}
    session.sql("DELETE FROM cow WHERE id = 1 OR upper(dt) = 'X'")  # upper(): beyond Floe's filters, Spark decides
    assert rows(session, "SELECT * FROM cow") == [(2, "a"), (3, "b")]
    files_after = {r[0]: r[1] for r in session.sql("SELECT partition['dt'], file_path FROM floe.db.cow.files")[-1].rows}
    assert files_after["a"] != files_before["a"]  # rewritten
    # the condition could not prune, but Spark found no match in b's file: untouched, as in Iceberg Java
    assert files_after["b"] == files_before["b"]
    summary = session.sql("SELECT summary FROM floe.db.cow.snapshots ORDER BY committed_at")[-1].rows[-1][0]
    assert summary["deleted-records"] == "2"
    assert summary["added-records"] == "1"
    # a condition Floe can evaluate prunes: only the file holding id = 2 is touched
    session.sql("DELETE FROM cow WHERE id = 2")
    final = {r[0]: r[1] for r in session.sql("SELECT partition['dt'], file_path FROM floe.db.cow.files")[-1].rows}
    assert final == {"b": files_after["b"]}
    assert ops(session, "cow") == ["append", "overwrite", "delete"]


def test_delete_by_metrics_is_metadata_only(session: SqlSession) -> None:
    session.sql("CREATE TABLE met (id BIGINT, v STRING) USING iceberg")
    session.sql("INSERT INTO met VALUES (1, 'a'), (2, 'b')")
    session.sql("INSERT INTO met VALUES (10, 'c'), (11, 'd')")
    kept = session.sql("SELECT file_path FROM floe.db.met.files ORDER BY file_path")[-1].rows
    session.sql("DELETE FROM met WHERE id >= 10")  # min/max of the second file prove every row matches
    assert rows(session, "SELECT * FROM met") == [(1, "a"), (2, "b")]
    summary = session.sql("SELECT operation, summary FROM floe.db.met.snapshots ORDER BY committed_at")[-1].rows[-1]
    remaining = set(session.sql("SELECT file_path FROM floe.db.met.files")[-1].rows)
    assert remaining < set(kept)  # no new file: the matching files were dropped from metadata
    assert summary[0] == "delete"
    assert "added-data-files" not in summary[1]
    assert summary[1]["deleted-data-files"] == str(len(kept) - len(remaining))


def test_delete_rewrite_conflicts_with_concurrent_append_in_same_partition(
    session: SqlSession, spark: SparkSession
) -> None:
    from floe.spark.row_level.commits import rewrite_commit
    from floe.spark.row_level.dml import plan_candidates

    session.sql("CREATE TABLE conf (id BIGINT, dt STRING) USING iceberg PARTITIONED BY (dt)")
    session.sql("INSERT INTO conf VALUES (1, 'a'), (2, 'a')")
    table = session.catalog().load_table(("db", "conf"))  # type: ignore[attr-defined]
    from floe.expressions.parser import parse_filter

    expr = parse_filter("id = 1")
    snapshot_id, tasks = plan_candidates(table, expr)
    before = table.metadata_location
    session.sql("INSERT INTO conf VALUES (1, 'a')")  # a concurrent writer adds a matching row
    data_dir = Path(to_local_path(table.location())) / "data"
    files_before = {p for p in data_dir.rglob("*") if p.is_file()}
    kept = spark.createDataFrame([(2, "a")], "id long, dt string")  # Spark writes it, then the commit loses
    with pytest.raises(CommitConflictError):
        rewrite_commit(table, snapshot_id=snapshot_id, removed=tasks, new_rows=kept, expr=expr, snapshot_properties={})
    assert {p for p in data_dir.rglob("*") if p.is_file()} == files_before  # the rewrite's files are gone
    assert table.refresh().metadata_location != before  # only the concurrent append landed
    assert rows(session, "SELECT * FROM conf") == [(1, "a"), (1, "a"), (2, "a")]


def test_update_copy_on_write_and_time_travel_to_refs(session: SqlSession) -> None:
    session.sql("CREATE TABLE upd (id BIGINT, name STRING, score DOUBLE) USING iceberg")
    session.sql("INSERT INTO upd VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, NULL, 3.0)")
    session.sql("ALTER TABLE upd CREATE TAG v1")
    session.sql("UPDATE upd AS u SET score = u.score * 10, name = upper(name) WHERE u.id <> 2")
    assert rows(session, "SELECT * FROM upd") == [(1, "A", 10.0), (2, "b", 2.0), (3, None, 30.0)]
    old = [(1, "a", 1.0), (2, "b", 2.0), (3, None, 3.0)]
    assert rows(session, "SELECT * FROM upd VERSION AS OF 'v1'") == old
    assert rows(session, "SELECT * FROM floe.db.upd.tag_v1") == old
    session.sql("ALTER TABLE upd CREATE BRANCH dev")
    assert rows(session, "SELECT count(*) FROM floe.db.upd.branch_dev") == [(3,)]
    refs = session.sql("SELECT name, type FROM floe.db.upd.refs")[-1].rows
    assert sorted(refs) == [("dev", "BRANCH"), ("main", "BRANCH"), ("v1", "TAG")]


def test_select_joins_aggregates_ctas_and_explain(session: SqlSession) -> None:
    session.sql("CREATE TABLE j1 (k INT, v STRING) USING iceberg")
    session.sql("CREATE TABLE j2 (k INT, w DOUBLE) USING iceberg PARTITIONED BY (bucket(4, k))")
    session.sql("INSERT INTO j1 VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    session.sql("INSERT INTO j2 VALUES (1, 1.5), (1, 2.5), (3, 4.0)")
    q = (
        "WITH t AS (SELECT k, sum(w) AS total FROM floe.db.j2 GROUP BY k) "
        "SELECT a.v, t.total FROM j1 a LEFT JOIN t ON a.k = t.k ORDER BY a.v"
    )
    assert session.sql(q)[-1].rows == [("x", 4.0), ("y", None), ("z", 4.0)]
    session.sql(f"CREATE TABLE agg USING iceberg PARTITIONED BY (v) AS {q}")
    assert rows(session, "SELECT * FROM agg") == [("x", 4.0), ("y", None), ("z", 4.0)]
    assert [r[1] for r in session.sql("DESC agg")[-1].rows if str(r[0]).startswith("Part")] == ["v"]
    plan = session.sql("EXPLAIN SELECT * FROM j1 WHERE k = 1")[-1]
    assert plan.columns == ["plan"]
    assert "Physical Plan" in str(plan.rows[0][0])
    assert session.sql("SELECT 1 + 1 AS two")[-1].rows == [(2,)]


def test_select_joins_floe_table_with_caller_temp_view(session: SqlSession, spark: SparkSession) -> None:
    session.sql("CREATE TABLE tv (k INT, v STRING) USING iceberg")
    session.sql("INSERT INTO tv VALUES (1, 'x'), (2, 'y')")
    spark.createDataFrame([(1, "one")], "k INT, label STRING").createOrReplaceTempView("labels")
    try:
        got = session.sql("SELECT tv.v, labels.label FROM tv JOIN labels ON tv.k = labels.k")[-1].rows
    finally:
        spark.catalog.dropTempView("labels")
    assert got == [("x", "one")]


def test_merge_copy_on_write_matched_not_matched_and_by_source(session: SqlSession) -> None:
    session.sql("CREATE TABLE tgt (id BIGINT, v STRING, n INT) USING iceberg PARTITIONED BY (bucket(2, id))")
    session.sql("INSERT INTO tgt VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 1), (4, 'd', 1)")
    session.sql("CREATE TABLE src (id BIGINT, v STRING, op STRING) USING iceberg")
    session.sql("INSERT INTO src VALUES (1, 'A', 'upd'), (2, NULL, 'del'), (5, 'E', 'ins'), (6, 'F', 'skip')")
    session.sql(
        """
        MERGE INTO tgt t USING src s ON t.id = s.id
        WHEN MATCHED AND s.op = 'del' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.v = s.v, n = t.n + 1
        WHEN NOT MATCHED AND s.op = 'ins' THEN INSERT (id, v) VALUES (s.id, s.v)
        WHEN NOT MATCHED BY SOURCE AND t.id = 4 THEN UPDATE SET n = 0
        """
    )
    assert rows(session, "SELECT * FROM tgt") == [(1, "A", 2), (3, "c", 1), (4, "d", 0), (5, "E", None)]
    assert ops(session, "tgt")[-1] == "overwrite"
    # insert-only MERGE appends without rewriting anything
    files = set(session.sql("SELECT file_path FROM floe.db.tgt.files")[-1].rows)
    session.sql("MERGE INTO tgt USING (SELECT id, v, 7 AS n FROM src) s ON tgt.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(session, "SELECT * FROM tgt WHERE id >= 5") == [(5, "E", None), (6, "F", 7)]
    assert files < set(session.sql("SELECT file_path FROM floe.db.tgt.files")[-1].rows)
    assert ops(session, "tgt")[-1] == "append"


def test_insert_select_maps_by_position_even_when_names_collide(session: SqlSession) -> None:
    session.sql("CREATE TABLE bypos (a INT, b STRING, d DOUBLE) USING iceberg")
    session.sql("INSERT INTO bypos SELECT CAST(id AS INT), 'x', CAST(id AS DOUBLE) FROM range(2)")
    session.sql("INSERT INTO bypos SELECT id AS d, 'y' AS b, id * 10 AS a FROM range(2)")  # names ignored
    session.sql("INSERT INTO bypos SELECT 7, 'z', 7")
    assert rows(session, "SELECT * FROM bypos") == [
        (0, "x", 0.0), (0, "y", 0.0), (1, "x", 1.0), (1, "y", 10.0), (7, "z", 7.0)
    ]


def test_insert_values_files_follow_spark_split(session: SqlSession, spark: SparkSession) -> None:
    # Spark splits VALUES into min(rows, default parallelism) tasks; Iceberg Java writes one file per task
    session.sql("CREATE TABLE onefile (id BIGINT, s STRING) USING iceberg")
    session.sql("INSERT INTO onefile VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    expected = min(4, spark.sparkContext.defaultParallelism)
    assert rows(session, "SELECT count(*) FROM onefile.files") == [(expected,)]


def test_sql_on_files_reads_parquet_paths_in_insert_and_merge(session: SqlSession, spark: SparkSession, tmp_path: Path) -> None:
    # Spark's SQL on files (parquet.`/path`), as Iceberg Java accepts it in INSERT and MERGE sources
    src = tmp_path / "src"
    spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, name string").write.parquet(str(src))
    session.sql("CREATE TABLE onfiles (id BIGINT, name STRING) USING iceberg")
    session.sql(f"INSERT INTO onfiles SELECT * FROM parquet.`{src}`")
    assert rows(session, "SELECT * FROM onfiles") == [(1, "a"), (2, "b")]
    more = tmp_path / "more"
    spark.createDataFrame([(2, "B"), (3, "c")], "id bigint, name string").write.parquet(str(more))
    session.sql(f"MERGE INTO onfiles t USING parquet.`{more}` s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT *")
    assert rows(session, "SELECT * FROM onfiles") == [(1, "a"), (2, "B"), (3, "c")]


@pytest.mark.parametrize(("partitioned", "command", "mode", "by_file", "options"), [
    # DELETE and UPDATE default to hash: an unpartitioned table's rows are clustered by their file
    (False, "DELETE", None, "hash", {"distribution-mode": "none"}),
    (False, "UPDATE", "range", "range", {"distribution-mode": "none"}),
    (False, "DELETE", "none", None, {"distribution-mode": "none"}),
    # a partitioned table's rows are clustered by partition by the write itself
    (True, "UPDATE", None, None, {"distribution-mode": "hash"}),
    # MERGE distributes as an INSERT: nothing to cluster an unpartitioned table by, so no shuffle
    (False, "MERGE", None, None, {}),
    (False, "MERGE", "hash", None, {"distribution-mode": "none"}),
    (True, "MERGE", None, None, {"distribution-mode": "hash"}),
    (True, "MERGE", "range", None, {"distribution-mode": "range"}),
])
def test_copy_on_write_rewrites_are_distributed_as_iceberg_java_does(
    session: SqlSession, spark: SparkSession, partitioned: bool, command: str, mode: str | None,
    by_file: str | None, options: dict[str, str],
) -> None:
    from floe.spark.row_level.commits import rewrite_distribution
    from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN

    name = f"dist_{command.lower()}_{int(partitioned)}_{mode or 'default'}"
    prop = f", 'write.{command.lower()}.distribution-mode'='{mode}'" if mode else ""
    session.sql(f"CREATE TABLE {name} (id BIGINT, dt STRING) USING iceberg {'PARTITIONED BY (dt)' if partitioned else ''} "
                f"TBLPROPERTIES ('format-version'='2'{prop})")
    table = session.catalog().load_table(("db", name))  # type: ignore[attr-defined]
    rows = spark.createDataFrame([(1, "a", "f1", 0)], f"id long, dt string, {ROW_FILE_COLUMN} string, {ROW_POS_COLUMN} long")
    out, write_options = rewrite_distribution(table, rows, command)
    assert write_options == options
    plan = out._jdf.queryExecution().logical().toString()
    if by_file is None:
        assert out is rows
    elif by_file == "hash":
        assert "RepartitionByExpression" in plan and ROW_FILE_COLUMN in plan.splitlines()[0]
    else:
        assert "RepartitionByExpression" in plan and ROW_POS_COLUMN in plan.splitlines()[0]


@pytest.mark.parametrize("split", [False, True], ids=["files-read-whole", "files-split"])
def test_copy_on_write_delete_clusters_by_file_without_a_shuffle_when_the_read_splits_no_file(
    session: SqlSession, spark: SparkSession, split: bool
) -> None:
    """Each rewritten file's rows stay in one task, so they land in one new file: without a shuffle when Spark
    reads every file in one task, by a shuffle on the file when it splits one (a split size far below the
    files' sizes)."""
    from floe.spark.row_level.commits import rewrite_distribution
    from floe.spark.scan.file_uris import reads_each_file_whole
    from floe.spark.scan.table_read import dataframe_for_scan

    name = f"cow_whole_{int(split)}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2')")
    for lo in (0, 5000):  # two files, ids 0-4999 and 5000-9999
        session.sql(f"INSERT INTO {name} SELECT id, repeat('x', 40) FROM range({lo}, {lo + 5000}, 1, 1)")
    table = session.catalog().load_table(("db", name))  # type: ignore[attr-defined]
    tasks = list(table.scan().plan_files())
    assert len(tasks) == 2
    sizes = [t.data_file.file_size_in_bytes for t in tasks]
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    if split:
        spark.conf.set(key, str(min(sizes) // 3))
    try:
        assert reads_each_file_whole(spark, sizes) is not split
        read = dataframe_for_scan(spark, table.scan(), tasks, with_position=True)
        out, _ = rewrite_distribution(table, read, "DELETE", tasks)
        assert ("RepartitionByExpression" in out._jdf.queryExecution().logical().toString()) is split
        session.sql(f"DELETE FROM {name} WHERE id % 100 = 7")
    finally:
        spark.conf.set(key, before)
    holding = {True: 0, False: 0}  # old file (ids below 5000 or not) -> new files holding its rows
    total = 0
    for task in table.refresh().scan().plan_files():
        ids = pq.read_table(to_local_path(task.data_file.file_path), columns=["id"]).column("id").to_pylist()
        total += len(ids)
        for old in {i < 5000 for i in ids}:
            holding[old] += 1
    assert holding == {True: 1, False: 1} and total == 9900  # each old file's rows went to one new file
    assert rows(session, f"SELECT count(*) FROM {name} WHERE id % 100 = 7") == [(0,)]
