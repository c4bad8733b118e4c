"""Benchmark: decoding one large manifest with Floe's ``read_manifest`` vs PyIceberg 0.12's reader.

Writes one v2 manifest (default 100,000 entries; partitioned by identity(category) and day(ts); metrics
maps and bounds for 10 columns, as Spark writes them) with Floe's ManifestWriter, then decodes it with
both readers, alternating runs so machine load affects both alike. Both apply sequence-number and
snapshot-id inheritance from the same manifest-list entry and return every entry as typed objects.

Prints median CPU seconds (process time: stable on a shared machine) and wall seconds of each side,
entries/s, and the ratio Floe/PyIceberg in entries/s (> 1 = Floe faster).

    PYTHONPATH=. python3 bench/manifest_decode.py [--entries 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import ManifestContent as PyManifestContent
from pyiceberg.manifest import ManifestFile as PyManifestFile

from floe.serde.manifest_avro import ManifestWriter, read_manifest
from floe.serde.single_value import to_bytes
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestFile
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import DoubleType, LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType()),
    NestedField(3, "ts", TimestampType()),
    *(NestedField(i, f"m{i}", LongType() if i % 2 else DoubleType()) for i in range(4, 11)),
)
SPEC = PartitionSpecBuilder(SCHEMA).identity("category").day("ts").build()


def write_manifest(path: Path, entries: int) -> ManifestFile:
    """One manifest of ``entries`` data files with realistic metrics for all 10 columns."""
    rnd = random.Random(7)
    columns = range(1, 11)
    with path.open("wb") as out:
        writer = ManifestWriter(
            out, spec=SPEC, schema=SCHEMA, format_version=2, snapshot_id=1, manifest_path=str(path)
        )
        for i in range(entries):
            rows = rnd.randrange(10_000, 2_000_000)
            day = 19_000 + i % 365
            lower = {c: to_bytes(LongType(), rnd.randrange(1 << 40)) for c in columns if c != 2}
            upper = {c: to_bytes(LongType(), rnd.randrange(1 << 40, 1 << 50)) for c in columns if c != 2}
            lower[2], upper[2] = b"alpha", b"zulu"
            writer.add(
                DataFile(
                    content=FileContent.DATA,
                    file_path=f"s3://bucket/warehouse/db/events/data/category=c{i % 11}/ts_day={day}/"
                    f"00{i % 97:03d}-{i}-4f1c2a8e-9b7d-4e0a-8c1f-{i:012d}-00001.parquet",
                    file_format=FileFormat.PARQUET,
                    partition=(f"c{i % 11}", day),
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
        return writer.close().with_changes(sequence_number=1, min_sequence_number=1)


def measure(fn: Callable[[], int]) -> tuple[float, float, int]:
    cpu, wall = time.process_time(), time.perf_counter()
    n = fn()
    return time.process_time() - cpu, time.perf_counter() - wall, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "manifest.avro"
        t0 = time.perf_counter()
        mf = write_manifest(path, args.entries)
        print(
            f"wrote {args.entries:,} entries ({path.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f}s"
        )

        py_manifest = PyManifestFile.from_args(
            manifest_path=str(path),
            manifest_length=mf.manifest_length,
            partition_spec_id=0,
            content=PyManifestContent.DATA,
            sequence_number=1,
            min_sequence_number=1,
            added_snapshot_id=1,
        )
        io = PyArrowFileIO()

        def floe() -> int:
            with path.open("rb") as fh:
                return len(read_manifest(fh, manifest_file=mf, partition_spec=SPEC, schema=SCHEMA))

        def pyiceberg() -> int:
            return len(py_manifest.fetch_manifest_entry(io, discard_deleted=False))

        results: dict[str, list[tuple[float, float]]] = {"floe": [], "pyiceberg": []}
        for _ in range(args.runs):
            for name, fn in (("floe", floe), ("pyiceberg", pyiceberg)):
                cpu, wall, n = measure(fn)
                assert n == args.entries, (name, n)
                results[name].append((cpu, wall))

    rates = {}
    for name, runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        rates[name] = args.entries / cpu
        print(f"{name:10s} cpu {cpu:6.2f}s  wall {wall:6.2f}s  {rates[name]:10,.0f} entries/s (cpu)")
    print(f"ratio Floe/PyIceberg (entries/s, cpu): {rates['floe'] / rates['pyiceberg']:.2f}")


if __name__ == "__main__":
    main()
