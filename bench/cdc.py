"""Benchmark: CDC batches applied by Floe (equality/position deletes) vs MERGE INTO by Iceberg Java.

Builds a table of ROWS rows (id, dt, v) partitioned by dt, with identifier fields (id, dt), in one JDBC
(SQLite) catalog both engines open, then CHANGES changes touching 10% of the keys in batches of BATCH
(20% new keys, 60% updates, 20% deletes; each key once per batch), written as Parquet files:

- Floe: ``floe.spark.streaming.changes.apply_changes`` per batch (upsert mode: an update is one +U row), on
  local[2];
- Iceberg Java 1.10 on Spark 3.5 (jsql), same machine, same files: ``MERGE INTO ... USING parquet.`batch```
  on a merge-on-read copy of the same base table (the spelling an Iceberg-on-Spark user writes).

Each engine's time per batch is measured inside one process (Java: the arrival times of jsql's per
statement output). Prints throughput (changes per second) per engine and the ratio Java time / Floe
time (above 1.0 Floe is faster), then Floe's read (count + aggregate) after the changes against a clean
table of the same rows, and Iceberg Java's read of both tables. Then the two ways to make the table fast to
read again, each from the same state (a second catalog entry registered on the same metadata file):
``rewrite_equality_deletes`` (equality deletes become position deletes) and ``rewrite_data_files``; it
prints each one's time, their ratio, and the read after each. Rows are checked equal across engines and
after both maintenance steps.

    PYTHONPATH=. .venv/bin/python bench/cdc.py [--rows 10000000] [--changes 1000000] [--batch 100000] [--no-java]

The defaults are the issue's full size (10 batches); ``--rows 200000 --changes 20000 --batch 2000 --no-java``
runs in a minute or two.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _jsql import ensure_jsql, query_java, run_java  # bench/_jsql.py (the script dir is on sys.path)
from pyspark.sql import SparkSession

import floe.spark
from floe.spark.runtime.sql_session import floe_sql_state
from floe.spark.streaming.changes import apply_changes
from floe.table.table import Table

PARTS = 8


def conf(root: Path) -> dict[str, str]:
    p = "spark.sql.catalog.bench"
    return {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": f"jdbc:sqlite:{root}/catalog.db",
            f"{p}.warehouse": f"file:{root}/wh", "spark.sql.session.timeZone": "UTC"}


def make_batches(root: Path, rows: int, changes: int, batch: int, seed: int = 7) -> list[Path]:
    """Change files: per batch, distinct keys; 20% inserts of new keys, 60% updates, 20% deletes."""
    rng = np.random.default_rng(seed)
    live = np.ones(rows + changes, dtype=bool)
    live[rows:] = False
    next_new = rows
    out = []
    for b in range(changes // batch):
        n_new, n_del = batch // 5, batch // 5
        n_upd = batch - n_new - n_del
        existing = rng.choice(np.flatnonzero(live[:next_new]), size=n_upd + n_del, replace=False)
        upd, dele = existing[:n_upd], existing[n_upd:]
        new = np.arange(next_new, next_new + n_new)
        next_new += n_new
        live[dele] = False
        live[new] = True
        ids = np.concatenate([new, upd, dele]).astype(np.int64)
        ops = ["+I"] * n_new + ["+U"] * n_upd + ["-D"] * n_del
        table = pa.table({
            "op": pa.array(ops), "id": pa.array(ids), "dt": pa.array([f"p{i % PARTS}" for i in ids.tolist()]),
            "v": pa.array([f"b{b}" for _ in range(len(ids))]),
        })
        path = root / f"batch{b:03d}.parquet"
        pq.write_table(table, path)
        out.append(path)
    return out


def timed(fn, runs: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--no-java", action="store_true", help="skip Iceberg Java's MERGE and reads (a quick run)")
    args = ap.parse_args()
    java_on = not args.no_java
    if java_on:
        ensure_jsql()
    root = Path(tempfile.mkdtemp(prefix="floe-bench-cdc-"))
    cfg = conf(root)
    batches = make_batches(root, args.rows, args.changes, args.batch)
    spark: SparkSession = floe.spark.session({"spark.master": "local[2]", **cfg})
    cols = "id BIGINT NOT NULL, dt STRING NOT NULL, v STRING"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS bench.db")
    tables = [("floe_t", "'write.upsert.enabled'='false'"), ("java_t", "'write.merge.mode'='merge-on-read'")]
    for name, mode in tables[: 2 if java_on else 1]:
        spark.sql(f"CREATE TABLE bench.db.{name} ({cols}) USING iceberg PARTITIONED BY (dt) "
                  f"TBLPROPERTIES ('format-version'='2', {mode})")
        spark.sql(f"INSERT INTO bench.db.{name} SELECT id, concat('p', CAST(id % {PARTS} AS STRING)), 'base' "
                  f"FROM range({args.rows})")
    # upsert mode only after the base rows: with it on, their INSERT would be an upsert too
    spark.sql("ALTER TABLE bench.db.floe_t SET IDENTIFIER FIELDS id, dt")
    spark.sql("ALTER TABLE bench.db.floe_t SET TBLPROPERTIES ('write.upsert.enabled'='true')")
    table = floe_sql_state(spark).context.load(("bench", "db", "floe_t"))

    floe_times = []
    for path in batches:
        df = spark.read.parquet(str(path))
        t0 = time.perf_counter()
        apply_changes(table.refresh(), df)
        floe_times.append(time.perf_counter() - t0)

    total = args.changes
    f_s = sum(floe_times)
    print(f"CDC apply, {len(batches)} batches of {args.batch} into {args.rows} rows")
    print(f"  Floe apply_changes: {f_s:.1f} s ({total / f_s:,.0f} changes/s; median batch {statistics.median(floe_times):.2f} s)")
    if java_on:
        java_merge(spark, cfg, batches, f_s, total)
    read_and_maintain(spark, cfg, table, cols, java_on)
    spark.stop()
    shutil.rmtree(root, ignore_errors=True)


def java_merge(spark: SparkSession, cfg: dict[str, str], batches: list[Path], f_s: float, total: int) -> None:
    """The same batches as Iceberg Java's MERGE INTO on java_t; rows checked equal to Floe's."""
    merges = [
        f"MERGE INTO bench.db.java_t t USING (SELECT * FROM parquet.`{p}`) s ON t.id = s.id AND t.dt = s.dt "
        "WHEN MATCHED AND s.op = '-D' THEN DELETE WHEN MATCHED THEN UPDATE SET t.v = s.v "
        "WHEN NOT MATCHED AND s.op <> '-D' THEN INSERT (id, dt, v) VALUES (s.id, s.dt, s.v)"
        for p in batches
    ]
    java_times = run_java(merges, cfg)

    floe_rows = spark.sql("SELECT count(*) AS n, sum(hash(id, dt, v)) AS h FROM bench.db.floe_t").first()
    java_rows = [int(str(x)) for x in query_java("SELECT count(*) AS n, sum(hash(id, dt, v)) AS h FROM bench.db.java_t", cfg)[0]]
    print(f"rows after: Floe {floe_rows.n} (hash {floe_rows.h}); Java {java_rows}")
    assert [floe_rows.n, floe_rows.h] == java_rows, "Floe and Java hold different rows"
    j_s = sum(java_times)
    print(f"  Java MERGE INTO (MOR): {j_s:.1f} s ({total / j_s:,.0f} changes/s; median batch {statistics.median(java_times):.2f} s)")
    print(f"  ratio Java/Floe: {j_s / f_s:.2f}")


def read_and_maintain(spark: SparkSession, cfg: dict[str, str], table: Table, cols: str, java_on: bool) -> None:
    """Reads before and after rewrite_equality_deletes and rewrite_data_files, each run from the same state."""
    spark.sql(f"CREATE TABLE bench.db.clean ({cols}) USING iceberg PARTITIONED BY (dt)")
    spark.sql("INSERT INTO bench.db.clean SELECT * FROM bench.db.floe_t")

    def read(name: str) -> None:
        spark.sql(f"SELECT count(*), sum(length(v)), max(id) FROM bench.db.{name}").collect()

    def rows(name: str) -> list[object]:
        return list(spark.sql(f"SELECT count(*), sum(hash(id, dt, v)) FROM bench.db.{name}").first() or [])

    read("clean")  # warm-up: the first query of a session pays for JIT and class loading
    read("floe_t")
    clean = timed(lambda: read("clean"))
    before = timed(lambda: read("floe_t"))
    if java_on:
        # Iceberg Java reading the same table (its equality deletes) and the clean one: one JVM, alternating,
        # the first pair a warm-up.
        java = run_java([f"SELECT count(*), sum(length(v)), max(id) FROM bench.db.{n}" for _ in range(4) for n in ("clean", "floe_t")], cfg)
        java_clean, java_before = statistics.median(java[2::2]), statistics.median(java[3::2])
        print(f"Iceberg Java reading the same tables: clean {java_clean:.2f} s, before maintenance {java_before:.2f} s "
              f"({java_before / java_clean:.2f}x); Java/Floe before maintenance: {java_before / before:.2f}")
    expected = rows("clean")
    # floe_c: the same table state under a second name, so both maintenance steps start from it
    spark.sql(f"CALL bench.system.register_table(table => 'db.floe_c', metadata_file => '{table.refresh().metadata_location}')")
    t0 = time.perf_counter()
    spark.sql("CALL bench.system.rewrite_equality_deletes(table => 'db.floe_t')").collect()
    convert_s = time.perf_counter() - t0
    read("floe_t")
    converted = timed(lambda: read("floe_t"))
    # What the converted read costs without its deletes: the same data files as plain Parquet (the files the
    # batches wrote are many and small), and how many files and deletes the read met.
    tasks = list(table.refresh().scan().plan_files())
    data_files = [t.data_file.file_path for t in tasks]
    plain = spark.read.parquet(*data_files)
    files_only = timed(lambda: plain.selectExpr("count(*)", "sum(length(v))", "max(id)").collect())
    deleted = sum(e.data_file.record_count for e in {e.data_file.file_path: e for t in tasks for e in t.deletes}.values())
    print(f"after rewrite_equality_deletes: {len(data_files)} data files ({sum(1 for t in tasks if t.deletes)} with "
          f"position deletes, {deleted} deleted positions); the same files as plain Parquet, no deletes: "
          f"{files_only:.2f} s ({files_only / clean:.2f}x clean)")
    t0 = time.perf_counter()
    spark.sql("CALL bench.system.rewrite_data_files(table => 'db.floe_c', "
              "options => map('delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))").collect()
    rewrite_s = time.perf_counter() - t0
    read("floe_c")
    rewritten = timed(lambda: read("floe_c"))
    assert rows("floe_t") == expected == rows("floe_c"), "maintenance changed the rows"
    print(f"read: clean {clean:.2f} s; before maintenance {before:.2f} s ({before / clean:.2f}x); "
          f"after rewrite_equality_deletes {converted:.2f} s ({converted / clean:.2f}x); "
          f"after rewrite_data_files {rewritten:.2f} s ({rewritten / clean:.2f}x)")
    print(f"maintenance from the same state: rewrite_equality_deletes {convert_s:.2f} s, rewrite_data_files "
          f"{rewrite_s:.2f} s (conversion / rewrite: {convert_s / rewrite_s:.2f})")


if __name__ == "__main__":
    main()
