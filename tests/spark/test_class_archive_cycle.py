"""A Floe program's JVM dumps its classes at exit, the dump is checked and installed, and the next program's
JVM maps it: two real programs, each with its own Spark (and Java options of its own), sharing one cache
directory.

A copy of the real archive cut short is refused by the installer's check (HotSpot would crash mapping it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from floe.spark.runtime import class_archive_installer as installer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

PROGRAM = r"""
import json, sys
import floe.spark
spark = floe.spark.session({"spark.master": "local[1]", "spark.driver.extraJavaOptions": "-Dfloe.test=own"})
assert spark.range(5).selectExpr("sum(id)").collect()[0][0] == 10
jvm = spark.sparkContext._jvm
args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print("JVM " + json.dumps({"args": args, "classpath": jvm.System.getProperty("java.class.path"),
                           "java": jvm.System.getProperty("java.home") + "/bin/java"}), flush=True)
"""


def _run(tmp_path: Path) -> tuple[dict[str, object], str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FLOE_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(REPO)}
    env.pop("FLOE_CLASS_ARCHIVE", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("JVM "))
    return json.loads(line[4:]), done.stderr


def test_a_program_dumps_and_the_next_one_maps(tmp_path: Path) -> None:
    directory = tmp_path / "cache" / "floe" / "jvm"
    first, _ = _run(tmp_path)
    assert any(str(a).startswith("-XX:ArchiveClassesAtExit=") for a in first["args"])  # type: ignore[union-attr]
    deadline = time.monotonic() + 300
    while not list(directory.glob("spark-*.jsa")) and time.monotonic() < deadline:
        time.sleep(0.5)
    archives = list(directory.glob("spark-*.jsa"))
    assert len(archives) == 1, sorted(p.name for p in directory.iterdir())
    assert not list(directory.glob("*.part")) and not list(directory.glob("*.lock"))

    second, stderr = _run(tmp_path)
    assert f"-XX:SharedArchiveFile={archives[0]}" in second["args"]  # type: ignore[operator]
    assert "-Dfloe.test=own" in second["args"]  # type: ignore[operator]  # the caller's options kept
    assert "[cds" not in stderr and "shared archive" not in stderr.lower()
    # What the installer checked: a JVM with this class path maps it under -Xshare:on ...
    java, classpath = str(second["java"]), str(second["classpath"])
    assert installer.loads(java, archives[0], classpath)
    # ... and refuses it with another class path, or cut short (mapping that would crash a JVM).
    assert not installer.loads(java, archives[0], str(tmp_path))
    torn = tmp_path / "torn.part"
    torn.write_bytes(archives[0].read_bytes()[: 1 << 20])
    before = set(Path.cwd().iterdir())
    assert not installer.install(torn, tmp_path / "spark-torn.jsa", java, classpath)
    assert not (tmp_path / "spark-torn.jsa").exists()
    # The crash of the JVM that tried it left no report, here or beside the archive.
    assert set(Path.cwd().iterdir()) == before
    assert sorted(p.name for p in tmp_path.glob("*.log")) == []
