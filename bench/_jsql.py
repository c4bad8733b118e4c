"""Iceberg Java (the reference, Iceberg 1.10 on Spark 3.5) through ``jsql``, for benchmarks that compare with it.

``jsql`` runs every statement of a call in one JVM and prints one JSON line per statement as it finishes, so a
statement's time inside the JVM is the gap between the arrival of its line and the previous one (JVM start-up
is outside every gap: the first statement is an untimed ``SELECT 1`` anchor). Callers of Spark or jsql on the
shared 2-core machines wrap the whole benchmark in ``flock /tmp/floe-spark.lock``; the jsql child runs under
the parent's lock (wrapping it again would wait for ever).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JSQL_HOME", "JavaSession", "JavaStatement", "ensure_jsql", "query_java", "run_java", "run_statements", "same_rows"]

JSQL_HOME = Path(__file__).resolve().parents[2] / "shared" / "tools" / "java-iceberg"


@dataclass(frozen=True, slots=True)
class JavaStatement:
    """One statement's outcome: seconds inside the JVM, result rows, or the error jsql reported."""

    sql: str
    seconds: float
    rows: list[list[object]] | None
    error: str | None


def ensure_jsql() -> None:
    """Install the reference once (idempotent; about a minute the first time)."""
    subprocess.run(["bash", str(JSQL_HOME / "setup.sh")], check=True, capture_output=True)


def _command(cfg: Mapping[str, str]) -> list[str]:
    cmd = [str(JSQL_HOME / "jsql")]
    for k, v in cfg.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd


def run_statements(statements: Sequence[str], cfg: Mapping[str, str], *, keep_going: bool = False) -> list[JavaStatement]:
    """Run ``statements`` in one JVM; one result per statement that ran (jsql stops at the first error
    unless ``keep_going``), timed by the arrival of jsql's output lines."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(";\n".join(["SELECT 1", *statements]) + ";\n")
    cmd = [*_command(cfg), "-f", f.name, *(["--keep-going"] if keep_going else [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out: list[JavaStatement] = []
    last = None
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        now = time.perf_counter()
        record = json.loads(line)
        if last is not None:  # the anchor's line starts the clock
            out.append(JavaStatement(record["sql"], now - last, record.get("rows"), record.get("error")))
        last = now
    proc.wait()
    Path(f.name).unlink(missing_ok=True)
    return out


def run_java(statements: Sequence[str], cfg: Mapping[str, str]) -> list[float]:
    """Seconds per statement (one JVM for all); exits on the first failed statement."""
    results = run_statements(statements, cfg)
    for r in results:
        if r.error is not None:
            raise SystemExit(f"jsql failed: {r.sql[:200]}: {r.error[:500]}")
    if len(results) != len(statements):
        raise SystemExit(f"jsql stopped after {len(results)} of {len(statements)} statements")
    return [r.seconds for r in results]


class JavaSession:
    """Iceberg Java in one long-lived process (bench/_java_session.py) that runs a statement when asked, so a
    benchmark can alternate Java's statements with Floe's and both meet the machine in the same state (runs
    minutes apart drift by more than a read's gap between the engines). A statement is timed inside that
    process, as Floe's are in the benchmark's; call :func:`ensure_jsql` first."""

    def __init__(self, cfg: Mapping[str, str]) -> None:
        home = Path(os.environ.get("FLOE_JAVA_ICEBERG_HOME", str(Path.home() / ".cache" / "floe-java-iceberg")))
        cmd = [str(home / "venv" / "bin" / "python"), str(Path(__file__).with_name("_java_session.py")), str(JSQL_HOME), str(home)]
        for k, v in cfg.items():
            cmd += ["--conf", f"{k}={v}"]
        env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        if not json.loads(self._answer()).get("ready"):
            raise SystemExit("the Java session did not start")

    def _answer(self) -> str:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith("{"):
                return line
        raise SystemExit(f"the Java session ended (exit status {self._proc.wait()})")

    def run(self, sql: str) -> JavaStatement:
        """One statement's outcome (seconds inside the Java process, rows or error)."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(sql) + "\n")
        self._proc.stdin.flush()
        record = json.loads(self._answer())
        return JavaStatement(sql, record["seconds"], record.get("rows"), record.get("error"))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait()


def query_java(sql: str, cfg: Mapping[str, str]) -> list[list[object]]:
    """The rows of one query run by Iceberg Java."""
    results = run_statements([sql], cfg)
    if not results or results[0].error is not None or results[0].rows is None:
        raise SystemExit(f"jsql failed: {sql[:200]}: {results[0].error if results else 'no output'}")
    return results[0].rows


def same_rows(a: list[list[object]] | None, b: list[list[object]] | None) -> bool:
    """Whether two engines' rows (as jsql prints them) are equal, floats to 1e-9 relative."""
    if a is None or b is None or len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or not math.isclose(float(x), float(y), rel_tol=1e-9):  # type: ignore[arg-type]
                    return False
            elif x != y:
                return False
    return True
