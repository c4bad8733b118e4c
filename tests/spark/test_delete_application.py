"""Every read path applies every delete that applies, whatever wrote the table and however it spells paths.

Tables come from Iceberg Java (jsql: merge-on-read position deletes at file and partition granularity,
v3 deletion vectors, paths spelled ``file:/``), from PyIceberg (paths spelled ``file:///``), and from Floe's
own API (equality delete files holding whole rows, without field ids, with null keys, written
unpartitioned before partition evolution, keys renamed and promoted since). Copies of the Java warehouse
are respelled to ``file:///``, bare ``/path`` and into a folder whose name holds ``%``, spaces and ``+``,
and opened by a relative path. The expected rows come from Iceberg Java's own SELECT where Java wrote the
table and from the differential reader (_delete_oracle.py) everywhere; read paths checked: floe.spark.read,
``spark.read.format("iceberg")`` (split across tasks), ``to_arrow()``, Floe SQL (the CLI's path),
merge-on-read DELETE (reads positions before it writes), compaction and metadata-only DELETE.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _delete_files import assert_every_read_path as _assert_every_read_path
from _delete_files import write_equality_delete
from _delete_oracle import reference_rows
from _respell import respelled_copy
from pyspark.sql import SparkSession

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.io.locations import to_local_path
from floe.io.table_folder import FolderTable, PathMapper, open_table_folder
from floe.spark.scan import delete_joins
from floe.spark.scan.table_read import located_folder_table
from floe.spec.manifest import FileContent
from floe.spec.schema import Schema
from floe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType
from floe.table.table import Table
from floe.write.parquet_files import data_file_from_footer

# A partition value for each awkward character class Iceberg Java URL-encodes into paths.
_JAVA_SETUP = [
    "CREATE NAMESPACE c.db",
    ("CREATE TABLE c.db.mor (id BIGINT, cat STRING, v DOUBLE) USING iceberg PARTITIONED BY (cat) TBLPROPERTIES "
     "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
     "'write.parquet.row-group-size-bytes'='4096')"),
    ("INSERT INTO c.db.mor SELECT id, CASE id % 3 WHEN 0 THEN 'a b' WHEN 1 THEN 'x%y' ELSE 'p+q' END, id * 1.5 "
     "FROM range(0, 6000)"),
    "DELETE FROM c.db.mor WHERE id % 7 = 0",
    "UPDATE c.db.mor SET v = -1 WHERE id % 11 = 0",
    ("CREATE TABLE c.db.part_granularity (id BIGINT, cat STRING) USING iceberg PARTITIONED BY (cat) TBLPROPERTIES "
     "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')"),
    "INSERT INTO c.db.part_granularity SELECT id, CAST(id % 2 AS STRING) FROM range(0, 3000)",
    "INSERT INTO c.db.part_granularity SELECT id, CAST(id % 2 AS STRING) FROM range(3000, 6000)",
    "DELETE FROM c.db.part_granularity WHERE id % 5 = 0",
    ("CREATE TABLE c.db.dv (id BIGINT, cat STRING) USING iceberg TBLPROPERTIES "
     "('format-version'='3', 'write.delete.mode'='merge-on-read')"),
    "INSERT INTO c.db.dv SELECT id, CAST(id % 4 AS STRING) FROM range(0, 4000)",
    "DELETE FROM c.db.dv WHERE id % 9 = 0",
    "DELETE FROM c.db.dv WHERE id % 13 = 0",
]
JAVA_TABLES = ("mor", "part_granularity", "dv")


def _folder(table_dir: Path) -> FolderTable:
    return open_table_folder(table_dir)


def _expected(table_dir: Path) -> list[tuple[Any, ...]]:
    ft = _folder(table_dir)
    snapshot = ft.metadata.current_snapshot()
    assert snapshot is not None
    return sorted(reference_rows(ft, snapshot, ft.metadata.schema()), key=repr)


@pytest.fixture(scope="module")
def java_warehouse(jsql: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[Any]]]:
    """A Hadoop warehouse written by Iceberg Java, and Java's own count and sum(id) of each table."""
    wh = tmp_path_factory.mktemp("java") / "wh"
    checks = [f"SELECT count(*), sum(id) FROM c.db.{t}" for t in JAVA_TABLES]
    results = jsql.run([*_JAVA_SETUP, *checks], jsql.hadoop_catalog("c", wh))
    return wh, {t: r["rows"][0] for t, r in zip(JAVA_TABLES, results[-len(JAVA_TABLES) :])}


