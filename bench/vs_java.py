"""Benchmark: the same SQL work on Iceberg Java (1.10 on Spark 3.5, through jsql) and on Floe (PySpark 4), one run.

Both engines open one SQLite JDBC catalog (``bench``) and work on their own tables (namespaces ``bench.java``
and ``bench.fl``) and their own copies of the input, Parquet files written once by pyarrow: ROWS rows of
(id bigint, ts timestamp over 60 days, category string of 50 values, value double), so a table partitioned by
days(ts), bucket(16, id) has 960 partitions; a MERGE source of 15% of ROWS (1% matched, 14% new); a
partition-aligned MERGE source (rows of two days only). Cases (``--cases``, keys as in the issue):

  native  each engine's Spark writing the input as plain Parquet (Java: INSERT OVERWRITE DIRECTORY ... USING
          parquet; Floe: df.write.parquet): the baseline every case is also divided by
  1   INSERT INTO unpartitioned          2   INSERT INTO partitioned by days(ts), bucket(16, id)
  3   scan + aggregate of the partitioned table
  4   MERGE merge-on-read                5   read after it         6   DELETE 1% merge-on-read
  7   MERGE copy-on-write                8   read after it         9   DELETE 1% copy-on-write
  10a UPDATE 1% merge-on-read            10b UPDATE 1% copy-on-write
  11  MERGE with a partition-aligned source into the partitioned table (copy-on-write)
  12  DELETE of a whole day of the partitioned table (metadata only)
  13  rewrite_data_files of SMALL_FILES small files
  14  expire_snapshots of SNAPSHOTS snapshots (histories built by Floe's Python API for both engines:
      one pyarrow append per snapshot; building them through Java's SQL takes minutes)
  15a read with 10% of rows deleted by position deletes (each engine's own merge-on-read DELETE)
  15b read with 10% of rows deleted by equality deletes (one table written by Floe's apply_changes; Java cannot
      write equality deletes from Spark SQL, so both engines read that same table)
  4p-10ap, 7p-10bp  cases 4-10b on tables partitioned by days(ts), bucket(16, id) (960 partitions; the MERGE
      source and the 1% DELETE/UPDATE touch every partition): 4p MERGE, 5p read after it, 6p DELETE 1%, 10ap
      UPDATE 1% merge-on-read; 7p, 8p, 9p, 10bp the same copy-on-write

Setup (creating and filling the base tables) is untimed. Then, case by case, one jsql call runs the case's
repetitions in one JVM (after an untimed warm-up on the same files), followed by the same statements in the warm
Floe session; each repetition starts from the same table state (``rollback_to_snapshot`` to the base
snapshot, or a fresh table). Java's time is the statement's time inside its JVM (gaps between jsql's output
lines), Floe's the wall time of ``spark.sql(...).collect()``. Prints medians per engine, Java/Floe (above 1.0
Floe is faster), each engine's time over its own native Parquet write, whether the rows match (count and
sum(hash) of the table after the case, and the query's own result for reads), and a detail table: files per
engine after the case, and for Floe the Spark jobs/tasks of the median repetition with the seconds inside
Spark jobs vs on the driver (planning and commit in Python). ``--profile`` also runs one more Floe repetition
under cProfile for every case Floe loses, printing Floe's hottest functions.

Both engines get the same ``spark.sql.shuffle.partitions`` (``--shuffle-partitions``, Floe's session default
4) and local[2]. Run under the shared lock (the jsql child runs under the parent's lock):

    flock /tmp/floe-spark.lock env PYTHONPATH=. .venv/bin/python bench/vs_java.py [--rows 2000000] [--repeat 3]
        [--cases 1,2,4,13] [--small-files 2000] [--snapshots 1000] [--profile] [--keep]
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _jsql import ensure_jsql, run_statements, same_rows  # bench/_jsql.py (the script dir is on sys.path)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe.spark
from floe.spark.runtime.sql_session import floe_sql_state
from floe.spark.streaming.changes import apply_changes

DAYS = 60
BASE_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z
DAY_US = 86_400_000_000
ALIGNED_DAYS = (10, 11)  # the partition-aligned MERGE source's days
DROPPED_DAY = ("2024-01-21", "2024-01-22")  # case 12 deletes this whole day
# Each engine's namespace in catalog `bench`. Not "floe": Floe resolves a procedure's table => 'floe.t' as table t
# of its own embedded catalog `floe`, where Iceberg Java (no Spark catalog of that name) reads namespace floe.
NS = {"java": "java", "floe": "fl"}
SOURCES = ("input", "msrc", "asrc")  # input, MERGE source, partition-aligned MERGE source
COLUMNS = "id BIGINT, ts TIMESTAMP, category STRING, value DOUBLE"
V2 = "'format-version'='2'"
MOR = f"{V2}, 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
COW = f"{V2}, 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', 'write.merge.mode'='copy-on-write'"
PARTITIONED = "PARTITIONED BY (days(ts), bucket(16, id))"
CHECK = "SELECT count(*) AS n, sum(hash(id, ts, category, value)) AS h FROM {tbl}"
FILES = "SELECT content, count(*) AS files FROM {tbl}.files GROUP BY content ORDER BY content"
READ = ("SELECT category, count(*) AS n, sum(value) AS v, min(ts) AS lo, max(ts) AS hi FROM {tbl} "
        "GROUP BY category ORDER BY category")
MERGE = ("MERGE INTO {tbl} t USING (SELECT * FROM {src}) s ON {on} "
         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")


# -- cases ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One timed statement, run ``repeat`` times per engine from the same state.

    Templates are ``str.format``-ed per engine with: ns (``bench.java``/``bench.fl``), ns_short, input, msrc,
    asrc (input paths), native (an output folder), snap (base snapshot ids by table), rep (1-based)."""

    key: str
    title: str
    stmt: str
    table: str  # the table checked after the case (a template)
    base: tuple[str, ...] = ()  # base tables the setup must build
    once: tuple[str, ...] = ()  # untimed, before the first repetition
    prep: tuple[str, ...] = ()  # untimed, before every repetition
    checks: tuple[str, ...] = (CHECK, FILES)  # untimed, after the last repetition; rows compared across engines
    compare_result: bool = False  # also compare the timed statement's rows (reads)
    files_check: bool = True  # the last check lists files (shown per engine, not compared)


