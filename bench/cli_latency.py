"""CLI latency on a table with many snapshots: ``floe history | snapshots | files | describe`` as subprocesses.

Builds (once per run, in a temporary FLOE_HOME) two tables in the embedded SQLite catalog with N snapshots
each, every snapshot a metadata-only append of one small data-file descriptor committed through the
producer API (all staged in one transaction, so building is quick):

- ``bench.events``: fast appends, one new manifest per snapshot, so ``floe files`` reads N manifests (the
  worst case: a table nobody ever compacted).
- ``bench.merged``: merge appends (Iceberg's default ``append``), which fold small manifests together once
  ``commit.manifest.min-count-to-merge`` (100) accumulate, so the current snapshot has at most ~100.

Then times each command as a fresh ``python -m floe.cli.main`` process: median of 5 runs (after one
warm-up), with ``python -c pass`` and ``python -c "import floe"`` as baselines. Listings print both as CSV
and in the default table format.

Installed packages run from compiled bytecode, but this environment may set ``PYTHONDONTWRITEBYTECODE``,
which would make every run compile Floe's modules from source (~0.1-0.2 s). By default the runs use a
temporary ``PYTHONPYCACHEPREFIX`` (the repository is not touched) so they measure what an installed
``floe`` does; ``--no-bytecode-cache`` measures the compile-every-time case instead.

    python3 bench/cli_latency.py [--snapshots 1000] [--runs 5] [--no-bytecode-cache] [--skip-merged]
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


def build_tables(home: Path, snapshots: int, *, merged: bool) -> list[str]:
    """Create ``bench.events`` (fast appends) and, if ``merged``, ``bench.merged`` (merge appends)."""
    sys.path.insert(0, str(REPO))
    from floe.catalog.loader import open_catalog
    from floe.config import FloeConfig
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
    names = ["events", "merged"] if merged else ["events"]
    for name in names:
        table = catalog.create_table(("bench", name), schema, partition_spec=spec)  # type: ignore[attr-defined]
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
            append = txn.new_fast_append() if name == "events" else txn.new_append()
            append.append_file(f).commit()
        txn.commit_transaction()
    return [f"bench.{name}" for name in names]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(cmd: list[str], env: dict[str, str], runs: int) -> tuple[float, float, int]:
    """Median wall time, median CPU time (user+sys; less sensitive to a busy machine), output lines."""
    walls, cpus = [], []
    lines = 0
    subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm-up: caches, compiled bytecode
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
    parser.add_argument("--no-bytecode-cache", action="store_true", help="compile Floe from source each run")
    parser.add_argument("--skip-merged", action="store_true", help="only the fast-append table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="floe-cli-bench-") as tmp:
        home = Path(tmp)
        start = time.perf_counter()
        idents = build_tables(home, args.snapshots, merged=not args.skip_merged)
        print(
            f"built {', '.join(idents)} with {args.snapshots} snapshots each in {time.perf_counter() - start:.1f}s",
            flush=True,
        )
        env = {**os.environ, "FLOE_HOME": str(home), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
        if args.no_bytecode_cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
        py = [sys.executable]
        cli = [*py, "-m", "floe.cli.main"]
        rows = [
            ("python -c pass", [*py, "-c", "pass"]),
            ("python -c 'import floe'", [*py, "-c", "import floe"]),
            ("floe tables", [*cli, "tables"]),
        ]
        for ident in idents:
            short = ident.split(".")[-1]
            rows += [
                (f"history {short} (csv)", [*cli, "history", ident, "--format", "csv"]),
                (f"history {short}", [*cli, "history", ident]),
                (f"snapshots {short} (csv)", [*cli, "snapshots", ident, "--format", "csv"]),
                (f"snapshots {short}", [*cli, "snapshots", ident]),
                (f"files {short} (csv)", [*cli, "files", ident, "--format", "csv"]),
                (f"files {short}", [*cli, "files", ident]),
                (f"describe {short}", [*cli, "describe", ident]),
            ]
        cache = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {cache}")
        print(f"{'command':<28}{'wall s':>9}{'cpu s':>9}{'lines':>8}   (medians of {args.runs})")
        for name, cmd in rows:
            wall, cpu, lines = _time(cmd, env, args.runs)
            print(f"{name:<28}{wall:>9.3f}{cpu:>9.3f}{lines:>8}", flush=True)
        # Wall times track the machine's load; CPU times much less so. Quote both loads with the table.
        print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
