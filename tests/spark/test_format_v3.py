"""Format v3 on Spark: column defaults through SQL and DataFrames, and row lineage (``_row_id``,
``_last_updated_sequence_number``) read and kept through row-level changes, against a Python model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

import floe.spark
from floe.io.locations import to_local_path
from floe.io.table_folder import FolderTable, open_table_folder
from floe.spark.scan.table_read import located_folder_table
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.table.table import Table

FIXTURES = Path("/work/shared/fixtures/java-tables")
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text()) if (FIXTURES / "MANIFEST.json").exists() else []


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    return sorted(session.sql(sql)[-1].rows, key=repr)


def load(session: SqlSession, name: str) -> Table:
    return session.catalog().load_table(("db", name))  # type: ignore[attr-defined,no-any-return]


# -- defaults -------------------------------------------------------------------------------------------
def test_defaults_fill_old_rows_and_omitted_columns(session: SqlSession, spark: SparkSession) -> None:
    session.sql("CREATE TABLE d1 (id BIGINT, a INT DEFAULT 7) USING iceberg TBLPROPERTIES ('format-version'='3')")
    session.sql("INSERT INTO d1 (id) VALUES (1)")
    session.sql("INSERT INTO d1 VALUES (2, 20)")
    session.sql("ALTER TABLE d1 ADD COLUMN c INT DEFAULT 5")
    session.sql("ALTER TABLE d1 ADD COLUMN s STRING DEFAULT 'x'")
    session.sql("INSERT INTO d1 (id, a) VALUES (3, 30)")
    session.sql("ALTER TABLE d1 ALTER COLUMN c SET DEFAULT 6")
    session.sql("INSERT INTO d1 (id, s) VALUES (4, 'given')")
    session.sql("ALTER TABLE d1 ALTER COLUMN c DROP DEFAULT")
    df = spark.createDataFrame([(5,)], "id BIGINT")  # a DataFrame write missing a, c and s
    load(session, "d1").append(df)
    session.sql("INSERT INTO d1 VALUES (6, DEFAULT, DEFAULT, DEFAULT)")  # Spark's DEFAULT keyword
    assert rows(session, "SELECT id, a, c, s FROM d1") == [
        (1, 7, 5, "x"),  # written before c and s: their initial-default
        (2, 20, 5, "x"),
        (3, 30, 5, "x"),  # c and s omitted: write-default
        (4, 7, 6, "given"),  # c's write-default changed; its initial-default did not
        (5, 7, None, "x"),  # c's write-default dropped: null
        (6, 7, None, "x"),
    ]
    # a second reader: the Arrow path agrees
    arrow = sorted(load(session, "d1").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["a"], r["c"], r["s"]) for r in arrow] == rows(session, "SELECT id, a, c, s FROM d1")
    text = session.sql("SHOW CREATE TABLE d1")[-1].rows[0][0]
    assert "a INT DEFAULT 7" in text and "s STRING DEFAULT 'x'" in text and "c INT," in text


def _fixture(name: str) -> FolderTable:
    entry = next((e for e in MANIFEST if e["folder"] == name), None)
    assert entry is not None, f"shared Java fixture {name} is not in ../shared/fixtures/java-tables"
    return open_table_folder(FIXTURES / name / entry["table_root"], prefixes=list(entry["ref_prefixes"]))


def test_defaults_java_fixture_reads_initial_defaults(spark: SparkSession) -> None:
    t = _fixture("impala__test_complex_default")
    field = t.metadata.schema().find_field("ts_tz")
    assert field.initial_default == 1705314645123456  # 2024-01-15T10:30:45.123456+00:00
    spark_rows = sorted((r["i"], r["ts_tz"].timestamp()) for r in floe.spark.read(spark, t).collect())
    arrow = located_folder_table(t).scan().to_arrow().to_pylist()
    arrow_rows = sorted((r["i"], r["ts_tz"].timestamp()) for r in arrow)
    assert spark_rows == arrow_rows and spark_rows
    assert any(ts == 1705314645.123456 for _, ts in spark_rows)  # rows written before the column: its default


# -- row lineage ----------------------------------------------------------------------------------------
def lineage(session: SqlSession, name: str) -> dict[int, tuple[int, int]]:
    """id -> (_row_id, _last_updated_sequence_number)."""
    got = session.sql(f"SELECT id, _row_id, _last_updated_sequence_number FROM {name}")[-1].rows
    return {r[0]: (r[1], r[2]) for r in got}


def test_lineage_inherited_on_append(session: SqlSession) -> None:
    session.sql("CREATE TABLE l1 (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='3')")
    session.sql("INSERT INTO l1 SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a'), (2, 'b'), (3, 'c') AS x(id, v)")
    session.sql("INSERT INTO l1 VALUES (4, 'd')")
    got = lineage(session, "l1")
    assert sorted(got[i][0] for i in (1, 2, 3)) == [0, 1, 2]
    assert got[4] == (3, 2)
    assert {got[i][1] for i in (1, 2, 3)} == {1}
    assert load(session, "l1").metadata.next_row_id == 4
    session.sql("CREATE TABLE l2 (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='2')")
    session.sql("INSERT INTO l2 VALUES (1)")
    assert lineage(session, "l2") == {1: (None, None)}


def test_lineage_java_fixture_compaction_kept_row_ids(spark: SparkSession) -> None:
    """Java's compaction ('replace') wrote each row's id and sequence number into the new file: Floe reads
    the stored values after it and the same ids, inherited, before it."""
    t = _fixture("impala__iceberg_v3_row_lineage_orc")
    snaps = sorted(t.metadata.snapshots, key=lambda s: s.sequence_number)
    assert t.metadata.current_snapshot_id == snaps[-1].snapshot_id
    cols = ["_row_id", "_last_updated_sequence_number"]

    def ids(snapshot_id: int) -> dict[tuple[object, ...], tuple[int, int]]:
        df = floe.spark.read(spark, t, snapshot_id=snapshot_id, metadata_columns=cols)
        data = [c for c in df.columns if c not in cols]
        return {tuple(r[c] for c in data): (r["_row_id"], r["_last_updated_sequence_number"]) for r in df.collect()}

    before, after = ids(snaps[-2].snapshot_id), ids(snaps[-1].snapshot_id)
    assert before and before == after
    assert sorted(v[0] for v in after.values()) == list(range(len(after)))


@pytest.mark.slow  # ~70 s on 2 cores: eleven commits, each read back
@pytest.mark.parametrize("columns", ["", ", tags ARRAY<INT>"], ids=["spark-writer", "arrow-writer"])
def test_lineage_row_ids_tracked_through_ten_operations(session: SqlSession, spark: SparkSession, columns: str) -> None:
    """Every row's (_row_id, _last_updated_sequence_number) against a Python model through copy-on-write and
    merge-on-read UPDATE / DELETE / MERGE, appends and compaction: a surviving row keeps its id; its sequence
    number changes only when the row changes; new rows get ids from next-row-id. A list column sends the
    rewrites through the Arrow task writer instead of Spark's."""
    name = "l3" if not columns else "l3_arrow"
    extra, extra_column = (", array(1)", ", tags") if columns else ("", "")  # the list column in every new row
    session.sql(f"DROP TABLE IF EXISTS {name}")
    session.sql(f"CREATE TABLE {name} (id BIGINT, v STRING{columns}) USING iceberg TBLPROPERTIES ('format-version'='3')")
    model: dict[int, tuple[int, int]] = {}

    def seq() -> int:
        return load(session, name).metadata.last_sequence_number

    def check(changed: set[int], new: set[int], next_before: int) -> None:
        got = lineage(session, name)
        now = seq()
        for i in new:  # new ids come from the range this commit claimed
            assert next_before <= got[i][0] < load(session, name).metadata.next_row_id and got[i][1] == now, (i, got[i])
            model[i] = got[i]
        for i in changed:
            model[i] = (model[i][0], now)
        assert got == model
        assert len({v[0] for v in got.values()}) == len(got)  # ids stay unique
        # Without Spark: the Arrow read inherits the same values; floe.spark.read names them as columns too.
        scan = load(session, name).scan().select("id", "_row_id", "_last_updated_sequence_number")
        assert {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in scan.to_arrow().to_pylist()} == model
        read = floe.spark.read(spark, load(session, name), columns=["id", "_row_id", "_last_updated_sequence_number"])
        assert {r[0]: (r[1], r[2]) for r in read.collect()} == model

    def step(sql: str, changed: set[int] = frozenset(), new: set[int] = frozenset(), gone: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        before = load(session, name).metadata.next_row_id
        session.sql(sql)
        for i in gone:
            model.pop(i)
        check(set(changed), set(new), before)

    step(f"INSERT INTO {name} SELECT /*+ REPARTITION(1) */ id, v{extra} FROM VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e'),(6,'f') AS x(id, v)",
         new={1, 2, 3, 4, 5, 6})
    assert sorted(v[0] for v in model.values()) == [0, 1, 2, 3, 4, 5]
    step(f"INSERT INTO {name} SELECT id, v{extra} FROM VALUES (7, 'g'), (8, 'h') AS x(id, v)", new={7, 8})
    step(f"UPDATE {name} SET v = 'u' WHERE id = 2", changed={2})  # copy-on-write: the file's other rows keep theirs
    step(f"DELETE FROM {name} WHERE id = 3", gone={3})
    step(f"MERGE INTO {name} t USING (SELECT 4L AS id, 'm' AS v UNION ALL SELECT 100L, 'n') s ON t.id = s.id "
         f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v{extra_column}) VALUES (s.id, s.v{extra})", changed={4}, new={100})
    session.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read', "
                "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')")
    step(f"UPDATE {name} SET v = 'r' WHERE id = 5", changed={5})  # merge-on-read: a deletion vector + the row anew
    step(f"DELETE FROM {name} WHERE id = 1", gone={1})
    step(f"MERGE INTO {name} t USING (SELECT 7L AS id, 'x' AS v UNION ALL SELECT 101L, 'y') s ON t.id = s.id "
         f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v{extra_column}) VALUES (s.id, s.v{extra})", changed={7}, new={101})
    step(f"MERGE INTO {name} t USING (SELECT 8L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE", gone={8})
    step(f"CALL floe.system.rewrite_data_files(table => 'db.{name}', options => map('rewrite-all', 'true'))")
    table = load(session, name)
    assert table.current_snapshot().operation.value == "replace"  # type: ignore[union-attr]
    assert sorted(rows(session, f"SELECT id, v FROM {name}")) == [(2, "u"), (4, "m"), (5, "r"), (6, "f"), (7, "x"), (100, "n"), (101, "y")]
    step(f"UPDATE {name} SET v = 'z' WHERE id = 6", changed={6})  # after compaction: ids stored in the files


