"""A read of a merge-on-read table runs the code Spark generated for the previous read when a commit
changed only which rows are deleted (floe.spark.scan.position_bitmaps): the bitmap's numbers (word bases,
counts, slot table offsets and moduli) are read from the words, and the words reach the rows by a broadcast
join, so nothing in the generated code depends on them. Code compiled anew after every commit runs cold in
the JVM: the first read after a MERGE took half as long again as the next one."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _delete_files import jvm_helper_filters, spark_compiles
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe
import floe.spark
from floe.io.locations import to_local_path
from floe.spark.scan import delete_joins
from floe.spark.scan.scan_frames import PARQUET_ROW_INDEX
from floe.spark.types import from_spark_schema
from floe.sql.engine import SqlSession


def _sizes_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """As when storage holds a data file at another size than its manifest says (a writer's bad metadata): rows
    then find their file's words by comparing paths, a chain of at most CHAINED_FILES."""
    monkeypatch.setattr(delete_joins.DeleteJoins, "_checked_sizes", lambda self, files: None)


def _without_jvm_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a session without Floe's JVM helper (Spark Connect): an exact slot table is looked up by Spark
    expressions reading the words from a joined one-row relation."""
    monkeypatch.setattr(delete_joins, "jvm_undeleted", lambda spark, plan: None)


def _lookup(plan: str) -> str:
    """How the executed ``plan`` finds a row's deleted positions."""
    if jvm_helper_filters(plan):
        return "helper"
    return "slots" if "pmod(_floe_fsize" in plan else "chain"


@pytest.mark.parametrize(("files", "lookup"), [(2, "chain"), (2, "helper"), (8, "helper"), (8, "slots")],
                         ids=["paths-compared", "few-size-slots", "size-slots", "size-slots-as-expressions"])
def test_a_read_after_more_deletes_compiles_no_new_code(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, files: int, lookup: str
) -> None:
    if lookup == "chain":
        _sizes_unchecked(monkeypatch)
    if lookup == "slots":
        _without_jvm_helper(monkeypatch)
    name = f"db.same_code_{files}_{lookup}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING) TBLPROPERTIES ('format-version'='2', "
                "'write.delete.mode'='merge-on-read')")
    ids: list[int] = []
    for i in range(files):  # files of different sizes
        batch = [10_000 * i + j for j in range(200 + 37 * i)]
        ids += batch
        session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({x}, 't{x % 3}')" for x in batch))

    def read_counting_compiles() -> tuple[list[int], int]:
        df = floe.spark.read(spark, session.catalog().load_table(name))
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "Union" not in plan and _lookup(plan) == lookup
        # The helper is called with primitive longs (no Java UDF boxing them) unless files share a size
        if lookup == "helper":
            assert ("floe_undeleted_positions.applyAsLong" in plan) != ("Filter UDF(" in plan and "xxhash64(" in plan)
        before = spark_compiles(spark)
        rows = sorted(r["id"] for r in df.collect())
        return rows, spark_compiles(spark) - before

    # Every file (every split of it) gets deletes, first short of its last 64 rows, then to its end (a word
    # more each: other word bases and offsets); the bitmap's shape (files with deletes, kind of lookup) stays.
    session.sql(f"DELETE FROM {name} WHERE id % 5 = 0 AND id % 10000 < 136 + 37 * (id DIV 10000)")
    ids = [x for x in ids if not (x % 5 == 0 and x % 10_000 < 136 + 37 * (x // 10_000))]
    rows, _ = read_counting_compiles()
    assert rows == ids
    session.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    ids = [x for x in ids if x % 7 != 0]
    rows, compiled = read_counting_compiles()
    assert rows == ids
    assert compiled == 0


@pytest.mark.parametrize("kind", ["chain", "few-to-many", "size-slots", "size-slots-as-expressions"])
def test_more_files_with_deletes_run_the_same_code(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A chain of 2 files and one of 4 compare paths read from the words' relation (padded to
    CHAINED_FILES); a size table of 2 files and one of 8 are looked up alike (a table of a few files is
    no other code than one of many: the early rounds of a merge-on-read pipeline compiled again when the
    fifth file got deletes); size tables of more files, some sharing sizes, read the hash slots' numbers
    from the header: each pair runs one compiled code. (Every file has deletes in both reads: a read of
    files with and without deletes holding many rows is a union, another plan; a table whose files share
    no size has no hash branch.) Size tables are looked up by Floe's JVM helper, or by Spark expressions
    where the helper is unavailable."""
    if kind == "chain":
        _sizes_unchecked(monkeypatch)
    if kind == "size-slots-as-expressions":
        _without_jvm_helper(monkeypatch)
    name = f"db.same_shape_{kind.replace('-', '_')}"
    session.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING) TBLPROPERTIES ('format-version'='2', "
                "'write.delete.mode'='merge-on-read')")
    sized = [[10_000 * i + j for j in range(200 + 37 * i)] for i in range(8)]
    # An INSERT writes two files here (local[2]). Chain: 2 files, then 4. Few to many: 2 files, then 8.
    # Size slots: 16 files, then four more, two by two of one size (their rows find their slots by a hash
    # of the path).
    first, later = {
        "chain": (sized[:1], sized[1:2]),
        "few-to-many": (sized[:1], sized[1:4]),
        "size-slots": (sized, [[10_000 * i + j for j in range(150)] for i in (20, 21)]),
    }[kind.removesuffix("-as-expressions")]
    ids: list[int] = []

    def insert_and_delete(batches: list[list[int]], modulus: int) -> tuple[list[int], int]:
        for batch in batches:
            session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({x}, 't{x % 3}')" for x in batch))
            ids.extend(batch)
        session.sql(f"DELETE FROM {name} WHERE id % {modulus} = 0")  # every file gets deletes
        ids[:] = [x for x in ids if x % modulus != 0]
        df = floe.spark.read(spark, session.catalog().load_table(name))
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "Union" not in plan and _lookup(plan) == {"chain": "chain", "size-slots-as-expressions": "slots"}.get(kind, "helper")
        before = spark_compiles(spark)
        rows = sorted(r["id"] for r in df.collect())
        return rows, spark_compiles(spark) - before

    rows, _ = insert_and_delete(first, 5)
    assert rows == sorted(ids)
    rows, compiled = insert_and_delete(later, 7)
    assert rows == sorted(ids)
    assert compiled == 0


def test_files_without_deletes_holding_few_rows_are_read_in_the_scan_of_those_with_deletes(
    session: SqlSession, spark: SparkSession
) -> None:
    """A MERGE's new file (few rows, no deletes yet) is read in the scan of the files its MERGE left deletes
    on, each of its rows meeting an empty slot of its own: no relation, union and task of its own, and the
    plan of a read with only files with deletes. Files holding many rows are still read apart."""
    name = "db.joined_scan"
    session.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING) TBLPROPERTIES ('format-version'='2', "
                "'write.delete.mode'='merge-on-read')")
    ids: list[int] = []

    def insert(batch: list[int]) -> None:
        session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({x}, 't{x % 3}')" for x in batch))
        ids.extend(batch)

    def read() -> tuple[list[int], str]:
        df = floe.spark.read(spark, session.catalog().load_table(name))
        plan = df._jdf.queryExecution().executedPlan().toString()  # before it runs: the initial plan alone
        return sorted(r["id"] for r in df.collect()), plan

    for i in range(4):  # files of different sizes
        insert([10_000 * i + j for j in range(1000 + 37 * i)])
    session.sql(f"DELETE FROM {name} WHERE id % 10 = 0")  # every file gets deletes
    ids[:] = [x for x in ids if x % 10 != 0]
    insert(list(range(100_000, 100_040)))  # 40 rows, about 1% of the rows with deletes
    rows, plan = read()
    assert rows == sorted(ids)
    assert "Union" not in plan and _lookup(plan) == "helper" and plan.count("FileScan parquet") == 1
    insert(list(range(200_000, 202_000)))  # half as many rows again: read apart
    rows, plan = read()
    assert rows == sorted(ids)
    assert "Union" in plan and plan.count("FileScan parquet") == 2
    session.sql(f"DELETE FROM {name} WHERE id % 10 = 1")  # a row-level change over both scans
    assert read()[0] == sorted(x for x in ids if x % 10 != 1)


def test_rows_take_their_positions_from_sparks_row_index_column(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Positions come from the column Spark's Parquet reader fills with row indexes (no ``_metadata``
    struct per row), and stay file positions where a pushed filter skips row groups; deleted rows are
    applied by the bitmap and, with the bitmap off, by the join."""
    parquet = spark._jvm.org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat  # type: ignore[union-attr]
    assert parquet.ROW_INDEX_TEMPORARY_COLUMN_NAME() == PARQUET_ROW_INDEX
    cat = floe.load_catalog("rows", type="hadoop", warehouse=str(tmp_path))
    cat.create_namespace("db")
    df = spark.range(20_000).select(F.col("id"), (F.col("id") * 3).alias("v"))
    props = {"format-version": "2", "write.delete.mode": "merge-on-read", "write.parquet.row-group-size-bytes": "4096"}
    table = cat.create_table("db.t", schema=from_spark_schema(df.schema), properties=props)
    table.append(df.coalesce(1))
    (data_file,) = [t.data_file for t in table.refresh().scan().plan_files()]
    assert pq.ParquetFile(to_local_path(data_file.file_path)).num_row_groups > 4
    table.refresh().delete("id % 1000 = 7")
    kept = [i for i in range(20_000) if i % 1000 != 7]
    for bitmap in (True, False):
        if not bitmap:
            monkeypatch.setattr(delete_joins, "BITMAP_DELETE_ROWS", 0)
        whole = floe.spark.read(spark, table.refresh())
        assert sorted(r["id"] for r in whole.collect()) == kept
        plan = whole._jdf.queryExecution().executedPlan().toString()
        assert PARQUET_ROW_INDEX in plan and "row_index" not in plan.replace(PARQUET_ROW_INDEX, "")
        tail = floe.spark.read(spark, table.refresh(), filter="id >= 15000")
        assert sorted(r["id"] for r in tail.collect()) == [i for i in kept if i >= 15_000]


def test_the_helper_gives_the_same_rows_without_generated_code(session: SqlSession, spark: SparkSession) -> None:
    """Spark evaluates the helper's call itself (by reflection, the arguments boxed) where it generates no
    code: a session with whole-stage code generation off and expressions interpreted reads the same rows."""
    name = "db.helper_interpreted"
    session.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING) TBLPROPERTIES ('format-version'='2', "
                "'write.delete.mode'='merge-on-read')")
    for i in range(2):  # files of different sizes
        session.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({x}, 't{x % 3}')" for x in range(1000 * i, 1000 * i + 300 + 50 * i)))
    session.sql(f"DELETE FROM {name} WHERE id % 3 = 1")
    expected = sorted(x for i in range(2) for x in range(1000 * i, 1000 * i + 300 + 50 * i) if x % 3 != 1)
    generated = floe.spark.read(spark, session.catalog().load_table(name))
    assert "floe_undeleted_positions.applyAsLong" in generated._jdf.queryExecution().executedPlan().toString()
    assert sorted(r["id"] for r in generated.collect()) == expected
    settings = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    before = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        interpreted = floe.spark.read(spark, session.catalog().load_table(name))
        plan = interpreted._jdf.queryExecution().executedPlan().toString()
        assert "floe_undeleted_positions.applyAsLong" in plan and "*(" not in plan  # no whole-stage code
        assert sorted(r["id"] for r in interpreted.collect()) == expected
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
