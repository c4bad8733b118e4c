"""Benchmark: full scan + aggregate over every column, Floe's readers vs Spark reading the same Parquet files.

Builds (once, cached under /tmp) an unpartitioned Iceberg table of ROWS rows in FILES Parquet files
(written with pyarrow, field ids in the schema; committed with Floe), then in one Spark session times,
alternating runs, median of RUNS:
- baseline: ``spark.read.parquet(<the table's data files>)`` + the aggregate;
- ``floe.spark.read(spark, table)`` + the same aggregate (planning included);
- on the attached session, as an Iceberg-on-Spark program writes it: ``spark.table("bench.db.events")``,
  ``spark.sql("SELECT * FROM bench.db.events")`` and ``spark.read.format("iceberg").load(table)`` (all
  native scans through transparent mode);
- the Python data source itself (transparent mode off) + the same aggregate.

Prints seconds, the throughput ratio baseline_time / time (1.0 = as fast as plain Parquet) and each
path's time over floe.spark.read's (the goal for the transparent paths: within 1.1x).

    PYTHONPATH=. python3 bench/read.py [--rows 4000000] [--files 8] [--runs 5] [--no-datasource]
        [--remote sc://127.0.0.1:15002]   (a Spark Connect server started from the pip install, README)
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import floe.spark
from floe.catalog.hadoop import HadoopCatalog
from floe.io.arrow_schema import schema_to_arrow
from floe.spark.runtime.configure import session
from floe.spark.scan.table_read import load_table
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.schema import Schema
from floe.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "category", StringType()),
    NestedField(3, "ts", TimestampType()),
    NestedField(4, "amount", DoubleType()),
    NestedField(5, "qty", IntegerType()),
    NestedField(6, "flag", BooleanType()),
    NestedField(7, "day", DateType()),
    NestedField(8, "price", DecimalType(12, 2)),
)


def build(root: Path, rows: int, files: int) -> str:
    """Create the table once; returns its metadata location."""
    marker = root / "READY"
    cat = HadoopCatalog("bench", warehouse=str(root))
    if marker.exists():
        return cat.load_table("db.events").metadata_location  # type: ignore[return-value]
    root.mkdir(parents=True, exist_ok=True)
    cat.create_namespace("db")
    t = cat.create_table("db.events", SCHEMA)
    arrow_schema = schema_to_arrow(t.schema())
    rng = np.random.default_rng(7)
    per = rows // files
    append = t.new_fast_append()
    for i in range(files):
        ids = np.arange(i * per, (i + 1) * per, dtype=np.int64)
        data = pa.table(
            {
                "id": ids,
                "category": pa.array([f"cat-{x}" for x in rng.integers(0, 1000, per)]),
                "ts": pa.array(
                    rng.integers(1_600_000_000_000_000, 1_700_000_000_000_000, per), pa.timestamp("us")
                ),
                "amount": rng.random(per),
                "qty": rng.integers(0, 100, per).astype(np.int32),
                "flag": rng.random(per) < 0.5,
                "day": pa.array(rng.integers(18_000, 19_000, per).astype(np.int32), pa.date32()),
                "price": pa.array(rng.integers(0, 10_000_000, per), pa.int64())
                .cast(pa.decimal128(19, 0))
                .cast(pa.decimal128(12, 2)),
            },
            schema=arrow_schema,
        )
        path = os.path.join(t.location(), "data", f"part-{i:05d}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(data, path, row_group_size=1 << 20)
        append.append_file(
            DataFile(FileContent.DATA, path, FileFormat.PARQUET, (), per, os.path.getsize(path))
        )
    append.commit()
    marker.write_text("ok")
    return cat.load_table("db.events").metadata_location  # type: ignore[return-value]


def aggregate(df: DataFrame) -> list[object]:
    row = df.agg(
        F.count(F.lit(1)),
        F.sum("id"),
        F.sum(F.length("category")),
        F.max("ts"),
        F.sum("amount"),
        F.sum("qty"),
        F.sum(F.col("flag").cast("int")),
        F.max("day"),
        F.sum("price"),
    ).collect()[0]
    return list(row)


def timed(fn: Callable[[], list[object]]) -> tuple[float, list[object]]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-datasource", action="store_true")
    parser.add_argument("--remote", help="a Spark Connect server's sc:// URL instead of local[2] (no data source side)")
    args = parser.parse_args()

    location = build(Path(f"/tmp/floe_bench_read_{args.rows}_{args.files}"), args.rows, args.files)
    spark: SparkSession = session(
        {"spark.master": args.remote or "local[2]", "spark.sql.shuffle.partitions": "2"}, app_name="floe-bench-read"
    )
    if args.remote is None:
        spark.sparkContext.setLogLevel("ERROR")
    table = load_table(spark, location)
    files = [t.data_file.file_path for t in table.scan().plan_files()]

    root = Path(f"/tmp/floe_bench_read_{args.rows}_{args.files}")
    spark.conf.set("spark.sql.catalog.bench", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.bench.type", "hadoop")
    spark.conf.set("spark.sql.catalog.bench.warehouse", str(root))
    floe.spark.attach(spark)

    def data_source() -> list[object]:
        spark.conf.set("spark.floe.transparent", "false")
        try:
            return aggregate(spark.read.format("iceberg").load(location))
        finally:
            spark.conf.set("spark.floe.transparent", "true")

    sides: dict[str, Callable[[], list[object]]] = {
        "parquet": lambda: aggregate(spark.read.parquet(*files)),
        "floe.spark.scan.table_read": lambda: aggregate(floe.spark.read(spark, location)),
        "spark.table": lambda: aggregate(spark.table("bench.db.events")),
        "spark.sql": lambda: aggregate(spark.sql("SELECT * FROM bench.db.events")),
        "format(iceberg)": lambda: aggregate(spark.read.format("iceberg").load(location)),
    }
    if not args.no_datasource and args.remote is None:  # the Python data source is not used over Connect
        sides["data source"] = data_source
    for fn in sides.values():  # warm-up: JIT, file cache, Python workers
        fn()
    times: dict[str, list[float]] = {k: [] for k in sides}
    results: dict[str, list[object]] = {}
    for _ in range(args.runs):
        for name, fn in sides.items():
            secs, out = timed(fn)
            times[name].append(secs)
            results[name] = out
    base = statistics.median(times["parquet"])
    floe_read = statistics.median(times["floe.spark.scan.table_read"])
    for name in sides:
        med = statistics.median(times[name])
        same = all(
            math.isclose(a, b, rel_tol=1e-9) if isinstance(a, float) else a == b
            for a, b in zip(results[name], results["parquet"])
        )
        assert same, (name, results[name], results["parquet"])  # float sums differ only by summation order
        print(f"{name:16s} median {med:7.2f}s  ratio parquet/this {base / med:5.2f}x  "
              f"this/floe.spark.read {med / floe_read:5.2f}x")
    spark.stop()


if __name__ == "__main__":
    main()
