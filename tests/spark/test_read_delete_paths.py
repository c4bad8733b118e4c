"""Position deletes on the Spark read path under paths Spark spells differently from the manifests.

The read path compares Spark's ``_metadata.file_path`` with a string computed on the driver
(floe.spark._scan_frames.spark_file_uri) when it can, and decodes the column per row otherwise: both must
find the deleted rows, and the join must broadcast the (few) deletes instead of sorting every data row.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.io.arrow_schema import schema_to_arrow
from floe.spark import _scan_frames
from floe.spark._scan_frames import spark_file_uri
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TRICKY = ["a b.parquet", "p+q.parquet", "x%41y%2B.parquet", "ñ☃𝄞é.parquet", "nb\u00a0em\u2003.parquet",
          "q\"<>^`|#&;=@!$'(),~.parquet"]


def test_spark_file_uri_is_what_spark_reports(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "d ir+%20ü"
    folder.mkdir()
    for name in TRICKY:
        path = str(folder / name)
        pq.write_table(pa.table({"x": [1]}), path)
        reported = spark.read.parquet(path).select(F.col("_metadata.file_path")).collect()[0][0]
        assert spark_file_uri(path) == reported, name
        assert spark_file_uri("file:" + path) == reported, name
    for unsure in ("rel/a.parquet", "//tmp/a.parquet", "/tmp//a.parquet", "/tmp/./a.parquet", "/tmp/c:d.parquet",
                   "/tmp/zero\u200bwidth.parquet", "s3://bucket/a.parquet"):
        assert spark_file_uri(unsure) is None, unsure


@pytest.mark.parametrize("broadcast", [True, False], ids=["broadcast", "spark-read-deletes"])
@pytest.mark.parametrize("odd", ["", "\u200b"], ids=["exact-uri", "decoded-per-row"])
def test_position_deletes_under_tricky_paths(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str, broadcast: bool
) -> None:
    if not broadcast:  # as if the deletes were many: Spark reads the delete files and joins on (file, position)
        monkeypatch.setattr(_scan_frames, "_BROADCAST_DELETE_ROWS", 0)
    wh = tmp_path / f"w h%41+é{odd}"
    wh.mkdir()
    cat = HadoopCatalog("test", warehouse=str(wh))
    cat.create_namespace("db")
    t = cat.create_table("db.t", Schema(NestedField(1, "id", LongType())), properties={"format-version": "2"})
    data_dir = os.path.join(t.location(), "data")
    os.makedirs(data_dir)

    def parquet(name: str, table: pa.Table, content: FileContent = FileContent.DATA) -> DataFile:
        path = os.path.join(data_dir, name)
        pq.write_table(table, path)
        return DataFile(content, path, FileFormat.PARQUET, (), table.num_rows, os.path.getsize(path))

    arrow = schema_to_arrow(t.schema())
    files = [parquet(name, pa.table({"id": [10 * i + j for j in range(4)]}, schema=arrow)) for i, name in enumerate(TRICKY)]
    append = t.new_fast_append()
    for f in files:
        append.append_file(f)
    append.commit()
    pos_schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    # Every other file loses rows; position 1 is deleted in several files (the join must tell them apart).
    doomed = [(files[0].file_path, 1), (files[2].file_path, 1), (files[2].file_path, 3), (files[4].file_path, 0)]
    deletes = parquet("deletes.parquet", pa.table({"file_path": [p for p, _ in doomed], "pos": [n for _, n in doomed]},
                                                  schema=pos_schema), FileContent.POSITION_DELETES)
    cat.load_table("db.t").new_row_delta().add_deletes(deletes).commit()
    t = cat.load_table("db.t")

    expected = sorted({10 * i + j for i in range(len(TRICKY)) for j in range(4)} - {1, 21, 23, 40})
    df = floe.spark.read(spark, t)
    assert sorted(r["id"] for r in df.collect()) == expected
    assert sorted(r["id"] for r in floe.spark.read(spark, t, filter="id >= 20").collect()) == [x for x in expected if x >= 20]
    assert df.count() == len(expected)
    if broadcast:
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan
