"""Benchmark: a merge-on-read pipeline over many rounds, Iceberg Java (1.10 on Spark 3.5, jsql) vs Floe, one run.

A pipeline that runs for weeks MERGEs a small batch into the same merge-on-read table every round, and each
round leaves delete files behind. Each engine opens a SQLite JDBC catalog of its own (``bench``) and builds its
own copy of a table of ROWS rows (id bigint, ts timestamp, category string, value double; v2, merge-on-read for
DELETE/UPDATE/MERGE; ``--partitioned`` adds ``PARTITIONED BY (days(ts))``, 60 partitions). Then, ROUNDS
times, the same statements on both:

    MERGE INTO t USING parquet.`round_r` s ON t.id = s.id
      WHEN MATCHED THEN UPDATE SET t.value = s.value WHEN NOT MATCHED THEN INSERT *
    SELECT category, count(*), sum(value), min(ts), max(ts) FROM t GROUP BY category ORDER BY category
    (the read --reads times, 3 by default: a round's read time is their median)

where round r's source (Parquet, written once by pyarrow) updates 1% of the ids at random and adds 0.1% new
rows. After the last round: ``CALL bench.system.rewrite_position_delete_files(table => ...)``, the read again,
and one more round. Each engine runs in one warm session of its own (Java's: bench/_java_session.py, configured
as jsql configures its own), and they take turns statement by statement; a statement's time is the wall time of
``spark.sql(...).collect()`` in its engine's process. Every read's rows are
compared across engines. Prints per round MERGE and read seconds on each engine and Java/Floe (above 1.0 Floe
is faster; every round where Floe is slower is in the table, the first read after the MERGE in brackets), the
delete files each engine's table holds, the rounds where Floe is slower (by the median, and by the first
read alone), and the machine load.

    PYTHONPATH=. .venv/bin/python bench/mor_rounds.py [--rows 2000000] [--rounds 50] [--reads 3] [--partitioned]
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
from _jsql import JavaSession, JavaStatement, ensure_jsql, same_rows  # bench/_jsql.py
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


def pipeline(tbl: str, ns_short: str, sources: list[Path], reads: int) -> list[tuple[str, str]]:
    """(label, statement) for every round (its MERGE, then ``reads`` reads), the compaction and the round after it."""
    out = []
    for r, src in enumerate(sources[:-1], start=1):
        out.append((f"merge {r}", MERGE.format(tbl=tbl, src=src)))
        out += [(f"read {r}.{k}", READ.format(tbl=tbl)) for k in range(reads)]
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
    ap.add_argument("--reads", type=int, default=3,
                    help="reads after each MERGE; a round's read time is their median (a single read of 0.5 s "
                         "swings by 0.1 s from run to run on a 2-core machine)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args()
    ensure_jsql()
    load_start = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="floe-bench-mor-rounds-"))
    p = "spark.sql.catalog.bench"
    # A catalog database per engine: Iceberg Java's JDBC catalog fails a commit on SQLite (SQLITE_BUSY_SNAPSHOT,
    # "Unknown failure") when another process wrote to the database since its connection last read it.
    cfg = {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": f"jdbc:sqlite:{root}/floe.db",
           f"{p}.warehouse": f"file:{root}/wh", "spark.sql.session.timeZone": "UTC",
           "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g"}
    java_cfg = {**cfg, f"{p}.uri": f"jdbc:sqlite:{root}/java.db"}
    base, sources = make_data(root, args.rows, args.rounds)
    spark: SparkSession = floe.spark.session({"spark.master": "local[2]", **cfg})
    part = "PARTITIONED BY (days(ts)) " if args.partitioned else ""
    # Each engine creates its table and writes its base rows, as its users would.
    setup = ["CREATE NAMESPACE bench.{ns}", f"CREATE TABLE bench.{{ns}}.t ({COLUMNS}) USING iceberg {part}TBLPROPERTIES ({MOR})",
             f"INSERT INTO bench.{{ns}}.t SELECT * FROM parquet.`{base}`", f"SELECT count(*) FROM parquet.`{base}`"]
    for stmt in setup:
        spark.sql(stmt.format(ns=NS["floe"])).collect()  # the last: a warm-up, as Java's

    java_steps = pipeline(f"bench.{NS['java']}.t", NS["java"], sources, args.reads)
    floe_steps = pipeline(f"bench.{NS['floe']}.t", NS["floe"], sources, args.reads)
    java_session = JavaSession(java_cfg)
    for stmt in setup:
        if (done := java_session.run(stmt.format(ns=NS["java"]))).error:
            raise SystemExit(f"Java failed: {done.sql[:160]}: {done.error[:600]}")

    java: list[JavaStatement] = []
    floe_times: list[float] = []
    floe_rows: list[list[list[object]]] = []

    def run_java(stmt: str) -> None:
        done = java_session.run(stmt)
        if done.error:
            raise SystemExit(f"Java failed: {stmt[:160]}: {done.error[:600]}")
        java.append(done)

    def run_floe(stmt: str) -> None:
        t = time.perf_counter()
        floe_rows.append([[plain(x) for x in row] for row in spark.sql(stmt).collect()])
        floe_times.append(time.perf_counter() - t)

    # The engines take turns statement by statement (who goes first alternates), so both meet the machine in
    # the same state: on a shared 2-core machine, runs minutes apart differ by more than the engines do.
    for n, ((_, java_stmt), (_, floe_stmt)) in enumerate(zip(java_steps, floe_steps, strict=True)):
        if n % 2 == 0:
            run_java(java_stmt)
            run_floe(floe_stmt)
        else:
            run_floe(floe_stmt)
            run_java(java_stmt)
    java_session.close()

    labels = [label for label, _ in floe_steps]
    at = {label: i for i, label in enumerate(labels)}
    mismatches = [labels[i] for i, (label, _) in enumerate(floe_steps)
                  if label.startswith("read") and not same_rows(java[i].rows, floe_rows[i])]
    print(f"\n## Merge-on-read pipeline, {args.rounds} rounds of MERGE (1% updated, 0.1% new) into {args.rows:,} rows"
          f"{' partitioned by days(ts)' if args.partitioned else ''}, Iceberg Java 1.10.2 (Spark 3.5.7) vs Floe "
          f"(PySpark {spark.version}), local[2]\n")

    def read_times(times: list[float], r: int) -> list[float]:
        return [times[at[f"read {r}.{k}"]] for k in range(args.reads)]

    java_times = [j.seconds for j in java]
    print(f"A round's read: the median of its {args.reads} reads (the first read after the MERGE in brackets).\n")
    print("| round | Java MERGE s | Floe MERGE s | Java/Floe | Java read s | Floe read s | Java/Floe |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    slower, first_slower, merge_ratio, read_ratio = [], [], [], []
    for r in range(1, args.rounds + 1):
        m = at[f"merge {r}"]
        jm, fm = java_times[m], floe_times[m]
        jreads, freads = read_times(java_times, r), read_times(floe_times, r)
        jr, fr = statistics.median(jreads), statistics.median(freads)
        merge_ratio.append(jm / fm)
        read_ratio.append(jr / fr)
        if jm < fm or jr < fr:
            slower.append(r)
        if jreads[0] < freads[0]:
            first_slower.append(r)
        if args.rounds <= 12 or r in (1, 2, 5) or r % 10 == 0 or r == args.rounds or r in slower[-1:]:
            print(f"| {r} | {jm:.2f} | {fm:.2f} | {jm / fm:.2f} | {jr:.2f} ({jreads[0]:.2f}) | {fr:.2f} ({freads[0]:.2f}) "
                  f"| {jr / fr:.2f} |")
    print(f"\nJava/Floe over all rounds: MERGE median {statistics.median(merge_ratio):.2f}, min {min(merge_ratio):.2f}; "
          f"read median {statistics.median(read_ratio):.2f}, min {min(read_ratio):.2f}")
    print(f"rounds where Floe's first read after the MERGE is slower: {first_slower or 'none'}")
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
