"""Benchmark: Floe's ``table.append(pa_table)`` vs PyIceberg's ``append`` of the same Arrow table.

Rows: id long, ts timestamp, category string, value double; tables unpartitioned, partitioned by
identity(category), and by day(ts). PyIceberg needs ``pyiceberg-core`` (a test dependency) for day(ts);
without it that case reports Floe's time alone. SQLite catalogs in a temp dir (a fresh table per run, so
every append starts from empty).
Prints the median seconds of each side and the ratio (PyIceberg time / Floe time; > 1 = Floe faster).

    python3 bench/append_local.py [--rows 4000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog

    from floe.catalog.base import Catalog


def make_data(rows: int) -> pa.Table:
    rng = np.random.default_rng(42)
    start = np.datetime64("2024-01-01T00:00:00", "us")
    ts = start + rng.integers(0, 60 * 86_400 * 10**6, rows).astype("timedelta64[us]")
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "ts": pa.array(ts, pa.timestamp("us")),
            "category": pa.array(rng.choice(np.array(["alpha", "beta", "gamma", "delta", "epsilon"]), rows)),
            "value": pa.array(rng.random(rows)),
        }
    )


def catalogs(prefix: str) -> tuple[Catalog, SqlCatalog]:
    """A Floe and a PyIceberg SQLite catalog, each with namespace ``db``, in a new temp dir."""
    from pyiceberg.catalog.sql import SqlCatalog

    import floe

    tmp = tempfile.mkdtemp(prefix=prefix)
    floe_cat = floe.load_catalog(
        "bench", type="sql", uri=f"sqlite:///{tmp}/floe.db", warehouse=f"{tmp}/floe-wh"
    )
    floe_cat.create_namespace("db")
    py_cat = SqlCatalog("bench", uri=f"sqlite:///{tmp}/py.db", warehouse=f"file://{tmp}/py-wh")
    py_cat.create_namespace("db")
    return floe_cat, py_cat


def median_times(a: Callable[[int], None], b: Callable[[int], None], runs: int) -> tuple[float, float]:
    """Median seconds of ``a`` and ``b``, run alternately so machine load affects both alike."""
    ta, tb = [], []
    for i in range(runs):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn(i)
            out.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from pyiceberg.exceptions import NotInstalledError
    from pyiceberg.transforms import DayTransform as PyDay

    from floe.spec.partitioning import PartitionSpecBuilder

    warnings.filterwarnings("ignore")
    data = make_data(args.rows)
    floe_cat, py_cat = catalogs("floe-bench-append-")

    print(f"rows={args.rows:,} runs={args.runs} (median seconds; ratio = pyiceberg / floe)")
    for case in ("unpartitioned", "identity(category)", "day(ts)"):

        def floe_run(i: int, case: str = case) -> None:
            name = f"db.f_{case.split('(')[0]}_{i}"
            t = floe_cat.create_table(name, data.schema)
            if case != "unpartitioned":
                b = PartitionSpecBuilder(t.schema())
                spec = (b.day("ts") if case == "day(ts)" else b.identity("category")).build()
                floe_cat.drop_table(name)
                t = floe_cat.create_table(name, data.schema, partition_spec=spec)
            t.append(data)

        def py_run(i: int, case: str = case) -> None:
            name = f"db.p_{case.split('(')[0]}_{i}"
            t = py_cat.create_table(name, data.schema)
            if case != "unpartitioned":
                with t.update_spec() as update:
                    if case == "day(ts)":
                        update.add_field("ts", PyDay(), "ts_day")
                    else:
                        update.add_identity("category")
            t.append(data)

        floe_run(1000)  # warm-up (imports, first-use costs) for both sides
        try:
            py_run(1000)
        except NotInstalledError as e:
            f, _ = median_times(floe_run, lambda i: None, args.runs)
            print(f"{case:19s} floe {f:7.3f}s  pyiceberg n/a ({str(e).splitlines()[0][:60]})")
            continue
        f, p = median_times(floe_run, py_run, args.runs)
        print(f"{case:19s} floe {f:7.3f}s  pyiceberg {p:7.3f}s  ratio {p / f:5.2f}x")


if __name__ == "__main__":
    main()
