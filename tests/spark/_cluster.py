"""A Spark standalone cluster on 127.0.0.1 for the cluster tests: a master and workers started with
pyspark's own ``spark-class``, stopped with everything they started."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pyspark


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class(*args: str, log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    home = Path(pyspark.__file__).parent
    env = {**env, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
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
def standalone_cluster(tmp_path: Path, workers: int = 2, *, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` of a running master with ``workers`` workers (1 core, 1 GiB each).

    The daemons run with ``env`` (default: this process's, with ``PYSPARK_PYTHON`` this interpreter);
    executors inherit it, ``PYTHONPATH`` included."""
    env = env if env is not None else {**os.environ, "PYSPARK_PYTHON": sys.executable}
    port, ui = free_port(), free_port()
    procs = [_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                          "--webui-port", str(ui), log=tmp_path / "master.log", env=env)]
    url = f"spark://127.0.0.1:{port}"
    try:
        for i in range(workers):
            procs.append(_spark_class(
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                "--webui-port", str(free_port()), "--work-dir", str(tmp_path / f"work{i}"), url,
                log=tmp_path / f"worker{i}.log", env=env,
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
