"""Commit latency: a one-file append to a table with 1,000 snapshots, Floe vs PyIceberg, same SQLite catalog.

Both append an existing data file descriptor (no data is written) with a fast append to the same table,
alternating, from an already loaded table handle; the metric is the median wall time of one commit (new
manifest, manifest list over all existing manifests, metadata JSON with every snapshot, catalog swap).

    python bench/commit.py [--snapshots 1000] [--rounds 30]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
from pyiceberg.manifest import DataFile as PyDataFile
from pyiceberg.manifest import DataFileContent
from pyiceberg.manifest import FileFormat as PyFileFormat
from pyiceberg.typedef import Record

import floe
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType


def floe_file(i: int) -> DataFile:
    return DataFile(FileContent.DATA, f"/bench/data/f-{i}.parquet", FileFormat.PARQUET, (), 100, 4096)


def pyiceberg_file(i: int) -> PyDataFile:
    return PyDataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f"/bench/data/p-{i}.parquet",
        file_format=PyFileFormat.PARQUET,
        partition=Record(),
        record_count=100,
        file_size_in_bytes=4096,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="floe-bench-commit-"))
    uri = f"sqlite:///{tmp}/catalog.db"
    cat = floe.load_catalog("bench", type="sql", uri=uri, warehouse=str(tmp / "wh"))
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "data", StringType()))
    table = cat.create_table("db.t", schema)
    start = time.perf_counter()
    for i in range(args.snapshots):
        table.new_fast_append().append_file(floe_file(i)).commit()
    print(f"setup: {args.snapshots} snapshots in {time.perf_counter() - start:.1f} s")

    py_table = PySqlCatalog("bench", uri=uri, warehouse=f"file://{tmp}/wh").load_table("db.t")
    table = cat.load_table("db.t")
    floe_ms: list[float] = []
    py_ms: list[float] = []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        table.new_fast_append().append_file(floe_file(100_000 + r)).commit()
        floe_ms.append((time.perf_counter() - t0) * 1000)
        py_table.refresh()  # pick up Floe's commit outside the timed region (both start from a loaded handle)
        t0 = time.perf_counter()
        with py_table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            append.append_data_file(pyiceberg_file(r))
        py_ms.append((time.perf_counter() - t0) * 1000)
        table.refresh()
    assert len(table.snapshots()) == args.snapshots + 2 * args.rounds
    f, p = statistics.median(floe_ms), statistics.median(py_ms)
    print(f"table: {len(table.snapshots())} snapshots, {tmp}")
    print(f"floe      median {f:7.1f} ms   (p10 {_pct(floe_ms, 10):.1f}, p90 {_pct(floe_ms, 90):.1f})")
    print(f"pyiceberg median {p:7.1f} ms   (p10 {_pct(py_ms, 10):.1f}, p90 {_pct(py_ms, 90):.1f})")
    print(f"ratio floe/pyiceberg = {f / p:.2f}  ({'Floe no slower' if f <= p else 'Floe slower'})")


def _pct(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


if __name__ == "__main__":
    main()
