"""Pipelines written for Iceberg on Spark run on Floe with only the session line changed (issue #10).

tests/spark/programs/iceberg_docs_pipeline.py builds its SparkSession the way Iceberg's documentation
does (catalog confs on the builder), so it runs in a process of its own: once with
``floe.spark.attach(spark)`` added, once with ``floe.spark.session(conf)`` replacing the builder, on
``local[2]`` and on ``local-cluster`` (executors in other JVMs). Its rows are compared with a plain
Python model of the same steps; bucket numbers come from the spec's hash (mmh3), not from Floe.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import mmh3
import pytest

SCRIPT = Path(__file__).with_name("programs") / "iceberg_docs_pipeline.py"


def _bucket4(value: int) -> int:
    return (mmh3.hash(struct.pack("<q", value)) & 0x7FFFFFFF) % 4


def _model() -> dict[str, Any]:
    """The pipeline's steps on plain Python rows."""
    rows = {i: [i, dt.datetime(2024, 1, 1 + i % 4), ["eu", "us", "apac"][i % 3], float(i)] for i in range(40)}
    first = sorted([r[0], r[1].isoformat(), r[2], r[3]] for r in rows.values())
    replacement = {100 + i: [100 + i, dt.datetime(2024, 1, 2), "us", 50.0] for i in range(4)}
    replaced = {(r[1].date(), _bucket4(r[0])) for r in replacement.values()}
    rows = {k: r for k, r in rows.items() if (r[1].date(), _bucket4(r[0])) not in replaced} | replacement
    for key, ts, region in ((0, dt.datetime(2024, 1, 1), "eu"), (5, dt.datetime(2024, 1, 2), "apac"),
                            (200, dt.datetime(2024, 1, 3), "us")):
        if key in rows:
            rows[key][3] = 99.0
        else:
            rows[key] = [key, ts, region, 99.0]
    for r in rows.values():
        if r[2] == "eu":
            r[2] = "EU"
    rows = {k: r for k, r in rows.items() if r[3] >= 5}
    final = sorted([r[0], r[1].isoformat(), r[2], r[3]] for r in rows.values())
    copy = [r for r in first if r[0] < 8]
    return {"first": first, "final": final, "copy": copy, "joined": sum(1 for k in (0, 5, 200) if k in rows)}


def _run(master: str, how: str, tmp_path: Path) -> dict[str, Any]:
    env = {**os.environ, "FLOE_HOME": str(tmp_path / ".floe"), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), master, str(tmp_path / "warehouse"), how],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]


def check_pipeline(tmp_path: Path, master: str, how: str) -> None:
    """Run the pipeline and compare what it read with the model."""
    got = _run(master, how, tmp_path)
    model = _model()
    assert got["after_append"] == 40
    for key in ("table", "read_table", "by_name", "by_path", "sql", "after_rewrite"):
        assert got[key] == model["final"], key
    assert got["time_travel_option"] == model["first"]
    assert got["time_travel_sql"] == model["first"]
    assert got["operations"][0] == "append"
    assert got["joined"] == model["joined"]
    assert got["copy"] == model["copy"]
    assert got["spark_view"] == 3
    assert got["functions"] == [["EU", "2024-01-02", 2]]
    if how != "attach":  # spark.sql.defaultCatalog names the Iceberg catalog
        assert got["unqualified"] == len(model["final"])
    assert "FileScan parquet" in got["plan"]
    assert "Python" not in got["plan"]  # a native scan, no Python data source


@pytest.mark.spark  # Spark runs in the program's own process
@pytest.mark.slow  # two programs, each with its own Spark, 40-60 s apiece: in make test-slow (CI runs both targets)
@pytest.mark.parametrize("how", ["attach", "session"])
def test_iceberg_docs_pipeline_runs_with_one_line_changed(tmp_path: Path, how: str) -> None:
    check_pipeline(tmp_path, "local[2]", how)
