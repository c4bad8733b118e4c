"""The clean-install tier's smoke set (``make test-install``): every path on which Spark's Python workers run
Floe's code, on a local warehouse and on S3 (moto) through Spark's pip-only path.

``make test-install`` runs this module in a venv holding ``pip install .`` and pytest alone, so a runtime
dependency that only the ``test`` extra brings (pandas was one: PySpark's Arrow paths import it in the
workers) fails here. With ``FLOE_EXPECT_INSTALLED=1`` the first test also checks that the driver and the
workers import the installed distribution, not the source tree. The ``smoke_extras`` tests run after the
extras the README names are added to the same venv.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.metadata
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _lakes import Lake, attached_lake
from pyspark.sql import SparkSession

import floe
import floe.spark
from floe.io.fileio import FileIO
from floe.spark.scan.table_read import load_table

pytestmark = [pytest.mark.smoke, pytest.mark.spark]


@pytest.fixture(scope="module", params=["local", "s3"])
def lake(request: pytest.FixtureRequest, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    with attached_lake(request, spark, tmp_path_factory.mktemp("smoke"), request.param) as lake:
        yield lake


def test_driver_and_workers_import_the_installed_floe(spark: SparkSession) -> None:
    def where(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import floe as worker_floe

        for _ in batches:
            yield pa.RecordBatch.from_pylist([{"floe": worker_floe.__file__, "python": sys.executable}])

    workers = {tuple(r) for r in spark.range(2).repartition(2).mapInArrow(where, "floe string, python string").collect()}
    assert workers, "no Python worker ran"
    if os.environ.get("FLOE_EXPECT_INSTALLED") != "1":
        return
    assert importlib.metadata.distribution("floe").version
    prefix = str(Path(sys.prefix).resolve())
    assert str(Path(floe.__file__).resolve()).startswith(prefix), floe.__file__
    for module_file, python in workers:  # not a zip shipped from a source tree
        assert str(Path(module_file).resolve()).startswith(prefix), module_file
        assert Path(python).parent == Path(sys.executable).parent  # this venv's python (both link to one base)


def test_a_clean_install_builds_the_c_extensions() -> None:
    # setup.py marks them optional: an install without a compiler goes on without them, one with a
    # compiler must not silently plan with the slower Python code.
    import shutil

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here")
    from floe.serde import _avro_native, _entries_native
    from floe.spec import _slots_native

    modules: list[Any] = [_avro_native, _entries_native, _slots_native]
    if Path("/usr/include/zlib.h").exists():  # the inflater also needs zlib's headers
        from floe.serde import _inflate_native

        modules.append(_inflate_native)
    if os.environ.get("FLOE_EXPECT_INSTALLED") == "1":
        prefix = str(Path(sys.prefix).resolve())
        for module in modules:
            assert str(Path(module.__file__ or "").resolve()).startswith(prefix), module.__file__


def test_insert_of_every_type_reads_back(lake: Lake) -> None:
    t = f"{lake.name}.db.types"
    lake.sql(f"CREATE TABLE {t} (b boolean, i int, l bigint, f float, d double, dec decimal(12, 3), day date, "
             "ts timestamp, ntz timestamp_ntz, s string, bin binary, arr array<int>, m map<string, bigint>, "
             "st struct<x: int, y: string>) USING iceberg")
    lake.sql(f"INSERT INTO {t} VALUES (true, 1, 2, 1.5, 2.25, 123456.789, DATE '2024-02-29', "
             "TIMESTAMP '2024-02-29 12:34:56.123456', TIMESTAMP_NTZ '2024-02-29 01:02:03', 'héllo', X'00FF', "
             "array(1, NULL, 3), map('k', 7L), named_struct('x', 5, 'y', 'z')), "
             "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    got = lake.spark.table(t).orderBy("i").collect()
    assert got[0].asDict() == dict.fromkeys(got[0].asDict())  # the all-NULL row sorts first
    row = got[1]
    assert (row.b, row.i, row.l, row.f, row.d) == (True, 1, 2, 1.5, 2.25)
    assert row.dec == decimal.Decimal("123456.789")
    assert row.day == dt.date(2024, 2, 29)
    assert row.ts == dt.datetime(2024, 2, 29, 12, 34, 56, 123456)  # the session's time zone is UTC
    assert row.ntz == dt.datetime(2024, 2, 29, 1, 2, 3)
    assert (row.s, bytes(row.bin), row.arr, row.m) == ("héllo", b"\x00\xff", [1, None, 3], {"k": 7})
    assert (row.st.x, row.st.y) == (5, "z")


def test_merge_on_read_delete_over_many_files(lake: Lake) -> None:
    t = f"{lake.name}.db.mor"
    lake.sql(f"CREATE TABLE {t} (id bigint, part int) USING iceberg PARTITIONED BY (part) "  # no shuffle: a file
             "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "  # per task and partition
             "'write.distribution-mode'='none')")
    lake.spark.range(0, 2000, numPartitions=4).selectExpr("id", "cast(id % 6 as int) AS part").writeTo(t).append()
    assert lake.sql(f"SELECT count(*) FROM {t}.data_files")[0][0] >= 12
    lake.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    assert lake.sql(f"SELECT count(*), sum(id) FROM {t}") == [
        (sum(1 for i in range(2000) if i % 7), sum(i for i in range(2000) if i % 7))
    ]
    deletes = lake.sql(f"SELECT file_path FROM {t}.delete_files")
    assert len(deletes) >= 6  # a delete file per partition at least
    assert all(lake.warehouse in str(p) for (p,) in deletes)


def test_changelog_apply_with_equality_and_position_deletes(lake: Lake) -> None:
    t = f"{lake.name}.db.users"
    lake.sql(f"CREATE TABLE {t} (id bigint NOT NULL, name string) USING iceberg TBLPROPERTIES ('format-version'='2')")
    lake.sql(f"ALTER TABLE {t} SET IDENTIFIER FIELDS id")
    lake.sql(f"INSERT INTO {t} VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')")
    changes = lake.spark.createDataFrame(
        [(1, "-U", 1, "ann"), (2, "+U", 1, "anna"), (3, "-D", 2, "bob"), (4, "+I", 4, "dee"), (5, "-D", 4, "dee"),
         (6, "+I", 4, "dora")],
        "seq bigint, op string, id bigint, name string",
    )
    floe.spark.apply_changes(load_table(lake.spark, t), changes, op_column="op", order_by="seq")
    assert sorted(lake.sql(f"SELECT id, name FROM {t}")) == [(1, "anna"), (3, "cy"), (4, "dora")]
    kinds = {int(c) for (c,) in lake.sql(f"SELECT content FROM {t}.delete_files")}  # type: ignore[call-overload]
    assert kinds == {1, 2}  # position deletes (key written twice) and equality deletes (earlier commits)


def test_compute_table_stats_writes_theta_sketches(lake: Lake) -> None:
    t = f"{lake.name}.db.stats"
    lake.sql(f"CREATE TABLE {t} (id bigint, cat string) USING iceberg")
    lake.spark.range(0, 500, numPartitions=2).selectExpr("id", "concat('c', id % 5) AS cat").writeTo(t).append()
    path = str(lake.sql(f"CALL {lake.name}.system.compute_table_stats(table => 'db.stats', columns => array('cat'))")[0][0])
    assert FileIO(lake.io_properties).exists(path)
    table = load_table(lake.spark, t)
    assert [s.statistics_path for s in table.metadata.statistics] == [path]


def test_streaming_micro_batch_commits_once(lake: Lake, tmp_path: Path) -> None:
    t = f"{lake.name}.db.stream"
    lake.sql(f"CREATE TABLE {t} (id bigint, cat string) USING iceberg PARTITIONED BY (cat)")
    feed = tmp_path / "feed"
    lake.spark.range(0, 300, numPartitions=2).selectExpr("id", "concat('c', id % 3) AS cat").write.parquet(str(feed))
    stream = lake.spark.readStream.schema("id bigint, cat string").parquet(str(feed))
    (stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp"))
     .trigger(availableNow=True).toTable(t).awaitTermination())
    assert lake.sql(f"SELECT count(*), sum(id) FROM {t}") == [(300, sum(range(300)))]
    epochs = lake.sql(f"SELECT summary['spark.sql.streaming.epochId'] FROM {t}.snapshots")
    assert epochs == [("0",)]
