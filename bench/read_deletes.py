"""Benchmark: reading a table with a few merge-on-read position deletes, vs the same table before the delete.

Builds (once, cached under /tmp) a format-v2 merge-on-read table of ROWS rows in FILES Parquet files
(written by Floe's SQL ``INSERT``), then deletes DELETES rows with Floe's SQL ``DELETE`` (position delete
files). In one Spark session times, alternating runs, median of RUNS, for ``count(*)`` and an aggregate
over every column:
- parquet: ``spark.read.parquet(<the data files>)`` (deleted rows included: the speed of light);
- before: ``floe.spark.read`` of the snapshot before the delete (no delete files);
- after: ``floe.spark.read`` of the current snapshot (position deletes applied).

Prints seconds and ratios (after / before: the cost of applying the deletes; 1.0 = free).

    PYTHONPATH=. .venv/bin/python bench/read_deletes.py [--rows 8000000] [--files 4] [--deletes 3] [--runs 5]
"""

from __future__ import annotations

import argparse
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


def build(root: Path, spark: SparkSession, rows: int, files: int, deletes: int) -> tuple[Table, int]:
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
        doomed = ", ".join(str(k * (rows // deletes) + 1) for k in range(deletes))
        s.sql(f"DELETE FROM db.events WHERE id IN ({doomed})")
        marker.write_text("ok")
    table: Table = s.catalog().load_table(("db", "events"))  # type: ignore[assignment]
    current = table.metadata.current_snapshot()
    assert current is not None and current.parent_snapshot_id is not None
    return table, current.parent_snapshot_id


def count(df: DataFrame) -> list[object]:
    return [df.count()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--deletes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    spark: SparkSession = session(
        {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"},
        app_name="floe-bench-read-deletes",
    )
    spark.sparkContext.setLogLevel("ERROR")
    root = Path(f"/tmp/floe_bench_read_deletes_{args.rows}_{args.files}_{args.deletes}")
    table, before = build(root, spark, args.rows, args.files, args.deletes)
    files = [t.data_file.file_path for t in table.scan().plan_files()]

    frames: dict[str, Callable[[], DataFrame]] = {
        "parquet": lambda: spark.read.parquet(*files),
        "before": lambda: floe.spark.read(spark, table, snapshot_id=before),
        "after": lambda: floe.spark.read(spark, table),
    }
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
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{measure_name:10s} parquet {med['parquet']:6.2f}s  before {med['before']:6.2f}s  after {med['after']:6.2f}s"
            f"  after/before {med['after'] / med['before']:5.2f}x  after/parquet {med['after'] / med['parquet']:5.2f}x"
        )
    spark.stop()


if __name__ == "__main__":
    main()
