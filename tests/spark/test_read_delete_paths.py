"""Position deletes on the Spark read path under paths Spark spells differently from the manifests.

The read path learns from Spark which ``_metadata.file_path`` each file's rows carry
(floe.spark.scan.file_uris.reported_uris) and joins on it exactly: tricky names, relative and non-normal
locations must all find the deleted rows, and the join must broadcast the (few) deletes instead of
sorting every data row.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _delete_files import jvm_helper_filters
from pyspark.sql import functions as F

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.errors import ReadError
from floe.io.arrow_schema import schema_to_arrow
from floe.io.locations import to_local_path
from floe.spark.scan import delete_joins
from floe.spark.scan.file_uris import file_relation, reported_uris, spark_location
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.table.table import Table

TRICKY = ["a b.parquet", "p+q.parquet", "x%41y%2B.parquet", "ñ☃𝄞é.parquet", "nb\u00a0em\u2003.parquet",
          "q\"<>^`|#&;=@!$'(),~.parquet"]


def test_reported_uris_are_what_rows_carry(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "d ir+%20ü"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    spellings = []
    for name in TRICKY:
        pq.write_table(pa.table({"x": [1]}), str(folder / name))
        spellings += [str(folder / name), "file:" + str(folder / name), "file://" + str(folder / name),
                      f"d ir+%20ü/{name}", f"./d ir+%20ü/../d ir+%20ü//{name}"]
    relation = spark.read.parquet(*[spark_location(x) for x in spellings])
    uris = reported_uris(relation, spellings, table_name="t")
    carried = {r[0] for r in relation.select(F.col("_metadata.file_path")).collect()}
    assert set(uris.values()) == carried
    for name in TRICKY:
        assert len({uris[x] for x in spellings if x.endswith(name)}) == 1, name


@pytest.mark.parametrize("count", [3, 80], ids=["few", "many-paths-cross-py4j-as-one-string"])
def test_file_relation_reads_every_file_and_reports_its_uri(spark: SparkSession, tmp_path: Path, count: int) -> None:
    folder = tmp_path / "d ir+%20ü"
    folder.mkdir()
    locations = []
    for k in range(count):
        name = f"{k}-{TRICKY[k % len(TRICKY)]}"
        pq.write_table(pa.table({"x": [k]}), str(folder / name))
        locations.append(str(folder / name) if k % 2 else "file://" + str(folder / name))
    relation = file_relation(spark, "parquet", "x long", locations)
    uris = reported_uris(relation, locations, table_name="t")
    rows = relation.select("x", F.col("_metadata.file_path")).collect()
    assert sorted(r[0] for r in rows) == list(range(count))
    assert {r[0]: r[1] for r in rows} == {k: uris[loc] for k, loc in enumerate(locations)}


def test_reported_uris_refuse_a_file_spark_does_not_read(spark: SparkSession, tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), str(tmp_path / "a.parquet"))
    relation = spark.read.parquet(str(tmp_path / "a.parquet"))
    with pytest.raises(ReadError, match="b.parquet"):
        reported_uris(relation, [str(tmp_path / "b.parquet")], table_name="t")


def _table_with_position_deletes(cat: HadoopCatalog, names: list[str]) -> tuple[Table, list[int]]:
    """Table db.t of one data file per name (ids 10 * i + j, 4 rows each) and a position delete file
    deleting rows of several of them; and the ids left."""
    cat.create_namespace("db")
    t = cat.create_table("db.t", Schema(NestedField(1, "id", LongType())), properties={"format-version": "2"})
    data_dir = os.path.join(t.location(), "data")
    os.makedirs(to_local_path(data_dir))

    def parquet(name: str, table: pa.Table, content: FileContent = FileContent.DATA) -> DataFile:
        path = os.path.join(data_dir, name)
        pq.write_table(table, to_local_path(path))
        return DataFile(content, path, FileFormat.PARQUET, (), table.num_rows, os.path.getsize(to_local_path(path)))

    arrow = schema_to_arrow(t.schema())
    files = [parquet(name, pa.table({"id": [10 * i + j for j in range(4)]}, schema=arrow)) for i, name in enumerate(names)]
    append = t.new_fast_append()
    for f in files:
        append.append_file(f)
    append.commit()
    pos_schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    # Every other file loses rows; position 1 is deleted in several files (the join must tell them apart).
    doomed = [(files[0].file_path, 1), (files[2].file_path, 1), (files[2].file_path, 3), (files[-1].file_path, 0)]
    deletes = parquet("deletes.parquet", pa.table({"file_path": [p for p, _ in doomed], "pos": [n for _, n in doomed]},
                                                  schema=pos_schema), FileContent.POSITION_DELETES)
    cat.load_table("db.t").new_row_delta().add_deletes(deletes).commit()
    gone = {1, 21, 23, 10 * (len(names) - 1)}
    return cat.load_table("db.t"), sorted({10 * i + j for i in range(len(names)) for j in range(4)} - gone)


@pytest.mark.parametrize("path", [
    "bitmap", "bitmap-too-wide", "driver-read", "spark-read-broadcast", "spark-read-literal-map",
    "spark-read-joined-map", "spark-read-broadcast-by-path", "spark-read-shuffled",
])
@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative-warehouse"])
def test_position_deletes_under_tricky_paths(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool, path: str
) -> None:
    # Deletes of a few files are a bitmap in the plan, unless their positions span too many words for one
    # (then the rows the driver read are joined)...
    if path == "bitmap-too-wide":
        monkeypatch.setattr("floe.spark.scan.position_bitmaps.MAX_BITMAP_WORDS", 0)
    elif path != "bitmap":  # ... or are too many for the driver to read
        monkeypatch.setattr(delete_joins, "BITMAP_DELETE_ROWS", 0)
    if not path.startswith(("bitmap", "driver-read")):  # as if the deletes were more: Spark reads the delete files
        monkeypatch.setattr(delete_joins, "DRIVER_DELETE_ROWS", 0)
    # Rows are keyed by position and their file's number in the plan (few files), else by position and path.
    by_path = path in ("spark-read-broadcast-by-path", "spark-read-shuffled")
    monkeypatch.setattr(delete_joins, "NUMBERED_FILES", 0 if by_path else len(TRICKY))
    if path == "spark-read-shuffled":  # and many: both sides are joined on (file, position) after a shuffle
        monkeypatch.setattr(delete_joins, "BROADCAST_DELETE_ROWS", 0)
    # The delete rows' files are matched to the scan's by a literal IN list (paths spelled alike), a literal
    # map (a few files), or a joined relation (many files)
    if path in ("spark-read-literal-map", "spark-read-joined-map"):
        monkeypatch.setattr(delete_joins, "INLINE_FILES", 0)
    if path == "spark-read-joined-map":
        monkeypatch.setattr("floe.spark.scan.driver_rows.INLINE_ENTRIES", 0)
    wh = tmp_path / "w h%41+é\u200b"
    wh.mkdir()
    monkeypatch.chdir(tmp_path)
    t, expected = _table_with_position_deletes(HadoopCatalog("test", warehouse=wh.name if relative else str(wh)), TRICKY)

    df = floe.spark.read(spark, t)
    assert sorted(r["id"] for r in df.collect()) == expected
    assert sorted(r["id"] for r in floe.spark.read(spark, t, filter="id >= 20").collect()) == [x for x in expected if x >= 20]
    assert df.count() == len(expected)
    plan = df._jdf.queryExecution().executedPlan().toString()
    if path == "bitmap":  # no join on the deletes: a filter reading one array (Floe's JVM helper, else a local relation's)
        assert "HashJoin" not in plan and "SortMergeJoin" not in plan
        assert jvm_helper_filters(plan) or ("BroadcastNestedLoopJoin" in plan and "LocalTableScan [_floe_words" in plan)
    elif path != "spark-read-shuffled":  # (a shuffled join of few rows may become a broadcast at run time)
        assert "BroadcastHashJoin" in plan
        assert "SortMergeJoin" not in plan
        assert ("_floe_drow" in plan) == (not by_path)


def test_position_deletes_of_files_spark_spells_alike_match_by_a_literal_list(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With paths Spark spells as the manifests do (a file: URI warehouse), the delete rows read by Spark
    are kept to the scan's files by a literal IN list in the plan: no relation joined to map them."""
    monkeypatch.setattr(delete_joins, "DRIVER_DELETE_ROWS", 0)
    monkeypatch.setattr(delete_joins, "BITMAP_DELETE_ROWS", 0)
    t, expected = _table_with_position_deletes(HadoopCatalog("test", warehouse=f"file:{tmp_path / 'wh'}"),
                                               ["a.parquet", "b.parquet", "c.parquet"])
    df = floe.spark.read(spark, t)
    assert sorted(r["id"] for r in df.collect()) == expected
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    assert "_floe_orig" not in plan
    assert re.search(r"file_path#\d+ (IN|INSET) ", plan)
