"""tests/spark/test_object_storage.py again on ``local-cluster[2,1,1024]`` (executors in other JVMs): the
S3 data plane's Python workers get everything from the tasks they run, nothing from the driver's memory.

One process holds one SparkContext, so the module runs in a pytest subprocess whose session fixture reads
``FLOE_TEST_SPARK_MASTER``. Minutes long: opt in locally with ``FLOE_CLUSTER_TESTS=1``; CI always runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.mark.slow
@pytest.mark.skipif(
    not (os.environ.get("CI") or os.environ.get("FLOE_CLUSTER_TESTS")),
    reason="local-cluster start costs minutes: set FLOE_CLUSTER_TESTS=1 (CI always runs it)",
)
def test_object_storage_module_passes_on_local_cluster() -> None:
    env = {
        **os.environ,
        "FLOE_TEST_SPARK_MASTER": "local-cluster[2,1,1024]",
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_object_storage.py")],
        check=False, capture_output=True, text=True, timeout=3600, env=env, cwd=str(HERE.parents[1]),
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
