"""Row-level changes, metadata tables, time travel, partitioned writes, procedures and schema evolution on a
Spark Connect session give the rows a classic session gives; what needs Floe on the server is refused in one
line naming it (tests/connect/programs/connect_features.py runs the same steps on both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _connect_server import ConnectServer

SCRIPT = Path(__file__).with_name("programs") / "connect_features.py"
_REFUSED = {
    "bucket_of_decimal": "bucket[4] of a decimal(9, 2) column",
    "data_source_option": "Read option(s) split-size",
    "save_with_catalog_options": "save with catalog options",
    "stream_write": "A streaming write into an Iceberg table",
    "stream_read": "A streaming read of an Iceberg table",
}


def _run(master: str, folder: Path) -> dict[str, Any]:
    folder.mkdir()
    env = {**os.environ, "FLOE_HOME": str(folder / ".floe"), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, str(SCRIPT), master, str(folder / "warehouse")], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]


@pytest.mark.spark
@pytest.mark.slow  # a classic and a Connect run, each in its own process
def test_connect_session_gives_classic_rows_and_refuses_what_needs_the_server(
    connect_server: ConnectServer, tmp_path: Path
) -> None:
    classic = _run("local[2]", tmp_path / "classic")
    connect = _run(connect_server.url, tmp_path / "connect")
    assert set(classic) == set(connect) - set(_REFUSED)
    for key, value in classic.items():
        assert connect[key] == value, key
    assert classic["deletion_vectors"] == [90, 4500]
    assert classic["position_deletes"] == 2
    for key, feature in _REFUSED.items():
        message = connect[key]
        assert message.startswith("UnsupportedError: "), (key, message)
        assert feature in message and "not supported on a Spark Connect session" in message, (key, message)
        assert "\n" not in message
