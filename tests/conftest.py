"""Shared fixtures for the whole suite (unit, spark, interop, catalogs).

Services (PostgreSQL, MariaDB) are skipped when unreachable, unless FLOE_REQUIRE_SERVICES=1 (CI), where
an unreachable service fails the test. Everything is safe under ``pytest -n 2 --dist loadfile``: paths
come from tmp_path, S3 buckets and database table prefixes are unique per test.
"""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REQUIRE_SERVICES = os.environ.get("FLOE_REQUIRE_SERVICES") == "1"
POSTGRES_URL = os.environ.get("FLOE_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("FLOE_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")


def _unavailable(reason: str) -> NoReturn:
    """Skip, or fail when services are required (CI)."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (FLOE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


def _shared_dir() -> Path:
    """``shared/`` beside the repository (CI clones and worktrees have it there)."""
    beside = Path(__file__).resolve().parents[1].parent / "shared"
    return beside


# -- markers -------------------------------------------------------------------------------------
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``spark``: needs a SparkSession (Floe's or Iceberg Java's); ``slow``: runs Iceberg Java (jsql starts a
    JVM per call), in ``make test-slow`` (CI runs it after ``make test``).

    Tests that start Spark or Java another way (a program, ``floe demo`` or ``floe sql`` in a subprocess) carry
    ``@pytest.mark.spark`` themselves, and load tests ``@pytest.mark.slow``: ``make test-fast`` (``not spark and
    not slow``) starts no JVM and stays under two minutes on 2 cores."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names or "jsql" in names:
            item.add_marker(pytest.mark.spark)
        if "jsql" in names:
            item.add_marker(pytest.mark.slow)


# -- Spark ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One SparkSession (UTC) for the whole run; started only if a test asks for it (5-9 s).

    The master is ``FLOE_TEST_SPARK_MASTER`` (default ``local[2]``); e.g. ``local-cluster[2,1,1024]`` runs
    the tests with executors in separate JVMs, so tasks cannot lean on driver-local state.
    ``FLOE_TEST_SPARK_CONF`` (a JSON object) adds start-up confs, such as the ``spark.jars`` that put S3A on
    the classpath (tests/spark/test_object_storage_s3a.py).
    """
    from floe.spark.runtime.configure import session

    master = os.environ.get("FLOE_TEST_SPARK_MASTER", "local[2]")
    conf = {"spark.master": master, "spark.sql.session.timeZone": "UTC"}
    conf.update(json.loads(os.environ.get("FLOE_TEST_SPARK_CONF", "{}")))  # e.g. S3A's spark.jars (a subprocess run)
    spark_session = session(conf, app_name="floe-tests")
    yield spark_session
    spark_session.stop()


# -- Iceberg Java (the reference implementation) -------------------------------------------------
@dataclass
class Jsql:
    """Runs Spark SQL on Iceberg Java 1.10.2 (shared/tools/java-iceberg) and returns one result per statement."""

    command: Path

    def run(self, statements: list[str], conf: dict[str, str], *, timeout: float = 600) -> list[dict[str, object]]:
        """Each statement's ``{"sql", "columns", "rows"}``; a failing statement fails the test with Java's error."""
        args = [str(self.command)]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
            f.write(";\n".join(statements) + ";\n")
        proc = subprocess.run([*args, "-f", f.name], capture_output=True, text=True, timeout=timeout, check=False)
        Path(f.name).unlink()
        results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        failed = [r for r in results if "error" in r]
        if proc.returncode != 0 or failed:
            raise AssertionError(f"jsql failed: {failed or proc.stderr[-2000:]}")
        return results

    def python(self, script: Path, *args: str, timeout: float = 600) -> str:
        """``script``'s stdout, run by the java-iceberg venv's Python (pyspark 3.5) with ``--jars`` naming the
        list of Iceberg's jars (for checks through Iceberg Java's own classes, e.g. its REST parsers)."""
        home = Path(os.environ.get("FLOE_JAVA_ICEBERG_HOME", Path.home() / ".cache" / "floe-java-iceberg"))
        command = [str(home / "venv" / "bin" / "python"), str(script), "--jars", str(home / "jars.txt"), *args]
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, env=env)
        if proc.returncode != 0:
            raise AssertionError(f"{script.name} failed under Iceberg Java: {proc.stderr[-2000:]}")
        return proc.stdout

    @staticmethod
    def hadoop_catalog(name: str, warehouse: Path) -> dict[str, str]:
        """Spark confs for an Iceberg Hadoop catalog ``name`` on a local warehouse folder."""
        prefix = f"spark.sql.catalog.{name}"
        return {prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "hadoop",
                f"{prefix}.warehouse": f"file:{warehouse}"}


@pytest.fixture(scope="session")
def jsql() -> Jsql:
    """Iceberg Java's SQL runner, installed by its idempotent setup.sh on first use (about a minute)."""
    setup = _shared_dir() / "tools" / "java-iceberg" / "setup.sh"
    if not setup.is_file():
        _unavailable(f"{setup} not found")
    proc = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=1200, check=False)
    if proc.returncode != 0:
        _unavailable(f"java-iceberg setup failed: {proc.stderr[-1000:]}")
    return Jsql(Path(proc.stdout.strip().splitlines()[-1]))


