"""Benchmark: Floe's ``table.upsert(pa_table)`` (Arrow, no Spark) vs PyIceberg's ``upsert`` of the same rows.

Each engine gets its own 1M-row table (append_local's data: id long, ts timestamp, category string, value
double; SQLite catalogs in a temp dir), then upserts the same 100k-row Arrow table: 50k keys of the table
with changed values and 50k new keys, joined on ``id``. Every repetition starts from the same state (the table is rolled back to its
first snapshot), and the tables must end with equal rows (count, then every row sorted by id).
Prints the median seconds of each side and the ratio (PyIceberg time / Floe time; > 1 = Floe faster).

    python3 bench/upsert_local.py [--rows 1000000] [--upsert-rows 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import pyarrow as pa
from append_local import catalogs, make_data  # bench/append_local.py (the script dir is on sys.path)


def make_upsert(base: pa.Table, rows: int) -> pa.Table:
    """Half existing keys with a changed value, half new keys."""
    rng = np.random.default_rng(7)
    matched = np.sort(rng.choice(base.num_rows, rows // 2, replace=False))
    old = base.take(pa.array(matched))
    i = old.schema.get_field_index("value")
    old = old.set_column(i, "value", pa.array(old.column("value").to_numpy() + 1.0))
    new = make_data(rows - rows // 2)
    new = new.set_column(0, "id", pa.array(np.arange(base.num_rows, base.num_rows + new.num_rows, dtype=np.int64)))
    return pa.concat_tables([old, new])


def sorted_rows(t: pa.Table) -> pa.Table:
    plain = pa.schema([pa.field(f.name, f.type) for f in t.schema])  # no field ids / nullability differences
    return pa.Table.from_arrays(t.columns, schema=plain).sort_by("id").combine_chunks()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--upsert-rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    warnings.filterwarnings("ignore")
    base = make_data(args.rows)
    source = make_upsert(base, args.upsert_rows)
    floe_cat, py_cat = catalogs("floe-bench-upsert-")

    ft = floe_cat.create_table("db.t", base.schema)
    ft.append(base)
    f_start = ft.current_snapshot()
    pt = py_cat.create_table("db.t", base.schema)
    pt.append(base)
    p_start = pt.current_snapshot()
    assert f_start is not None and p_start is not None
    results: dict[str, tuple[int, int]] = {}

    # Only the upsert is timed: the rollback to the starting state happens before the clock starts.
    def floe_run() -> float:
        if ft.current_snapshot() != f_start:
            ft.rollback_to_snapshot(f_start.snapshot_id)
        t0 = time.perf_counter()
        r = ft.upsert(source, ["id"])
        took = time.perf_counter() - t0
        results["floe"] = (r.rows_updated, r.rows_inserted)
        return took

    def py_run() -> float:
        current = pt.current_snapshot()
        if current is None or current.snapshot_id != p_start.snapshot_id:
            pt.manage_snapshots().rollback_to_snapshot(p_start.snapshot_id).commit()
        t0 = time.perf_counter()
        r = pt.upsert(source, ["id"])
        took = time.perf_counter() - t0
        results["pyiceberg"] = (r.rows_updated, r.rows_inserted)
        return took

    f_times, p_times = [], []
    for _ in range(args.runs):  # alternately, so machine load affects both alike
        f_times.append(floe_run())
        p_times.append(py_run())
    f, p = statistics.median(f_times), statistics.median(p_times)

    floe_rows = sorted_rows(ft.refresh().scan().to_arrow())
    py_rows = sorted_rows(pt.refresh().scan().to_arrow())
    equal = floe_rows.num_rows == py_rows.num_rows and floe_rows.equals(py_rows)
    print(
        f"table rows={args.rows:,} upsert rows={source.num_rows:,} runs={args.runs} "
        f"(median seconds; ratio = pyiceberg / floe)"
    )
    print(f"result floe {results['floe']}  pyiceberg {results['pyiceberg']}  (rows updated, inserted)")
    print(f"upsert  floe {f:7.3f}s  pyiceberg {p:7.3f}s  ratio {p / f:5.2f}x")
    print(f"rows equal: {equal} ({floe_rows.num_rows:,} rows each)" if equal else
          f"rows DIFFER: floe {floe_rows.num_rows:,} pyiceberg {py_rows.num_rows:,}")
    if not equal:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
