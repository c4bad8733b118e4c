"""A query's view of a table reuses the scan an earlier query built for the same table state, options and
settings (floe.spark.scan.view_reads), and reads anew whenever any of them changed; joins of such reads,
in one query or across queries, stay joins of two relations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _sql_helpers import hadoop_lake
from pyspark.sql import DataFrame, SparkSession

from floe.catalog.names import load_table_by_name
from floe.spark.runtime.configure import session_config
from floe.spark.scan import view_reads
from floe.write import write


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """A Hadoop catalog on the shared session with merge-on-read table db.t of ids 1-6 (one deleted)."""
    with hadoop_lake(spark, tmp_path, "views") as name:
        spark.sql(f"CREATE TABLE {name}.db.t (id BIGINT, k STRING) USING iceberg TBLPROPERTIES "
                  "('format-version'='2', 'write.delete.mode'='merge-on-read')")
        spark.sql(f"INSERT INTO {name}.db.t VALUES (1, 'a'), (2, 'b'), (3, 'a'), (4, 'b'), (5, 'a'), (6, 'b')")
        spark.sql(f"DELETE FROM {name}.db.t WHERE id = 6")
        yield name


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables whose scan was built (not reused), in order."""
    calls: list[str] = []
    real = view_reads.read

    def counting(spark: SparkSession, table: Any, **kwargs: Any) -> DataFrame:
        calls.append(str(table.identifier[-1]))
        return real(spark, table, **kwargs)

    monkeypatch.setattr(view_reads, "read", counting)
    return calls


def ids(df: DataFrame) -> list[int]:
    return sorted(r[0] for r in df.collect())


def test_a_query_of_an_unchanged_table_reuses_its_scan_and_a_commit_reads_anew(
    spark: SparkSession, lake: str, built: list[str]
) -> None:
    t = f"{lake}.db.t"
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [1, 2, 3, 4, 5]
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [1, 2, 3, 4, 5]
    assert built == ["t"]
    spark.sql(f"DELETE FROM {t} WHERE id = 1")  # Floe's own commit
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [2, 3, 4, 5]
    assert len(built) == 2
    # Another writer's commit, through a handle of its own: the query loads the table and sees it.
    table = load_table_by_name(t, config=session_config(spark))
    write(table, spark.createDataFrame([(7, "c")], "id BIGINT, k STRING"), mode="append")
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [2, 3, 4, 5, 7]
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [2, 3, 4, 5, 7]
    assert len(built) == 3


def test_other_options_and_settings_each_read_their_own_scan(spark: SparkSession, lake: str, built: list[str]) -> None:
    t = f"{lake}.db.t"
    first = spark.sql(f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at").collect()[0][0]
    assert ids(spark.sql(f"SELECT id FROM {t} VERSION AS OF {first}")) == [1, 2, 3, 4, 5, 6]
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [1, 2, 3, 4, 5]
    assert ids(spark.sql(f"SELECT id FROM {t} WHERE id > 3")) == [4, 5]  # a filter pushed into the scan
    assert ids(spark.sql(f"SELECT id FROM {t} WHERE id > 4")) == [5]
    assert ids(spark.sql(f"SELECT id, _pos FROM {t}")) == [1, 2, 3, 4, 5]  # a metadata column
    assert len(built) == 5
    assert ids(spark.sql(f"SELECT id FROM {t} WHERE id > 3")) == [4, 5]
    assert len(built) == 5
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        assert ids(spark.sql(f"SELECT id FROM {t} WHERE id > 3")) == [4, 5]
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert len(built) == 6


def test_a_table_replaced_under_its_name_is_read_anew(spark: SparkSession, lake: str, built: list[str]) -> None:
    t = f"{lake}.db.t"
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [1, 2, 3, 4, 5]
    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, k STRING) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (9, 'z')")
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [9]
    assert len(built) == 2


def test_joins_of_reused_scans_are_joins_of_two_relations(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.t"
    spark.sql(f"SELECT id FROM {t}").collect()  # the scan is kept from here on
    one_query = spark.sql(f"SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.id + 1 = b.id WHERE a.k = 'a'").collect()
    assert sorted(tuple(r) for r in one_query) == [(1, 2), (3, 4)]
    a = spark.sql(f"SELECT * FROM {t} WHERE k = 'a'")
    b = spark.sql(f"SELECT * FROM {t} WHERE k = 'b'")
    assert a.join(b, a.k == b.k).count() == 0
    assert a.join(b, a.id + 1 == b.id, "left").where(b.id.isNotNull()).count() == 2
    c = spark.sql(f"SELECT * FROM {t}")
    d = spark.sql(f"SELECT * FROM {t}")
    pairs = c.join(d, c.id + 1 == d.id).select(c.id, d.id).collect()
    assert sorted(tuple(r) for r in pairs) == [(1, 2), (2, 3), (3, 4), (4, 5)]


def test_reads_through_the_dataframe_api_are_new_relations_each_time(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.t"
    a, b = spark.table(t), spark.table(t)
    assert a is not b
    pairs = a.join(b, a.id + 1 == b.id).select(a.id, b.id).collect()
    assert sorted(tuple(r) for r in pairs) == [(1, 2), (2, 3), (3, 4), (4, 5)]


def test_kept_scans_are_bounded(spark: SparkSession, lake: str) -> None:
    t = f"{lake}.db.t"
    for n in range(view_reads.MAX_KEPT_SCANS + 3):
        spark.sql(f"SELECT id FROM {t} WHERE id > {n}").collect()
    assert view_reads.kept_scans() <= view_reads.MAX_KEPT_SCANS


def test_scans_holding_more_driver_rows_than_the_budget_are_not_kept(
    spark: SparkSession, lake: str, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The deleted positions' words reach Spark as a relation the driver made: kept with the scan, they would
    # outlive the delete caches' own budget.
    t = f"{lake}.db.t"
    monkeypatch.setattr(view_reads, "MAX_KEPT_BYTES", 8)
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [1, 2, 3, 4, 5]
    assert ids(spark.sql(f"SELECT id FROM {t}")) == [1, 2, 3, 4, 5]
    assert len(built) == 2  # read anew: its words are more than 8 bytes
    spark.sql(f"CREATE TABLE {lake}.db.clean (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {lake}.db.clean VALUES (1)")
    assert ids(spark.sql(f"SELECT id FROM {lake}.db.clean")) == [1]
    assert ids(spark.sql(f"SELECT id FROM {lake}.db.clean")) == [1]
    assert built[2:] == ["clean"]  # no rows made by the driver: kept
