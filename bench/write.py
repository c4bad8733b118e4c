"""Benchmark: appending a DataFrame to Iceberg tables vs Spark's native ``df.write.parquet``.

Rows: id long, ts timestamp, category string, value double, from one cached DataFrame. Cases:
unpartitioned, and partitioned by day(ts) + bucket(16, id). Paths: ``table.append(df)`` (Spark's native
Parquet writer + driver-side metadata, floe.spark.write) and ``df.write.format("iceberg")`` (the Python
data source, floe.spark.datasource_write). Baseline: ``df.write.parquet`` of the same cached DataFrame,
measured in the same run, interleaved with the others. Prints medians and ratios (baseline time / path
time; 1.0 = as fast as plain Parquet).

    python3 bench/write.py [--rows 20000000] [--runs 5] [--paths append,datasource] [--distribution hash]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--paths", default="append,datasource")
    parser.add_argument("--cases", default="unpartitioned,partitioned")
    parser.add_argument("--distribution", default="", help="write.distribution-mode for partitioned tables")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    os.chdir(Path(__file__).resolve().parents[1])  # Python workers import floe from the working directory
    import pyarrow as pa

    import floe
    import floe.spark.datasource
    from floe.spark.session import session
    from floe.spec.partitioning import PartitionSpecBuilder

    spark = session(
        {"spark.master": args.master, "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"}
    )
    df = spark.sql(
        f"SELECT id, timestamp_micros(1704067200000000 + id * 259200) AS ts, "
        f"element_at(array('alpha','beta','gamma','delta','epsilon'), CAST(id % 5 AS INT) + 1) AS category, "
        f"rand(42) AS value FROM range({args.rows})"
    ).cache()
    df.count()
    tmp = Path(tempfile.mkdtemp(prefix="floe-bench-write-"))
    cat = floe.load_catalog("bench", type="hadoop", warehouse=str(tmp / "wh"))
    cat.create_namespace("db")
    arrow_schema = pa.schema(
        [
            ("id", pa.int64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("category", pa.string()),
            ("value", pa.float64()),
        ]
    )
    counter = iter(range(10**6))

    def new_table(partitioned: bool) -> floe.Table:
        name = f"db.t{next(counter)}"
        props = {"write.distribution-mode": args.distribution} if (partitioned and args.distribution) else {}
        t = cat.create_table(name, arrow_schema)
        if partitioned:
            spec = PartitionSpecBuilder(t.schema()).day("ts").bucket("id", 16).build()
            cat.drop_table(name)
            t = cat.create_table(name, arrow_schema, partition_spec=spec, properties=props)
        return t

    def baseline(partitioned: bool) -> Callable[[], None]:
        def run() -> None:
            out = tmp / f"plain{next(counter)}"
            df.write.parquet(str(out))
            shutil.rmtree(out, ignore_errors=True)

        return run

    def append(partitioned: bool) -> Callable[[], None]:
        def run() -> None:
            new_table(partitioned).append(df)

        return run

    def datasource(partitioned: bool) -> Callable[[], None]:
        def run() -> None:
            t = new_table(partitioned)
            df.write.format("iceberg").mode("append").save(t.location())

        return run

    makers = {"append": append, "datasource": datasource}
    paths = [p for p in args.paths.split(",") if p]
    print(
        f"rows={args.rows:,} runs={args.runs} master={args.master} (median seconds; ratio = parquet / path)"
    )
    for case in args.cases.split(","):
        partitioned = case == "partitioned"
        fns = {"parquet": baseline(partitioned), **{p: makers[p](partitioned) for p in paths}}
        for fn in fns.values():
            fn()  # warm-up
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.runs):
            for k, fn in fns.items():
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        base = statistics.median(times["parquet"])
        line = f"{case:14s} parquet {base:7.2f}s"
        for p in paths:
            m = statistics.median(times[p])
            line += f" | {p} {m:7.2f}s ratio {base / m:4.2f}x"
        print(line, flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
