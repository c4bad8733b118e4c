"""Merge-on-read MERGE, UPDATE and DELETE gathering their deleted positions in the Spark job that writes
(or reads) their rows (floe.spark.row_level.observed_positions): the delete files the driver writes, the cardinality
check, and Iceberg Java reading the result."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe
import floe.spark
from floe.errors import ValidationError
from floe.spark.row_level.observed_positions import ObservedPositions
from floe.spark.types import from_spark_schema
from floe.spec.manifest import POSITION_DELETE_FILE_PATH_ID, FileContent
from floe.table.table import Table

SCHEMA = "id bigint, region string, amount double"


def _table(spark: SparkSession, warehouse: Path, **props: str) -> Table:
    cat = floe.load_catalog("op", type="hadoop", warehouse=str(warehouse))
    cat.create_namespace("db")
    df = spark.createDataFrame([(i, f"r{i % 3}", float(i)) for i in range(60)], SCHEMA)
    all_props = {"format-version": "2", **{f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}, **props}
    t = cat.create_table("db.t", schema=from_spark_schema(df.schema), properties=all_props)
    t.append(df.repartition(4))
    return t.refresh()


def _rows(spark: SparkSession, table: Table) -> dict[int, tuple[str, float]]:
    return {r["id"]: (r["region"], r["amount"]) for r in floe.spark.read(spark, table.refresh()).collect()}


def _delete_files(table: Table) -> list[Any]:
    """Each live delete file once (a partition-scoped one applies to several tasks)."""
    return list({e.data_file.file_path: e for t in table.refresh().scan().plan_files() for e in t.deletes}.values())


@pytest.mark.parametrize("granularity", ["file", "partition"])
def test_merge_writes_driver_delete_files_that_java_reads(
    spark: SparkSession, tmp_path: Path, jsql: Any, granularity: str
) -> None:
    table = _table(spark, tmp_path / "wh", **{"write.delete.granularity": granularity})
    model = {i: (f"r{i % 3}", float(i)) for i in range(60)}
    source = spark.createDataFrame(
        [(i, "upd", -1.0) for i in range(0, 60, 7)] + [(i, "gone", 0.0) for i in (5, 11)] + [(100, "new", 1.0)], SCHEMA
    )
    assert (
        table.merge(source, on=["id"])
        .when_matched_delete(condition="s.region = 'gone'")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    for i in range(0, 60, 7):
        model[i] = ("upd", -1.0)
    for i in (5, 11):
        model.pop(i)
    model[100] = ("new", 1.0)
    assert _rows(spark, table) == model

    deletes = _delete_files(table)
    assert deletes and {e.data_file.content for e in deletes} == {FileContent.POSITION_DELETES}
    files = {e.data_file.file_path: e.data_file for e in deletes}
    data_files = {t.data_file.file_path for t in table.scan().plan_files()}
    for path, f in files.items():
        assert path.endswith("-deletes.parquet")
        rows = pq.read_table(path.removeprefix("file:")).to_pydict()
        pairs = list(zip(rows["file_path"], rows["pos"], strict=True))
        assert pairs == sorted(pairs)  # the spec's order: by file, then position
        assert set(rows["file_path"]) <= data_files
        if granularity == "file":
            assert f.referenced_data_file == rows["file_path"][0]
    # 9 updated + 2 deleted rows, each deleted once
    assert sum(f.record_count for f in files.values()) == len(range(0, 60, 7)) + 2

    # UPDATE takes the same way: the updated rows' write observes their positions.
    assert table.refresh().update({"amount": "amount + 1000"}, "id % 10 = 3") is True
    model = {k: (r, a + 1000 if k % 10 == 3 else a) for k, (r, a) in model.items()}
    assert _rows(spark, table) == model
    assert sum(e.data_file.record_count for e in _delete_files(table)) == len(range(0, 60, 7)) + 2 + 6
    # And DELETE: a job that only reads, observing the positions.
    assert table.refresh().delete("id % 10 = 9") is True
    model = {k: v for k, v in model.items() if k % 10 != 9}
    assert _rows(spark, table) == model
    assert sum(e.data_file.record_count for e in _delete_files(table)) == len(range(0, 60, 7)) + 2 + 6 + 6

    out = jsql.run(["SELECT id, region, amount FROM c.db.t ORDER BY id"], jsql.hadoop_catalog("c", tmp_path / "wh"))
    assert {r[0]: (r[1], r[2]) for r in out[0]["rows"]} == model


def test_unconditional_delete_may_match_a_target_row_twice(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(spark, tmp_path / "wh")
    source = spark.createDataFrame([(3, "a", 0.0), (3, "b", 0.0), (4, "c", 0.0)], SCHEMA)
    assert table.merge(source, on=["id"]).when_matched_delete().execute()
    assert sorted(_rows(spark, table)) == [i for i in range(60) if i not in (3, 4)]
    assert sum(e.data_file.record_count for e in _delete_files(table)) == 2


def test_a_suspected_double_match_fails_only_when_confirmed(spark: SparkSession, tmp_path: Path) -> None:
    """The metric counts matches, which a stage run again after a lost task would count twice: the driver
    fails the change only when the confirming query finds a target row matched twice."""
    table = _table(spark, tmp_path / "wh")
    tasks = list(table.scan().plan_files())
    # Every position matched twice (as if each task ran twice), position 1 of each file changed.
    rows = [(t.data_file.file_path, p) for t in tasks for p in range(3)] * 2
    df = spark.createDataFrame(rows, "f string, p bigint")
    observer = ObservedPositions.for_tasks(spark, tasks, "test")
    assert observer is not None
    observer.observe(df, F.col("f"), F.col("p"), F.lit(True), F.col("p") == 1).write.format("noop").mode("overwrite").save()
    positions = observer.positions("matched twice", lambda: False)  # suspected, not confirmed: no error
    assert {path: list(pos) for path, pos in positions.items()} == {t.data_file.file_path: [1] for t in tasks}
    with pytest.raises(ValidationError, match="matched twice"):
        observer.positions("matched twice", lambda: True)


def _observed_merges(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records each MERGE that took the observed path (the positions it read from the metric)."""
    observed: list[int] = []
    positions = ObservedPositions.positions

    def recorded(self: ObservedPositions, *args: Any) -> dict[str, np.ndarray]:
        out = positions(self, *args)
        observed.append(sum(len(v) for v in out.values()))
        return out

    monkeypatch.setattr(ObservedPositions, "positions", recorded)
    return observed


