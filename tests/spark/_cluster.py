"""A Spark standalone cluster on 127.0.0.1 for the cluster tests: a master and workers started with
pyspark's own ``spark-class``, stopped with everything they started.

The daemons bind port 0 and the master's log says where it listens. Ports picked here and released
before the JVMs bound them could be taken in between: CI once got an HTML page where the master's JSON
status was expected."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pyspark


def _spark_class(*args: str, log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    home = Path(pyspark.__file__).parent
    env = {**env, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen(
        [str(home / "bin" / "spark-class"), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env,
        start_new_session=True,  # its own process group: stopped with everything it started
    )


def _alive_workers(ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{ui}/json/", timeout=5) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except (OSError, ValueError):  # not up yet
        return 0


_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_MASTER_UI = re.compile(r"Bound MasterWebUI to \S+, and started at (http://\S+)")


T = TypeVar("T")


def _wait(ready: Callable[[], T | None], procs: list[subprocess.Popen[bytes]], tmp_path: Path, deadline: float) -> T:
    """``ready()`` once it is truthy; fails with the daemons' logs when one exits or time runs out."""
    while not (found := ready()):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            logs = "\n".join(f.read_text()[-2000:] for f in sorted(tmp_path.glob("*.log")))
            raise AssertionError(f"standalone cluster did not start:\n{logs}")
        time.sleep(0.5)
    return found


@contextmanager
def standalone_cluster(tmp_path: Path, workers: int = 2, *, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` of a running master with ``workers`` workers (1 core, 1 GiB each).

    The daemons run with ``env`` (default: this process's, with ``PYSPARK_PYTHON`` this interpreter);
    executors inherit it, ``PYTHONPATH`` included."""
    env = env if env is not None else {**os.environ, "PYSPARK_PYTHON": sys.executable}
    master_log = tmp_path / "master.log"
    procs = [_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                          "--webui-port", "0", log=master_log, env=env)]
    deadline = time.monotonic() + 180

    def logged(pattern: re.Pattern[str]) -> str | None:
        m = pattern.search(master_log.read_text()) if master_log.exists() else None
        return m.group(1) if m else None

    try:
        url = _wait(lambda: logged(_MASTER_URL), procs, tmp_path, deadline)
        ui = _wait(lambda: logged(_MASTER_UI), procs, tmp_path, deadline)
        for i in range(workers):
            procs.append(_spark_class(
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                "--port", "0", "--webui-port", "0", "--work-dir", str(tmp_path / f"work{i}"), url,
                log=tmp_path / f"worker{i}.log", env=env,
            ))
        _wait(lambda: _alive_workers(ui) >= workers, procs, tmp_path, deadline)
        yield url
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait(timeout=60)
