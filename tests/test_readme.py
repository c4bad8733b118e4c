"""Every code block of the README runs as written (the README is the public API).

Each block runs in a fresh folder with its own FLOE_HOME, as a new user would paste it: the quick start's
``make demo`` (``make test`` is what CI itself runs), the shell lines against the demo table, the SQL
script with the command line its header gives, each Python block as a script, and the TOML example as
the configuration file Floe reads. The Spark Connect block (fenced ``py``: it needs the ``connect`` extra)
runs in tests/connect/test_connect_readme.py.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from floe.config import FloeConfig

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.DOTALL)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_CATALOG__") and k != "FLOE_DEFAULT_CATALOG"}
    env.update({"FLOE_HOME": str(tmp_path / ".floe"), "HOME": str(tmp_path), "PYSPARK_PYTHON": sys.executable})
    return env


def _run(args: list[str] | str, tmp_path: Path, *, timeout: float = 900) -> str:
    proc = subprocess.run(
        args, cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=timeout,
        shell=isinstance(args, str), executable="/bin/bash" if isinstance(args, str) else None, check=False,
    )
    assert proc.returncode == 0, f"{args!r} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture
def venv_here(tmp_path: Path) -> Path:
    """``.venv/bin`` in the block's folder points at this interpreter's bin (the README's commands use it)."""
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(BIN)
    return tmp_path


# The README's blocks that start Spark run each in fresh processes (a JVM apiece, about 6 minutes of a
# loaded 2-core machine): they are slow tests, run by CI's `make test-slow` and in the clean-install tier.
SPARK_BLOCK = (pytest.mark.spark, pytest.mark.slow)


@pytest.mark.spark  # the demo's INSERTs start Spark
@pytest.mark.slow
def test_readme_quick_start_runs_the_demo(tmp_path: Path) -> None:
    quick = _blocks("bash")[0]
    commands = [line.split("#")[0].strip() for line in quick.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    out = _run(["make", "-C", str(ROOT), "demo"], tmp_path)
    assert "sensordata" in out


@pytest.mark.spark
@pytest.mark.slow
def test_readme_shell_lines_run_against_the_demo_table(venv_here: Path) -> None:
    _run([str(BIN / "floe"), "demo"], venv_here)
    out = _run(_blocks("bash")[1], venv_here)
    assert "sensor" in out


@pytest.mark.spark
@pytest.mark.slow
def test_readme_sql_script_runs_with_its_command_line(tmp_path: Path) -> None:
    script = _blocks("sql")[0]
    header = " ".join(line[2:].strip().rstrip("\\") for line in script.splitlines() if line.startswith("--"))
    args = shlex.split(header)
    assert args[:2] == ["floe", "sql"]
    assert args[-2:] == ["-f", "sensordata.sql"]
    (tmp_path / "sensordata.sql").write_text(script, encoding="utf-8")
    out = _run([str(BIN / "floe"), *args[1:]], tmp_path)
    assert "sensor_01" in out  # the row as of the first_load tag


@pytest.mark.parametrize(
    "index",
    [pytest.param(i, marks=SPARK_BLOCK) if "spark" in block else i for i, block in enumerate(_blocks("python"))],
)
def test_readme_python_block_runs_as_written(tmp_path: Path, index: int) -> None:
    (tmp_path / "block.py").write_text(_blocks("python")[index], encoding="utf-8")
    _run([sys.executable, "block.py"], tmp_path)


def test_readme_toml_is_a_valid_configuration(tmp_path: Path) -> None:
    (tmp_path / "floe.toml").write_text(_blocks("toml")[0], encoding="utf-8")
    config = FloeConfig.load(environ={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert config.default_catalog == "hadoop_catalog"
    assert config.catalogs["hadoop_catalog"]["type"] == "hadoop"
    assert config.catalogs["shared"]["type"] == "sql"
    assert config.spark_conf["spark.sql.shuffle.partitions"] == "8"
