"""tests/spark/test_object_storage.py on Spark's native S3A path: its ``s3a`` cases (writes, reads, DML in
both modes, deletion vectors, maintenance, streaming, PyIceberg reading) beside its pip-only ``s3`` cases,
in one session that has hadoop-aws on its classpath.

``spark.jars`` must be set when a JVM starts, so the module runs in a pytest subprocess whose ``spark``
fixture takes ``FLOE_TEST_SPARK_CONF``. The jars come from ../shared/tools/s3a/setup.sh (hadoop-aws 3.3.3
from a PyPI wheel); the session gets only the settings that tool names for its version mismatch, never
the endpoint or keys: those reach S3A from the catalog's ``s3.*`` properties, as Floe maps them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SETUP = HERE.parents[1].parent / "shared" / "tools" / "s3a" / "setup.sh"
# hadoop-aws 3.3 cannot parse some defaults of the Hadoop 3.5 client pyspark bundles (tools/s3a/README.md).
COMPAT = {
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.connection.establish.timeout": "30000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.multipart.purge.age": "86400",
}


def s3a_session_conf() -> dict[str, str]:
    """Start-up confs that put S3A on a session's classpath (fails the test when the tool cannot run)."""
    if not SETUP.is_file():
        pytest.fail(f"{SETUP} not found")
    proc = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    jars = proc.stdout.strip().splitlines()[-1]
    return {"spark.jars": jars, **{f"spark.hadoop.{k}": v for k, v in COMPAT.items()}}


@pytest.mark.slow
@pytest.mark.spark
def test_object_storage_module_passes_on_s3a_and_pip_paths() -> None:
    env = {**os.environ, "FLOE_TEST_SPARK_CONF": json.dumps(s3a_session_conf()), "FLOE_TEST_S3A": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-k", "s3a or data_path or s3_data_path",
         str(HERE / "test_object_storage.py")],
        check=False, capture_output=True, text=True, timeout=3600, env=env, cwd=str(HERE.parents[1]),
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    passed = re.findall(r"::(\w+)\[([^\]]*)\] PASSED", proc.stdout)
    on_s3a = {name for name, params in passed if "s3a" in params}
    # every lake-parametrized test ran on the S3A path
    assert on_s3a >= {"test_write_read_and_row_level_changes", "test_deletion_vectors_and_maintenance",
                      "test_position_delete_files_compacted", "test_streaming_sink_and_source",
                      "test_pyiceberg_reads_what_floe_wrote", "test_data_path_moves_the_bytes"}, proc.stdout[-3000:]
    assert ("test_data_path_moves_the_bytes", "s3") in passed  # the pip-only path in a session that has S3A
    assert "test_s3_data_path_conf_chooses_the_path PASSED" in proc.stdout