def _rollback(name: str) -> str:
    """Back to the base snapshot the setup left (the same state before every repetition)."""
    return f"CALL bench.system.rollback_to_snapshot(table => '{{ns_short}}.{name}', snapshot_id => {{snap[{name}]}})"


def _mode_cases(keys: tuple[str, str, str, str], name: str, mode: str) -> list[Case]:
    """MERGE, read after it, DELETE 1% and UPDATE 1% on the base table ``name`` (one write mode)."""
    tbl, merge = f"{{ns}}.{name}", MERGE.format(tbl=f"{{ns}}.{name}", src="{msrc}", on="t.id = s.id")

    def reset(key: str, title: str, stmt: str) -> Case:  # every repetition from the base snapshot
        return Case(key, title, stmt, tbl, base=(name,), prep=(_rollback(name),))

    return [
        reset(keys[0], f"MERGE {mode} (1% matched, 14% new)", merge),
        Case(keys[1], f"read after {mode} MERGE", READ.format(tbl=tbl), tbl, base=(name,),
             once=(_rollback(name), merge), compare_result=True),
        reset(keys[2], f"DELETE 1% {mode}", f"DELETE FROM {tbl} WHERE id % 100 = 7"),
        reset(keys[3], f"UPDATE 1% {mode}", f"UPDATE {tbl} SET value = value + 1.0 WHERE id % 100 = 13"),
    ]


