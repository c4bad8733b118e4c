"""Floe's bucket transform in plain SQL (Spark Connect sessions have no JVM to build Murmur3Hash with seed 0
in, and no Floe in the server's workers for the Arrow UDF) gives the spec's bucket numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from _connect_server import ConnectServer

from floe.spec.transforms import BucketTransform
from floe.spec.types import BinaryType, IcebergType, LongType, StringType

PROGRAM = Path(__file__).with_name("programs") / "bucket_hashes.py"
LONGS = [0, 1, -1, 34, 2**31, -(2**31), 2**63 - 1, -(2**63), 123456789012345, -987654321, None]
STRINGS = ["", "a", "ab", "abc", "abcd", "abcde", "iceberg", "héllo wörld ✓", "x" * 37, None]
BINARIES = [b"", b"\x00", b"\xff\xfe\x01", b"\x01\x02\x03\x04\x05", None]


def _spec(values: list[object], source: IcebergType, arrow: pa.DataType) -> list[object]:
    return BucketTransform(1000).apply_arrow(source, pa.array(values, arrow)).to_pylist()  # type: ignore[no-any-return]


@pytest.mark.spark
@pytest.mark.slow  # starts the Connect server
def test_sql_murmur3_buckets_match_the_spec_on_connect(connect_server: ConnectServer) -> None:
    values = {"long": LONGS, "string": STRINGS, "binary": [None if b is None else b.hex() for b in BINARIES]}
    proc = subprocess.run([sys.executable, str(PROGRAM), connect_server.url, json.dumps(values)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[len("RESULT ") :])
    assert got["long"] == _spec(LONGS, LongType(), pa.int64())
    assert got["string"] == _spec(STRINGS, StringType(), pa.string())
    assert got["binary"] == _spec(BINARIES, BinaryType(), pa.binary())
    assert got["long"][-1] is None and got["string"][-1] is None
