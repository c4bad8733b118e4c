"""CLI latency on a table with many snapshots: ``floe history | snapshots | files | describe`` as subprocesses.

Builds (once per run, in a temporary FLOE_HOME) a table in the embedded SQLite catalog with N snapshots,
each a metadata-only fast append of one small data-file descriptor committed through the producer API
(all staged in one transaction, so building is quick), then times each command as a fresh ``python -m
floe.cli.main`` process: median of 5 runs, with ``python -c pass`` and ``python -c "import floe"`` as
baselines. The 1,000-row listings print as CSV (the rich table renderer alone costs ~1 s for 1,000 rows;
one row shows it). The goal is well under a second per command.

    python3 bench/cli_latency.py [--snapshots 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_table(home: Path, snapshots: int) -> str:
    """Create ``bench.events`` with ``snapshots`` fast appends; returns the table identifier."""
    sys.path.insert(0, str(REPO))
    from floe.config import FloeConfig, open_catalog
    from floe.spec.manifest import DataFile, FileContent, FileFormat
    from floe.spec.partitioning import PartitionSpecBuilder
    from floe.spec.schema import Schema
    from floe.spec.types import LongType, NestedField, StringType

    config = FloeConfig.load(environ={"FLOE_HOME": str(home), "HOME": str(home)}, cwd=home)
    catalog = open_catalog(config.default_catalog, config.catalog_properties(config.default_catalog))
    catalog.create_namespace(("bench",))  # type: ignore[attr-defined]
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "dt", StringType(), required=False),
    )
    spec = PartitionSpecBuilder(schema).identity("dt").build()
    table = catalog.create_table(("bench", "events"), schema, partition_spec=spec)  # type: ignore[attr-defined]
    txn = table.transaction()
    for i in range(snapshots):
        day = f"2024-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}"
        f = DataFile(
            content=FileContent.DATA,
            file_path=f"{table.location()}/data/dt={day}/{i:05d}.parquet",
            file_format=FileFormat.PARQUET,
            partition=(day,),
            record_count=100,
            file_size_in_bytes=4096,
            value_counts={1: 100, 2: 100},
            null_value_counts={1: 0, 2: 0},
        )
        txn.new_fast_append().append_file(f).commit()
    txn.commit_transaction()
    return "bench.events"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(cmd: list[str], env: dict[str, str], runs: int) -> tuple[float, float, int]:
    """Median wall time, median CPU time (user+sys; less sensitive to a busy machine), output lines."""
    walls, cpus = [], []
    lines = 0
    for _ in range(runs):
        cpu0, start = _cpu(), time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
        lines = proc.stdout.count("\n")
    return statistics.median(walls), statistics.median(cpus), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="floe-cli-bench-") as tmp:
        home = Path(tmp)
        start = time.perf_counter()
        ident = build_table(home, args.snapshots)
        print(f"built {ident} with {args.snapshots} snapshots in {time.perf_counter() - start:.1f}s")
        env = {**os.environ, "FLOE_HOME": str(home), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
        py = [sys.executable]
        cli = [*py, "-m", "floe.cli.main"]
        rows = [
            ("python -c pass", [*py, "-c", "pass"]),
            ("python -c 'import floe'", [*py, "-c", "import floe"]),
            ("floe history", [*cli, "history", ident, "--format", "csv"]),
            ("floe history (table fmt)", [*cli, "history", ident]),
            ("floe snapshots", [*cli, "snapshots", ident, "--format", "csv"]),
            ("floe files", [*cli, "files", ident, "--format", "csv"]),
            ("floe describe", [*cli, "describe", ident]),
        ]
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{'command':<28}{'wall s':>9}{'cpu s':>9}{'lines':>8}   (medians of {args.runs})")
        for name, cmd in rows:
            wall, cpu, lines = _time(cmd, env, args.runs)
            print(f"{name:<28}{wall:>9.3f}{cpu:>9.3f}{lines:>8}")


if __name__ == "__main__":
    main()