def test_observer_refuses_too_many_candidate_rows(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import floe.spark.row_level.observed_positions as op

    table = _table(spark, tmp_path / "wh")
    tasks = list(table.scan().plan_files())
    monkeypatch.setattr(op, "DRIVER_POSITION_ROWS", 10)
    observed = _observed_merges(monkeypatch)
    assert ObservedPositions.for_tasks(spark, tasks, "test") is None  # 60 rows: the Spark write path takes it
    assert ObservedPositions.for_tasks(spark, tasks, "test", rows=10) is not None  # 10 of them reach the job
    # A source that may give other rows when read again: the whole target reaches the join, 60 rows.
    source = spark.createDataFrame([(1, "x", 9.0)], SCHEMA).where(F.rand() >= 0)
    assert table.merge(source, on=["id"]).when_matched_update_all().execute()
    assert _rows(spark, table)[1] == ("x", 9.0)
    assert np.array([e.data_file.record_count for e in _delete_files(table)]).sum() == 1
    assert observed == []


def test_merge_source_matches_bound_the_observed_positions(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broadcast source's matches are counted before the join (merge_pruning.source_matched_rows): only
    they reach it, so the observed path serves a table of more candidate rows than its bound."""
    import floe.spark.row_level.observed_positions as op
    from floe.spark.row_level import dml

    table = _table(spark, tmp_path / "wh")
    monkeypatch.setattr(op, "DRIVER_POSITION_ROWS", 10)
    observed = _observed_merges(monkeypatch)
    model = {i: (f"r{i % 3}", float(i)) for i in range(60)}
    # Read from files, as MERGE sources mostly are: Spark knows their size and broadcasts them (a frame of
    # Python rows has no size estimate, so Spark would not, and the MERGE would read the whole target).
    spark.createDataFrame([(3, "x", 30.5), (8, "y", 1.0), (70, "new", 7.0)], SCHEMA).write.parquet(str(tmp_path / "src"))
    source = spark.read.parquet(str(tmp_path / "src"))
    clauses = [
        dml.MergeClause("matched", "update", values={"region": "s.region", "amount": "s.amount"}),
        dml.MergeClause("not_matched", "insert", values={c: f"s.{c}" for c in ("id", "region", "amount")}),
    ]
    # The non-equality part of ON keeps id 8 unmatched (8.0 < 1.0 fails): it is inserted, not updated.
    assert dml.merge_into(table, source, "t.id = s.id AND t.amount < s.amount", clauses)
    model.update({3: ("x", 30.5), 70: ("new", 7.0)})
    rows = floe.spark.read(spark, table.refresh()).collect()
    assert sorted((r["id"], r["region"], r["amount"]) for r in rows) == sorted(
        [(i, *v) for i, v in model.items()] + [(8, "y", 1.0)]
    )
    assert observed == [1]  # one matched target row, its position observed in the write's job

    twice = spark.createDataFrame([(5, "a", 0.0), (5, "b", 0.0)], SCHEMA)
    before = table.refresh().metadata.current_snapshot_id
    with pytest.raises(ValidationError, match="MERGE_CARDINALITY_VIOLATION"):
        table.merge(twice, on=["id"]).when_matched_update_all().execute()
    assert table.refresh().metadata.current_snapshot_id == before


@pytest.mark.parametrize("keys", ["bitmap", "broadcast", "too big"])
def test_merge_source_too_big_to_broadcast_reduces_the_target_by_its_keys(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys: str
) -> None:
    """A source Spark will not broadcast whole still reduces the target by its join keys when their estimate
    fits (merge_pruning.KEY_BROADCAST_BYTES): as a bitmap (integral keys of a narrow enough range), else
    broadcast for a semi join; the matched target rows are counted, so the observed path serves the MERGE.
    When the keys do not fit either, the whole target reaches the join."""
    import floe.spark.row_level.observed_positions as op
    from floe.spark.row_level import dml, merge_pruning, source_keys

    table = _table(spark, tmp_path / "wh")
    monkeypatch.setattr(op, "DRIVER_POSITION_ROWS", 10)
    if keys == "too big":
        monkeypatch.setattr(merge_pruning, "KEY_BROADCAST_BYTES", 0)
    bitmaps: list[bool] = []
    real_bitmap = merge_pruning._key_bitmap_rows
    monkeypatch.setattr(merge_pruning, "_key_bitmap_rows", lambda *a: bitmaps.append((out := real_bitmap(*a)) is not None) or out)
    if keys == "broadcast":
        monkeypatch.setattr(source_keys, "MAX_KEY_RANGE", 0)  # no bitmap spans the keys
    observed = _observed_merges(monkeypatch)
    spark.createDataFrame([(3, "x", 30.5), (8, "y", 1.0), (9, "z", 99.0), (70, "new", 7.0)], SCHEMA).write.parquet(
        str(tmp_path / "src"))
    source = spark.read.parquet(str(tmp_path / "src"))
    clauses = [
        dml.MergeClause("matched", "update", values={"region": "s.region", "amount": "s.amount"}),
        dml.MergeClause("not_matched", "insert", values={c: f"s.{c}" for c in ("id", "region", "amount")}),
    ]
    threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "1")  # the whole source is never broadcast
    try:
        # The keys' semi join keeps id 8, which the rest of ON leaves unmatched (8.0 < 1.0 fails): inserted.
        assert dml.merge_into(table, source, "t.id = s.id AND t.amount < s.amount", clauses)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(threshold))
    model = {i: (f"r{i % 3}", float(i)) for i in range(60)}
    model.update({3: ("x", 30.5), 9: ("z", 99.0), 70: ("new", 7.0)})
    rows = floe.spark.read(spark, table.refresh()).collect()
    assert sorted((r["id"], r["region"], r["amount"]) for r in rows) == sorted(
        [(i, *v) for i, v in model.items()] + [(8, "y", 1.0)]
    )
    # Reduced: two target rows matched, observed in the write's job; else 60 candidate rows, over the bound.
    assert observed == ([] if keys == "too big" else [2])
    assert bitmaps == [keys == "bitmap"]


def test_changes_after_changes_merge_each_files_earlier_deletes_on_the_driver(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At file granularity a data file keeps one delete file: a later change's positions, observed in its
    one job, are written together with the positions the file's earlier delete file names, which the
    commit removes."""
    from floe.spark.row_level import commits

    merged: list[int] = []  # earlier delete files each change replaced
    scoped = commits.with_scoped_positions

    def recorded(*args: Any) -> Any:
        out = scoped(*args)
        merged.append(len(out[1]))
        return out

    monkeypatch.setattr(commits, "with_scoped_positions", recorded)
    table = _table(spark, tmp_path / "wh", **{"write.delete.granularity": "file"})
    model = {i: (f"r{i % 3}", float(i)) for i in range(60)}
    for round_ in range(3):
        hit = list(range(round_, 60, 5))
        source = spark.createDataFrame([(i, f"u{round_}", float(round_)) for i in hit] + [(200 + round_, "new", 0.0)], SCHEMA)
        assert table.merge(source, on=["id"]).when_matched_update_all().when_not_matched_insert_all().execute()
        model.update({i: (f"u{round_}", float(round_)) for i in hit})
        model[200 + round_] = ("new", 0.0)
        assert _rows(spark, table) == model
    table.delete("id % 10 = 4")
    model = {i: v for i, v in model.items() if i % 10 != 4}
    assert _rows(spark, table) == model
    assert len(merged) == 4 and merged[0] == 0 and all(n > 0 for n in merged[1:])  # the driver path each time
    tasks = list(table.refresh().scan().plan_files())
    for t in tasks:  # one delete file per data file, naming only it, holding every position deleted so far
        assert len(t.deletes) <= 1
        assert all(e.data_file.referenced_data_file == t.data_file.file_path for e in t.deletes)
    assert sum(e.data_file.record_count for e in _delete_files(table)) == sum(
        t.data_file.record_count for t in tasks) - len(model)


def test_paths_hash_as_spark_hashes_them(spark: SparkSession) -> None:
    """The driver's hashes of paths (called one by one for a few, a query for many) are Spark's xxhash64."""
    from floe.spark.scan import driver_rows

    tricky = ["file:/tmp/a b/ü-漢字.parquet", "", "x" * 1000, "s3://bucket/p/00000-0-abc.parquet", "%20/é"]
    for values in (tricky, tricky + [f"file:/w/data/{i:05d}.parquet" for i in range(driver_rows._DIRECT_HASHES)]):
        expected = [r[0] for r in spark.createDataFrame([(v,) for v in values], "v string").select(F.xxhash64("v")).collect()]
        assert driver_rows.spark_xxhash64(spark, values) == expected


@pytest.mark.parametrize("granularity", ["file", "partition"])
def test_spark_written_deletes_equal_the_workers(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, granularity: str
) -> None:
    """Above the driver's bound, pyarrow in Python workers writes many delete files; Spark's own Parquet
    writer (the way for a few, and on Spark Connect, whose workers are the server's) writes the same files,
    described the same."""
    import floe.spark.row_level.observed_positions as op
    import floe.spark.row_level.position_deletes as pd

    monkeypatch.setattr(op, "DRIVER_POSITION_ROWS", 10)  # 60 candidate rows: the two-job way
    described = {}
    for writer, from_groups in (("workers", 1), ("spark", 1_000)):
        monkeypatch.setattr(pd, "WORKER_WRITE_GROUPS", from_groups)
        written = _written_by(monkeypatch, pd)
        cat = floe.load_catalog(writer, type="hadoop", warehouse=str(tmp_path / writer))
        cat.create_namespace("db")
        df = spark.createDataFrame([(i, f"r{i % 3}", float(i)) for i in range(60)], SCHEMA)
        props = {"format-version": "2", "write.delete.mode": "merge-on-read", "write.delete.granularity": granularity}
        table = cat.create_table("db.t", schema=from_spark_schema(df.schema), properties=props)
        table.update_spec().add_field("region").commit()
        table.refresh().append(df.repartition(2))
        assert table.refresh().delete("id % 7 = 2") is True
        assert sorted(_rows(spark, table)) == [i for i in range(60) if i % 7 != 2]
        assert written == [writer]
        files = [e.data_file for e in _delete_files(table)]
        assert files and all(f.file_path.endswith("-deletes.parquet") for f in files)
        for f in files:  # sorted by path, then position, as the spec asks
            rows = pq.read_table(f.file_path.removeprefix("file:")).to_pydict()
            pairs = list(zip(rows["file_path"], rows["pos"], strict=True))
            assert pairs == sorted(pairs) and len(pairs) == f.record_count
        root = str(tmp_path / writer)

        def same(text: str | bytes, root: str = root) -> str:  # a data file apart from its warehouse and write id
            plain = text.decode() if isinstance(text, bytes) else text
            return re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "<op>", plain.replace(root, ""))

        described[writer] = sorted(
            (tuple(f.partition), f.record_count, same(f.referenced_data_file or ""),
             {k: same(v) if k == POSITION_DELETE_FILE_PATH_ID else v for k, v in (f.lower_bounds or {}).items()},
             {k: same(v) if k == POSITION_DELETE_FILE_PATH_ID else v for k, v in (f.upper_bounds or {}).items()})
            for f in files
        )
    assert described["workers"] == described["spark"]
    assert len(described["workers"]) == 3  # one data file in each of 3 partitions: one delete file each


def _written_by(monkeypatch: pytest.MonkeyPatch, pd: Any) -> list[str]:
    """Records which writer wrote each set of position delete files: "workers" or "spark" (whose local
    files the driver moves to Iceberg's layout)."""
    written: list[str] = []
    for name, writer in (("_write_in_workers", "workers"), ("_move_to_layout", "spark")):
        original = getattr(pd, name)

        def recorded(*args: Any, original: Any = original, writer: str = writer) -> Any:
            written.append(writer)
            return original(*args)

        monkeypatch.setattr(pd, name, recorded)
    return written