# -- paths ---------------------------------------------------------------------------------------
@pytest.fixture
def tmp_warehouse(tmp_path: Path) -> Path:
    """An empty warehouse directory for one test."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def java_tables() -> Path:
    """The Java-written fixture tables (README.md and MANIFEST.json describe them)."""
    path = _shared_dir() / "fixtures" / "java-tables"
    if not path.is_dir():
        _unavailable(f"fixture directory {path} not found")
    return path


@pytest.fixture(scope="session")
def metadata_fixtures() -> Path:
    """Metadata JSON fixtures (FIXTURES.txt lists which are valid and which are INVALID)."""
    path = _shared_dir() / "fixtures" / "metadata"
    if not path.is_dir():
        _unavailable(f"fixture directory {path} not found")
    return path


# -- databases -----------------------------------------------------------------------------------
def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """SQLAlchemy URL of the test PostgreSQL database (user ``postgres``, trust auth)."""
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT 1"))
        engine.dispose()
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, OSError) as e:  # no server or no driver here
        _unavailable(f"PostgreSQL unreachable at {POSTGRES_URL}: {e}")
    return POSTGRES_URL


@pytest.fixture(scope="session")
def mysql_url() -> str:
    """SQLAlchemy URL of the test MariaDB/MySQL database (user ``root``, no password)."""
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(MYSQL_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT 1"))
        engine.dispose()
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, OSError) as e:  # no server or no driver here
        _unavailable(f"MySQL unreachable at {MYSQL_URL}: {e}")
    return MYSQL_URL


@pytest.fixture
def db_prefix() -> str:
    """A unique prefix for table / catalog names in shared databases (parallel-safe)."""
    return f"t{uuid.uuid4().hex[:10]}_"


# -- S3 (moto) -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class S3Endpoint:
    """A running moto S3 server: its URL, a bucket and the FileIO properties that reach it."""

    url: str
    bucket: str
    properties: dict[str, str] = field(default_factory=dict)

    def location(self, *parts: str) -> str:
        return "/".join([f"s3://{self.bucket}", *parts])


def _start_moto() -> tuple[str, Callable[[], None]]:
    """moto's S3 server on a free port of 127.0.0.1 it binds itself: in this process when moto is installed,
    else (the clean-install venv, ``make test-install``, which has no test tools) as ``FLOE_MOTO_PYTHON -m
    moto.server -p 0``, whose log names the port. Returns its URL and its stop."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        python = os.environ.get("FLOE_MOTO_PYTHON")
        if not python:
            _unavailable("moto is not installed here and FLOE_MOTO_PYTHON names no interpreter that has it")
        proc = subprocess.Popen([str(python), "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = _moto_url(proc)

        def stop() -> None:
            proc.terminate()
            proc.wait(timeout=30)

        return url, stop
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}", server.stop


def _moto_url(proc: subprocess.Popen[str]) -> str:
    """The URL from moto's ``* Running on http://...`` line."""
    assert proc.stderr is not None
    match, _ = announced(proc.stderr, re.compile(r"Running on (http://127\.0\.0\.1:\d+)"), 60)
    if match is None:
        proc.kill()
        _unavailable("moto.server did not start listening in 60 s")
    return match.group(1)


def announced(stream: IO[str], pattern: re.Pattern[str], timeout_s: float) -> tuple[re.Match[str] | None, str]:
    """The first line of a process's ``stream`` that matches ``pattern`` (None if the stream ends or
    ``timeout_s`` passes first), and the text read until then. A server that binds port 0 names its port
    this way; a thread keeps draining the stream after, so the process's later output never fills the pipe."""
    lines: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None, "".join(seen)
        if line is None:
            return None, "".join(seen)
        seen.append(line)
        if match := pattern.search(line):
            return match, "".join(seen)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[S3Endpoint]:
    """moto's S3 server on 127.0.0.1 (one per pytest worker) with a fresh bucket."""
    from pyarrow.fs import S3FileSystem

    url, stop = _start_moto()
    props = {
        "s3.endpoint": url,
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
        "s3.region": "us-east-1",
        "s3.path-style-access": "true",
    }
    bucket = f"floe-{uuid.uuid4().hex[:12]}"
    # pyarrow, not boto3: the clean-install venv has only Floe's own dependencies
    fs = S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                      endpoint_override=url, force_virtual_addressing=False,
                      allow_bucket_creation=True)
    fs.create_dir(bucket)
    try:
        yield S3Endpoint(url, bucket, props)
    finally:
        stop()


@pytest.fixture
def s3_warehouse(s3_endpoint: S3Endpoint) -> str:
    """A unique ``s3://bucket/<id>`` prefix for one test."""
    return s3_endpoint.location(f"wh-{uuid.uuid4().hex[:10]}")
