"""Benchmark: what rewrite_manifests buys scan planning, and what expire_snapshots costs.

Builds a v2 SQLite-catalog table under a temp folder with C fast appends (each one manifest of F file
descriptors spread over P identity partitions, so every manifest spans every partition and no manifest
can be pruned). Then, in the same run:
- one-partition planning (``p = 3``) before rewrite_manifests (baseline) and after it, where the
  partition-clustered manifests let the manifest summaries prune most manifests;
- rewrite_manifests itself and expire_snapshots of all but the newest snapshot.

Prints medians of wall seconds and the ratio before/after (> 1 = planning got faster).

    PYTHONPATH=. python3 bench/maintenance.py [--commits 200] [--files 50] [--partitions 20] [--runs 5]
        [--manifest-target-bytes 8388608]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import floe
from floe.maintenance import expire_snapshots, rewrite_manifests
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import IntegerType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "data", StringType()),
    NestedField(3, "p", IntegerType()),
)


def median_seconds(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--manifest-target-bytes", type=int, default=8 * 1024 * 1024)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="floe-bench-maintenance-"))
    cat = floe.load_catalog("bench", type="sql", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "wh"))
    cat.create_namespace_if_not_exists("db")
    spec = PartitionSpecBuilder(SCHEMA).identity("p").build()
    t = cat.create_table("db.t", SCHEMA, partition_spec=spec, properties={
        "format-version": "2", "commit.manifest.target-size-bytes": str(args.manifest_target_bytes),
    })
    start = time.perf_counter()
    for c in range(args.commits):
        op = t.new_fast_append()
        for i in range(args.files):
            op.append_file(
                DataFile(FileContent.DATA, f"{root}/data/{c}-{i}.parquet", FileFormat.PARQUET,
                         (i % args.partitions,), 10, 1000)
            )
        op.commit()
    print(f"setup: {args.commits} commits x {args.files} files in {time.perf_counter() - start:.1f}s")

    def plan() -> None:
        n = sum(1 for _ in t.scan("p = 3").plan_files())
        assert n == args.commits * sum(1 for i in range(args.files) if i % args.partitions == 3), n

    before = median_seconds(plan, args.runs)
    start = time.perf_counter()
    result = rewrite_manifests(t)
    rewrite = time.perf_counter() - start
    after = median_seconds(plan, args.runs)
    start = time.perf_counter()
    expired = expire_snapshots(t, older_than_ms=t.current_snapshot().timestamp_ms + 1)
    expire = time.perf_counter() - start
    print(f"rewrite_manifests: {result.rewritten_manifests_count} -> {result.added_manifests_count} manifests in {rewrite:.2f}s")
    print(f"plan p = 3 median: before {before:.3f}s, after {after:.3f}s, ratio before/after {before / after:.1f}x")
    print(
        f"expire_snapshots: {len(expired.expired_snapshot_ids)} snapshots, "
        f"{expired.deleted_manifest_files_count} manifests + {expired.deleted_manifest_lists_count} lists in {expire:.2f}s"
    )


if __name__ == "__main__":
    main()
