"""A real Spark standalone cluster (a master and two workers started with pyspark's own ``spark-class``
on 127.0.0.1) runs the write/MERGE/DELETE/UPDATE/maintenance pipeline against an S3 warehouse (moto) through
a REST catalog (``floe serve`` over SQLite). It costs a few minutes: opt in locally with
``FLOE_CLUSTER_TESTS=1``; CI (``CI=true``) always runs it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark
import pytest

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class(*args: str, log: Path) -> subprocess.Popen[bytes]:
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        [str(home / "bin" / "spark-class"), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env,
        start_new_session=True,  # its own process group: stopped with everything it started
    )


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except OSError:
        return 0


@contextmanager
def standalone_cluster(tmp_path: Path, workers: int = 2) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` of a running master with ``workers`` workers (1 core, 1 GiB each)."""
    port, ui = _free_port(), _free_port()
    procs = [_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                          "--webui-port", str(ui), log=tmp_path / "master.log")]
    url = f"spark://127.0.0.1:{port}"
    try:
        for i in range(workers):
            procs.append(_spark_class(
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                "--webui-port", str(_free_port()), "--work-dir", str(tmp_path / f"work{i}"), url,
                log=tmp_path / f"worker{i}.log",
            ))
        deadline = time.monotonic() + 180
        while _alive_workers(ui) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                logs = "\n".join(f.read_text()[-2000:] for f in sorted(tmp_path.glob("*.log")))
                raise AssertionError(f"standalone cluster did not start:\n{logs}")
            time.sleep(1)
        yield url
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait(timeout=60)


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
