"""Upsert tables (seed 003 section 5.1, seed 000): ``PRIMARY KEY (...) NOT ENFORCED`` sets identifier fields and
``write.upsert.enabled=true`` makes every write replace the row of its key, on every write path.

Each path is checked against a Python model of the table after every batch (a dict from key to row, the last
row of a key in a batch winning), and the files each commit adds are the kinds the seed describes: data,
equality deletes on the key, and position deletes when a batch writes a key twice.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _sql_helpers import hadoop_lake
from pyspark.sql import DataFrame, SparkSession

import floe.spark
from floe.errors import UnsupportedError, ValidationError
from floe.spark.scan.table_read import load_table
from floe.spec.manifest import FileContent
from floe.sql.engine import SqlSession
from floe.table.table import Table
from floe.write import write
from tests.conftest import Jsql

_N = itertools.count()
SEED_DDL = (
    "CREATE TABLE {name} (\n"
    "  id  INT UNIQUE COMMENT 'unique id',\n"
    "  data STRING NOT NULL,\n"
    " PRIMARY KEY(id) NOT ENFORCED\n"
    ") USING iceberg TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='true')"
)
Batch = list[tuple[int, str]]
BATCHES: list[Batch] = [
    [(1, "a"), (2, "b"), (3, "c")],
    [(1, "a2"), (1, "a3"), (4, "d")],  # a key twice in one batch: the later row wins
    [(2, "b2"), (4, "d2"), (4, "d3"), (5, "e")],
]


def _table(session: SqlSession, name: str) -> Table:
    t = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t


def _new_table(session: SqlSession, fmt: int = 2) -> str:
    name = f"up_{next(_N)}"
    ddl = SEED_DDL.format(name=f"db.{name}").replace("'format-version'='2'", f"'format-version'='{fmt}'")
    session.sql(ddl)
    return name


def _rows(spark: SparkSession, t: Table) -> list[tuple[int, str]]:
    return sorted((r[0], r[1]) for r in floe.spark.read(spark, t).collect())


def _check_against_model(spark: SparkSession, t: Table, write: Callable[[Batch], None]) -> None:
    model: dict[int, str] = {}
    for batch in BATCHES:
        write(batch)
        for key, value in batch:
            model[key] = value
        t.refresh()
        assert _rows(spark, t) == sorted(model.items()), f"after batch {batch}"


def test_seed_ddl_sets_identifier_fields_and_required_key(session: SqlSession) -> None:
    t = _table(session, _new_table(session))
    schema = t.schema()
    assert [schema.find_field(i).name for i in schema.identifier_field_ids] == ["id"]
    assert schema.find_field("id").required and schema.find_field("data").required
    assert schema.find_field("id").doc == "unique id"


def test_seed_story_two_inserts_with_a_repeated_key_keep_one_row_per_key(session: SqlSession, spark: SparkSession) -> None:
    name = _new_table(session)
    session.sql(f"INSERT INTO db.{name} VALUES (1, 'a'), (2, 'b')")
    session.sql(f"INSERT INTO db.{name} VALUES (1, 'a2'), (1, 'a3')")
    t = _table(session, name)
    assert _rows(spark, t) == [(1, "a3"), (2, "b")]
    contents = _snapshot_contents(t)
    # The seed's three files: the rows, the key as an equality delete, and a position delete for the key
    # written twice in the batch; data and equality delete share their name up to the file counter.
    assert contents == {FileContent.DATA: 1, FileContent.EQUALITY_DELETES: 1, FileContent.POSITION_DELETES: 1}
    data, eq = (_snapshot_files(t, c)[0] for c in (FileContent.DATA, FileContent.EQUALITY_DELETES))
    prefix = re.compile(r"^(.*)-\d{5}(-deletes)?\.parquet$")
    assert prefix.match(Path(data).name).group(1) == prefix.match(Path(eq).name).group(1)  # type: ignore[union-attr]
    key_rows = pq.read_table(eq.removeprefix("file:"))
    assert key_rows.column_names == ["id"]


def _snapshot_files(t: Table, content: FileContent) -> list[str]:
    return [r["file_path"] for r in t.inspect.files().to_pylist()
            if r["content"] == int(content) and _added_by_current(t, r["file_path"])]


def _added_by_current(t: Table, path: str) -> bool:
    snap = t.current_snapshot()
    assert snap is not None
    return any(e["snapshot_id"] == snap.snapshot_id and e["data_file"]["file_path"] == path and e["status"] == 1
               for e in t.inspect.entries().to_pylist())


def _snapshot_contents(t: Table) -> dict[FileContent, int]:
    snap = t.current_snapshot()
    assert snap is not None
    out: dict[FileContent, int] = {}
    for e in t.inspect.entries().to_pylist():
        if e["snapshot_id"] == snap.snapshot_id and e["status"] == 1:
            c = FileContent(e["data_file"]["content"])
            out[c] = out.get(c, 0) + 1
    return out


@pytest.fixture
def upsert_target(session: SqlSession, spark: SparkSession) -> Iterator[tuple[str, Table]]:
    name = _new_table(session)
    yield name, _table(session, name)


def _frame(spark: SparkSession, batch: Batch) -> DataFrame:
    # One partition keeps the batch's order, which decides which row of a repeated key wins.
    return spark.createDataFrame(batch, "id int, data string").coalesce(1)


def test_sql_insert_values_upserts(session: SqlSession, spark: SparkSession, upsert_target: tuple[str, Table]) -> None:
    name, t = upsert_target
    _check_against_model(spark, t, lambda b: session.sql(
        f"INSERT INTO db.{name} VALUES " + ", ".join(f"({k}, '{v}')" for k, v in b)))


def test_sql_insert_select_upserts(session: SqlSession, spark: SparkSession, upsert_target: tuple[str, Table]) -> None:
    name, t = upsert_target

    def insert(batch: Batch) -> None:
        _frame(spark, batch).createOrReplaceTempView("upsert_src")
        session.sql(f"INSERT INTO db.{name} SELECT * FROM upsert_src")

    _check_against_model(spark, t, insert)


def test_table_append_of_dataframe_upserts(spark: SparkSession, upsert_target: tuple[str, Table]) -> None:
    _, t = upsert_target
    _check_against_model(spark, t, lambda b: t.append(_frame(spark, b)))


def test_table_append_of_arrow_upserts_without_spark(spark: SparkSession, upsert_target: tuple[str, Table]) -> None:
    _, t = upsert_target

    def append(batch: Batch) -> None:
        t.append(pa.table({"id": pa.array([k for k, _ in batch], pa.int32()), "data": [v for _, v in batch]}))

    _check_against_model(spark, t, append)
    assert _snapshot_contents(t) == {
        FileContent.DATA: 1, FileContent.EQUALITY_DELETES: 1, FileContent.POSITION_DELETES: 1}


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """A Hadoop catalog configured the Iceberg way on the shared session, holding the seed's upsert table."""
    with hadoop_lake(spark, tmp_path, "up") as name:
        spark.sql(SEED_DDL.format(name=f"{name}.db.t"))
        yield name


