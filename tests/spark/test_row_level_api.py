"""The Python API of row-level changes (table.delete / update / merge / upsert), in both write modes.

Each step is checked against a plain dict model of the rows; copy-on-write MERGE must rewrite only the
files that hold a matched row.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe
import floe.spark
from floe.spark.types import from_spark_schema
from floe.table.table import Table

SCHEMA = "id bigint, region string, amount double"


def _table(spark: SparkSession, tmp_path: Path, mode: str) -> Table:
    cat = floe.load_catalog("rl", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    df = spark.createDataFrame([(i, f"r{i % 3}", float(i)) for i in range(30)], SCHEMA)
    props = {"format-version": "2", **{f"write.{op}.mode": mode for op in ("delete", "update", "merge")}}
    t = cat.create_table("db.t", schema=from_spark_schema(df.schema), properties=props)
    t.append(df.repartition(6))
    return t.refresh()


def _rows(spark: SparkSession, table: Table) -> dict[int, tuple[str, float]]:
    return {r["id"]: (r["region"], r["amount"]) for r in floe.spark.read(spark, table.refresh()).collect()}


def _files(table: Table) -> set[str]:
    return {t.data_file.file_path for t in table.refresh().scan().plan_files()}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_delete_update_merge_upsert_match_a_model(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    table = _table(spark, tmp_path, mode)
    model = {i: (f"r{i % 3}", float(i)) for i in range(30)}

    assert table.delete("id < 3") is True
    model = {k: v for k, v in model.items() if k >= 3}
    assert _rows(spark, table) == model
    assert table.refresh().delete("id > 1000") is False  # nothing matches: no commit

    assert table.refresh().update({"amount": "amount * 10"}, "region = 'r1'") is True
    model = {k: (r, a * 10 if r == "r1" else a) for k, (r, a) in model.items()}
    assert _rows(spark, table) == model

    source = spark.createDataFrame([(7, "r1", 700.0), (9, "gone", 0.0), (100, "new", 1.0)], SCHEMA)
    before = _files(table)
    committed = (
        table.refresh().merge(source, on=["id"])
        .when_matched_delete(condition="s.region = 'gone'")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert committed is True
    model.pop(9)
    model[7] = ("r1", 700.0)
    model[100] = ("new", 1.0)
    assert _rows(spark, table) == model
    if mode == "copy-on-write":
        rewritten = before - _files(table)
        assert 1 <= len(rewritten) <= 2  # the files holding ids 7 and 9, not all six

    result = table.refresh().upsert(spark.createDataFrame([(8, "r2", 8.0), (10, "x", 1.0), (200, "n", 2.0)], SCHEMA),
                                    join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (1, 1)  # 8 is unchanged; 10 differs; 200 is new
    model[10] = ("x", 1.0)
    model[200] = ("n", 2.0)
    assert _rows(spark, table) == model


def test_merge_by_source_clauses_and_conditions(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(spark, tmp_path, "copy-on-write")
    source = spark.createDataFrame([(i, "keep", 0.0) for i in range(10)], SCHEMA)
    (
        table.merge(source, on="t.id = s.id")
        .when_matched_update({"region": "s.region"}, condition="t.amount > 4")
        .when_not_matched_by_source_delete(condition="t.id >= 20")
        .execute()
    )
    got = _rows(spark, table)
    assert sorted(got) == list(range(20))
    assert {i for i, (r, _) in got.items() if r == "keep"} == set(range(5, 10))


@pytest.mark.parametrize("by_source", [False, True], ids=["matched", "by-source"])
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_merge_refuses_a_target_row_matched_twice(spark: SparkSession, tmp_path: Path, mode: str, by_source: bool) -> None:
    table = _table(spark, tmp_path, mode)
    before = table.current_snapshot()
    source = spark.createDataFrame([(1, "a", 1.0), (1, "b", 2.0), (2, "c", 3.0)], SCHEMA)
    merge = table.merge(source, on=["id"]).when_matched_update_all()
    if by_source:
        merge = merge.when_not_matched_by_source_delete(condition="t.id >= 20")
    data_files = {p for p in (tmp_path / "wh").rglob("*.parquet")}
    with pytest.raises(floe.errors.ValidationError, match="MERGE_CARDINALITY_VIOLATION"):
        merge.execute()
    assert len(_rows(spark, table)) == 30  # nothing written
    assert table.refresh().current_snapshot() == before
    assert {p for p in (tmp_path / "wh").rglob("*.parquet")} == data_files  # no file left by either write