@pytest.mark.parametrize("table_name", JAVA_TABLES)
def test_java_written_deletes_read_right_on_every_path(
    spark: SparkSession, java_warehouse: tuple[Path, dict[str, list[Any]]], table_name: str
) -> None:
    wh, java = java_warehouse
    table_dir = wh / "db" / table_name
    expected = _expected(table_dir)
    assert [len(expected), sum(r[0] for r in expected)] == java[table_name]  # the oracle agrees with Java
    table = HadoopCatalog("c", warehouse=str(wh)).load_table(f"db.{table_name}")
    _assert_every_read_path(spark, table, str(table_dir), expected)


@pytest.mark.parametrize("style", ["file:///", "bare", "percent-folder"])
def test_respelled_copies_read_right_on_every_path(
    spark: SparkSession, java_warehouse: tuple[Path, dict[str, list[Any]]], tmp_path: Path, style: str
) -> None:
    wh, java = java_warehouse
    dst = tmp_path / ("w%20h x+y%2B" if style == "percent-folder" else "copy")
    copy = respelled_copy(wh, dst, "file:/" if style == "percent-folder" else style)
    for name in JAVA_TABLES:
        table_dir = copy / "db" / name
        expected = _expected(table_dir)
        assert [len(expected), sum(r[0] for r in expected)] == java[name], name
        table = HadoopCatalog("c", warehouse=str(copy)).load_table(f"db.{name}")
        _assert_every_read_path(spark, table, str(table_dir), expected)


