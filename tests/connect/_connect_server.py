"""A local Spark Connect server for the tests under tests/connect (the fixture in conftest.py: one per test
process, on a loopback port). A module of its own: test modules import it by a name no other folder uses.

The server is the one the pip-installed pyspark ships (``spark-submit --class ...SparkConnectServer``), started
with nothing of Floe's or Iceberg's: no extra jars, no PYTHONPATH, and Python workers that run the base
interpreter (no Floe, no pyarrow), so any Floe code that needed the server's Python would fail the test
instead of passing unnoticed. Clients connect to ``ConnectServer.url`` from their own processes (a remote
session switches PySpark into Connect mode for the whole process, so the classic ``spark`` fixture stays
out of it).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_START_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class ConnectServer:
    url: str  # sc://127.0.0.1:<port>
    pid: int  # the server's JVM (spark-submit execs java)
    log: Path
    worker_python: str  # what the server's Python workers run (an interpreter without Floe)


_STARTED = re.compile(r"Spark Connect server started at: 127\.0\.0\.1:(\d+)")


def _bound_port(log: Path) -> int | None:
    """The port the server bound (it binds port 0: a free one), once its log says it started."""
    match = _STARTED.search(log.read_text(errors="replace"))
    return int(match.group(1)) if match else None


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _interpreter_without_floe() -> str:
    base = getattr(sys, "_base_executable", sys.executable)
    probe = subprocess.run([base, "-c", "import floe"], capture_output=True, check=False, cwd="/",
                           env={"PATH": os.environ.get("PATH", "")})
    if probe.returncode == 0:
        pytest.fail(f"{base} imports floe: the Connect server's workers need an interpreter without it")
    return base


@contextmanager
def running_server(folder: Path, conf: dict[str, str] | None = None) -> Iterator[ConnectServer]:
    """A Spark Connect server (local[2], loopback, a free port) with ``conf`` added, stopped on exit."""
    home = _spark_home()
    log = folder / "server.log"
    worker_python = _interpreter_without_floe()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_REMOTE", "PYSPARK_PYTHON")}
    env.update({"SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": worker_python})
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": "0",
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", **(conf or {}),
    }
    command = [str(home / "bin" / "spark-submit"), "--class", _SERVER_CLASS, "--master", "local[2]"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while (port := _bound_port(log)) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Spark Connect server did not start: {log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield ConnectServer(url=f"sc://127.0.0.1:{port}", pid=proc.pid, log=log, worker_python=worker_python)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's process group: its JVM and any Python workers
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
