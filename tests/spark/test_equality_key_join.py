"""Equality deletes joined without each row's file where the spec's sequence and partition checks need
no file: the deleted data files share one data sequence number and the keys hold the partition source
columns. The rows read are checked against a model after upserts that re-insert deleted keys (an older
delete must not hide a newer row), and the plan shows whether each row's file was joined."""

from __future__ import annotations

import itertools

import pytest
from pyspark.sql import DataFrame, SparkSession

from floe.spark.scan import delete_joins
from floe.spark.scan.table_read import read
from floe.spark.streaming.changes import apply_changes
from floe.sql.engine import SqlSession
from floe.table.table import Table

pytestmark = pytest.mark.spark

_N = itertools.count()
# 11 twice in one batch: the batch's own data file gets a position delete, so its rows (a newer sequence
# number) are read in the same frame as the equality-deleted base files.
TWICE = [("+U", 1, "p0", "b1"), ("-D", 2, "p1", None), ("+I", 11, "p0", "b1"), ("+U", 11, "p0", "b1x")]
BATCHES = [
    [("+U", 1, "p0", "b1"), ("-D", 2, "p1", None), ("+I", 10, "p0", "b1")],
    [("+I", 2, "p1", "b2"), ("+U", 10, "p0", "b2"), ("-D", 3, "p1", None)],
    [("+U", 1, "p0", "b3"), ("-D", 2, "p1", None), ("+I", 3, "p1", "b3")],
]


def retracting(batch: list[tuple[str, int, str, str | None]]) -> list[tuple[str, int, str, str | None]]:
    """The batch as a non-upsert changelog: each +U after its -U."""
    return [r for op, i, dt, v in batch for r in ([("-U", i, dt, None)] if op == "+U" else []) + [(op, i, dt, v)]]


def changed_table(
    session: SqlSession, spark: SparkSession, keys: str, partition: str, *, batches: int = 3, upsert: bool = True,
    first: list[tuple[str, int, str, str | None]] | None = None, more_base_rows: int = 0,
) -> tuple[Table, dict[tuple[int, str], str]]:
    """A v2 table after ``batches`` change batches, and the model of its rows ((id, dt) -> v)."""
    name = f"eq_{next(_N)}"
    session.sql(f"CREATE TABLE db.{name} (id BIGINT NOT NULL, dt STRING NOT NULL, v STRING) USING iceberg "
                f"PARTITIONED BY ({partition}) TBLPROPERTIES ('format-version'='2')")
    more = {(100 + i, f"p{i % 2}"): "a" for i in range(more_base_rows)}
    values = ", ".join(f"({i}, '{dt}', 'a')" for i, dt in [(1, "p0"), (2, "p1"), (3, "p1"), (4, "p0"), *more])
    session.sql(f"INSERT INTO db.{name} VALUES {values}")  # the base rows: a plain append, no deletes
    session.sql(f"ALTER TABLE db.{name} SET IDENTIFIER FIELDS {keys}")
    session.sql(f"ALTER TABLE db.{name} SET TBLPROPERTIES ('write.upsert.enabled'='{str(upsert).lower()}')")
    model = {(1, "p0"): "a", (2, "p1"): "a", (3, "p1"): "a", (4, "p0"): "a", **more}
    table = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(table, Table)
    apply_batches(spark, table, ([first] if first else []) + BATCHES[1 if first else 0:batches], model, upsert=upsert)
    return table.refresh(), model


def apply_batches(
    spark: SparkSession, table: Table, batches: list[list[tuple[str, int, str, str | None]]],
    model: dict[tuple[int, str], str], *, upsert: bool = True,
) -> None:
    """Each batch applied as one change commit, and to the model."""
    for batch in batches:
        rows = batch if upsert else retracting(batch)
        apply_changes(table.refresh(), spark.createDataFrame(rows, "op string, id long, dt string, v string"))
        for op, i, dt, v in batch:
            if op == "-D":
                model.pop((i, dt), None)
            else:
                model[(i, dt)] = v