def _cases() -> list[Case]:
    ins = "INSERT INTO {ns}.%s_{rep} SELECT * FROM {input}"
    order = ["native", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10a", "10b", "4p", "5p", "6p", "7p", "8p", "9p", "10ap",
             "10bp", "11", "12", "13", "14", "15a", "15b"]
    cases = [
        Case("native", "native Parquet write (baseline)", "INSERT OVERWRITE DIRECTORY '{native}' USING parquet "
             "SELECT * FROM {input}", "parquet.`{native}`", checks=(CHECK,), files_check=False),
        Case("1", "INSERT INTO unpartitioned", ins % "ins_u", "{ns}.ins_u_{rep}",
             prep=(f"CREATE TABLE {{ns}}.ins_u_{{rep}} ({COLUMNS}) USING iceberg TBLPROPERTIES ({V2})",)),
        Case("2", "INSERT INTO partitioned days(ts), bucket(16, id)", ins % "ins_p", "{ns}.ins_p_{rep}",
             prep=(f"CREATE TABLE {{ns}}.ins_p_{{rep}} ({COLUMNS}) USING iceberg {PARTITIONED} TBLPROPERTIES ({V2})",)),
        Case("3", "scan + aggregate, partitioned table", READ.format(tbl="{ns}.part"), "{ns}.part", base=("part",),
             compare_result=True),
        Case("11", "MERGE partition-aligned source (2 of 60 days, cow)",
             MERGE.format(tbl="{ns}.part", src="{asrc}", on="t.id = s.id AND t.ts = s.ts"), "{ns}.part",
             base=("part",), prep=(_rollback("part"),)),
        Case("12", "DELETE a whole day (metadata only)",
             f"DELETE FROM {{ns}}.part WHERE ts >= TIMESTAMP '{DROPPED_DAY[0]} 00:00:00' "
             f"AND ts < TIMESTAMP '{DROPPED_DAY[1]} 00:00:00'", "{ns}.part", base=("part",),
             prep=(_rollback("part"),)),
        Case("13", "rewrite_data_files of {small} small files",
             "CALL bench.system.rewrite_data_files(table => '{ns_short}.small')", "{ns}.small", base=("small",),
             prep=(_rollback("small"),)),
        Case("14", "expire_snapshots of {snapshots} snapshots",
             "CALL bench.system.expire_snapshots(table => '{ns_short}.exp_{rep}', "
             "older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)", "{ns}.exp_{rep}", base=("exp",),
             checks=(CHECK, "SELECT count(*) AS snapshots FROM {tbl}.snapshots", FILES)),
        Case("15a", "read, 10% deleted by position deletes", READ.format(tbl="{ns}.posdel"), "{ns}.posdel",
             base=("posdel",), compare_result=True),
        Case("15b", "read, 10% deleted by equality deletes (shared table)", READ.format(tbl="bench.shared.eqdel"),
             "bench.shared.eqdel", base=("eqdel",), compare_result=True),
        *_mode_cases(("4", "5", "6", "10a"), "mor", "merge-on-read"),
        *_mode_cases(("7", "8", "9", "10b"), "cow", "copy-on-write"),
        *_mode_cases(("4p", "5p", "6p", "10ap"), "pmor", "merge-on-read, 960 partitions"),
        *_mode_cases(("7p", "8p", "9p", "10bp"), "pcow", "copy-on-write, 960 partitions"),
    ]
    return sorted(cases, key=lambda c: order.index(c.key))


# -- data -----------------------------------------------------------------------------------------------
def _rows(ids: np.ndarray, ts_us: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "id": pa.array(ids.astype(np.int64)),
        "ts": pa.array(ts_us.astype(np.int64), pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "category": pa.array([f"cat-{c:02d}" for c in rng.integers(0, 50, len(ids)).tolist()]),
        "value": pa.array(np.round(rng.random(len(ids)) * 1000, 3)),
    })