def _lake_table(spark: SparkSession, lake: str) -> Table:
    t = load_table(spark, f"{lake}.db.t")
    assert isinstance(t, Table)
    return t


def test_write_to_append_upserts(spark: SparkSession, lake: str) -> None:
    _check_against_model(spark, _lake_table(spark, lake), lambda b: _frame(spark, b).writeTo(f"{lake}.db.t").append())


def test_format_iceberg_save_upserts(spark: SparkSession, lake: str) -> None:
    _check_against_model(spark, _lake_table(spark, lake),
                         lambda b: _frame(spark, b).write.format("iceberg").mode("append").save(f"{lake}.db.t"))


def test_spark_sql_insert_upserts(spark: SparkSession, lake: str) -> None:
    _check_against_model(spark, _lake_table(spark, lake), lambda b: spark.sql(
        f"INSERT INTO {lake}.db.t VALUES " + ", ".join(f"({k}, '{v}')" for k, v in b)))


def test_stream_without_op_column_upserts(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    feed = tmp_path / "feed"
    feed.mkdir()
    t = _lake_table(spark, lake)
    model: dict[int, str] = {}
    for i, batch in enumerate(BATCHES):
        pq.write_table(pa.table({"seq": list(range(len(batch))), "id": pa.array([k for k, _ in batch], pa.int32()),
                                 "data": [v for _, v in batch]}), feed / f"b{i}.parquet")
        stream = spark.readStream.schema("seq bigint, id int, data string").parquet(str(feed))
        query = (stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp"))
                 .option("order-column", "seq").trigger(availableNow=True).toTable(f"{lake}.db.t"))
        query.awaitTermination()
        model.update(batch)
        assert _rows(spark, t.refresh()) == sorted(model.items()), f"after batch {i}"


def test_write_option_upsert_enabled_turns_upsert_on_for_one_write(spark: SparkSession, lake: str) -> None:
    spark.sql(f"CREATE TABLE {lake}.db.plain (id INT NOT NULL, data STRING) USING iceberg "
              "TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"ALTER TABLE {lake}.db.plain SET IDENTIFIER FIELDS id")
    spark.sql(f"INSERT INTO {lake}.db.plain VALUES (1, 'a')")
    _frame(spark, [(1, "b")]).writeTo(f"{lake}.db.plain").option("upsert-enabled", "true").append()
    assert sorted(tuple(r) for r in spark.table(f"{lake}.db.plain").collect()) == [(1, "b")]
    _frame(spark, [(1, "c")]).writeTo(f"{lake}.db.plain").append()  # the table is not in upsert mode
    assert sorted(tuple(r) for r in spark.table(f"{lake}.db.plain").collect()) == [(1, "b"), (1, "c")]


# -- refusals: never a silent append ----------------------------------------------------------------------


def test_insert_overwrite_into_upsert_table_is_refused(session: SqlSession, spark: SparkSession) -> None:
    name = _new_table(session)
    session.sql(f"INSERT INTO db.{name} VALUES (1, 'a')")
    with pytest.raises(UnsupportedError, match=r"write option\): an overwrite cannot be an upsert"):
        session.sql(f"INSERT OVERWRITE db.{name} VALUES (2, 'b')")
    assert _rows(spark, _table(session, name)) == [(1, "a")]


def test_upsert_table_without_identifier_fields_is_refused(session: SqlSession, spark: SparkSession) -> None:
    name = f"up_{next(_N)}"
    session.sql(f"CREATE TABLE db.{name} (id INT, data STRING) USING iceberg "
                "TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='true')")
    with pytest.raises(ValidationError, match=rf"Upsert into table .*db.{name} .*: the table has no identifier fields"):
        session.sql(f"INSERT INTO db.{name} VALUES (1, 'a')")
    with pytest.raises(ValidationError, match="no identifier fields"):
        _table(session, name).append(pa.table({"id": pa.array([1], pa.int32()), "data": ["a"]}))
    assert _table(session, name).current_snapshot() is None


def test_upsert_table_of_format_v1_is_refused(session: SqlSession) -> None:
    name = _new_table(session, fmt=1)
    with pytest.raises(ValidationError, match="format v1, which has no delete files"):
        session.sql(f"INSERT INTO db.{name} VALUES (1, 'a')")


def test_format_iceberg_save_of_a_location_upserts(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    # By location, as by name, save goes to Floe's native writer, which upserts (the Python data source,
    # which could not, is left for sessions that are not Floe-aware).
    location = _lake_table(spark, lake).location()
    for batch in ([(9, "z"), (8, "y")], [(9, "x")]):
        _frame(spark, batch).write.format("iceberg").mode("append").save(location)
    rows = spark.read.format("iceberg").load(location).orderBy("id").collect()
    assert [(r.id, r.data) for r in rows] == [(8, "y"), (9, "x")]


@pytest.mark.parametrize("ddl, message", [
    ("CREATE TABLE db.{n} (id INT, c INT DEFAULT 5) USING iceberg TBLPROPERTIES ('format-version'='2')",
     r"column 'c': column DEFAULT values need format version 3"),
    ("CREATE TABLE db.{n} (id INT, v VARIANT) USING iceberg TBLPROPERTIES ('format-version'='2')",
     r"Invalid type for v: variant is not supported until v3 \(table is v2\)"),
    ("CREATE TABLE db.{n} (id INT UNIQUE, data STRING) USING iceberg", r"Column 'id': UNIQUE cannot be enforced"),
    ("CREATE TABLE db.{n} (id INT, PRIMARY KEY (id) ENFORCED) USING iceberg", r"Syntax error .* ENFORCED"),
    ("CREATE TABLE db.{n} (id INT CHECK (id > 0)) USING iceberg", r"Column 'id': constraint .* is not supported"),
    ("CREATE TABLE db.{n} (id INT, PRIMARY KEY (nope) NOT ENFORCED) USING iceberg",
     r"PRIMARY KEY column 'nope' is not a column"),
])
def test_create_table_refuses_what_it_would_drop(session: SqlSession, ddl: str, message: str) -> None:
    name = f"bad_{next(_N)}"
    with pytest.raises((UnsupportedError, ValidationError), match=message):
        session.sql(ddl.format(n=name))
    assert not session.sql(f"SHOW TABLES IN db LIKE '{name}'")[-1].rows


def test_alter_table_refuses_column_defaults_below_v3(session: SqlSession) -> None:
    name = f"d_{next(_N)}"
    session.sql(f"CREATE TABLE db.{name} (id INT) USING iceberg TBLPROPERTIES ('format-version'='2')")
    with pytest.raises(ValidationError, match="DEFAULT 5 on column 'c' .* need format version 3"):
        session.sql(f"ALTER TABLE db.{name} ADD COLUMN c INT DEFAULT 5")
    with pytest.raises(ValidationError, match="DEFAULT 7 on column 'id' .* need format version 3"):
        session.sql(f"ALTER TABLE db.{name} ALTER COLUMN id SET DEFAULT 7")
    assert [f.name for f in _table(session, name).schema().fields] == ["id"]


def test_dataframe_with_a_variant_column_is_refused_below_v3(session: SqlSession, spark: SparkSession) -> None:
    name = f"v_{next(_N)}"
    session.sql(f"CREATE TABLE db.{name} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2')")
    df = spark.sql("SELECT 1L AS id, parse_json('{\"a\": 1}') AS v")
    with pytest.raises(ValidationError, match="variant is not supported until v3"):
        write(_table(session, name), df, options={"mergeSchema": "true"})
    assert [f.name for f in _table(session, name).schema().fields] == ["id"]


def test_iceberg_java_reads_the_seed_story_rows(spark: SparkSession, lake: str, tmp_path: Path, jsql: Jsql) -> None:
    spark.sql(f"INSERT INTO {lake}.db.t VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {lake}.db.t VALUES (1, 'a2'), (1, 'a3')")
    out = jsql.run(["SELECT id, data FROM j.db.t ORDER BY id",
                    "SELECT content, count(*) FROM j.db.t.all_files GROUP BY content ORDER BY content"],
                   Jsql.hadoop_catalog("j", tmp_path / "wh"))
    assert out[0]["rows"] == [[1, "a3"], [2, "b"]]
    # each INSERT: a data file and an equality delete on its keys; the second also a position delete
    assert out[1]["rows"] == [[0, 2], [1, 1], [2, 2]]
