"""Merge-on-read DELETE / UPDATE / MERGE: same rows as copy-on-write, position delete files instead of
rewrites (field ids, sorted rows, bounds, the referenced data file), one row delta validated against
concurrent commits, v1 tables refused, and a second reader (PyIceberg) agreeing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from floe.cli.inspect import files_rows
from floe.errors import CommitConflictError, ValidationError
from floe.io.locations import to_local_path
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.table.table import Table

MOR = "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
# One delete file per partition and change (the tests below count them); Java's default is per data file.
PARTITION_SCOPED = "'write.delete.granularity'='partition'"


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    return sorted(session.sql(sql)[-1].rows, key=repr)


def one_task(values: str, columns: str) -> str:
    """A query whose rows one Spark task writes (one data file per partition, so deletes hit files partly)."""
    return f"SELECT /*+ REPARTITION(1) */ * FROM VALUES {values} AS v({columns})"


def create_pair(session: SqlSession, name: str, columns: str, partitioned: str = "") -> tuple[str, str]:
    """A copy-on-write and a merge-on-read table with the same columns (format v2 both)."""
    by = f" PARTITIONED BY ({partitioned})" if partitioned else ""
    session.sql(f"CREATE TABLE {name}_cow ({columns}) USING iceberg{by} TBLPROPERTIES ('format-version'='2')")
    session.sql(f"CREATE TABLE {name}_mor ({columns}) USING iceberg{by} TBLPROPERTIES ('format-version'='2', {MOR}, {PARTITION_SCOPED})")
    return f"{name}_cow", f"{name}_mor"


def load(session: SqlSession, name: str) -> Table:
    return session.catalog().load_table(("db", name))  # type: ignore[attr-defined,no-any-return]


def data_files(session: SqlSession, name: str) -> set[str]:
    return {r[0] for r in session.sql(f"SELECT file_path FROM floe.db.{name}.data_files")[-1].rows}


def delete_files(session: SqlSession, name: str) -> set[str]:
    return {r[0] for r in session.sql(f"SELECT file_path FROM floe.db.{name}.delete_files")[-1].rows}


def last_snapshot(session: SqlSession, name: str) -> tuple[str, dict[str, str]]:
    op, summary = session.sql(f"SELECT operation, summary FROM floe.db.{name}.snapshots ORDER BY committed_at")[-1].rows[-1]
    return op, summary


def files_on_disk(table: Table) -> set[Path]:
    return {p for p in Path(to_local_path(table.location())).joinpath("data").rglob("*") if p.is_file()}


def test_delete_merge_on_read_matches_copy_on_write_and_writes_only_delete_files(session: SqlSession) -> None:
    cow, mor = create_pair(session, "del", "id BIGINT, name STRING, dt STRING", "dt")
    for t in (cow, mor):
        session.sql(f"INSERT INTO {t} " + one_task("(1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y'), (7, 'g', 'y')", "id, name, dt"))
        session.sql(f"INSERT INTO {t} " + one_task("(4, 'd', 'x'), (5, 'e', 'y'), (6, 'f', 'z')", "id, name, dt"))
    original = data_files(session, mor)
    statements = [
        ("DELETE FROM {t} WHERE id = 1 OR id = 4", 1),  # a position delete + the file holding only 4 dropped
        ("DELETE FROM {t} WHERE id <= 2 AND upper(name) <> 'Q'", 1),  # beyond Floe's filters; 1 is already gone
        ("DELETE FROM {t} WHERE dt = 'z'", 0),  # a whole partition: metadata only
        ("DELETE FROM {t} WHERE id = 3", 1),
    ]
    for sql, by_position in statements:
        for t in (cow, mor):
            session.sql(sql.format(t=t))
        assert rows(session, f"SELECT * FROM {mor}") == rows(session, f"SELECT * FROM {cow}"), sql
        op, summary = last_snapshot(session, mor)
        assert op == "delete"
        assert "added-data-files" not in summary  # nothing rewritten
        assert int(summary.get("added-position-deletes", "0")) == by_position, sql
    assert rows(session, f"SELECT * FROM {mor}") == [(5, "e", "y"), (7, "g", "y")]
    assert data_files(session, mor) < original  # only whole files left; none added
    deletes = delete_files(session, mor)
    assert len(deletes) == 3
    assert all(p.endswith("-deletes.parquet") for p in deletes)
    assert all("/dt=x/" in p or "/dt=y/" in p for p in deletes)  # in the partition of their data files
    table = load(session, mor)
    listed = files_rows(table.io, table.metadata).rows  # what `floe files` prints
    assert {r[1] for r in listed if r[0] == 1} == deletes
    # a second reader applies the position deletes the same way
    static = pytest.importorskip("pyiceberg.table").StaticTable.from_metadata(table.metadata_location)
    theirs = static.scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"], r["dt"]) for r in theirs) == [(5, "e", "y"), (7, "g", "y")]


@pytest.mark.parametrize("file_map", ["inline", "broadcast"])
def test_position_delete_files_have_field_ids_sorted_rows_bounds_and_reference(
    session: SqlSession, monkeypatch: pytest.MonkeyPatch, file_map: str
) -> None:
    # The data file -> delete file group map is a literal in the plan for a few files, a broadcast for many
    if file_map == "broadcast":
        monkeypatch.setattr("floe.spark.scan.driver_rows.INLINE_ENTRIES", 0)
    session.sql("DROP TABLE IF EXISTS pd PURGE")  # the other parameter's
    session.sql(f"CREATE TABLE pd (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', {MOR}, {PARTITION_SCOPED})")
    session.sql(f"INSERT INTO pd {one_task('(1), (2), (3), (4)', 'id')}")
    session.sql(f"INSERT INTO pd {one_task('(5), (6), (7), (8)', 'id')}")
    by_first = {p: pq.read_table(to_local_path(p))["id"][0].as_py() for p in data_files(session, "pd")}
    assert sorted(by_first.values()) == [1, 5]  # one file per INSERT
    first, second = sorted(by_first, key=lambda p: by_first[p])
    session.sql("DELETE FROM pd WHERE id IN (7, 2, 5, 4)")
    (path,) = delete_files(session, "pd")
    pf = pq.ParquetFile(to_local_path(path))
    fields = {f.name: f for f in pf.schema_arrow}
    assert [(n, f.metadata[b"PARQUET:field_id"], f.nullable) for n, f in fields.items()] == [
        ("file_path", b"2147483546", False), ("pos", b"2147483545", False),
    ]
    got = [(r["file_path"], r["pos"]) for r in pf.read().to_pylist()]
    assert got == sorted(got)
    assert sorted(got) == sorted([(first, 1), (first, 3), (second, 0), (second, 2)])
    meta = session.sql("SELECT content, referenced_data_file, lower_bounds, upper_bounds, record_count FROM floe.db.pd.delete_files")
    content, referenced, lower, upper, count = meta[-1].rows[0]
    assert (content, referenced, count) == (1, None, 4)  # two data files: no single reference
    assert (lower[2147483546], upper[2147483546]) == tuple(sorted([first.encode(), second.encode()]))
    session.sql("DELETE FROM pd WHERE id = 8")
    meta = session.sql("SELECT file_path, referenced_data_file, lower_bounds, upper_bounds FROM floe.db.pd.delete_files")
    (new,) = [r for r in meta[-1].rows if r[0] != path]
    assert new[1] == second
    assert new[2][2147483546] == new[3][2147483546] == second.encode()
    assert rows(session, "SELECT * FROM pd") == [(1,), (3,), (6,)]


def test_update_merge_on_read_matches_copy_on_write(session: SqlSession) -> None:
    cow, mor = create_pair(session, "upd", "id BIGINT, name STRING, n INT, dt STRING", "dt")
    for t in (cow, mor):
        session.sql(f"INSERT INTO {t} " + one_task("(1, 'a', 1, 'x'), (2, 'b', 2, 'x'), (3, 'c', 3, 'y'), (4, NULL, 4, 'y')", "id, name, n, dt"))
    original = data_files(session, mor)
    for sql, by_position in [
        ("UPDATE {t} SET name = upper(name), n = n + 10 WHERE id IN (1, 3)", 2),
        ("UPDATE {t} AS u SET u.n = 0 WHERE u.dt = 'y' AND name IS NULL", 1),
        ("UPDATE {t} SET dt = 'z' WHERE id = 3", 1),  # the updated row moves to another partition
    ]:
        for t in (cow, mor):
            session.sql(sql.format(t=t))
        assert rows(session, f"SELECT * FROM {mor}") == rows(session, f"SELECT * FROM {cow}"), sql
        op, summary = last_snapshot(session, mor)
        assert op == "overwrite"
        assert summary["added-position-deletes"] == str(by_position)
        assert summary["added-records"] == str(by_position)
        assert "deleted-data-files" not in summary
    assert rows(session, f"SELECT * FROM {mor}") == [(1, "A", 11, "x"), (2, "b", 2, "x"), (3, "C", 13, "z"), (4, None, 0, "y")]
    assert original < data_files(session, mor)  # the old files stay; updated rows live in new ones


@pytest.mark.parametrize("file_map", ["inline", "broadcast"])
def test_merge_merge_on_read_matches_copy_on_write(session: SqlSession, monkeypatch: pytest.MonkeyPatch, file_map: str) -> None:
    if file_map == "broadcast":
        monkeypatch.setattr("floe.spark.scan.driver_rows.INLINE_ENTRIES", 0)
    for name in ("mrg_cow", "mrg_mor", "msrc"):  # the other parameter's
        session.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    cow, mor = create_pair(session, "mrg", "id BIGINT, v STRING, n INT", "bucket(2, id)")
    session.sql("CREATE TABLE msrc (id BIGINT, v STRING, op STRING) USING iceberg")
    session.sql("INSERT INTO msrc VALUES (1, 'A', 'upd'), (2, NULL, 'del'), (5, 'E', 'ins'), (6, 'F', 'skip')")
    for t in (cow, mor):
        session.sql(f"INSERT INTO {t} " + one_task("(1, 'a', 1), (2, 'b', 1), (3, 'c', 1), (4, 'd', 1), (7, 'g', 1)", "id, v, n"))
    original = data_files(session, mor)
    for t in (cow, mor):
        session.sql(
            f"""
            MERGE INTO {t} t USING msrc s ON t.id = s.id
            WHEN MATCHED AND s.op = 'del' THEN DELETE
            WHEN MATCHED THEN UPDATE SET t.v = s.v, n = t.n + 1
            WHEN NOT MATCHED AND s.op = 'ins' THEN INSERT (id, v) VALUES (s.id, s.v)
            WHEN NOT MATCHED BY SOURCE AND t.id = 4 THEN UPDATE SET n = 0
            """
        )
    expected = [(1, "A", 2), (3, "c", 1), (4, "d", 0), (5, "E", None), (7, "g", 1)]
    assert rows(session, f"SELECT * FROM {cow}") == expected
    assert rows(session, f"SELECT * FROM {mor}") == expected
    op, summary = last_snapshot(session, mor)
    assert op == "overwrite"
    assert "deleted-data-files" not in summary
    assert summary["added-position-deletes"] == "3"
    assert summary["added-records"] == "3"  # 1, 2, 4 out; 1, 4, 5 in
    assert original < data_files(session, mor)


def test_merge_on_read_on_v1_table_is_refused_and_changes_nothing(session: SqlSession) -> None:
    session.sql(f"CREATE TABLE v1t (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='1', {MOR})")
    session.sql("INSERT INTO v1t VALUES (1), (2)")
    table = load(session, "v1t")
    before, disk = table.metadata_location, files_on_disk(table)
    for sql, prop in [
        ("DELETE FROM v1t WHERE id = 1", "write.delete.mode"),
        ("UPDATE v1t SET id = 3 WHERE id = 1", "write.update.mode"),
        ("MERGE INTO v1t t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE", "write.merge.mode"),
    ]:
        with pytest.raises(ValidationError, match=rf"db\.v1t is format version 1 but {prop}=merge-on-read"):
            session.sql(sql)
    assert table.refresh().metadata_location == before
    assert files_on_disk(table) == disk
    # A misspelt mode is refused when set (one line naming key and value), not stored to break later writes.
    with pytest.raises(ValidationError, match="write.delete.mode must be one of copy-on-write, merge-on-read, got 'merge-on-write'"):
        session.sql("ALTER TABLE v1t SET TBLPROPERTIES ('write.delete.mode'='merge-on-write')")
    assert rows(session, "SELECT * FROM v1t") == [(1,), (2,)]


def test_row_delta_conflicts_fail_and_leave_no_new_files(session: SqlSession, spark: SparkSession) -> None:
    from floe.expressions.parser import parse_filter
    from floe.spark.row_level.commits import row_delta_commit
    from floe.spark.row_level.dml import plan_candidates
    from floe.spark.scan.table_read import dataframe_for_scan

    session.sql(f"CREATE TABLE rc (id BIGINT, dt STRING) USING iceberg PARTITIONED BY (dt) TBLPROPERTIES ('format-version'='2', {MOR}, {PARTITION_SCOPED})")
    session.sql("INSERT INTO rc " + one_task("(1, 'a'), (2, 'a'), (3, 'a')", "id, dt"))
    expr = parse_filter("id = 1")
    concurrent = [
        "INSERT INTO rc VALUES (1, 'a')",  # new data matching the condition
        "DELETE FROM rc WHERE id = 2",  # new deletes against the same file
    ]
    for other in concurrent:
        table = load(session, "rc")
        snapshot_id, tasks = plan_candidates(table, expr)
        matched = dataframe_for_scan(spark, table.scan(snapshot_id=snapshot_id), tasks, with_position=True).where("id = 1")
        session.sql(other)
        disk = files_on_disk(table)
        head = table.refresh().metadata_location
        with pytest.raises(CommitConflictError):  # Spark writes the delete file, then the commit loses
            row_delta_commit(
                table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=matched, new_rows=None, expr=expr,
                snapshot_properties={},
            )
        assert files_on_disk(table) == disk, other  # the delete file written for the lost commit is gone
        assert table.refresh().metadata_location == head
    assert rows(session, "SELECT * FROM rc") == [(1, "a"), (1, "a"), (3, "a")]


@pytest.mark.parametrize("failing", ["rows", "deletes"])
def test_row_delta_written_together_leaves_nothing_when_one_write_fails(
    session: SqlSession, spark: SparkSession, failing: str
) -> None:
    """The delete files and the data files of a row delta are written at once: when either write fails, the
    files the other wrote are deleted and nothing is committed."""
    from floe.spark.row_level.commits import row_delta_commit
    from floe.spark.row_level.dml import plan_candidates
    from floe.spark.scan.table_read import dataframe_for_scan

    name = f"wt_{failing}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, n INT) USING iceberg TBLPROPERTIES ('format-version'='2', {MOR})")
    session.sql(f"INSERT INTO {name} " + one_task("(1, 10), (2, 20), (3, 30)", "id, n"))
    table = load(session, name)
    snapshot_id, tasks = plan_candidates(table, None)
    read = dataframe_for_scan(spark, table.scan(snapshot_id=snapshot_id), tasks, with_position=True)
    matched = read.where("id = 2")
    boom = "CASE WHEN id = 2 THEN raise_error('boom') ELSE n END"
    deleted = matched.selectExpr("*", f"{boom} AS _boom").where("_boom IS NOT NULL").drop("_boom") if failing == "deletes" else matched
    new_rows = matched.selectExpr("id", f"CAST({boom if failing == 'rows' else 'n + 1'} AS INT) AS n")
    disk = files_on_disk(table)
    head = table.refresh().metadata_location
    with pytest.raises(Exception, match="boom"):
        row_delta_commit(table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=deleted, new_rows=new_rows,
                         expr=None, snapshot_properties={})
    assert files_on_disk(table) == disk  # what the other write produced is gone
    assert table.refresh().metadata_location == head
    assert rows(session, f"SELECT * FROM {name}") == [(1, 10), (2, 20), (3, 30)]


def test_file_granularity_keeps_one_delete_file_per_data_file(session: SqlSession) -> None:
    # Java's default write.delete.granularity=file: a later delete of the same data file replaces its
    # delete file with one holding every deleted position (so readers open one delete file per data file)
    session.sql(f"CREATE TABLE gran (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', {MOR})")
    session.sql(f"INSERT INTO gran {one_task('(1), (2), (3), (4)', 'id')}")
    session.sql("DELETE FROM gran WHERE id = 1")
    session.sql("DELETE FROM gran WHERE id = 3")
    meta = session.sql("SELECT referenced_data_file, record_count FROM floe.db.gran.delete_files")[-1].rows
    (data_file,) = data_files(session, "gran")
    assert meta == [(data_file, 2)]
    assert rows(session, "SELECT * FROM gran") == [(2,), (4,)]


def test_file_granularity_replaces_only_the_delete_files_of_touched_data_files(session: SqlSession) -> None:
    # Two data files, each with its own delete file; a later delete touching one data file replaces that
    # file's delete file (merged with its earlier positions) and leaves the other's as it was, though the
    # delete read both.
    session.sql(f"CREATE TABLE gran2 (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2', {MOR})")
    session.sql(f"INSERT INTO gran2 {one_task('(1), (2), (3), (4)', 'id')}")
    session.sql(f"INSERT INTO gran2 {one_task('(11), (12), (13), (14)', 'id')}")
    session.sql("DELETE FROM gran2 WHERE id IN (1, 11)")
    before = {r[0]: r[1] for r in session.sql("SELECT referenced_data_file, file_path FROM floe.db.gran2.delete_files")[-1].rows}
    session.sql("DELETE FROM gran2 WHERE id % 100 = 3")  # no file's bounds rule it out: both are read
    after = {r[0]: (r[1], r[2]) for r in session.sql(
        "SELECT referenced_data_file, file_path, record_count FROM floe.db.gran2.delete_files")[-1].rows}
    (touched,) = [f for f in before if after[f][0] != before[f]]
    (untouched,) = [f for f in before if f != touched]
    assert set(after) == set(before)
    assert after[touched][1] == 2
    assert after[untouched] == (before[untouched], 1)
    assert rows(session, "SELECT * FROM gran2") == sorted([(2,), (4,), (12,), (13,), (14,)], key=repr)


def test_reads_keep_each_delete_file_they_read_and_read_only_the_new_ones(
    session: SqlSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read after a commit reads the delete files it added, not again those of the commits before (a
    pipeline's every round adds some), and its rows are still right."""
    from floe.spark.scan import delete_joins

    _, mor = create_pair(session, "kept_deletes", "id BIGINT, v STRING")
    session.sql(f"INSERT INTO {mor} {one_task(', '.join(f'({i}, {chr(97 + i % 26)!r})' for i in range(40)), 'id, v')}")
    read: list[str] = []
    real = delete_joins._read_position_keys

    def counting(io: object, location: str) -> tuple[object, object]:
        read.append(location)
        return real(io, location)  # type: ignore[arg-type]

    monkeypatch.setattr(delete_joins, "_read_position_keys", counting)
    session.sql(f"DELETE FROM {mor} WHERE id < 5")
    assert rows(session, f"SELECT count(*), min(id) FROM {mor}") == [(35, 5)]
    first = set(read)
    assert len(first) == 1
    session.sql(f"DELETE FROM {mor} WHERE id >= 35")
    read.clear()
    assert rows(session, f"SELECT count(*), max(id) FROM {mor}") == [(30, 34)]
    assert len(read) == 1 and read[0] not in first  # only the new delete file
    read.clear()
    assert rows(session, f"SELECT count(*) FROM {mor} WHERE v = 'f'") == [(2,)]  # ids 5 and 31
    assert read == []  # nothing read again
