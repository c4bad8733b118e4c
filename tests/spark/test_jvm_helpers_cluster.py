"""Floe's JVM helpers reach executors in other JVMs: the jar Janino compiled on the driver is added to the
session, and Spark hands it to each executor as it does a user's ``ADD JAR`` (floe.spark.runtime.jvm_helpers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _delete_files import jvm_helper_filters

PROGRAM = Path(__file__).parent / "programs" / "deletes_on_executors.py"


@pytest.mark.spark  # Spark runs in the program's own process
@pytest.mark.slow  # two executor JVMs to start: about a minute
def test_position_deletes_are_applied_by_the_helper_on_executors_of_other_jvms(tmp_path: Path) -> None:
    env = {**os.environ, "FLOE_HOME": str(tmp_path / ".floe"), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, str(PROGRAM), "local-cluster[2,1,1024]", f"file:{tmp_path / 'warehouse'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[len("RESULT "):])
    first = [i for i in range(20_000) if i % 7]
    second = [i for i in first if i % 11]
    for step, ids in (("first", first), ("second", second)):
        assert (got[step]["n"], got[step]["s"]) == (len(ids), sum(ids)), step
        assert jvm_helper_filters(got[step]["plan"]) and "BroadcastNestedLoopJoin" not in got[step]["plan"], step