def test_table_opened_by_relative_path_applies_deletes(
    spark: SparkSession, java_warehouse: tuple[Path, dict[str, list[Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh, java = java_warehouse
    respelled_copy(wh, tmp_path / "moved", "file:///")
    monkeypatch.chdir(tmp_path)
    for relative in ("moved/db/mor", "./moved/db/../db/mor"):
        ft = open_table_folder(relative)
        table = located_folder_table(ft)
        got = floe.spark.read(spark, table).toArrow()
        assert [got.num_rows, sum(got.column("id").to_pylist())] == java["mor"], relative
        local = table.scan().to_arrow()
        assert [local.num_rows, sum(local.column("id").to_pylist())] == java["mor"], relative


# -- Floe SQL on a respelled copy: the CLI's read, merge-on-read DELETE, compaction, metadata-only DELETE ----
@pytest.fixture
def sql_on_copy(
    spark: SparkSession, java_warehouse: tuple[Path, dict[str, list[Any]]], tmp_path: Path
) -> Iterator[tuple[Any, Path]]:
    wh, _ = java_warehouse
    copy = respelled_copy(wh, tmp_path / "sql copy", "file:///")
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.catalog.c": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.c.type": "hadoop",
        "spark.sql.catalog.c.warehouse": f"file://{copy}",
    }
    cfg = FloeConfig.load(conf, environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")}, cwd=tmp_path)
    yield make_session(cfg, spark=spark), copy


def _sql_ids(session: Any, statement: str) -> list[int]:
    return sorted(r[0] for r in session.sql(statement)[-1].rows)


def test_sql_reads_and_row_level_changes_apply_existing_deletes(sql_on_copy: tuple[Any, Path], spark: SparkSession) -> None:
    session, copy = sql_on_copy
    table_dir = copy / "db" / "mor"
    before = sorted(r[0] for r in _expected(table_dir))
    assert _sql_ids(session, "SELECT id FROM c.db.mor") == before
    # Merge-on-read DELETE reads row positions (deletes already applied) and adds position deletes.
    session.sql("DELETE FROM c.db.mor WHERE id % 5 = 0")
    after_delete = [i for i in before if i % 5 != 0]
    assert sorted(r[0] for r in _expected(table_dir)) == after_delete
    assert _sql_ids(session, "SELECT id FROM c.db.mor") == after_delete
    # Metadata-only: the whole 'a b' partition goes, files with deletes included.
    session.sql("DELETE FROM c.db.mor WHERE cat = 'a b'")
    after_partition = [i for i in after_delete if i % 3 != 0]
    assert _sql_ids(session, "SELECT id FROM c.db.mor") == after_partition
    # Compaction applies the deletes it rewrites over.
    session.sql("CALL c.system.rewrite_data_files(table => 'db.mor', options => map('min-input-files', '1'))")
    assert _sql_ids(session, "SELECT id FROM c.db.mor") == after_partition
    assert sorted(r[0] for r in _expected(table_dir)) == after_partition


def test_java_reads_what_floe_changed_on_a_respelled_copy(
    sql_on_copy: tuple[Any, Path], jsql: Any
) -> None:
    session, copy = sql_on_copy
    session.sql("DELETE FROM c.db.part_granularity WHERE id % 3 = 0")
    expected = sorted(r[0] for r in _expected(copy / "db" / "part_granularity"))
    out = jsql.run(["SELECT id FROM c.db.part_granularity ORDER BY id"], jsql.hadoop_catalog("c", copy))
    assert [r[0] for r in out[0]["rows"]] == expected


# -- equality deletes written by Floe's API ------------------------------------------------------------------
_SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "k", IntegerType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "p", StringType()),
)
# Both names of field 2, so files written before the rename (and files without ids) map by name.
_MAPPING = '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["k", "kk"]}, ' \
           '{"field-id": 3, "names": ["name"]}, {"field-id": 4, "names": ["p"]}]'


def _write_delete(table: Table, name: str, rows: pa.Table, *, equality_ids: tuple[int, ...], partition: tuple[Any, ...],
                  spec_id: int, with_ids: bool = True, schema: Schema = _SCHEMA) -> None:
    write_equality_delete(table, name, rows, schema=schema, equality_ids=equality_ids, partition=partition,
                          spec_id=spec_id, with_ids=with_ids)


def _data(ids: list[int | None], ks: list[int | None], p: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(ks, pa.int32()),
                     "name": [f"n{i}" for i in ids], "p": [p] * len(ids)})


def test_equality_deletes_match_exactly_their_key_columns(spark: SparkSession, tmp_path: Path) -> None:
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.eq", _SCHEMA, properties={"format-version": "2", "schema.name-mapping.default": _MAPPING})
    t.append(_data([1, 2, 3, None], [10, 20, 30, 40], "a"))  # spec 0: unpartitioned
    t = cat.load_table("db.eq")
    t.update_spec().add_field("p").commit()
    t = cat.load_table("db.eq")
    t.append(_data([4, 5, 6], [10, 50, None], "a"))
    t.append(_data([7, 8], [20, 60], "b"))
    t = cat.load_table("db.eq")
    spec1 = t.metadata.default_spec_id
    # Whole rows, key = id only: other columns differ from the data rows and must not matter; null matches null.
    whole = pa.table({"id": pa.array([2, None, 5], pa.int64()), "k": pa.array([999, 999, 999], pa.int32()),
                      "name": ["other", "other", "other"], "p": ["zz", "zz", "zz"]})
    _write_delete(t, "eq-whole-rows-unpartitioned.parquet", whole, equality_ids=(1,), partition=(), spec_id=0)
    t = cat.load_table("db.eq")
    # Partitioned (p = 'b'), without field ids, key = k: deletes k=20 in partition b only.
    _write_delete(t, "eq-no-ids.parquet", pa.table({"k": pa.array([20, 10], pa.int32())}), equality_ids=(2,),
                  partition=("b",), spec_id=spec1, with_ids=False)
    t = cat.load_table("db.eq")
    # Rows added after the deletes (larger sequence number) with deleted keys stay.
    t.append(_data([2, 9], [20, 10], "b"))
    t = cat.load_table("db.eq")
    # The key column is renamed and promoted after its deletes were written.
    t.update_schema().rename_column("k", "kk").commit()
    t = cat.load_table("db.eq")
    t.update_schema().update_column("kk", LongType()).commit()
    t = cat.load_table("db.eq")

    # The unpartitioned id deletes (2, null, 5) reach every partition written before them; the k deletes
    # (20, 10) only partition b of spec 1 (7 goes; 1 and 4 have k=10 elsewhere); the last append survives.
    expected_ids = [1, 3, 4, 6, 8, 2, 9]
    ft = FolderTable(root=Path(t.location()), metadata_file=Path(t.metadata_location or ""), metadata=t.metadata,
                     paths=PathMapper(t.metadata.location, Path(t.location())))
    expected = sorted(reference_rows(ft, t.metadata.current_snapshot(), t.schema()), key=repr)  # type: ignore[arg-type]
    assert sorted(r[0] for r in expected) == sorted(expected_ids)
    _assert_every_read_path(spark, t, t.location(), expected)


def test_pyiceberg_written_table_file_uris_with_floe_deletes(spark: SparkSession, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    wh = tmp_path / "py wh"
    wh.mkdir()
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    pycat = SqlCatalog("py", uri=uri, warehouse=wh.as_uri())
    pycat.create_namespace("db")
    arrow = pa.table({"id": pa.array(range(500), pa.int64()), "g": pa.array([i % 4 for i in range(500)], pa.int32())})
    pt = pycat.create_table("db.t", arrow.schema, properties={"format-version": "2"})
    pt.append(arrow)
    pt.append(pa.table({"id": pa.array(range(500, 700), pa.int64()), "g": pa.array([1] * 200, pa.int32())}))
    assert next(iter(pt.inspect.files().column("file_path").to_pylist())).startswith("file:///")

    conf = {"spark.sql.session.timeZone": "UTC", "spark.sql.catalog.py": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.py.type": "jdbc", "spark.sql.catalog.py.uri": uri, "spark.sql.catalog.py.warehouse": wh.as_uri()}
    cfg = FloeConfig.load(conf, environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")}, cwd=tmp_path)
    session = make_session(cfg, spark=spark)
    session.sql("ALTER TABLE py.db.t SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    session.sql("DELETE FROM py.db.t WHERE id % 6 = 0")
    t = session.catalog("py").load_table("db.t")
    # Whole-row equality deletes on g, written after the position deletes, partition-less (the spec is).
    _write_delete(t, "eq.parquet", pa.table({"id": pa.array([-1], pa.int64()), "g": pa.array([3], pa.int32())}),
                  equality_ids=(2,), partition=(), spec_id=0, schema=t.schema())
    t = session.catalog("py").load_table("db.t")
    expected_ids = sorted(i for i in range(700) if i % 6 != 0 and not (i < 500 and i % 4 == 3))
    assert sorted(r[0] for r in session.sql("SELECT id FROM py.db.t")[-1].rows) == expected_ids
    got = floe.spark.read(spark, t).toArrow()
    assert sorted(got.column("id").to_pylist()) == expected_ids
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == expected_ids
    _assert_every_read_path(spark, t, t.location(), sorted(((i, i % 4 if i < 500 else 1)
                                                              for i in expected_ids), key=repr))


def test_equality_delete_nan_key_matches_nan_and_signed_zero(spark: SparkSession, tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "x", DoubleType()))
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.nan", schema, properties={"format-version": "2"})
    nan = float("nan")
    t.append(pa.table({"id": pa.array(range(6), pa.int64()), "x": pa.array([nan, -0.0, 0.0, 1.0, None, 2.0], pa.float64())}))
    t = cat.load_table("db.nan")
    _write_delete(t, "eq-nan.parquet", pa.table({"x": pa.array([nan, 0.0], pa.float64())}), equality_ids=(2,),
                  partition=(), spec_id=0, schema=schema)
    t = cat.load_table("db.nan")
    # Iceberg Java (and Spark's join) match NaN to NaN and -0.0 to 0.0.
    _assert_every_read_path(spark, t, t.location(), sorted([(3, 1.0), (4, None), (5, 2.0)], key=repr))


@pytest.mark.parametrize("spark_reads_deletes", [False, True], ids=["driver-read", "spark-read"])
def test_position_delete_files_without_ids_or_with_binary_paths(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark_reads_deletes: bool
) -> None:
    if spark_reads_deletes:
        monkeypatch.setattr(delete_joins, "DRIVER_DELETE_ROWS", 0)
        monkeypatch.setattr(delete_joins, "BITMAP_DELETE_ROWS", 0)
    schema = Schema(NestedField(1, "id", LongType()))
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.p", schema, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array(range(20), pa.int64())}))
    t = cat.load_table("db.p")
    data_path = next(iter(t.scan().plan_files())).data_file.file_path
    folder = Path(to_local_path(t.location())) / "data"
    for name, table in {
        "no-ids": pa.table({"file_path": [data_path, data_path], "pos": pa.array([1, 2], pa.int64())}),
        "binary-path": pa.table({"file_path": pa.array([data_path.encode()], pa.binary()), "pos": pa.array([5], pa.int32())}),
    }.items():
        path = folder / f"{name}-deletes.parquet"
        pq.write_table(table, path)
        f = data_file_from_footer(pq.read_metadata(path), location=str(path), file_size=path.stat().st_size,
                                  schema=schema, properties={}, partition=(), spec_id=0)
        t.new_row_delta().add_deletes(f.with_changes(content=FileContent.POSITION_DELETES)).commit()
        t = cat.load_table("db.p")
    _assert_every_read_path(spark, t, t.location(), [(i,) for i in sorted(set(range(20)) - {1, 2, 5}, key=repr)])
