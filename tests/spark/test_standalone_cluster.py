"""A real Spark standalone cluster (a master and two workers started with pyspark's own ``spark-class``
on 127.0.0.1) runs the write/MERGE/DELETE/UPDATE/maintenance pipeline against an S3 warehouse (moto) through
a REST catalog (``floe serve`` over SQLite). It costs a few minutes: opt in locally with
``FLOE_CLUSTER_TESTS=1``; CI (``CI=true``) always runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from _cluster import standalone_cluster

import floe
from floe.server import ServerSettings, background_server

PROGRAM = Path(__file__).parent / "programs" / "cluster_pipeline.py"
TOKEN = "cluster-token"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (os.environ.get("CI") or os.environ.get("FLOE_CLUSTER_TESTS")),
        reason="starts a Spark standalone cluster (minutes): set FLOE_CLUSTER_TESTS=1 (CI always runs it)",
    ),
]


def _model() -> dict[str, dict[str, float]]:
    table = {i: i * 1.5 for i in range(20_000)}
    out: dict[str, dict[str, float]] = {}

    def state() -> dict[str, float]:
        return {"n": len(table), "ids": sum(table), "amounts": sum(table.values())}

    out["inserted"] = state()
    for i in range(19_000, 21_000):
        table[i] = i * 1.5 * 2 if i in table else i * 1.5
    out["merged"] = state()
    table = {i: (0.0 if i % 100 == 1 else a) for i, a in table.items() if i % 100 != 0}
    out["changed"] = state()
    out["final"] = state()
    return out


def test_pipeline_on_standalone_cluster_s3_and_rest(tmp_path: Path, s3_endpoint) -> None:  # type: ignore[no-untyped-def]
    warehouse = s3_endpoint.location(f"cluster-{uuid.uuid4().hex[:8]}")
    backing = floe.load_catalog(
        "served", type="sql", uri=f"sqlite:///{tmp_path}/served.db", warehouse=warehouse, **s3_endpoint.properties
    )
    with background_server(backing, ServerSettings().with_admin_tokens([TOKEN])) as server, standalone_cluster(tmp_path) as master:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        proc = subprocess.run(
            [sys.executable, str(PROGRAM), master, server.uri, TOKEN, s3_endpoint.url],
            capture_output=True, text=True, timeout=1200, env=env, check=False,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    model = _model()
    for step in ("inserted", "merged", "changed", "final"):
        assert got[step]["n"] == model[step]["n"], step
        assert got[step]["ids"] == model[step]["ids"], step
        assert got[step]["amounts"] == pytest.approx(model[step]["amounts"]), step
    assert got["rewritten"] > 0
    assert got["snapshots"] == 1
    assert got["locations"] == [s3_endpoint.bucket]
    assert got["executors"] == 2
    table = backing.load_table(("db", "orders"))
    assert table.location().startswith(warehouse)
