"""The Spark Connect server the Connect tests run against holds nothing of Floe's or Iceberg's."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _connect_server import ConnectServer

_CLIENT = """
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print("JARS", repr(spark.conf.get("spark.jars", "")), repr(spark.conf.get("spark.jars.packages", "")))
probe = "SELECT reflect('java.lang.Class', 'forName', '{}')"
print("SPARK", spark.sql(probe.format("org.apache.spark.sql.connect.service.SparkConnectServer")).collect()[0][0])
try:
    spark.sql(probe.format("org.apache.iceberg.spark.SparkCatalog")).collect()
    print("ICEBERG loaded")
except Exception as e:  # forName throws inside the server's JVM
    print("ICEBERG", "InvocationTargetException" in str(e))
"""


def _classpath_jars(pid: int) -> list[str]:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    classpath = args[args.index(b"-cp") + 1].decode()
    jars: list[str] = []
    for entry in classpath.split(os.pathsep):
        jars += sorted(glob.glob(entry[:-1] + "*.jar")) if entry.endswith("*") else [entry]
    return jars


@pytest.mark.spark
@pytest.mark.slow  # starts the Connect server (about 20 s)
def test_connect_server_classpath_holds_no_floe_or_iceberg_jar(connect_server: ConnectServer, tmp_path: Path) -> None:
    jars = _classpath_jars(connect_server.pid)
    names = [Path(j).name.lower() for j in jars]
    assert any(n.startswith("spark-connect_") for n in names)  # the classpath read is the Connect server's
    assert [n for n in names if "iceberg" in n or "floe" in n] == []
    script = tmp_path / "client.py"
    script.write_text(_CLIENT, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script), connect_server.url], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.split(" ", 1)[0] in ("JARS", "SPARK", "ICEBERG"))
    assert lines["JARS"] == "'' ''"  # no jars nor packages added to the server
    assert lines["SPARK"] == "class org.apache.spark.sql.connect.service.SparkConnectServer"
    assert lines["ICEBERG"] == "True"  # Iceberg's catalog class is not loadable in the server's JVM
