"""Benchmark: appending a DataFrame to Iceberg tables vs Spark's native ``df.write.parquet``.

Rows: id long, ts timestamp, category string, value double, from one cached DataFrame; ``ts`` spans 60
days whatever ``--rows`` is, so the partitioned case always has 60 x 16 = 960 partitions. Cases:
unpartitioned, and partitioned by day(ts) + bucket(16, id). Paths: ``table.append(df)`` (Spark's native
Parquet writer + driver-side metadata, floe.spark.write.dataframe_write), ``save``:
``df.write.format("iceberg").save(location)`` on the Floe-aware session (the same native writer), and
``datasource`` (opt-in): the same call with ``spark.floe.transparent=false``, i.e. the Python data source
(floe.spark.datasource.writer); ``append-arrow`` (opt-in) is ``table.append`` through the mapInArrow writers. Baselines, measured in the same run, interleaved with the paths, all with the
table's codec (``--codec``, Iceberg's default zstd): ``parquet`` = ``df.write.parquet``
unpartitioned (the issue's baseline) and, for the partitioned case, ``parquet-pb`` =
``df.write.partitionBy(day, bucket).parquet`` over the same cached DataFrame with both partition columns
precomputed (Spark doing the same partitioned job). Prints medians, file counts and ratios (baseline
time / path time; 1.0 = as fast as the baseline), and on Linux the median CPU seconds of the Spark JVM
(with its finished child processes, e.g. Hadoop's ``chmod``) plus this driver: on a shared machine wall
times swing with other processes' load, CPU seconds much less.

    python3 bench/write.py [--rows 20000000] [--runs 5] [--paths append,save,append-arrow,datasource] [--distribution hash]
        [--codec zstd]
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


def _process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and its waited-for children (Linux /proc); None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--paths", default="append,save")
    parser.add_argument("--cases", default="unpartitioned,partitioned")
    parser.add_argument("--distribution", default="", help="write.distribution-mode for partitioned tables")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--codec", default="zstd", help="Parquet codec of baselines and tables")
    args = parser.parse_args()

    os.chdir(Path(__file__).resolve().parents[1])  # Python workers import floe from the working directory
    import pyarrow as pa

    import floe
    import floe.spark.datasource.provider
    import floe.write
    from floe.spark.runtime.configure import session
    from floe.spark.runtime.transparent import TRANSPARENT_CONF
    from floe.spark.write.dataframe_write import distribution_mode
    from floe.spark.write.transforms import partition_column
    from floe.spec.partitioning import PartitionSpecBuilder

    spark = session(
        {"spark.master": args.master, "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"}
    )
    step = 60 * 86_400_000_000 // args.rows  # 259200 micros at 20M rows
    df = spark.sql(
        f"SELECT id, timestamp_micros(1704067200000000 + id * {step}) AS ts, "
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
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]

    def cpu_now() -> float | None:
        jvm = _process_cpu_seconds(jvm_pid)
        return None if jvm is None else jvm + time.process_time()

    def new_table(partitioned: bool) -> floe.Table:
        name = f"db.t{next(counter)}"
        props = {"write.parquet.compression-codec": args.codec}
        if partitioned and args.distribution:
            props["write.distribution-mode"] = args.distribution
        t = cat.create_table(name, arrow_schema)
        cat.drop_table(name)
        spec = PartitionSpecBuilder(t.schema()).day("ts").bucket("id", 16).build() if partitioned else None
        return cat.create_table(name, arrow_schema, partition_spec=spec, properties=props) if spec else (
            cat.create_table(name, arrow_schema, properties=props)
        )

    probe = new_table(True)
    # The same partition values Floe computes (day number, bucket), precomputed and cached.
    pre = df.select(
        "*", *[partition_column(pf, probe.schema()).alias(f"p{i}") for i, pf in enumerate(probe.spec().fields)]
    ).cache()
    pre.count()
    files: dict[str, int] = {}

    # Each path prepares untimed (a new table: Hadoop-catalog metadata writes that are not the write's) and
    # returns the call to time and the folder it writes.
    Prepare = Callable[[], tuple[Callable[[], None], Path]]

    def baseline(frame: object, parts: list[str]) -> Prepare:
        def prepare() -> tuple[Callable[[], None], Path]:
            out = tmp / f"plain{next(counter)}"

            def run() -> None:
                writer = frame.write.option("compression", args.codec)  # type: ignore[attr-defined]
                (writer.partitionBy(*parts) if parts else writer).parquet(str(out))

            return run, out

        return prepare

    def on_table(partitioned: bool, write: Callable[[floe.Table], None]) -> Prepare:
        def prepare() -> tuple[Callable[[], None], Path]:
            t = new_table(partitioned)
            return (lambda: write(t)), Path(t.location().removeprefix("file:"))

        return prepare

    def append(t: floe.Table) -> None:
        t.append(df)

    def save(t: floe.Table) -> None:
        df.write.format("iceberg").mode("append").save(t.location())

    def datasource(t: floe.Table) -> None:
        spark.conf.set(TRANSPARENT_CONF, "false")  # not Floe-aware: the Python data source writes
        try:
            df.write.format("iceberg").mode("append").save(t.location())
        finally:
            spark.conf.unset(TRANSPARENT_CONF)

    def append_arrow(t: floe.Table) -> None:
        floe.write.write(t, df, options={"write-path": "arrow"})  # mapInArrow + pyarrow writers

    makers = {"append": append, "save": save, "append-arrow": append_arrow, "datasource": datasource}
    paths = [p for p in args.paths.split(",") if p]
    mode = distribution_mode(probe, {})
    print(
        f"rows={args.rows:,} runs={args.runs} master={args.master} codec={args.codec} "
        f"partitioned distribution-mode={mode} (median seconds; ratio = baseline / path)"
    )
    for case in args.cases.split(","):
        partitioned = case == "partitioned"
        fns = {"parquet": baseline(df, [])}
        if partitioned:
            fns["parquet-pb"] = baseline(pre, ["p0", "p1"])
        fns.update({p: on_table(partitioned, makers[p]) for p in paths})
        for prepare in fns.values():
            prepare()[0]()  # warm-up
        times: dict[str, list[float]] = {k: [] for k in fns}
        cpus: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.runs):
            for k, prepare in fns.items():
                run, out = prepare()
                c0 = cpu_now()
                t0 = time.perf_counter()
                run()
                times[k].append(time.perf_counter() - t0)
                c1 = cpu_now()
                if c0 is not None and c1 is not None:
                    cpus[k].append(c1 - c0)
                files[k] = sum(1 for _ in out.rglob("*.parquet"))
                if k.startswith("parquet"):
                    shutil.rmtree(out, ignore_errors=True)

        def cpu(k: str, cpus: dict[str, list[float]] = cpus) -> str:
            return f" cpu {statistics.median(cpus[k]):6.2f}s" if cpus[k] else ""

        base = statistics.median(times["parquet"])
        line = f"{case:14s} parquet {base:6.2f}s{cpu('parquet')} ({files['parquet']} files)"
        pb = statistics.median(times["parquet-pb"]) if partitioned else None
        if pb is not None:
            line += f" | parquet-pb {pb:6.2f}s{cpu('parquet-pb')} ({files['parquet-pb']} files)"
        for p in paths:
            m = statistics.median(times[p])
            line += f" | {p} {m:6.2f}s{cpu(p)} ({files[p]} files) ratio {base / m:4.2f}x"
            if cpus[p] and cpus["parquet"]:
                line += f" cpu-ratio {statistics.median(cpus['parquet']) / statistics.median(cpus[p]):4.2f}x"
            if pb is not None:
                line += f" vs-pb {pb / m:4.2f}x"
        print(line, flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