@pytest.fixture(autouse=True, params=["array", "join"])
def equality_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test with the deletes as an array over the key (floe.spark.scan.equality_arrays) where they fit one,
    and with the anti-join."""
    if request.param == "join":
        monkeypatch.setattr(delete_joins, "ARRAY_EQUALITY_ROWS", 0)
    return str(request.param)


def read_rows(df: DataFrame) -> dict[tuple[int, str], str]:
    return {(r.id, r.dt): r.v for r in df.collect()}


def joins_files(df: DataFrame) -> bool:
    return "_floe_k2" in df._jdf.queryExecution().optimizedPlan().toString()


def anti_joins(df: DataFrame) -> int:
    return str(df._jdf.queryExecution().optimizedPlan().toString()).count("Join LeftAnti")


def test_one_sequence_with_keys_holding_partition_joins_no_file(session: SqlSession, spark: SparkSession) -> None:
    table, model = changed_table(session, spark, "id, dt", "dt", batches=1)
    df = read(spark, table)
    df = read(spark, table)
    assert read_rows(df) == model
    assert not joins_files(df)


@pytest.mark.parametrize("file_map", ["literal", "joined"])
def test_several_sequences_join_each_rows_file(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, file_map: str
) -> None:
    # each delete file's sequence number and partition reach its rows through a literal map (a few files)
    # or a joined relation (many)
    if file_map == "joined":
        monkeypatch.setattr("floe.spark.scan.driver_rows.INLINE_ENTRIES", 0)
    table, model = changed_table(session, spark, "id, dt", "dt")
    df = read(spark, table)
    assert read_rows(df) == model
    assert joins_files(df)


@pytest.mark.parametrize("broadcast", [True, False], ids=["broadcast", "shuffled"])
def test_oldest_files_holding_most_rows_are_read_apart_without_their_file(
    session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, broadcast: bool, equality_path: str
) -> None:
    """The base files (most rows) take their sequence number as a constant; the newer files, whose rows an
    older delete must not hide (keys deleted and inserted again), still join their file for theirs. Also
    with the delete rows too many to broadcast (a shuffled join on the hashed key column)."""
    if not broadcast:
        monkeypatch.setattr(delete_joins, "BROADCAST_EQUALITY_ROWS", 0)
    table, model = changed_table(session, spark, "id, dt", "dt", more_base_rows=20)
    df = read(spark, table)
    assert read_rows(df) == model
    assert joins_files(df)
    if equality_path == "array":  # each part filtered by the array, broadcast once (the exchange reused)
        final = str(df._jdf.queryExecution().executedPlan().toString()).split("\n+- == Initial Plan ==")[0]
        assert anti_joins(df) == 0 and "LocalTableScan [_floe_words" in final
        assert "ReusedExchange [_floe_words" in final
        return
    assert anti_joins(df) == 2  # one per part: Spark pushes the anti join into the union
    if broadcast:  # ... and both parts probe one broadcast of the delete rows, built once
        assert "ReusedExchange" in str(df._jdf.queryExecution().executedPlan().toString())


def test_key_without_partition_column_joins_each_rows_file(session: SqlSession, spark: SparkSession) -> None:
    """Key (id) misses the partition source (dt): a delete applies in its own partition only, so rows need
    their file's partition (an upsert table refuses such a key, a changelog with retractions does not)."""
    table, model = changed_table(session, spark, "id", "dt", batches=1, upsert=False)
    df = read(spark, table)
    assert read_rows(df) == model
    assert joins_files(df)


def test_bucket_of_a_key_column_joins_no_file(session: SqlSession, spark: SparkSession) -> None:
    table, model = changed_table(session, spark, "id, dt", "bucket(2, id)", batches=1)
    df = read(spark, table)
    assert read_rows(df) == model
    assert not joins_files(df)


def test_newer_rows_read_with_equality_deleted_files_stay(session: SqlSession, spark: SparkSession) -> None:
    """A newer file with a position delete, read beside the equality-deleted files, is not hit by their
    deletes: the base files and it are read as two parts, each of one sequence number, joining no file."""
    table, model = changed_table(session, spark, "id, dt", "dt", batches=1, first=TWICE)
    df = read(spark, table)
    assert read_rows(df) == model
    assert not joins_files(df)


def test_newer_files_of_several_sequence_numbers_without_equality_deletes_keep_their_rows(
    session: SqlSession, spark: SparkSession
) -> None:
    """Two newer files (position deletes only, sequence numbers 2 and 4, different partitions) read as one
    part: the delete of key 2 at sequence number 3 is older than the file re-inserting it and must not hide
    it, whichever file's number comes first."""
    base = [(1, "p0"), (2, "p1"), (3, "p1"), (4, "p0"), *[(100 + i, f"p{i % 2}") for i in range(20)]]
    table, model = changed_table(session, spark, "id, dt", "dt", batches=0, more_base_rows=20)
    assert set(model) == set(base)
    batches = [
        [("+I", 11, "p0", "x"), ("+U", 11, "p0", "y")],  # seq 2: file A in p0 with a position delete
        [("-D", 2, "p1", None)],  # seq 3: an equality delete of key 2 in p1
        [("+I", 2, "p1", "n"), ("+U", 2, "p1", "n2")],  # seq 4: file B in p1 re-inserting key 2
    ]
    apply_batches(spark, table, batches, model)
    df = read(spark, table.refresh())
    assert read_rows(df) == model
    assert model[(2, "p1")] == "n2"