def make_data(root: Path, rows: int, seed: int = 14) -> None:
    """input (4 files), msrc (MERGE source: 1% matched, 14% new) and asrc (two days: matched + new rows), written
    under root/java and copied to root/floe."""
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    ts = BASE_US + rng.integers(0, DAYS * DAY_US, rows)
    base = _rows(ids, ts, rng)
    out = root / "java"
    (out / "input").mkdir(parents=True)
    for k, chunk in enumerate(np.array_split(np.arange(rows), 4)):
        pq.write_table(base.slice(int(chunk[0]), len(chunk)) if len(chunk) else base.slice(0, 0),
                       out / "input" / f"part-{k}.parquet")
    matched = np.sort(rng.choice(rows, size=max(1, rows // 100), replace=False))
    new = np.arange(rows, rows + rows * 14 // 100, dtype=np.int64)
    msrc = pa.concat_tables([_rows(matched, ts[matched], rng),
                             _rows(new, BASE_US + rng.integers(0, DAYS * DAY_US, len(new)), rng)])
    (out / "msrc").mkdir()
    pq.write_table(msrc, out / "msrc" / "part-0.parquet")
    day = (ts - BASE_US) // DAY_US
    hit = np.flatnonzero(np.isin(day, ALIGNED_DAYS) & (ids % 4 == 0))
    fresh = np.arange(10 * rows, 10 * rows + len(hit), dtype=np.int64)
    fresh_ts = BASE_US + ALIGNED_DAYS[0] * DAY_US + rng.integers(0, len(ALIGNED_DAYS) * DAY_US, len(fresh))
    (out / "asrc").mkdir()
    pq.write_table(pa.concat_tables([_rows(hit, ts[hit], rng), _rows(fresh, fresh_ts, rng)]),
                   out / "asrc" / "part-0.parquet")
    shutil.copytree(out, root / "floe")


# -- engines --------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One engine's results for one case."""

    times: list[float] = field(default_factory=list)
    result: list[list[object]] | None = None  # the last timed statement's rows (reads)
    checks: list[list[list[object]]] = field(default_factory=list)
    error: str | None = None
    jobs: list[tuple[int, int, float]] = field(default_factory=list)  # per rep: Spark jobs, tasks, seconds in jobs

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times and self.error is None else None


def plain(v: object) -> object:
    """A value as jsql prints it, so both engines' rows compare."""
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    if hasattr(v, "asDict"):
        return {k: plain(x) for k, x in v.asDict().items()}  # type: ignore[attr-defined]
    return v


def _fmt(template: str, env: dict[str, object], rep: int) -> str:
    return template.format(**env, rep=rep)


def statements(case: Case, env: dict[str, object], repeat: int) -> tuple[list[str], list[int], list[int]]:
    """The case's statement list for one engine, the indexes of the timed ones and of the checks."""
    tbl = case.table
    out = [_fmt(s, env, 1) for s in case.once]
    timed = []
    for rep in range(1, repeat + 1):
        out += [_fmt(s, env, rep) for s in case.prep]
        timed.append(len(out))
        out.append(_fmt(case.stmt, env, rep))
    checks = []
    for c in case.checks:
        checks.append(len(out))
        out.append(_fmt(c.replace("{tbl}", tbl), env, repeat))
    return out, timed, checks


def warmups(case: Case, env: dict[str, object]) -> list[str]:
    """Untimed statements that load the classes and files a case uses (Java starts a JVM per case)."""
    out = [_fmt("SELECT count(*) FROM {input}", env, 1)]
    out += [_fmt(f"SELECT count(*) FROM {{ns}}.{b}", env, 1) for b in case.base if b in ("mor", "cow", "part", "pcow", "pmor", "posdel", "small")]
    return out


def run_java_case(case: Case, env: dict[str, object], cfg: dict[str, str], repeat: int, views: list[str]) -> Outcome:
    stmts, timed, checks = statements(case, env, repeat)
    warm = [*views, *warmups(case, env)]
    results = run_statements([*warm, *stmts], cfg)[len(warm):]
    out = Outcome()
    for r in results:
        if r.error is not None:
            out.error = f"{r.sql[:160]}: {r.error[:600]}"
            return out
    if len(results) < len(stmts):
        out.error = f"jsql stopped after {len(results)} of {len(stmts)} statements"
        return out
    out.times = [results[i].seconds for i in timed]
    out.result = results[timed[-1]].rows
    out.checks = [results[i].rows or [] for i in checks]
    return out


def _spark_jobs(spark: SparkSession, t0: float, t1: float) -> tuple[int, int, float]:
    """Jobs submitted in [t0, t1] (epoch seconds): count, tasks, and the seconds covered by their union."""
    store = spark.sparkContext._jsc.sc().statusStore()  # type: ignore[union-attr]
    it = store.jobsList(None).iterator()  # newest first
    spans, tasks = [], 0
    while it.hasNext():
        job = it.next()
        sub = job.submissionTime()
        if not sub.isDefined():
            continue
        start = sub.get().getTime() / 1000
        if start < t0 - 0.01:
            break
        end_opt = job.completionTime()
        end = end_opt.get().getTime() / 1000 if end_opt.isDefined() else t1
        spans.append((start, min(end, t1)))
        tasks += job.numTasks()
    covered, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                covered += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None and cur_s is not None:
        covered += cur_e - cur_s
    return len(spans), tasks, covered


def _floe_run(spark: SparkSession, case: Case, sql: str, env: dict[str, object]) -> list[list[object]]:
    if case.key == "native" and sql == _fmt(case.stmt, env, 0):
        spark.read.parquet(str(env["input_path"])).write.mode("overwrite").parquet(str(env["native"]))
        return []
    return [[plain(x) for x in row] for row in spark.sql(sql).collect()]


def run_floe_case(spark: SparkSession, case: Case, env: dict[str, object], repeat: int) -> Outcome:
    stmts, timed, checks = statements(case, env, repeat)
    out = Outcome()
    warm = warmups(case, env)
    for i, sql in enumerate([*warm, *stmts]):
        i -= len(warm)
        try:
            if i in timed:
                w0, t0 = time.time(), time.perf_counter()
                rows = _floe_run(spark, case, sql, env)
                out.times.append(time.perf_counter() - t0)
                out.jobs.append(_spark_jobs(spark, w0, time.time()))
                out.result = rows
            else:
                rows = _floe_run(spark, case, sql, env)
                if i in checks:
                    out.checks.append(rows)
        except Exception as e:  # noqa: BLE001 - a Floe failure is a finding: record it, go on
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            out.error = f"{sql[:160]}: {type(e).__name__}: {first[:600]}"
            traceback.print_exc(limit=6, file=sys.stdout)
            return out
    return out


def profile_floe(spark: SparkSession, case: Case, env: dict[str, object], rep: int) -> str:
    """One more Floe repetition (same starting state) under cProfile: Floe's hottest functions."""
    for s in case.prep:
        spark.sql(_fmt(s, env, rep)).collect()
    prof = cProfile.Profile()
    prof.enable()
    _floe_run(spark, case, _fmt(case.stmt, env, rep), env)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats(r"/floe/|py4j/java_gateway.py:.*\(__call__\)|socket", 22)
    return buf.getvalue()


# -- setup ----------------------------------------------------------------------------------------------
def base_statements(name: str, small_files: int) -> list[str]:
    """SQL each engine runs itself to build a base table."""
    fill = "INSERT INTO {ns}.%s SELECT * FROM {input}"
    if name == "mor":
        return [f"CREATE TABLE {{ns}}.mor ({COLUMNS}) USING iceberg TBLPROPERTIES ({MOR})", fill % "mor"]
    if name == "cow":
        return [f"CREATE TABLE {{ns}}.cow ({COLUMNS}) USING iceberg TBLPROPERTIES ({COW})", fill % "cow"]
    if name in ("part", "pcow", "pmor"):
        props = MOR if name == "pmor" else COW
        return [f"CREATE TABLE {{ns}}.{name} ({COLUMNS}) USING iceberg {PARTITIONED} TBLPROPERTIES ({props})", fill % name]
    if name == "small":
        return [f"CREATE TABLE {{ns}}.small ({COLUMNS}) USING iceberg TBLPROPERTIES ({V2})",
                f"INSERT INTO {{ns}}.small SELECT /*+ REPARTITION({small_files}) */ * FROM {{input}}"]
    if name == "posdel":
        return [f"CREATE TABLE {{ns}}.posdel ({COLUMNS}) USING iceberg TBLPROPERTIES ({MOR})", fill % "posdel",
                "DELETE FROM {ns}.posdel WHERE id % 10 = 3"]
    return []


def build_histories(spark: SparkSession, ns: str, tables: int, snapshots: int) -> float:
    """Tables exp_1..exp_N of ``snapshots + 1`` one-row appends each (Floe's Python API, no Spark); seconds."""
    t0 = time.perf_counter()
    ctx = floe_sql_state(spark).context
    for k in range(1, tables + 1):
        spark.sql(f"CREATE TABLE bench.{ns}.exp_{k} ({COLUMNS}) USING iceberg TBLPROPERTIES ({V2})").collect()
        table = ctx.load(("bench", ns, f"exp_{k}"))
        for i in range(snapshots + 1):
            row = pa.table({"id": pa.array([i], pa.int64()),
                            "ts": pa.array([BASE_US + i * 1_000_000], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                            "category": pa.array([f"cat-{i % 50:02d}"]), "value": pa.array([float(i)])})
            table = table.append(row)
    return time.perf_counter() - t0


def build_eqdel(spark: SparkSession, source: str, input_path: str) -> None:
    """bench.shared.eqdel: the input, then 10% of its ids deleted by equality deletes (apply_changes)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS bench.shared").collect()
    spark.sql(f"CREATE TABLE bench.shared.eqdel ({COLUMNS}) USING iceberg TBLPROPERTIES ({MOR})").collect()
    spark.sql(f"INSERT INTO bench.shared.eqdel SELECT * FROM {source}").collect()
    table = floe_sql_state(spark).context.load(("bench", "shared", "eqdel"))
    deletes = spark.read.parquet(input_path).where("id % 10 = 3").withColumn("op", F.lit("-D"))
    apply_changes(table, deletes, keys=["id"])


def snapshot_ids(spark: SparkSession, ns: str, names: Sequence[str]) -> dict[str, int]:
    ctx = floe_sql_state(spark).context
    out = {}
    for n in names:
        snap = ctx.load(("bench", ns, n)).current_snapshot()
        assert snap is not None, n
        out[n] = snap.snapshot_id
    return out


# -- report ---------------------------------------------------------------------------------------------
def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _r(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def _files(rows: list[list[object]]) -> str:
    names = {0: "data", 1: "pos", 2: "eq"}
    return " ".join(f"{names.get(int(str(c)), c)}={n}" for c, n in rows) if rows else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="all", help="comma-separated keys (10 = 10a,10b; 15 = 15a,15b)")
    ap.add_argument("--small-files", type=int, default=2000)
    ap.add_argument("--snapshots", type=int, default=1000)
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument("--profile", action="store_true", help="cProfile one more Floe run of every case under the 1.2 goal")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--driver-memory", default="4g", help="both engines (Java's fanout writer needs more than 1g)")
    ap.add_argument("--source", choices=("view", "parquet"), default="view",
                    help="read the inputs through temp views, or as parquet.`path` inside the statements")
    args = ap.parse_args()

    load_start = os.getloadavg()
    all_cases = _cases()
    wanted = {"native"}
    for k in (args.cases.split(",") if args.cases != "all" else [c.key for c in all_cases]):
        k = k.strip()
        wanted |= {c.key for c in all_cases if c.key == k or c.key.rstrip("ab") == k}
    cases = [c for c in all_cases if c.key in wanted]
    ensure_jsql()

    root = Path(tempfile.mkdtemp(prefix="floe-bench-vs-java-"))
    p = "spark.sql.catalog.bench"
    cfg = {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": f"jdbc:sqlite:{root}/catalog.db",
           f"{p}.warehouse": f"file:{root}/wh", "spark.sql.session.timeZone": "UTC",
           "spark.sql.shuffle.partitions": str(args.shuffle_partitions), "spark.driver.memory": args.driver_memory}
    t0 = time.perf_counter()
    make_data(root, args.rows)
    envs: dict[str, dict[str, object]] = {
        e: {"ns": f"bench.{NS[e]}", "ns_short": NS[e], "native": root / "native" / e, "snap": {},
            "input_path": root / e / "input",
            **{k: (f"src_{k}" if args.source == "view" else f"parquet.`{root / e / k}`") for k in SOURCES}}
        for e in ("java", "floe")
    }
    print(f"data: {args.rows:,} rows in {root} ({time.perf_counter() - t0:.1f} s)", flush=True)

    spark: SparkSession = floe.spark.session({"spark.master": "local[2]", **cfg})
    if args.source == "view":
        for k in SOURCES:
            spark.read.parquet(str(root / "floe" / k)).createOrReplaceTempView(f"src_{k}")
        java_views = [f"CREATE TEMPORARY VIEW src_{k} USING parquet OPTIONS (path '{root / 'java' / k}')" for k in SOURCES]
    else:
        java_views = []
    for ns in NS.values():
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS bench.{ns}").collect()
    bases = list(dict.fromkeys(b for c in cases for b in c.base))
    sql_bases = [b for b in bases if base_statements(b, args.small_files)]
    setup_errors: dict[tuple[str, str], str] = {}  # (engine, base table) -> error

    t0 = time.perf_counter()
    java_setup = [(b, _fmt(s, envs["java"], 0)) for b in sql_bases for s in base_statements(b, args.small_files)]
    if java_setup:
        ran = run_statements([*java_views, *(s for _, s in java_setup)], cfg, keep_going=True)[len(java_views):]
        for (b, _), r in zip(java_setup, ran, strict=False):
            if r.error and ("java", b) not in setup_errors:
                setup_errors["java", b] = f"{r.sql[:160]}: {r.error[:600]}"
    print(f"setup Java ({', '.join(sql_bases) or 'nothing'}): {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    for b in sql_bases:
        for s in base_statements(b, args.small_files):
            try:
                spark.sql(_fmt(s, envs["floe"], 0)).collect()
            except Exception as e:  # noqa: BLE001 - recorded; the cases on this table report it
                setup_errors["floe", b] = f"{s[:160]}: {type(e).__name__}: {str(e).strip().splitlines()[0][:600]}"
                traceback.print_exc(limit=6, file=sys.stdout)
                break
    print(f"setup Floe ({', '.join(sql_bases) or 'nothing'}): {time.perf_counter() - t0:.1f} s", flush=True)
    history_tables = args.repeat + (1 if args.profile else 0)
    if "exp" in bases:
        for e in ("java", "floe"):
            took = build_histories(spark, NS[e], history_tables, args.snapshots)
            print(f"setup {history_tables} histories of {args.snapshots + 1} snapshots for {e} (Floe's Python API): "
                  f"{took:.1f} s", flush=True)
    if "eqdel" in bases:
        t0 = time.perf_counter()
        build_eqdel(spark, str(envs["floe"]["input"]), str(envs["floe"]["input_path"]))
        print(f"setup equality-delete table (Floe apply_changes): {time.perf_counter() - t0:.1f} s", flush=True)
    rollback_bases = [b for b in ("mor", "cow", "part", "pcow", "pmor", "small") if b in bases]
    for e in ("java", "floe"):
        envs[e]["snap"] = snapshot_ids(spark, NS[e], [b for b in rollback_bases if (e, b) not in setup_errors])
    # files of the base tables, once: layouts differ per engine and explain much
    for b in sql_bases:
        got = []
        for e in ("java", "floe"):
            try:
                got.append(f"{e} {_files(spark.sql(FILES.format(tbl=f'bench.{NS[e]}.{b}')).collect())}")  # type: ignore[arg-type]
            except Exception as ex:  # noqa: BLE001 - shown, not fatal
                got.append(f"{e} ? ({type(ex).__name__})")
        print(f"base table {b}: " + "; ".join(got), flush=True)

    results: list[tuple[Case, Outcome, Outcome]] = []
    profiles: dict[str, str] = {}
    labels = {"small": f"{args.small_files:,}", "snapshots": f"{args.snapshots:,}"}
    for case in cases:
        title = case.title.format(**labels)
        print(f"\n== {case.key}: {title}", flush=True)
        broken = {e: err for (e, b), err in setup_errors.items() if b in case.base}
        java = (Outcome(error=f"setup failed: {broken['java']}") if "java" in broken
                else run_java_case(case, envs["java"], cfg, args.repeat, java_views))
        fl = (Outcome(error=f"setup failed: {broken['floe']}") if "floe" in broken
              else run_floe_case(spark, case, envs["floe"], args.repeat))
        print(f"   Java {[round(x, 2) for x in java.times]} {java.error or ''}", flush=True)
        print(f"   Floe {[round(x, 2) for x in fl.times]} jobs {fl.jobs} {fl.error or ''}", flush=True)
        results.append((case, java, fl))
        jm, fm = java.median, fl.median
        if args.profile and jm is not None and fm is not None and jm < 1.2 * fm and case.key != "native":
            try:
                profiles[case.key] = profile_floe(spark, case, envs["floe"], args.repeat + 1)
            except Exception as e:  # noqa: BLE001 - a profile is extra
                profiles[case.key] = f"profile failed: {type(e).__name__}: {e}"

    load_end = os.getloadavg()
    native_j = results[0][1].median if results and results[0][0].key == "native" else None
    native_f = results[0][2].median if results and results[0][0].key == "native" else None
    print(f"\n## Iceberg Java 1.10.2 (Spark 3.5.7) vs Floe (PySpark {spark.version}), {args.rows:,} rows, "
          f"median of {args.repeat}, local[2]\n")
    print("| # | case | Java s | Floe s | Java/Floe | Java/native | Floe/native | rows equal |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for case, java, fl in results:
        nc = len(case.checks) - (1 if case.files_check else 0)
        equal = same_rows(java.result, fl.result) if case.compare_result else True
        equal = equal and all(same_rows(a, b) for a, b in zip(java.checks[:nc], fl.checks[:nc], strict=False))
        equal = equal and len(java.checks) >= nc and len(fl.checks) >= nc
        verdict = "yes" if equal else ("-" if java.error or fl.error else "**NO**")
        jm, fm = java.median, fl.median
        fail = " ".join(f"({e} failed)" for e, o in (("Java", java), ("Floe", fl)) if o.error)
        print(f"| {case.key} | {case.title.format(**labels)} {fail}| {_s(jm)} | {_s(fm)} | {_r(jm, fm)} | "
              f"{_r(jm, native_j)} | {_r(fm, native_f)} | {verdict} |")
    print("\nDetail: files after the case (data/pos/eq delete files), Floe's median repetition: Spark jobs, tasks, "
          "seconds inside Spark jobs, seconds outside them (driver: Python planning, commit)\n")
    print("| # | Java files | Floe files | Floe jobs | tasks | in jobs s | driver s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for case, java, fl in results:
        jf = _files(java.checks[-1]) if case.files_check and java.checks else "-"  # type: ignore[arg-type]
        ff = _files(fl.checks[-1]) if case.files_check and fl.checks else "-"  # type: ignore[arg-type]
        if fl.median is not None and fl.jobs:
            k = sorted(range(len(fl.times)), key=lambda i: fl.times[i])[len(fl.times) // 2]
            jobs, tasks, inside = fl.jobs[k]
            detail = f"{jobs} | {tasks} | {inside:.2f} | {fl.times[k] - inside:.2f}"
        else:
            detail = "- | - | - | -"
        print(f"| {case.key} | {jf} | {ff} | {detail} |")
    failures = [(c.key, e, o.error) for c, j, f in results for e, o in (("Java", j), ("Floe", f)) if o.error]
    if failures:
        print("\nFailures:")
        for key, e, err in failures:
            print(f"- case {key} on {e}: {err}")
    for key, text in profiles.items():
        print(f"\nFloe profile, case {key} (cumulative seconds, Floe's functions):\n{text}")
    print(f"\nmachine: nproc {os.cpu_count()}, load average (1/5/15 min) at start {load_start[0]:.2f}/{load_start[1]:.2f}/"
          f"{load_start[2]:.2f}, at end {load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f}; "
          f"spark.sql.shuffle.partitions={args.shuffle_partitions} and spark.driver.memory={args.driver_memory} on both; "
          "Java runs each case in a fresh JVM after an untimed warm-up (its first repetition is often the slowest, "
          "JIT), Floe in one warm session"
          + (f"; expire histories built by Floe's Python API ({args.snapshots + 1} one-row appends per table, "
             "for both engines)" if "exp" in bases else ""))
    if max(load_start[0], load_end[0]) > 2.5:
        print("\n!!! WARNING: load average above 2.5 on a 2-core machine: other processes competed for the CPUs, "
              "so these figures are indicative only !!!")
    spark.stop()
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"kept {root}")


if __name__ == "__main__":
    main()
