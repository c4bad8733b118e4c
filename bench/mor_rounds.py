"""Benchmark: a merge-on-read pipeline over many rounds, Iceberg Java (1.10 on Spark 3.5, jsql) vs Floe, one run.

A pipeline that runs for weeks MERGEs a small batch into the same merge-on-read table every round, and each
round leaves delete files behind. Both engines open one SQLite JDBC catalog (``bench``) and build their own
copy of a table of ROWS rows (id bigint, ts timestamp, category string, value double; v2, merge-on-read for
DELETE/UPDATE/MERGE; ``--partitioned`` adds ``PARTITIONED BY (days(ts))``, 60 partitions). Then, ROUNDS
times, the same statements on both:

    MERGE INTO t USING parquet.`round_r` s ON t.id = s.id
      WHEN MATCHED THEN UPDATE SET t.value = s.value WHEN NOT MATCHED THEN INSERT *
    SELECT category, count(*), sum(value), min(ts), max(ts) FROM t GROUP BY category ORDER BY category

where round r's source (Parquet, written once by pyarrow) updates 1% of the ids at random and adds 0.1% new
rows. After the last round: ``CALL bench.system.rewrite_position_delete_files(table => ...)``, the read again,
and one more round. Java runs all of its statements in one JVM (a statement's time is the gap between jsql's
output lines); Floe in one warm session (wall time of ``spark.sql(...).collect()``). Every read's rows are
compared across engines. Prints per round MERGE and read seconds on each engine and Java/Floe (above 1.0 Floe
is faster; every round where Floe is slower is in the table), the delete files each engine's table holds,
the rounds where Floe is slower, and the machine load.

    PYTHONPATH=. .venv/bin/python bench/mor_rounds.py [--rows 2000000] [--rounds 50] [--partitioned]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _jsql import ensure_jsql, run_statements, same_rows  # bench/_jsql.py (the script dir is on sys.path)
from pyspark.sql import SparkSession

import floe.spark

DAYS = 60
BASE_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z
DAY_US = 86_400_000_000
COLUMNS = "id BIGINT, ts TIMESTAMP, category STRING, value DOUBLE"
MOR = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
NS = {"java": "java", "floe": "fl"}
MERGE = ("MERGE INTO {tbl} t USING (SELECT * FROM parquet.`{src}`) s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET t.value = s.value WHEN NOT MATCHED THEN INSERT *")
READ = ("SELECT category, count(*) AS n, sum(value) AS v, min(ts) AS lo, max(ts) AS hi FROM {tbl} "
        "GROUP BY category ORDER BY category")
DELETE_FILES = "SELECT count(*) AS files FROM {tbl}.delete_files"


def _rows(ids: np.ndarray, rng: np.random.Generator, value_base: float) -> pa.Table:
    return pa.table({
        "id": pa.array(ids.astype(np.int64)),
        "ts": pa.array((BASE_US + rng.integers(0, DAYS * DAY_US, len(ids))).astype(np.int64), pa.int64())
        .cast(pa.timestamp("us", tz="UTC")),
        "category": pa.array([f"cat-{c:02d}" for c in rng.integers(0, 50, len(ids)).tolist()]),
        "value": pa.array(np.round(value_base + rng.random(len(ids)) * 1000, 3)),
    })


def make_data(root: Path, rows: int, rounds: int, seed: int = 50) -> tuple[Path, list[Path]]:
    """The base rows (4 files) and one MERGE source per round: 1% of the live ids updated, 0.1% new ids."""
    rng = np.random.default_rng(seed)
    (root / "base").mkdir(parents=True)
    base = _rows(np.arange(rows), rng, 0.0)
    for k, chunk in enumerate(np.array_split(np.arange(rows), 4)):
        pq.write_table(base.slice(int(chunk[0]), len(chunk)), root / "base" / f"part-{k}.parquet")
    sources, next_id = [], rows
    for r in range(rounds + 1):  # one more for the round after the compaction
        updated = rng.choice(next_id, size=max(1, rows // 100), replace=False)
        new = np.arange(next_id, next_id + max(1, rows // 1000))
        next_id += len(new)
        path = root / f"round_{r:03d}.parquet"
        pq.write_table(pa.concat_tables([_rows(updated, rng, 1000.0 * (r + 1)), _rows(new, rng, 0.0)]), path)
        sources.append(path)
    return root / "base", sources


def plain(v: object) -> object:
    """A value as jsql prints it, so both engines' rows compare."""
    return v.isoformat() if isinstance(v, dt.datetime | dt.date) else v


