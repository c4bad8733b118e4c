"""The README's Spark Connect block runs as written (it starts its own server on port 15002 and stops it).

Its fence is ``py`` rather than ``python``: it needs the ``connect`` extra (gRPC), which the clean-install
tier's README run (tests/test_readme.py in ``pip install .`` alone) does not have; this test runs it where the
extra is installed (the test extra includes it), in ``make test-slow`` (whose ``-k`` leaves ``test_readme*``
names to the clean-install tier: hence this test's name).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _connect_blocks() -> list[str]:
    return re.findall(r"```py\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.mark.spark
@pytest.mark.slow  # the block starts a Spark Connect server
def test_spark_connect_block_of_the_readme_runs_as_written(tmp_path: Path) -> None:
    (block,) = _connect_blocks()
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 15002)) == 0:
            pytest.fail("port 15002 (the README's Connect server) is taken by another process")
    (tmp_path / "block.py").write_text(block, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_CATALOG__")}
    env.update({"FLOE_HOME": str(tmp_path / ".floe"), "HOME": str(tmp_path), "PYSPARK_PYTHON": sys.executable})
    proc = subprocess.run([sys.executable, "block.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert re.search(r"\|\s+2\|\s+b\|", proc.stdout) and re.search(r"\|\s+1\|\s+a\|", proc.stdout)
    assert not re.search(r"\|\s+3\|", proc.stdout)  # the deleted row
