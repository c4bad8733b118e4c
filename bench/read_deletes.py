"""Benchmark: reading a table with a few merge-on-read position deletes, vs the same table before the delete.

Builds (once, cached under /tmp) a format-v2 merge-on-read table of ROWS rows in FILES Parquet files
(written by Floe's SQL ``INSERT``), then deletes DELETES rows with Floe's SQL ``DELETE`` (position delete
files). In one Spark session times, alternating runs, median of RUNS, for ``count(*)`` and an aggregate
over every column:
- parquet: ``spark.read.parquet(<the data files>)`` (deleted rows included: the speed of light);
- before: ``floe.spark.read`` of the snapshot before the delete (no delete files);
- after: ``floe.spark.read`` of the current snapshot (position deletes applied).

- joined (with ``--every``): the same read with the deletes joined instead of applied by a bitmap found by
  file size (how Floe read deletes of more than 4 data files before).

Prints seconds and ratios (after / before: the cost of applying the deletes; 1.0 = free).

    PYTHONPATH=. .venv/bin/python bench/read_deletes.py [--rows 8000000] [--files 4] [--deletes 3] [--runs 5]
    PYTHONPATH=. .venv/bin/python bench/read_deletes.py --files 80 --every 10   # a tenth of the rows, every file
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from read import aggregate  # bench/read.py: the same aggregate over every column (script dir is on sys.path)

import floe.spark
from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.spark.runtime.configure import session
from floe.spark.scan import delete_joins
from floe.sql.engine import SqlSession
from floe.table.table import Table

MOR = "'format-version'='2', 'write.delete.mode'='merge-on-read'"
COLUMNS = "id BIGINT, category STRING, ts TIMESTAMP, amount DOUBLE, qty INT, flag BOOLEAN, day DATE, price DECIMAL(12,2)"


def sql_session(root: Path, spark: SparkSession) -> SqlSession:
    cfg = FloeConfig.load(
        {"spark.sql.session.timeZone": "UTC"},
        environ={"HOME": str(root), "FLOE_HOME": str(root / ".floe")},
        cwd=root,
    )
    return make_session(cfg, spark=spark)


def build(root: Path, spark: SparkSession, rows: int, files: int, deletes: int, every: int) -> tuple[Table, int]:
    """The table after the delete and the snapshot id before it (built once per size)."""
    marker = root / "READY"
    root.mkdir(parents=True, exist_ok=True)
    s = sql_session(root, spark)
    if not marker.exists():
        s.sql("CREATE DATABASE IF NOT EXISTS db")
        s.sql(f"CREATE TABLE db.events ({COLUMNS}) USING iceberg TBLPROPERTIES ({MOR})")
        s.sql(
            f"INSERT INTO db.events SELECT /*+ REPARTITION({files}) */ id, concat('cat-', id % 1000), "
            "timestamp_micros(1600000000000000 + id * 12345), rand(7), cast(id % 100 AS INT), id % 2 = 0, "
            f"date_add(DATE'2019-01-01', cast(id % 1000 AS INT)), cast(id % 100000 AS DECIMAL(12,2)) FROM range({rows})"
        )
        if every:
            s.sql(f"DELETE FROM db.events WHERE id % {every} = 0")
        else:
            doomed = ", ".join(str(k * (rows // deletes) + 1) for k in range(deletes))
            s.sql(f"DELETE FROM db.events WHERE id IN ({doomed})")
        marker.write_text("ok")
    table: Table = s.catalog().load_table(("db", "events"))  # type: ignore[assignment]
    current = table.metadata.current_snapshot()
    assert current is not None and current.parent_snapshot_id is not None
    return table, current.parent_snapshot_id


def joined(spark: SparkSession, table: Table) -> DataFrame:
    """The read with the deletes of more than a few files joined (no bitmap found by file size)."""
    saved = delete_joins.BITMAP_FILES
    delete_joins.BITMAP_FILES = 0
    try:
        return floe.spark.read(spark, table)
    finally:
        delete_joins.BITMAP_FILES = saved


def count(df: DataFrame) -> list[object]:
    return [df.count()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--deletes", type=int, default=3)
    parser.add_argument("--every", type=int, default=0, help="delete every N-th id instead (in every file)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.every:
        args.deletes = -(-args.rows // args.every)

    spark: SparkSession = session(
        {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"},
        app_name="floe-bench-read-deletes",
    )
    spark.sparkContext.setLogLevel("ERROR")
    root = Path(f"/tmp/floe_bench_read_deletes_{args.rows}_{args.files}_{args.deletes}_{args.every}")
    table, before = build(root, spark, args.rows, args.files, args.deletes, args.every)
    files = [t.data_file.file_path for t in table.scan().plan_files()]

    frames: dict[str, Callable[[], DataFrame]] = {
        "parquet": lambda: spark.read.parquet(*files),
        "before": lambda: floe.spark.read(spark, table, snapshot_id=before),
        "after": lambda: floe.spark.read(spark, table),
    }
    if args.every:
        frames["joined"] = lambda: joined(spark, table)
    for measure_name, measure in (("count(*)", count), ("aggregate", aggregate)):
        sides = {name: (lambda f=f, m=measure: m(f())) for name, f in frames.items()}
        for fn in sides.values():  # warm-up: JIT, file cache
            fn()
        times: dict[str, list[float]] = {k: [] for k in sides}
        results: dict[str, list[object]] = {}
        for _ in range(args.runs):
            for name, fn in sides.items():
                t0 = time.perf_counter()
                results[name] = fn()
                times[name].append(time.perf_counter() - t0)
        assert results["before"][0] == args.rows and results["after"][0] == args.rows - args.deletes, results
        if "joined" in results:
            assert all(math.isclose(a, b) if isinstance(a, float) else a == b  # float sums: any order
                       for a, b in zip(results["joined"], results["after"], strict=True)), (results["joined"], results["after"])
        med = {k: statistics.median(v) for k, v in times.items()}
        extra = f"  joined {med['joined']:6.2f}s ({med['joined'] / med['before']:5.2f}x)" if "joined" in med else ""
        print(
            f"{measure_name:10s} parquet {med['parquet']:6.2f}s  before {med['before']:6.2f}s  after {med['after']:6.2f}s"
            f"  after/before {med['after'] / med['before']:5.2f}x  after/parquet {med['after'] / med['parquet']:5.2f}x{extra}"
        )
    spark.stop()


if __name__ == "__main__":
    main()
