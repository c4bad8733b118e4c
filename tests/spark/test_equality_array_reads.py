"""Equality deletes applied as an array over one integral key column (floe.spark.scan.equality_arrays) instead of
a join: the rows every read path returns are the differential reader's (_delete_oracle.py), for keys of a
negative int column promoted to long after its deletes were written, other key columns holding nulls,
dates and quotes, delete files with and without field ids, rows inserted again after their delete, and
lanes of each width; a key naming two sets of other values, or keys too far apart, take the join."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _delete_files import assert_every_read_path, spark_compiles, write_equality_delete
from _delete_oracle import reference_rows
from pyspark.sql import DataFrame, SparkSession

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.io.table_folder import FolderTable, PathMapper
from floe.spark.scan import delete_joins, equality_arrays
from floe.spec.schema import Schema
from floe.spec.types import DateType, IntegerType, LongType, NestedField, StringType
from floe.table.table import Table

pytestmark = pytest.mark.spark

_SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "d", DateType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "v", StringType()),
)
_MAPPING = '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["d"]}, {"field-id": 3, "names": ["s"]}, ' \
           '{"field-id": 4, "names": ["v"]}]'
_DAY = datetime.date(2024, 2, 29)
_KEY = (1, 2, 3)


def _rows(ids: list[int], ds: list[datetime.date | None], ss: list[str | None], v: str | None = None) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int32()), "d": pa.array(ds, pa.date32()), "s": pa.array(ss, pa.string()),
        **({"v": pa.array([v] * len(ids), pa.string())} if v is not None else {}),
    }, schema=pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("d", pa.date32()), pa.field("s", pa.string()),
                         *([pa.field("v", pa.string())] if v is not None else [])]))


def _table(tmp_path: Path) -> Table:
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    cat.create_table("db.t", _SCHEMA, properties={"format-version": "2", "schema.name-mapping.default": _MAPPING})
    t = cat.load_table("db.t")
    ids = list(range(-3, 13))
    t.append(_rows(ids, [None if i % 3 == 0 else _DAY for i in ids], [None if i % 4 == 0 else "it's" for i in ids], "a"))
    return cat.load_table("db.t")


def _delete(t: Table, name: str, rows: pa.Table, *, with_ids: bool = True) -> Table:
    write_equality_delete(t, name, rows, schema=_SCHEMA, equality_ids=_KEY, partition=(), spec_id=0, with_ids=with_ids)
    return t.refresh()


def _expected(t: Table) -> list[tuple[Any, ...]]:
    ft = FolderTable(root=Path(t.location()), metadata_file=Path(t.metadata_location or ""), metadata=t.metadata,
                     paths=PathMapper(t.metadata.location, Path(t.location())))
    snapshot = t.metadata.current_snapshot()
    assert snapshot is not None
    return sorted(reference_rows(ft, snapshot, t.schema()), key=repr)


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().optimizedPlan().toString())


@pytest.mark.parametrize("lane_bits", [8, 16, 32])
def test_array_applies_keys_with_their_other_values_and_sequence_numbers(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lane_bits: int
) -> None:
    monkeypatch.setattr(equality_arrays, "_LANE_BITS", (lane_bits,))
    t = _table(tmp_path)
    # -3: d null, s set (matches); 4: s null (matches); 5: d differs (stays); 99: names no row
    t = _delete(t, "eq-a.parquet", _rows([-3, 4, 5, 99], [None, _DAY, datetime.date(2020, 1, 1), _DAY], ["it's", None, "it's", "x"]))
    t.append(_rows([4], [_DAY], [None], "again"))  # inserted again after its delete: stays
    t = t.refresh()
    # 7 and 12 (d and s null) match; 8 has no s: stays
    t = _delete(t, "eq-b-no-ids.parquet", _rows([7, 8, 12], [_DAY, _DAY, None], ["it's", "it's", None]), with_ids=False)
    t.update_schema().update_column("id", LongType()).commit()
    t = t.refresh()
    expected = _expected(t)
    assert sorted(r[0] for r in expected) == [-2, -1, 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11]
    assert_every_read_path(spark, t, t.location(), expected)
    plan = _plan(floe.spark.read(spark, t))
    assert "LocalRelation [_floe_words" in plan and "LeftAnti" not in plan


def test_a_key_naming_two_sets_of_other_values_takes_the_join(spark: SparkSession, tmp_path: Path) -> None:
    t = _table(tmp_path)
    t = _delete(t, "eq-a.parquet", _rows([1, 1, 2], [_DAY, None, _DAY], ["it's", "it's", "it's"]))
    expected = _expected(t)
    assert sorted(r[0] for r in expected) == [i for i in range(-3, 13) if i not in (1, 2)]
    assert_every_read_path(spark, t, t.location(), expected)
    assert "LeftAnti" in _plan(floe.spark.read(spark, t))


def test_keys_too_far_apart_take_the_join(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(equality_arrays, "MAX_ARRAY_WORDS", 1)
    t = _table(tmp_path)
    t = _delete(t, "eq-a.parquet", _rows([-3, 10], [None, _DAY], ["it's", "it's"]))
    expected = _expected(t)
    assert sorted(r[0] for r in expected) == [i for i in range(-3, 13) if i not in (-3, 10)]
    assert_every_read_path(spark, t, t.location(), expected)
    assert "LeftAnti" in _plan(floe.spark.read(spark, t))


def test_keys_a_long_away_from_the_deleted_ones_are_read(spark: SparkSession, tmp_path: Path) -> None:
    """A row's key minus the array's lowest key can pass a long: in an ANSI session (PySpark 4's default) a plain
    subtraction failed the whole read with ARITHMETIC_OVERFLOW; such rows are simply not deleted."""
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType()))
    cat.create_table("db.x", schema, properties={"format-version": "2"})
    t = cat.load_table("db.x")
    lo, hi = -(2**63), 2**63 - 1
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t.append(pa.table({"id": [lo, -5, 3, hi], "v": ["min", "a", "b", "max"]}, schema=arrow_schema))
    write_equality_delete(t, "eq-far.parquet", pa.table({"id": pa.array([-5, 3], pa.int64())}), schema=schema,
                          equality_ids=(1,), partition=(), spec_id=0)
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        read = floe.spark.read(spark, cat.load_table("db.x"))
        assert "LeftAnti" not in _plan(read)  # the array, not the join
        assert sorted((r["id"], r["v"]) for r in read.collect()) == [(lo, "min"), (hi, "max")]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


def test_an_optional_key_takes_the_array_until_a_delete_names_null(spark: SparkSession, tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.opt", schema, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([None, 1, 2, 3], pa.int64()), "v": ["n", "a", "b", "c"]}))
    t = t.refresh()

    def delete(name: str, ids: list[int | None]) -> Table:
        write_equality_delete(t, name, pa.table({"id": pa.array(ids, pa.int64())}), schema=schema, equality_ids=(1,),
                              partition=(), spec_id=0)
        return t.refresh()

    t = delete("eq-2.parquet", [2])  # the row with a null key stays: no delete names null
    assert_every_read_path(spark, t, t.location(), [(1, "a"), (3, "c"), (None, "n")])
    assert "LocalRelation [_floe_words" in _plan(floe.spark.read(spark, t))
    t = delete("eq-null.parquet", [None])  # null matches null (spec): the join applies it
    assert_every_read_path(spark, t, t.location(), [(1, "a"), (3, "c")])
    assert "LeftAnti" in _plan(floe.spark.read(spark, t))


def test_the_packed_array_is_kept_for_reads_of_the_same_delete_files(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read again, the same delete files are not read and packed again (floe.spark.scan.equality_array_cache);
    a new delete file makes a new array, and files without field ids (read through the name mapping, an
    input the cache does not name) are packed at every read."""
    packs: list[int] = []
    pack = delete_joins.DeleteJoins._read_and_pack

    def counted(self: delete_joins.DeleteJoins, live: Any, key: Any, others: Any) -> Any:
        packs.append(len(live))
        return pack(self, live, key, others)

    monkeypatch.setattr(delete_joins.DeleteJoins, "_read_and_pack", counted)
    t = _table(tmp_path)
    t = _delete(t, "eq-a.parquet", _rows([-3, 5], [None, _DAY], ["it's", "it's"]))
    for _ in range(2):
        assert sorted(r[0] for r in floe.spark.read(spark, t).collect()) == [i for i in range(-3, 13) if i not in (-3, 5)]
    assert packs == [1]
    t = _delete(t, "eq-b.parquet", _rows([7], [_DAY], ["it's"]))
    for _ in range(2):
        assert sorted(r[0] for r in floe.spark.read(spark, t).collect()) == [i for i in range(-3, 13) if i not in (-3, 5, 7)]
    assert packs == [1, 2]
    t = _delete(t, "eq-c-no-ids.parquet", _rows([10], [_DAY], ["it's"]), with_ids=False)
    for _ in range(2):
        assert sorted(r[0] for r in floe.spark.read(spark, t).collect()) == [i for i in range(-3, 13) if i not in (-3, 5, 7, 10)]
    assert packs == [1, 2, 3, 3]


def test_a_read_after_more_deletes_compiles_no_new_code(spark: SparkSession, tmp_path: Path) -> None:
    """The array's numbers (key range, lane layout) come from a header of its words, and the words by a join of
    their relation, not a scalar subquery: a read after a commit of more deletes, with another key range and
    another rank for each key, runs the code Spark compiled for the read before it."""
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType()))
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.code", schema, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array(range(5000), pa.int64()), "v": [f"v{i % 7}" for i in range(5000)]},
                      schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])))
    kept = set(range(5000))

    def delete_and_read(name: str, ids: list[int]) -> int:
        write_equality_delete(t, name, pa.table({"id": pa.array(ids, pa.int64())}), schema=schema, equality_ids=(1,),
                              partition=(), spec_id=0)
        kept.difference_update(ids)
        df = floe.spark.read(spark, t.refresh())
        assert "LocalRelation [_floe_words" in _plan(df) and "LeftAnti" not in _plan(df)
        before = spark_compiles(spark)
        assert sorted(r["id"] for r in df.collect()) == sorted(kept)
        return spark_compiles(spark) - before

    delete_and_read("eq-1.parquet", [10, 20, 30])
    assert delete_and_read("eq-2.parquet", [25, *range(1000, 1400, 3)]) == 0  # wider range, a second rank