def pipeline(tbl: str, ns_short: str, sources: list[Path]) -> list[tuple[str, str]]:
    """(label, statement) for every round, the compaction and the round after it."""
    out = []
    for r, src in enumerate(sources[:-1], start=1):
        out += [(f"merge {r}", MERGE.format(tbl=tbl, src=src)), (f"read {r}", READ.format(tbl=tbl))]
    out.append(("delete files before", DELETE_FILES.format(tbl=tbl)))
    out.append(("rewrite_position_delete_files",
                f"CALL bench.system.rewrite_position_delete_files(table => '{ns_short}.t')"))
    out.append(("delete files after", DELETE_FILES.format(tbl=tbl)))
    out += [(f"read after rewrite {k}", READ.format(tbl=tbl)) for k in (1, 2, 3)]
    out += [("merge after rewrite", MERGE.format(tbl=tbl, src=sources[-1])), ("read after that", READ.format(tbl=tbl))]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--partitioned", action="store_true", help="PARTITIONED BY (days(ts)): 60 partitions")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args()
    ensure_jsql()
    load_start = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="floe-bench-mor-rounds-"))
    p = "spark.sql.catalog.bench"
    cfg = {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": f"jdbc:sqlite:{root}/catalog.db",
           f"{p}.warehouse": f"file:{root}/wh", "spark.sql.session.timeZone": "UTC",
           "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g"}
    base, sources = make_data(root, args.rows, args.rounds)
    spark: SparkSession = floe.spark.session({"spark.master": "local[2]", **cfg})
    part = "PARTITIONED BY (days(ts)) " if args.partitioned else ""
    for ns in NS.values():
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS bench.{ns}").collect()
        spark.sql(f"CREATE TABLE bench.{ns}.t ({COLUMNS}) USING iceberg {part}TBLPROPERTIES ({MOR})").collect()
    # Each engine writes its own base rows, as its users would.
    fill = "INSERT INTO bench.{ns}.t SELECT * FROM parquet.`{base}`"
    spark.sql(fill.format(ns=NS["floe"], base=base)).collect()

    java_steps = pipeline(f"bench.{NS['java']}.t", NS["java"], sources)
    t0 = time.perf_counter()
    java = run_statements([fill.format(ns=NS["java"], base=base), f"SELECT count(*) FROM parquet.`{base}`",
                           *(s for _, s in java_steps)], cfg)[2:]
    print(f"Java: {len(java)} of {len(java_steps)} statements in {time.perf_counter() - t0:.1f} s", flush=True)
    failed = next((r for r in java if r.error), None)
    if failed is not None or len(java) != len(java_steps):
        raise SystemExit(f"Java failed: {failed.sql[:160] if failed else ''}: {failed.error[:600] if failed and failed.error else 'stopped'}")

    floe_steps = pipeline(f"bench.{NS['floe']}.t", NS["floe"], sources)
    spark.sql(f"SELECT count(*) FROM parquet.`{base}`").collect()  # warm-up, as Java's
    floe_times, floe_rows = [], []
    for _, stmt in floe_steps:
        t = time.perf_counter()
        rows = [[plain(x) for x in row] for row in spark.sql(stmt).collect()]
        floe_times.append(time.perf_counter() - t)
        floe_rows.append(rows)

    labels = [label for label, _ in floe_steps]
    at = {label: i for i, label in enumerate(labels)}
    mismatches = [labels[i] for i, (label, _) in enumerate(floe_steps)
                  if label.startswith("read") and not same_rows(java[i].rows, floe_rows[i])]
    print(f"\n## Merge-on-read pipeline, {args.rounds} rounds of MERGE (1% updated, 0.1% new) into {args.rows:,} rows"
          f"{' partitioned by days(ts)' if args.partitioned else ''}, Iceberg Java 1.10.2 (Spark 3.5.7) vs Floe "
          f"(PySpark {spark.version}), local[2]\n")
    print("| round | Java MERGE s | Floe MERGE s | Java/Floe | Java read s | Floe read s | Java/Floe |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    slower = []
    for r in range(1, args.rounds + 1):
        m, rd = at[f"merge {r}"], at[f"read {r}"]
        jm, fm, jr, fr = java[m].seconds, floe_times[m], java[rd].seconds, floe_times[rd]
        if jm < fm or jr < fr:
            slower.append(r)
        if args.rounds <= 12 or r in (1, 2, 5) or r % 10 == 0 or r == args.rounds or r in slower[-1:]:
            print(f"| {r} | {jm:.2f} | {fm:.2f} | {jm / fm:.2f} | {jr:.2f} | {fr:.2f} | {jr / fr:.2f} |")
    merge_ratio = [java[at[f"merge {r}"]].seconds / floe_times[at[f"merge {r}"]] for r in range(1, args.rounds + 1)]
    read_ratio = [java[at[f"read {r}"]].seconds / floe_times[at[f"read {r}"]] for r in range(1, args.rounds + 1)]
    print(f"\nJava/Floe over all rounds: MERGE median {statistics.median(merge_ratio):.2f}, min {min(merge_ratio):.2f}; "
          f"read median {statistics.median(read_ratio):.2f}, min {min(read_ratio):.2f}")
    print(f"rounds where Floe is slower at the MERGE or the read: {slower or 'none'}")
    for label in ("delete files before", "delete files after"):
        i = at[label]
        print(f"{label} rewrite_position_delete_files: Java {java[i].rows}, Floe {floe_rows[i]}")
    i = at["rewrite_position_delete_files"]
    print(f"rewrite_position_delete_files: Java {java[i].seconds:.2f} s, Floe {floe_times[i]:.2f} s "
          f"({java[i].seconds / floe_times[i]:.2f})")
    reads_after = [at[f"read after rewrite {k}"] for k in (1, 2, 3)]
    jr, fr = statistics.median(java[i].seconds for i in reads_after), statistics.median(floe_times[i] for i in reads_after)
    print(f"read after it (median of 3): Java {jr:.2f} s, Floe {fr:.2f} s ({jr / fr:.2f})")
    for label in ("merge after rewrite", "read after that"):
        i = at[label]
        print(f"{label}: Java {java[i].seconds:.2f} s, Floe {floe_times[i]:.2f} s ({java[i].seconds / floe_times[i]:.2f})")
    print(f"rows equal on every read: {'yes' if not mismatches else 'NO: ' + ', '.join(mismatches)}")
    load_end = os.getloadavg()
    print(f"machine: nproc {os.cpu_count()}, load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}")
    spark.stop()
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
