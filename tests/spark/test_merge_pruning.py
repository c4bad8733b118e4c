"""MERGE reads only the target files its source can match (the source's key ranges on partition and sort
columns prune the scan, as Iceberg Java's runtime filters): shown by deleting an unrelated partition's data
file from storage before the MERGE. Results are checked against the same MERGE on an unpruned table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.io.locations import to_local_path
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from floe.table.table import Table

pytestmark = pytest.mark.spark

ROWS = ", ".join(f"({i}, TIMESTAMP '2024-01-0{1 + i % 3} 10:00:00', 'c{i}')" for i in range(12))
MERGE = ("MERGE INTO {tbl} t USING ({src}) s ON {on} "
         "WHEN MATCHED AND s.name = 'gone' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    return sorted(session.sql(sql)[-1].rows, key=repr)


def live_rows(session: SqlSession, name: str, row_filter: str) -> list[dict[str, object]]:
    """The rows passing ``row_filter``, read by Floe's planner (which skips the removed day's file)."""
    return sorted(load(session, name).scan(row_filter=row_filter).to_arrow().to_pylist(), key=repr)


def load(session: SqlSession, name: str) -> Table:
    return session.catalog().load_table(("db", name))  # type: ignore[attr-defined,no-any-return]


def make(session: SqlSession, name: str, mode: str) -> None:
    session.sql(f"CREATE TABLE {name} (id BIGINT, ts TIMESTAMP, name STRING) USING iceberg PARTITIONED BY (days(ts)) "
                f"TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='{mode}')")
    session.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ * FROM VALUES {ROWS} AS v(id, ts, name)")


def drop_day_file(session: SqlSession, name: str, day: str) -> None:
    """Remove the data file of one day from storage: a MERGE reading it would fail."""
    paths = [r[0] for r in session.sql(f"SELECT file_path FROM floe.db.{name}.data_files")[-1].rows if day in r[0]]
    assert len(paths) == 1
    Path(to_local_path(paths[0])).unlink()


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_reads_only_the_days_its_source_touches(session: SqlSession, mode: str) -> None:
    name, oracle = f"pruned_{mode[:3]}", f"full_{mode[:3]}"
    for t in (name, oracle):
        make(session, t, mode)
    src = ("SELECT * FROM VALUES (1, TIMESTAMP '2024-01-02 10:00:00', 'new'), (4, TIMESTAMP '2024-01-02 10:00:00', 'gone'), "
           "(100, TIMESTAMP '2024-01-01 11:00:00', 'added') AS v(id, ts, name)")
    session.sql(MERGE.format(tbl=oracle, src=src, on="t.id = s.id AND t.ts = s.ts"))
    drop_day_file(session, name, "2024-01-03")
    session.sql(MERGE.format(tbl=name, src=src, on="t.id = s.id AND t.ts = s.ts"))
    assert live_rows(session, name, "ts < '2024-01-03T00:00:00+00:00'") == live_rows(
        session, oracle, "ts < '2024-01-03T00:00:00+00:00'"
    )


def test_merge_with_only_null_source_keys_reads_no_target_file(session: SqlSession) -> None:
    make(session, "nulls", "copy-on-write")
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        drop_day_file(session, "nulls", day)
    before = load(session, "nulls").metadata.current_snapshot_id
    session.sql(MERGE.format(tbl="nulls", src="SELECT CAST(NULL AS BIGINT) AS id, CAST(NULL AS TIMESTAMP) AS ts, 'x' AS name",
                             on="t.ts = s.ts"))
    table = load(session, "nulls")
    assert table.metadata.current_snapshot_id != before  # the unmatched source row was inserted
    assert table.inspect.data_files().num_rows == 4


def test_merge_by_source_reads_every_file(session: SqlSession) -> None:
    """WHEN NOT MATCHED BY SOURCE changes rows no source row matches: nothing may be pruned."""
    make(session, "bysource", "copy-on-write")
    src = "SELECT 1 AS id, TIMESTAMP '2024-01-02 10:00:00' AS ts, 'one' AS name"
    session.sql(f"MERGE INTO bysource t USING ({src}) s ON t.id = s.id AND t.ts = s.ts "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert rows(session, "SELECT * FROM bysource") == [(1, rows(session, "SELECT ts FROM bysource")[0][0], "one")]


@pytest.mark.parametrize("duplicate", [False, True])
def test_touched_files_pass_broadcasts_only_the_source_keys(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, duplicate: bool
) -> None:
    from floe.spark.row_level import dml

    # string keys: integral ones take the key bitmap instead (test_touched_files_by_the_source_key_bitmap)
    name = f"keys_{int(duplicate)}"
    session.sql(f"CREATE TABLE {name} (id STRING, v STRING) USING iceberg TBLPROPERTIES ('write.merge.mode'='copy-on-write')")
    session.sql(f"INSERT INTO {name} SELECT string(id), 'old' FROM range(0, 1000, 1, 2)")
    session.sql(f"INSERT INTO {name} SELECT string(id), 'old' FROM range(1000, 2000, 1, 1)")  # a file no source row matches
    untouched = rows(session, f"SELECT _file FROM {name} WHERE id = '1500'")
    plans: list[str] = []
    real = dml._touched_files

    def spy(matched: object) -> tuple[set[str], bool, bool]:
        plans.append(str(matched._jdf.queryExecution().executedPlan().toString()))  # type: ignore[attr-defined]
        return real(matched)  # type: ignore[arg-type]

    monkeypatch.setattr(dml, "_touched_files", spy)
    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "64")  # the whole source is too big to broadcast
    # ids 990-999 match (the first insert's files), 2000-2009 are new
    source = ("SELECT string(id) AS id, 'new' AS v FROM range(990, 1000) UNION ALL SELECT string(id), 'new' FROM range(2000, 2010)"
              + (" UNION ALL SELECT '995', 'again'" if duplicate else ""))
    try:
        statement = (f"MERGE INTO {name} t USING ({source}) s ON t.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
        if duplicate:  # a target row matched twice is found by the narrow join as by the whole one
            with pytest.raises(ValidationError, match="MERGE_CARDINALITY_VIOLATION"):
                session.sql(statement)
        else:
            session.sql(statement)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)
    assert plans and "BroadcastHashJoin" in plans[0] and "SortMergeJoin" not in plans[0]
    if duplicate:
        assert rows(session, f"SELECT count(*) FROM {name} WHERE v <> 'old'") == [(0,)]
        return
    assert rows(session, f"SELECT v, count(*) FROM {name} GROUP BY v") == [("new", 20), ("old", 1990)]
    # the file of ids 1000-1999 holds no matched row: it is not rewritten
    assert rows(session, f"SELECT _file FROM {name} WHERE id = '1500'") == untouched


@pytest.mark.parametrize("duplicate", [False, True])
def test_touched_files_by_the_source_key_bitmap(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, duplicate: bool
) -> None:
    """One integral ON key and no clause condition: the source's keys, as a bitmap, find the touched files, and
    the rewrite joins only the matched rows with the source while the touched files' other rows are written
    as they are. A key that repeats leaves the bitmap for the join, which finds the cardinality violation."""
    from floe.spark.row_level import dml

    name = f"bits_{int(duplicate)}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, v STRING, n INT) USING iceberg "
                "TBLPROPERTIES ('write.merge.mode'='copy-on-write')")
    session.sql(f"INSERT INTO {name} SELECT id, 'old', int(id) FROM range(0, 1000, 1, 2)")
    session.sql(f"INSERT INTO {name} SELECT id, 'old', int(id) FROM range(1000, 2000, 1, 1)")  # no source row matches it
    session.sql(f"INSERT INTO {name} VALUES (NULL, 'null key', -1)")  # never matched, its file not touched
    untouched = sorted(rows(session, f"SELECT DISTINCT _file FROM {name} WHERE id >= 1000 OR id IS NULL"))
    passes: list[str] = []
    real_bitmap, real_join = dml._key_bitmap_matches, dml._touched_files
    monkeypatch.setattr(dml, "_key_bitmap_matches", lambda *a: passes.append("bitmap") or real_bitmap(*a))
    monkeypatch.setattr(dml, "_touched_files", lambda m: passes.append("join") or real_join(m))
    # ids 990-999 and 0 match (the first insert's files: 0 is its lowest key), 2000-2009 are new; int keys
    # against the table's bigint
    source = ("SELECT int(id) AS id, 'new' AS v FROM range(990, 1000) UNION ALL SELECT 0, 'zero' "
              "UNION ALL SELECT int(id), 'new' FROM range(2000, 2010) UNION ALL SELECT NULL, 'no key'"
              + (" UNION ALL SELECT 995, 'again'" if duplicate else ""))
    statement = (f"MERGE INTO {name} t USING ({source}) s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 0)")
    if duplicate:
        with pytest.raises(ValidationError, match="MERGE_CARDINALITY_VIOLATION"):
            session.sql(statement)
        assert passes == ["bitmap", "join"]
        assert rows(session, f"SELECT count(*) FROM {name} WHERE v <> 'old'") == [(1,)]  # the NULL key's row
        return
    session.sql(statement)
    assert passes == ["bitmap"]
    assert rows(session, f"SELECT v, count(*), sum(n) FROM {name} GROUP BY v ORDER BY v") == [
        ("new", 20, sum(range(990, 1000))), ("no key", 1, 0), ("null key", 1, -1), ("old", 1989, sum(range(1, 990)) + sum(range(1000, 2000))),
        ("zero", 1, 0),
    ]
    assert rows(session, f"SELECT count(*), count(DISTINCT id) FROM {name} WHERE id IS NOT NULL") == [(2010, 2010)]
    assert sorted(rows(session, f"SELECT DISTINCT _file FROM {name} WHERE id >= 1000 AND id < 2000 OR id IS NULL AND n = -1")) == untouched


def test_key_bitmap_test_in_the_plan(spark: SparkSession) -> None:
    """The plan's bitmap test keeps exactly the keys set, and the extreme longs pass through an ANSI session's
    arithmetic without an overflow (the subtraction is tried)."""
    import numpy as np
    from pyspark.sql import functions as F

    from floe.spark.row_level.source_keys import key_bitmap_frame, key_matches, pack_keys

    bitmap = pack_keys(np.array([5, 7, 70], np.int64))
    assert bitmap is not None
    lo, hi = -(2**63), 2**63 - 1
    ids = spark.createDataFrame([(lo,), (hi,), (4,), (5,), (6,), (7,), (69,), (70,), (71,), (None,)], "id bigint")
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        kept = ids.crossJoin(F.broadcast(key_bitmap_frame(spark, bitmap))).where(F.expr(key_matches("id")))
        assert sorted(r[0] for r in kept.select("id").collect()) == [5, 7, 70]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


@pytest.mark.parametrize("duplicate", [False, True])
def test_merge_on_read_narrows_the_target_by_the_source_key_bitmap(
    session: SqlSession, monkeypatch: pytest.MonkeyPatch, duplicate: bool
) -> None:
    """Merge-on-read: the target rows reaching the join are those whose key is in the bitmap of the source's
    keys, a superset when ON says more (the join narrows it). A repeated key stays in the bitmap: the join
    finds the cardinality violation, and nothing is committed."""
    from floe.spark.row_level import merge_pruning

    name = f"mor_bits_{int(duplicate)}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, v STRING, n INT) USING iceberg "
                "TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='merge-on-read')")
    session.sql(f"INSERT INTO {name} SELECT id, 'old', int(id) FROM range(0, 1000, 1, 2)")
    session.sql(f"INSERT INTO {name} VALUES (NULL, 'null key', -1)")
    narrowed: list[int | None] = []
    real = merge_pruning._key_bitmap_rows

    def spy(*args: object) -> object:
        out = real(*args)  # type: ignore[arg-type]
        narrowed.append(None if out is None else out.count())
        return out

    monkeypatch.setattr(merge_pruning, "_key_bitmap_rows", spy)
    # 990-999 and 0 match; 5 is a key of the table that the rest of ON leaves unmatched (inserted again);
    # 2000-2004 are new; int keys against the table's bigint
    source = ("SELECT int(id) AS id, 'new' AS v FROM range(990, 1000) UNION ALL SELECT 0, 'zero' UNION ALL SELECT 5, 'skip' "
              "UNION ALL SELECT int(id), 'new' FROM range(2000, 2005) UNION ALL SELECT NULL, 'no key'"
              + (" UNION ALL SELECT 995, 'again'" if duplicate else ""))
    statement = (f"MERGE INTO {name} t USING ({source}) s ON t.id = s.id AND s.v <> 'skip' "
                 "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 0)")
    before = load(session, name).metadata.current_snapshot_id
    if duplicate:
        with pytest.raises(ValidationError, match="MERGE_CARDINALITY_VIOLATION"):
            session.sql(statement)
        assert narrowed == [12]  # the target rows of 0, 5 and 990-999: the join pairs 995 twice
        assert load(session, name).metadata.current_snapshot_id == before
        return
    session.sql(statement)
    assert narrowed == [12]  # 0, 5 and 990-999
    assert rows(session, f"SELECT v, count(*), sum(n) FROM {name} GROUP BY v ORDER BY v") == [
        ("new", 15, sum(range(990, 1000))), ("no key", 1, 0), ("null key", 1, -1), ("old", 989, sum(range(1, 990))),
        ("skip", 1, 0), ("zero", 1, 0),
    ]
    assert rows(session, f"SELECT count(*) FROM {name}.delete_files") != [(0,)]
