"""Benchmark: a Floe program's start, with and without the driver JVM's class-data archive.

Each run is a fresh Python process (``python -c``) that opens ``floe.spark.session`` (local[2], the embedded
SQLite catalog in a temporary FLOE_HOME), runs a first query (``spark.range(10)`` summed), then creates an
Iceberg table, inserts 1,000 rows with SQL and reads them back: the first minute of every pipeline, test
process and ``floe sql`` call. Timed from inside the child: session start, first query, the table work,
and the process's wall time from the parent.

Modes, alternated run by run, median of ``--runs`` (both in the same run, so the ratio is the figure):
- ``archive``: an archive already installed in a temporary ``XDG_CACHE_HOME`` (made once, before timing,
  by one untimed run that dumps it; that first run's own times are printed as ``first (dumping)``);
- ``off``: ``FLOE_CLASS_ARCHIVE=0``, the JVM loading every class from Spark's jars.

Also reports the archive's size and how long its installer took after the first run exited.

    PYTHONPATH=. .venv/bin/python bench/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, time
t0 = time.perf_counter()
import floe.spark
spark = floe.spark.session({"spark.master": "local[2]"})
t1 = time.perf_counter()
spark.range(10).selectExpr("sum(id)").collect()
t2 = time.perf_counter()
spark.sql("CREATE NAMESPACE IF NOT EXISTS floe.startup").collect()
spark.sql("CREATE TABLE floe.startup.t (id BIGINT, name STRING) USING iceberg").collect()
spark.sql("INSERT INTO floe.startup.t SELECT id, CAST(id AS STRING) FROM range(1000)").collect()
n = spark.sql("SELECT count(*) FROM floe.startup.t").collect()[0][0]
t3 = time.perf_counter()
assert n == 1000, n
print("TIMES " + json.dumps({"session": t1 - t0, "first query": t2 - t1, "table": t3 - t2}), flush=True)
"""
PHASES = ("session", "first query", "table", "process")


def run_child(env: dict[str, str], home: Path) -> dict[str, float]:
    """One fresh program in a new FLOE_HOME; its phase times and wall time."""
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD], env={**env, "FLOE_HOME": str(home)}, cwd=home,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    line = next((x for x in done.stdout.splitlines() if x.startswith("TIMES ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"child failed (rc {done.returncode}): {done.stderr[-2000:]}")
    return {**json.loads(line[len("TIMES "):]), "process": wall}


def wait_for_archive(directory: Path, timeout: float = 300.0) -> float:
    """Seconds until an installed archive appears in ``directory``."""
    t = time.perf_counter()
    while not list(directory.glob("spark-*.jsa")):
        if time.perf_counter() - t > timeout:
            raise SystemExit(f"no archive installed in {directory} after {timeout:.0f} s")
        time.sleep(0.2)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="floe-bench-startup-"))
    base = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(root / "cache"), "SPARK_LOCAL_IP": "127.0.0.1"}
    modes = {"archive": base, "off": {**base, "FLOE_CLASS_ARCHIVE": "0"}}
    load_start = os.getloadavg()
    try:
        first = run_child(base, root / "home")
        install = wait_for_archive(root / "cache" / "floe" / "jvm")
        archive_mb = next((root / "cache" / "floe" / "jvm").glob("spark-*.jsa")).stat().st_size / 2**20
        times: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
        for _ in range(args.runs):
            for mode, env in modes.items():
                times[mode].append(run_child(env, root / "home"))
    finally:
        load_end = os.getloadavg()
        shutil.rmtree(root, ignore_errors=True)
    med = {m: {p: statistics.median(r[p] for r in rows) for p in PHASES} for m, rows in times.items()}
    print(f"\n## Program start, median of {args.runs} fresh processes per mode (local[2])\n")
    print("| phase | no archive s | archive s | ratio | first run (dumping) s |")
    print("|---|---:|---:|---:|---:|")
    for p in PHASES:
        print(f"| {p} | {med['off'][p]:.2f} | {med['archive'][p]:.2f} | {med['off'][p] / med['archive'][p]:.2f} | {first[p]:.2f} |")
    print(f"\narchive: {archive_mb:.0f} MB, installed {install:.1f} s after the first program exited")
    print(f"machine: nproc {os.cpu_count()}, load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}")


if __name__ == "__main__":
    main()
