"""Iceberg-on-Spark pipelines on a Spark Connect session (``remote(...)``) with ``floe.spark.attach(spark)``.

The server (tests/connect/conftest.py) has no Floe or Iceberg jar and no Floe in its Python workers: planning,
commits and data-file descriptors happen in the client's Python, the server reads and writes Parquet.
The README's "Coming from Iceberg on Spark" block runs as written on a classic session and, with its builder
pointed at the server, on a Connect session: the tables both leave behind hold the same rows, partitions and
snapshot operations, and the block prints the same output (snapshot ids aside). The docs pipeline
(tests/spark/programs/iceberg_docs_pipeline.py) is checked against its Python model, as on classic sessions.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _connect_server import ConnectServer

import floe

ROOT = Path(__file__).resolve().parents[2]
_CLASSIC_BUILDER = '.master("local[2]")'


def _readme_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.DOTALL)
    (block,) = [b for b in blocks if "lake.db.logs" in b and "floe.spark.attach(spark)" in b]
    assert _CLASSIC_BUILDER in block
    return block


def _run(script: str, folder: Path) -> str:
    folder.mkdir()
    (folder / "block.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_CATALOG__")}
    env.update({"FLOE_HOME": str(folder / ".floe"), "HOME": str(folder), "PYSPARK_PYTHON": sys.executable})
    proc = subprocess.run([sys.executable, "block.py"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def _table_state(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(folder)  # the block's warehouse is relative to its folder, and so are its tables' paths
    table = floe.load_table(f"lake-warehouse/db/{name}")
    rows = table.scan().to_arrow().to_pylist()
    files = table.inspect.files().to_pylist()
    return {
        "rows": sorted(rows, key=repr),
        "partitions": sorted((repr(f["partition"]), f["record_count"]) for f in files),
        "operations": [s.summary.operation for s in table.metadata.snapshots],
    }


def _without_ids(shown: str) -> str:
    """``show()`` output with snapshot ids (which differ between runs, in value and width) masked, and the
    padding and rules their width sets."""
    return re.sub(r"-{3,}", "-", re.sub(r" *\b\d{12,}\b", "<id>", shown)).replace(" ", "")


@pytest.mark.spark
@pytest.mark.slow  # a classic run and a Connect run of the block, each in its own process
def test_coming_from_iceberg_block_gives_the_same_rows_on_connect(
    connect_server: ConnectServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = _readme_block()
    classic_out = _run(block, tmp_path / "classic")
    connect_out = _run(block.replace(_CLASSIC_BUILDER, f'.remote("{connect_server.url}")'), tmp_path / "connect")
    for name in ("logs", "logs_by_bucket"):
        classic = _table_state(tmp_path / "classic", name, monkeypatch)
        connect = _table_state(tmp_path / "connect", name, monkeypatch)
        assert connect == classic, name
        assert classic["rows"]
    assert _without_ids(connect_out) == _without_ids(classic_out)
    assert "WARN" in connect_out


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("how", ["attach", "session"])
def test_iceberg_docs_pipeline_runs_on_connect(connect_server: ConnectServer, tmp_path: Path, how: str) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "spark"))
    try:
        from test_pyspark_programs import check_pipeline
    finally:
        sys.path.remove(str(ROOT / "tests" / "spark"))
    check_pipeline(tmp_path, connect_server.url, how)