# -- deletes on v3 --------------------------------------------------------------------------------------
def _delete_kinds(session: SqlSession, name: str) -> list[tuple[object, ...]]:
    return rows(session, f"SELECT content, file_format FROM floe.db.{name}.delete_files")


def test_v2_position_deletes_become_deletion_vectors_after_upgrade(session: SqlSession) -> None:
    session.sql("CREATE TABLE u1 (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2', "
                "'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')")
    session.sql("INSERT INTO u1 SELECT /*+ REPARTITION(1) */ * FROM VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d') AS x(id, v)")
    session.sql("INSERT INTO u1 SELECT /*+ REPARTITION(1) */ * FROM VALUES (5,'e'),(6,'f') AS x(id, v)")
    session.sql("DELETE FROM u1 WHERE id IN (1, 5)")  # one partition-scoped position delete file, two data files
    assert _delete_kinds(session, "u1") == [(1, "PARQUET")]
    session.sql("ALTER TABLE u1 SET TBLPROPERTIES ('format-version'='3')")
    t = load(session, "u1")
    assert t.format_version == 3 and t.metadata.next_row_id == 0
    session.sql("DELETE FROM u1 WHERE id = 2")  # the changed file's vector takes the older deletes in
    assert sorted(_delete_kinds(session, "u1")) == [(1, "PARQUET"), (1, "PUFFIN")]
    assert rows(session, "SELECT id FROM u1") == [(3,), (4,), (6,)]
    out = session.sql("CALL floe.system.rewrite_position_delete_files(table => 'db.u1')")[-1].rows
    assert out[0][0] == 1 and out[0][1] >= 1  # the Parquet file rewritten as vectors of the data files it names
    assert sorted(_delete_kinds(session, "u1")) == [(1, "PUFFIN"), (1, "PUFFIN")]
    assert rows(session, "SELECT id FROM u1") == [(3,), (4,), (6,)]
    vectors = rows(session, "SELECT referenced_data_file, record_count FROM floe.db.u1.delete_files")
    assert sorted(v[1] for v in vectors) == [1, 2]  # {1, 2} in the first file, {5} in the second


