"""A provisioning program (tests/spark/programs/rest_provision.py, PySpark as Iceberg's docs write it) runs
through Floe against ``floe serve``; PyIceberg's RestCatalog then reads every table it built: all types,
NaN and null, merge-on-read deletes and updates, a branch and a tag, every transform, partition evolution
after rewrite_data_files."""

from __future__ import annotations

import datetime as dt
import math
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

import floe
from floe.server import background_server

rest = pytest.importorskip("pyiceberg.catalog.rest")

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCRIPT = Path(__file__).with_name("programs") / "rest_provision.py"


def test_provisioning_program_through_floe_serve_read_by_pyiceberg(tmp_path: Path) -> None:
    backing = floe.load_catalog("prov", type="sql", uri=f"sqlite:///{tmp_path}/served.db",
                                warehouse=str(tmp_path / "warehouse"))
    with background_server(backing) as server:
        env = {**os.environ, "FLOE_HOME": str(tmp_path / ".floe"), "PYSPARK_PYTHON": sys.executable}
        proc = subprocess.run([sys.executable, str(SCRIPT), "local[2]", server.uri], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900, check=False)
        assert proc.returncode == 0 and "PROVISIONED" in proc.stdout, proc.stderr[-4000:]
        py = rest.RestCatalog("py", uri=server.uri)
        assert len(py.list_tables("default")) == 11

        types = py.load_table("default.all_types").scan().to_arrow().sort_by("b").to_pylist()
        assert types[1]["i"] == 1 and types[1]["dec"] == Decimal("3.25") and types[1]["bin"] == b"\x01\x02"
        assert types[1]["dt"] == dt.date(2024, 1, 1) and types[1]["ts"] == dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc)
        assert types[1]["ts_ntz"] == dt.datetime(2024, 1, 1, 10) and types[1]["arr"] == [1, 2]
        assert types[1]["m"] == [("k", 1)] and types[1]["st"] == {"a": 1, "b": "x"}
        assert all(v is None for k, v in types[0].items() if k != "b")

        nan = {r["idx"]: r["col_numeric"] for r in py.load_table("default.test_null_nan").scan().to_arrow().to_pylist()}
        assert math.isnan(nan[1]) and nan[2] is None and nan[3] == 1.0

        mor = py.load_table("default.test_positional_mor_deletes")
        main = {r["number"]: r["letter"] for r in mor.scan().to_arrow().to_pylist()}
        assert sorted(main) == [n for n in range(1, 13) if n != 9] and main[1] == "X"
        assert any(t.delete_files for t in mor.scan().plan_files())  # merge-on-read: position deletes
        tag = mor.scan(snapshot_id=mor.snapshot_by_name("tag_12").snapshot_id).to_arrow()
        assert tag.num_rows == 12
        branch = mor.scan(snapshot_id=mor.snapshot_by_name("without_5").snapshot_id).to_arrow()
        assert sorted(branch["number"].to_pylist()) == [n for n in range(1, 13) if n != 5]

        for name, transform in [("identity", "identity"), ("bucket", "bucket[16]"), ("truncate", "truncate[1]"),
                                ("years", "year"), ("months", "month"), ("days", "day"), ("hours", "hour")]:
            t = py.load_table(f"default.test_partitioned_by_{name}")
            assert str(t.spec().fields[0].transform) == transform
            assert sorted(t.scan().to_arrow()["number"].to_pylist()) == [1, 2, 3, 4]
            assert len(list(t.scan(row_filter="number = 3").plan_files())) == 1

        evolved = py.load_table("default.test_evolution")
        assert len(evolved.specs()) == 3
        assert sorted(evolved.scan().to_arrow()["number"].to_pylist()) == [1, 2, 3, 4]
        assert evolved.current_snapshot().summary.operation.value == "replace"
