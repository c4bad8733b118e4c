"""The driver JVM's class-data archive: when a session maps one, dumps one or neither, and how a dump is
checked before it is installed (floe.spark.runtime.class_archive, class_archive_installer).

The checks run the machine's real ``java`` (HotSpot refusing a file that is not an archive); the whole
cycle with Spark (a program dumps, the next one maps) is in tests/spark/test_class_archive_cycle.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from floe.errors import ValidationError
from floe.spark.runtime import class_archive_installer as installer
from floe.spark.runtime.class_archive import archive_dir, plan_archive, release

JAVA = shutil.which("java")
pytestmark = pytest.mark.skipif(JAVA is None, reason="needs a JDK (Spark's own requirement)")


def _java_home() -> Path:
    assert JAVA is not None
    return Path(os.path.realpath(JAVA)).parent.parent


@pytest.fixture()
def spark_home(tmp_path: Path) -> Path:
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "a.jar").write_bytes(b"a")
    (jars / "b.jar").write_bytes(b"bb")
    return tmp_path / "spark"


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "JAVA_HOME": str(_java_home()), "PATH": os.environ["PATH"]}


def test_first_session_dumps_later_ones_wait_for_it(env: dict[str, str], spark_home: Path) -> None:
    first = plan_archive({}, str(spark_home), env)
    assert first is not None and first.dump is not None
    assert f"-XX:ArchiveClassesAtExit={first.dump}" in first.options
    assert first.dump.parent == first.archive.parent == archive_dir(env)
    assert oct(archive_dir(env).stat().st_mode & 0o777) == "0o700"
    # One dump per archive at a time: another JVM starting meanwhile runs without.
    assert plan_archive({}, str(spark_home), env) is None
    release(first)
    again = plan_archive({}, str(spark_home), env)
    assert again is not None and again.dump is not None and again.dump != first.dump


def test_a_dead_dumps_lock_expires(env: dict[str, str], spark_home: Path) -> None:
    first = plan_archive({}, str(spark_home), env)
    assert first is not None
    lock = installer.lock_for(first.archive)
    hours_ago = time.time() - 2 * 3600
    os.utime(lock, (hours_ago, hours_ago))
    assert plan_archive({}, str(spark_home), env) is not None


def test_an_installed_archive_is_mapped(env: dict[str, str], spark_home: Path) -> None:
    plan = plan_archive({}, str(spark_home), env)
    assert plan is not None
    release(plan)
    plan.archive.write_bytes(b"stands in for an archive")
    mapped = plan_archive({}, str(spark_home), env)
    assert mapped is not None and mapped.dump is None
    assert mapped.options.startswith(f"-XX:SharedArchiveFile={plan.archive} ")
    assert "-Xlog:cds=off" in mapped.options


def test_the_key_follows_the_class_path(env: dict[str, str], spark_home: Path) -> None:
    def archive(settings: dict[str, str]) -> Path:
        plan = plan_archive(settings, str(spark_home), env)
        assert plan is not None
        release(plan)
        return plan.archive

    before = archive({})
    assert archive({}) == before
    assert archive({"spark.driver.extraClassPath": "/opt/extra.jar"}) != before
    (spark_home / "jars" / "b.jar").write_bytes(b"bbb")  # an upgraded jar
    assert archive({}) != before
    assert archive({}) == archive({})


@pytest.mark.parametrize("case", ["switched off", "not hotspot", "shared directory"])
def test_no_archive(case: str, env: dict[str, str], spark_home: Path, tmp_path: Path) -> None:
    if case == "switched off":
        env["FLOE_CLASS_ARCHIVE"] = "0"
    elif case == "not hotspot":  # no base archive: HotSpot could not build on it, other JVMs lack the flags
        fake = tmp_path / "jdk" / "bin"
        fake.mkdir(parents=True)
        (fake / "java").write_text("#!/bin/sh\n")
        env["JAVA_HOME"] = str(tmp_path / "jdk")
    else:  # a JVM maps what the directory holds: others must not be able to write there
        archive_dir(env).mkdir(parents=True)
        archive_dir(env).chmod(0o777)
    assert plan_archive({}, str(spark_home), env) is None


def test_a_switch_neither_on_nor_off_is_refused(env: dict[str, str], spark_home: Path) -> None:
    env["FLOE_CLASS_ARCHIVE"] = "disabled"
    with pytest.raises(ValidationError, match="FLOE_CLASS_ARCHIVE='disabled' is neither on nor off"):
        plan_archive({}, str(spark_home), env)
    env["FLOE_CLASS_ARCHIVE"] = "Off"
    assert plan_archive({}, str(spark_home), env) is None


def test_a_file_hotspot_refuses_is_not_installed(tmp_path: Path) -> None:
    assert JAVA is not None
    dump, archive = tmp_path / "spark-k.x.part", tmp_path / "spark-k.jsa"
    dump.write_bytes(b"\0" * 4096)  # not an archive: what a JVM killed before writing its header leaves
    installer.lock_for(archive).write_text("")
    assert not installer.install(dump, archive, JAVA, str(tmp_path))
    assert not dump.exists() and not archive.exists()
    assert not installer.lock_for(archive).exists()  # the next JVM may dump again


def test_prune_keeps_the_newest(tmp_path: Path) -> None:
    now = time.time()
    for age, name in enumerate(["spark-a.jsa", "spark-b.jsa", "spark-c.jsa", "spark-d.jsa", "spark-e.jsa"]):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (now - age * 60, now - age * 60))
    fresh, stale = tmp_path / "spark-a.1.part", tmp_path / "spark-a.2.part"
    fresh.write_bytes(b"x")
    stale.write_bytes(b"x")
    os.utime(stale, (now - 2 * 86_400, now - 2 * 86_400))
    installer.prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-a.1.part", "spark-a.jsa", "spark-b.jsa", "spark-c.jsa"]


def test_waits_for_a_process_that_is_not_its_child() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    t = time.perf_counter()
    code = (f"import sys; sys.path.insert(0, {str(Path(installer.__file__).parent)!r}); "
            f"import class_archive_installer as i; i.wait_for_exit({sleeper.pid})")
    waiter = subprocess.run([sys.executable, "-I", "-c", code], timeout=30, check=True)
    assert waiter.returncode == 0
    assert time.perf_counter() - t >= 1.0
    sleeper.wait()


def test_a_session_adds_its_options_to_the_callers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pyspark import SparkContext

    from floe.spark.runtime.configure import _class_archive

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # As in a process whose first session is about to launch its JVM (in the suite, an earlier test's may be up).
    monkeypatch.setattr(SparkContext, "_gateway", None)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    settings = {"spark.driver.extraJavaOptions": "-Duser.timezone=UTC"}
    plan = _class_archive(settings)
    assert plan is not None
    assert settings["spark.driver.extraJavaOptions"] == f"-Duser.timezone=UTC {plan.options}"
    release(plan)
    # The caller's own choice of class sharing stays as it is.
    chosen = {"spark.driver.extraJavaOptions": "-Xshare:off"}
    assert _class_archive(chosen) is None
    assert chosen == {"spark.driver.extraJavaOptions": "-Xshare:off"}
