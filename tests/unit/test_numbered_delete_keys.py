"""The one-long keys of position deletes on few data files (floe.spark.scan.delete_joins): unique per (file,
position), and rows that name no scanned file or no possible row are dropped rather than wrapped into
another row's key."""

from __future__ import annotations

import pyarrow as pa

from floe.spark.scan.delete_joins import _numbered_keys


def test_keys_tell_files_and_positions_apart_and_drop_what_names_no_row() -> None:
    files = ["file:/w/a.parquet", "file:/w/b.parquet"]
    rows = pa.table({
        "_floe_dkey": ["file:/w/b.parquet", "file:/w/a.parquet", "file:/w/a.parquet", "file:/w/other.parquet",
                       "file:/w/a.parquet", "file:/w/b.parquet"],
        "_floe_dpos": pa.array([1, 1, 0, 3, -1, 2**62], pa.int64()),
    })
    keys = _numbered_keys(rows, files).to_pylist()
    assert keys == [1 * 1024 + 1, 1 * 1024 + 0, 0]
    assert len(set(keys)) == len(keys)
