"""Workers without Floe: a standalone cluster whose workers' Python is the machine's bare ``python3`` (no
Floe, no pyarrow), and a program that ships its environment the way PySpark documents it.

The environment is a venv holding Floe (built from this checkout) and its dependencies, packed with
venv-pack and passed as ``spark.archives=env.tar#environment`` with ``PYSPARK_PYTHON`` pointing inside
it; pyspark itself stays out of the archive (the cluster's Spark puts its own on the workers'
path). Without the archive ``attach`` refuses in one line naming ``spark.archives``; with it, a read, a
MERGE and a streaming micro-batch on an S3 warehouse (moto, so the bytes move in the Python workers) give
the model's rows, and the workers report running Floe from the unpacked archive. Minutes long: opt in
locally with ``FLOE_CLUSTER_TESTS=1``; CI (``CI=true``) always runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tomllib
from _cluster import standalone_cluster

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).parent / "programs" / "foreign_workers.py"
BARE_PYTHON = getattr(sys, "_base_executable", "") or "python3"  # this venv's base: no Floe, no pyarrow

pytestmark = [
    pytest.mark.slow,
    pytest.mark.spark,
    pytest.mark.skipif(
        not (os.environ.get("CI") or os.environ.get("FLOE_CLUSTER_TESTS")),
        reason="starts a Spark standalone cluster (minutes): set FLOE_CLUSTER_TESTS=1 (CI always runs it)",
    ),
]


def _pip(python: Path, *args: str) -> None:
    proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True,
                          timeout=1200, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


def packed_environment(tmp_path: Path) -> Path:
    """A venv-pack archive of a venv with Floe and its dependencies, less pyspark (the cluster has it)."""
    venv = tmp_path / "floe-env"
    # --copies: Spark refuses to unpack symlinks that point outside the archive (a venv links its python)
    subprocess.run([BARE_PYTHON, "-m", "venv", "--copies", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    _pip(python, *[d for d in deps if not d.startswith("pyspark")], "venv-pack")
    _pip(python, "--no-deps", str(ROOT))
    archive = tmp_path / "floe-env.tar.gz"  # Spark unpacks a plain .tar in Java, dropping the exec bits
    proc = subprocess.run([str(venv / "bin" / "venv-pack"), "-p", str(venv), "-o", str(archive), "-q"],
                          capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return archive


def _program_env() -> dict[str, str]:
    """A user's program environment: no worker interpreter chosen by this test process (a local session
    started earlier in the same pytest worker sets PYSPARK_PYTHON to this venv's Python, which has Floe)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1"}


def _run(master: str, tmp_path: Path, s3_endpoint, *archive: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    feed = tmp_path / f"feed-{uuid.uuid4().hex[:6]}"
    feed.mkdir()
    ids = pa.array(range(10_000, 10_100), pa.int64())
    pq.write_table(pa.table({"id": ids, "cat": ["c1"] * 100, "v": pa.array([1.0] * 100)}), feed / "part-0.parquet")
    proc = subprocess.run(
        [sys.executable, str(PROGRAM), master, str(tmp_path / f"{uuid.uuid4().hex[:6]}.db"), s3_endpoint.url,
         s3_endpoint.bucket, str(feed), *archive],
        capture_output=True, text=True, timeout=1200, env=_program_env(), check=False,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_packed_environment_runs_floe_on_workers_without_it(tmp_path: Path, s3_endpoint) -> None:  # type: ignore[no-untyped-def]
    probe = subprocess.run([BARE_PYTHON, "-c", "import pyarrow"], capture_output=True, cwd=tmp_path, check=False)
    assert probe.returncode != 0, f"{BARE_PYTHON} imports pyarrow: not a worker without Floe's stack"
    archive = packed_environment(tmp_path)
    cluster_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # executors inherit the daemons' env
    cluster_env["PYSPARK_PYTHON"] = BARE_PYTHON
    with standalone_cluster(tmp_path, env=cluster_env) as master:
        refused = _run(master, tmp_path, s3_endpoint)
        assert "cannot import floe" in str(refused.get("refused")) and "spark.archives" in str(refused["refused"])
        got = _run(master, tmp_path, s3_endpoint, str(archive))
        assert "workers" in got, got
    for module_file, python in got["workers"]:  # type: ignore[union-attr]
        assert "/environment/" in module_file and python.endswith("environment/bin/python"), got["workers"]
    base = sum(range(5000))
    assert got["read"] == [5000, base, base * 0.5]
    merged_vs = sum(i * 0.5 for i in range(4900)) - 200
    assert got["merged"] == [5100, sum(range(5100)), pytest.approx(merged_vs)]
    assert got["streamed"] == [5200, sum(range(5100)) + sum(range(10_000, 10_100))]
    assert got["epochs"] == ["0"]