# -- variant --------------------------------------------------------------------------------------------
def test_variant_round_trips_through_sql_and_dataframes(session: SqlSession, spark: SparkSession) -> None:
    """Unshredded variants: Spark's own Parquet writer stores each value as the spec's variant group (binary
    ``metadata`` and ``value``); Floe tags the group with the column's field id and reads it back as VARIANT."""
    session.sql("CREATE TABLE va (id BIGINT, v VARIANT) USING iceberg TBLPROPERTIES ('format-version'='3')")
    session.sql("""INSERT INTO va SELECT 1, parse_json('{"a": 1, "b": "x"}')""")
    session.sql("INSERT INTO va VALUES (2, parse_json('[1, 2]'))")
    load(session, "va").append(spark.sql("""SELECT 3L AS id, parse_json('{"a": 3}') AS v"""))
    got = rows(session, "SELECT id, variant_get(v, '$.a', 'int'), variant_get(v, '$.b', 'string'), to_json(v) FROM va")
    assert got == [(1, 1, "x", '{"a":1,"b":"x"}'), (2, None, None, "[1,2]"), (3, 3, None, '{"a":3}')]
    assert str(floe.spark.read(spark, load(session, "va")).schema["v"].dataType) == "VariantType()"
    for f in load(session, "va").scan().plan_files():
        parquet = pq.ParquetFile(to_local_path(f.data_file.file_path))
        assert {parquet.schema.column(i).path for i in range(len(parquet.schema))} >= {"v.metadata", "v.value"}
        assert parquet.schema_arrow.field("v").metadata[b"PARQUET:field_id"] == b"2"
    session.sql("UPDATE va SET v = parse_json('{\"a\": 9}') WHERE id = 2")
    assert rows(session, "SELECT id, variant_get(v, '$.a', 'int') FROM va") == [(1, 1), (2, 9), (3, 3)]
