"""Benchmark: scan planning of a large table, Floe's ``plan_files`` vs PyIceberg 0.12's.

Builds (once, cached under /tmp) a v2 table of M manifests x N entries written directly with Floe's
ManifestWriter (partitioned by day(ts); manifest i holds day 19000 + i; metrics for 10 columns as Spark
writes them), a manifest list and a metadata JSON both libraries open. Then times, alternating runs:
- full plan: every data file;
- one-partition plan: ``ts`` within one day (manifest summaries prune all other manifests);
- point lookup: ``id = 5``, pruned only by column bounds (every manifest is read, almost every file dropped).

With ``--java``, Iceberg Java 1.10's own planner (``planFiles`` through its Table API, in the java-iceberg
venv's JVM, bench/_java_plan.py) plans the same table file: its first run is reported as cold, the median
of the rest as warm.

Floe plans as Iceberg Java's planFiles does by default: column metrics are decoded only for the
filter's columns (``TableScan.include_column_stats()`` loads them all); PyIceberg decodes every metric.

Prints the median wall and CPU seconds of each side and the ratios PyIceberg/Floe (> 1 = Floe faster);
on a busy machine CPU time is the steadier measure.

    PYTHONPATH=. python3 bench/plan.py [--manifests 1000] [--entries 1000] [--runs 3] [--java]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from floe.serde.manifest_avro import write_manifest_list
from floe.serde.manifest_writer import ManifestWriter
from floe.serde.metadata_json import table_metadata_to_bytes
from floe.serde.single_value import to_bytes
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestFile
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.refs import SnapshotRef
from floe.spec.schema import Schema
from floe.spec.snapshot import Operation, Snapshot, SnapshotLogEntry, Summary
from floe.spec.sort_order import UNSORTED_SORT_ORDER
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import DoubleType, LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType()),
    NestedField(3, "ts", TimestampType()),
    *(NestedField(i, f"m{i}", LongType() if i % 2 else DoubleType()) for i in range(4, 11)),
)
SPEC = PartitionSpecBuilder(SCHEMA).day("ts").build()
SNAPSHOT_ID = 1
FIRST_DAY = 19_000
DAY_MICROS = 86_400_000_000


def _write_manifest(args: tuple[str, int, int]) -> ManifestFile:
    path, index, entries = args
    rnd = random.Random(index)
    day = FIRST_DAY + index
    columns = range(1, 11)
    with open(path, "wb") as out:
        w = ManifestWriter(
            out, spec=SPEC, schema=SCHEMA, format_version=2, snapshot_id=SNAPSHOT_ID, manifest_path=path
        )
        for i in range(entries):
            rows = rnd.randrange(10_000, 2_000_000)
            lower = {c: to_bytes(LongType(), rnd.randrange(1 << 40)) for c in columns if c != 2}
            upper = {c: to_bytes(LongType(), rnd.randrange(1 << 40, 1 << 50)) for c in columns if c != 2}
            lower[3], upper[3] = (
                to_bytes(LongType(), day * DAY_MICROS),
                to_bytes(LongType(), (day + 1) * DAY_MICROS - 1),
            )
            lower[2], upper[2] = b"alpha", b"zulu"
            w.add(
                DataFile(
                    content=FileContent.DATA,
                    file_path=f"/tmp/bench/data/ts_day={day}/00{i % 97:03d}-{i}-4f1c2a8e-9b7d-{index:06d}-{i:08d}.parquet",
                    file_format=FileFormat.PARQUET,
                    partition=(day,),
                    record_count=rows,
                    file_size_in_bytes=rows * 9,
                    column_sizes={c: rnd.randrange(1 << 10, 1 << 26) for c in columns},
                    value_counts={c: rows for c in columns},
                    null_value_counts={c: rnd.randrange(0, 100) for c in columns},
                    nan_value_counts={c: 0 for c in columns if c % 2 == 0 and c > 3},
                    lower_bounds=lower,
                    upper_bounds=upper,
                    split_offsets=(4, rows * 4),
                    sort_order_id=0,
                )
            )
        return w.close()


def build_table(root: Path, manifests: int, entries: int) -> Path:
    """Write the table once; returns the metadata JSON path."""
    meta = root / "metadata" / "v1.metadata.json"
    if meta.exists():
        return meta
    (root / "metadata").mkdir(parents=True, exist_ok=True)
    jobs = [(str(root / "metadata" / f"m{i:05d}.avro"), i, entries) for i in range(manifests)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(os.cpu_count() or 2) as pool:
        written = list(pool.map(_write_manifest, jobs, chunksize=8))
    list_path = root / "metadata" / f"snap-{SNAPSHOT_ID}.avro"
    with open(list_path, "wb") as out:
        write_manifest_list(
            out,
            written,
            format_version=2,
            snapshot_id=SNAPSHOT_ID,
            parent_snapshot_id=None,
            sequence_number=1,
        )
    now = int(time.time() * 1000)
    snap = Snapshot(SNAPSHOT_ID, now, Summary.of(Operation.APPEND, {}), str(list_path), None, 1, 0)
    md = TableMetadata(
        format_version=2,
        table_uuid=uuid.uuid4(),
        location=str(root),
        last_updated_ms=now,
        last_column_id=SCHEMA.highest_field_id,
        schemas=(SCHEMA,),
        current_schema_id=0,
        partition_specs=(SPEC,),
        default_spec_id=SPEC.spec_id,
        last_partition_id=1000,
        sort_orders=(UNSORTED_SORT_ORDER,),
        default_sort_order_id=0,
        current_snapshot_id=SNAPSHOT_ID,
        snapshots=(snap,),
        snapshot_log=(SnapshotLogEntry(now, SNAPSHOT_ID),),
        refs={"main": SnapshotRef(SNAPSHOT_ID)},
        last_sequence_number=1,
    )
    meta.write_bytes(table_metadata_to_bytes(md))
    print(f"wrote {manifests} manifests x {entries} entries in {time.perf_counter() - t0:.1f}s")
    return meta


def timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    """Wall and CPU seconds (this process, all threads) of one call, and its result."""
    t, c = time.perf_counter(), time.process_time()
    n = fn()
    return time.perf_counter() - t, time.process_time() - c, n


def java_plans(meta: Path, runs: int, cases: dict[str, str]) -> dict[str, dict[str, object]]:
    """Iceberg Java's planFiles on the same metadata file (bench/_java_plan.py in the java-iceberg venv)."""
    from _jsql import JSQL_HOME, ensure_jsql

    ensure_jsql()
    home = Path(os.environ.get("FLOE_JAVA_ICEBERG_HOME", Path.home() / ".cache" / "floe-java-iceberg"))
    command = [
        str(home / "venv" / "bin" / "python"), str(Path(__file__).with_name("_java_plan.py")),
        "--jars", str(home / "jars.txt"), "--metadata", str(meta), "--runs", str(runs + 1),
    ]
    for name, text in cases.items():
        command += ["--case", f"{name}:{text}"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=JSQL_HOME).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manifests", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-pyiceberg-full", action="store_true", help="time PyIceberg's full plan once")
    parser.add_argument("--java", action="store_true", help="also time Iceberg Java's planFiles")
    args = parser.parse_args()

    root = Path(f"/tmp/floe_bench_plan_{args.manifests}x{args.entries}")
    meta = build_table(root, args.manifests, args.entries)

    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
    from pyiceberg.table import StaticTable

    from floe.spark.scan.table_read import load_table

    day = FIRST_DAY + args.manifests // 2
    lo = dt.datetime(1970, 1, 1) + dt.timedelta(days=day)
    hi = lo + dt.timedelta(days=1)
    floe_filter = f"ts >= TIMESTAMP '{lo.isoformat()}' and ts < TIMESTAMP '{hi.isoformat()}'"
    py_filter = And(GreaterThanOrEqual("ts", lo.isoformat()), LessThan("ts", hi.isoformat()))

    def floe_point() -> int:
        return sum(1 for _ in load_table(None, str(meta)).scan("id = 5").plan_files())

    def py_point() -> int:
        return sum(1 for _ in StaticTable.from_metadata(str(meta)).scan(row_filter=EqualTo("id", 5)).plan_files())

    def floe_full() -> int:
        return sum(1 for _ in load_table(None, str(meta)).scan().plan_files())

    def floe_one() -> int:
        return sum(1 for _ in load_table(None, str(meta)).scan(floe_filter).plan_files())

    def py_full() -> int:
        return sum(1 for _ in StaticTable.from_metadata(str(meta)).scan().plan_files())

    def py_one() -> int:
        return sum(1 for _ in StaticTable.from_metadata(str(meta)).scan(row_filter=py_filter).plan_files())

    total = args.manifests * args.entries
    java_cases = {
        "one-partition": f"ts>={lo.isoformat()},ts<{hi.isoformat()}",
        "point": "id=5",
        "full": "",
    }
    java = java_plans(meta, args.runs, java_cases) if args.java else {}
    for label, f_fn, p_fn, expect in (
        ("one-partition", floe_one, py_one, args.entries),
        ("point", floe_point, py_point, None),
        ("full", floe_full, py_full, total),
    ):
        times: dict[str, list[float]] = {"floe": [], "pyiceberg": []}
        cpu: dict[str, list[float]] = {"floe": [], "pyiceberg": []}
        counts: set[int] = set()
        for run in range(args.runs):
            for name, fn in (("floe", f_fn), ("pyiceberg", p_fn)):
                if name == "pyiceberg" and label == "full" and args.skip_pyiceberg_full and run > 0:
                    continue
                secs, cpu_secs, n = timed(fn)
                counts.add(n)
                times[name].append(secs)
                cpu[name].append(cpu_secs)
        if label in java:
            counts.add(int(java[label]["files"]))  # type: ignore[call-overload]
        # every planner keeps the same files (the point lookup's count depends only on the seeded bounds)
        assert len(counts) == 1 and (expect is None or counts == {expect}), (label, counts, expect)
        f, p = statistics.median(times["floe"]), statistics.median(times["pyiceberg"])
        fc, pc = statistics.median(cpu["floe"]), statistics.median(cpu["pyiceberg"])
        line = (
            f"{label:14s} files={counts.pop():>9,}  wall: floe {f:8.2f}s  pyiceberg {p:8.2f}s  ratio {p / f:5.2f}"
            f"  | cpu: floe {fc:8.2f}s  pyiceberg {pc:8.2f}s  ratio {pc / fc:5.2f}"
        )
        if label in java:
            seconds = [float(x) for x in java[label]["seconds"]]  # type: ignore[union-attr]
            cold, warm = seconds[0], statistics.median(seconds[1:])
            line += f"  | java cold {cold:8.2f}s warm {warm:8.2f}s  ratio java-warm/floe {warm / f:5.2f}"
        print(line, flush=True)

if __name__ == "__main__":
    main()
