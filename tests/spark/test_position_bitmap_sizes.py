"""Position deletes of many data files applied by a bitmap found by each row's file size
(floe.spark.scan.position_bitmaps): a merge-on-read table after many commits, with deletion vectors (v3)
and position delete files (v2), files of equal size (found by path instead), a file without deletes the
size of one with them (reads and row-level changes scan it apart, so the bitmap's slots serve only their
own files), a delete file that applies to files it names no row of (a slot's size and path are then
compared), reads of the same delete files again (the bitmap kept between reads), and a data file whose
manifest size is not its size in storage (the bitmap is not used: a join applies the deletes)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest
from _delete_files import jvm_helper_filters
from pyspark.sql import SparkSession

import floe.spark
from floe.io.locations import to_local_path
from floe.spark.scan import delete_joins, position_bitmaps
from floe.sql.engine import SqlSession


def _plan(df: object) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())  # type: ignore[attr-defined]


def _deletes_joined(plan: str) -> bool:
    """Whether rows meet their deletes by a hash or sort-merge join (not a bitmap: an exact slot table read
    by Floe's JVM helper, or words reaching the rows by a nested-loop join with their one-row relation)."""
    joined = "HashJoin" in plan or "SortMergeJoin" in plan
    assert joined or jvm_helper_filters(plan) or ("BroadcastNestedLoopJoin" in plan and "_floe_words" in plan)
    return joined


@pytest.mark.parametrize("version", [2, 3])
def test_many_files_with_deletes_read_through_a_size_bitmap(
    session: SqlSession, spark: SparkSession, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    layouts: list[bool] = []  # each size table's exactness, as laid out
    slots = position_bitmaps.size_slots

    def recorded(*args: Any, **kwargs: Any) -> position_bitmaps.SizeSlots | None:
        layouts.append(bool(kwargs.get("exact")))
        return slots(*args, **kwargs)

    monkeypatch.setattr(position_bitmaps, "size_slots", recorded)
    name = f"db.many_v{version}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING) TBLPROPERTIES ('format-version'='{version}', "
                "'write.delete.mode'='merge-on-read')")
    rows: list[tuple[int, str]] = []
    for i in range(10):  # files of 30..75 rows: sizes differ
        batch = [(1000 * i + j, "t") for j in range(30 + 5 * i)]
        rows += batch
        session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({a}, '{b}')" for a, b in batch))
    for _ in range(2):  # two files of the same rows: the same size (one keeps every row)
        batch = [(50_000 + j, "t") for j in range(40)]
        rows += batch
        session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({a}, '{b}')" for a, b in batch))
    session.sql(f"DELETE FROM {name} WHERE id % 7 = 0 AND id < 50000")
    expected = sorted((a, b) for a, b in rows if not (a % 7 == 0 and a < 50_000))
    table = session.catalog().load_table(name)
    deleted_files = {t.data_file.file_path for t in table.scan().plan_files() if t.deletes}
    assert len(deleted_files) >= 10 > delete_joins.NUMBERED_FILES

    df = floe.spark.read(spark, table)
    assert sorted((r["id"], r["tag"]) for r in df.collect()) == expected
    assert df.count() == len(expected)
    assert sorted(r["id"] for r in floe.spark.read(spark, table, filter="id >= 5000").collect()) == [a for a, _ in expected if a >= 5000]
    plan = _plan(df)
    assert not _deletes_joined(plan) and "file_size" in plan
    # Read again: the same delete files give the kept bitmap, and the same rows.
    laid_out = len(layouts)
    assert floe.spark.read(spark, table).count() == len(expected)
    assert len(layouts) == laid_out and layouts and all(layouts)

    # A merge-on-read DELETE reads the positions of the files with deletes apart from the others, as a read
    # does (one of the others has the size of a file with deletes): its rows are kept unless the new DELETE
    # names them.
    session.sql(f"DELETE FROM {name} WHERE id % 11 = 0")
    expected = [(a, b) for a, b in expected if a % 11 != 0]
    table = session.catalog().load_table(name)
    assert sorted((r["id"], r["tag"]) for r in floe.spark.read(spark, table).collect()) == expected

    # Two files with deletes at one size: both found by their paths' hash, the rest by size.
    session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({60_000 + j}, 't')" for j in range(40)))
    session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({61_000 + j}, 't')" for j in range(40)))
    session.sql(f"DELETE FROM {name} WHERE id IN (60003, 61005)")
    expected = sorted(expected + [(60_000 + j, "t") for j in range(40) if j != 3] + [(61_000 + j, "t") for j in range(40) if j != 5])
    df = floe.spark.read(spark, session.catalog().load_table(name))
    assert sorted((r["id"], r["tag"]) for r in df.collect()) == expected
    plan = _plan(df)
    assert not _deletes_joined(plan) and "xxhash64" in plan


def test_a_data_file_of_another_size_than_its_manifest_says_is_joined(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    session.sql("CREATE TABLE db.resized (id BIGINT) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    for i in range(6):
        session.sql("INSERT INTO db.resized VALUES " + ", ".join(f"({100 * i + j})" for j in range(10 + 3 * i)))
    session.sql("DELETE FROM db.resized WHERE id % 3 = 0")
    table = session.catalog().load_table("db.resized")
    # Storage now holds another (valid) file at one data file's path: its size differs from the manifest's.
    tasks = list(table.scan().plan_files())
    victim = next(t.data_file for t in tasks if t.deletes)
    other = next(t.data_file for t in tasks if t.data_file.file_size_in_bytes != victim.file_size_in_bytes)
    shutil.copyfile(to_local_path(other.file_path), to_local_path(victim.file_path))
    assert os.path.getsize(to_local_path(victim.file_path)) != victim.file_size_in_bytes
    df = floe.spark.read(spark, table)
    ids = sorted(r["id"] for r in df.collect())
    assert _deletes_joined(_plan(df))
    # The same rows as the join by path gives (the bitmap is never consulted).
    monkeypatch.setattr(delete_joins, "BITMAP_DELETE_ROWS", 0)
    assert sorted(r["id"] for r in floe.spark.read(spark, table).collect()) == ids


def test_a_delete_file_applying_to_files_it_names_no_row_of(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition-scoped position delete file applies to every data file of its partition that its path
    bounds cover, also to files it names no row of: the scan of the files with deletes then holds files
    without words, which get empty slots of their own in the exact table (no file's rows meet another's
    words)."""
    layouts: list[bool] = []
    slots = position_bitmaps.size_slots

    def recorded(*args: Any, **kwargs: Any) -> position_bitmaps.SizeSlots | None:
        layouts.append(bool(kwargs.get("exact")))
        return slots(*args, **kwargs)

    monkeypatch.setattr(position_bitmaps, "size_slots", recorded)
    name = "db.partition_scoped"
    session.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING) TBLPROPERTIES ('format-version'='2', "
                "'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')")
    rows: list[int] = []
    for i in range(6):  # files of 30..55 rows: sizes differ
        batch = [1000 * i + j for j in range(30 + 5 * i)]
        rows += batch
        session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({a}, 't')" for a in batch))
    # One row of each of the four files with the lowest paths and of the one with the highest: the delete
    # file's bounds cover every file, and more files have words than a chain of paths takes.
    first_id = dict(session.sql(f"SELECT _file, min(id) FROM {name} GROUP BY _file")[-1].rows)
    paths = sorted(first_id)
    gone = [first_id[p] for p in (*paths[:4], paths[-1])]
    session.sql(f"DELETE FROM {name} WHERE id IN ({', '.join(map(str, gone))})")
    table = session.catalog().load_table(name)
    tasks = list(table.scan().plan_files())
    assert len(tasks) > len(gone) > position_bitmaps.CHAINED_FILES and all(t.deletes for t in tasks)
    expected = sorted(a for a in rows if a not in gone)
    assert sorted(r["id"] for r in floe.spark.read(spark, table).collect()) == expected
    assert layouts == [True]


def test_files_no_slot_table_fits_meet_their_deletes_by_a_join(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sizes no slot table fits within the limit: the deletes are joined, never chained file by file in one
    CASE (Spark could not compile such a CASE for a 960-partition table in a 4 GB heap)."""
    monkeypatch.setattr(position_bitmaps, "_MAX_SLOTS", 5)
    name = "db.no_slot_table"
    session.sql(f"CREATE TABLE {name} (id BIGINT) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    for i in range(8):  # eight files of distinct sizes, more than a chain takes
        session.sql(f"INSERT INTO {name} SELECT id FROM range({1000 * i}, {1000 * i + 20 + 7 * i})")
    session.sql(f"DELETE FROM {name} WHERE id % 3 = 0")
    df = floe.spark.read(spark, session.catalog().load_table(name))
    assert _deletes_joined(_plan(df))
    expected = sorted(i for k in range(8) for i in range(1000 * k, 1000 * k + 20 + 7 * k) if i % 3)
    assert sorted(r[0] for r in df.collect()) == expected
