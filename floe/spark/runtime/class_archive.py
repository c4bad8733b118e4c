"""A class-data archive of the driver JVM, kept between programs so a Floe session starts sooner.

A Spark driver loads and verifies some 15,000 classes from its jars before the first query runs: 6.4 s to a
session and 2.4 s more to a first tiny query on the 2-core machine of bench/startup.py. HotSpot can map
classes already parsed and verified from an archive (AppCDS, JDK 13+): with one, the same program took 3.7 s
and 1.3 s. So a JVM that Floe launches:

- maps ``spark-<key>.jsa`` from Floe's cache directory when it is there (``-XX:SharedArchiveFile``);
- otherwise dumps the classes it loaded at exit (``-XX:ArchiveClassesAtExit``) into a file of its own, and
  a detached process (:mod:`floe.spark.runtime.class_archive_installer`) waits for that JVM to exit, has a
  second JVM load the dump with the same class path (``-Xshare:on``, which refuses a torn or mismatched
  archive) and only then moves it into place. No JVM maps a half-written file (HotSpot crashes on a
  truncated archive), and the program's exit does not wait for the dump (10-12 s at 100% of a core here).
  One JVM at a time dumps a given archive (a lock file beside it): the others start without one.

The key covers what HotSpot checks the archive against: the ``java`` that Spark's launcher runs (its JDK's
build) and the driver's class path (Spark's jars, their sizes and times, and any extra class path), so an
upgraded JDK or PySpark gets a new archive. HotSpot validates again on every load and runs without an
archive that does not match; its messages about that are off. Archives take 150-200 MB; the newest
three stay. ``FLOE_CLASS_ARCHIVE=0`` turns all of this off; the directory is
``$XDG_CACHE_HOME/floe/jvm`` (default ``~/.cache/floe/jvm``) and must belong to the user alone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from floe.errors import ValidationError
from floe.spark.runtime.class_archive_installer import lock_for

__all__ = ["ENV_SWITCH", "ClassArchive", "archive_dir", "plan_archive", "release", "start_installer"]

ENV_SWITCH = "FLOE_CLASS_ARCHIVE"
_MIN_FREE_BYTES = 2 << 30  # room for a dump (up to ~200 MB) with plenty to spare
# A dump's lock outlives its JVM only if the installer died; a JVM living longer than this (a service)
# lets another dump start, and the later of the two installs.
_LOCK_EXPIRY_SECONDS = 3600
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # a mismatched archive is skipped silently, as intended
_CLASSPATH_ENV = ("SPARK_CLASSPATH", "SPARK_DIST_CLASSPATH", "HADOOP_CONF_DIR", "YARN_CONF_DIR")

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClassArchive:
    """What a JVM about to be launched does with the archive."""

    options: str  # JVM options to add to the driver's
    archive: Path  # the installed archive (mapped when present)
    dump: Path | None  # the file the JVM writes at exit when no archive is installed yet


def archive_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/floe/jvm``, else ``~/.cache/floe/jvm``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "floe" / "jvm"


def plan_archive(settings: Mapping[str, str], spark_home: str, env: Mapping[str, str] | None = None) -> ClassArchive | None:
    """The archive options for a driver JVM launched with ``settings`` from ``spark_home``, or None when
    archives are off, the JDK cannot make them (no HotSpot base archive), the cache directory is unsafe or
    the file system refuses (an archive only saves time: the session starts without one).

    Raises:
        ValidationError: ``FLOE_CLASS_ARCHIVE`` set to something that is neither on nor off.
    """
    env = os.environ if env is None else env
    switch = env.get(ENV_SWITCH, "1").strip().lower()
    if switch in ("0", "false", "off", "no"):
        return None
    if switch not in ("1", "true", "on", "yes"):
        raise ValidationError(
            f"{ENV_SWITCH}={env[ENV_SWITCH]!r} is neither on nor off: set 1 to use the JVM's class archive, 0 to "
            "start without it (true/false, on/off and yes/no also work)"
        )
    try:
        return _plan(settings, spark_home, env)
    except OSError as e:
        _log.debug("no class archive: %s", e)
        return None


def _plan(settings: Mapping[str, str], spark_home: str, env: Mapping[str, str]) -> ClassArchive | None:
    java = _launcher_java(env)
    if java is None:
        return None
    java_home = java.parent.parent
    if not (java_home / "lib" / "server" / "classes.jsa").is_file():
        return None  # not HotSpot, or a JDK without its base archive: a dynamic archive needs one
    directory = archive_dir(env)
    if not _private_dir(directory):
        return None
    key = _key(java, java_home, Path(spark_home), settings.get("spark.driver.extraClassPath", ""), env)
    archive = directory / f"spark-{key}.jsa"
    if archive.is_file():
        os.utime(archive)  # the newest stay when old ones are pruned
        return ClassArchive(f"-XX:SharedArchiveFile={archive} {_QUIET}", archive, None)
    if shutil.disk_usage(directory).free < _MIN_FREE_BYTES or not _lock(lock_for(archive)):
        return None  # no room, or another JVM is dumping this archive: run without one this time
    dump = directory / f"spark-{key}.{uuid.uuid4().hex}.part"
    return ClassArchive(f"-XX:ArchiveClassesAtExit={dump} {_QUIET}", archive, dump)


def release(plan: ClassArchive) -> None:
    """Give up a planned dump (its JVM did not start, or no installer will run)."""
    if plan.dump is not None:
        lock_for(plan.archive).unlink(missing_ok=True)


def _lock(path: Path) -> bool:
    """Take the dump lock ``path``; a lock over :data:`_LOCK_EXPIRY_SECONDS` old was left by a dead dump."""
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            try:
                if path.stat().st_mtime > time.time() - _LOCK_EXPIRY_SECONDS:
                    return False
                path.unlink()
            except FileNotFoundError:
                pass
        except OSError:
            return False
    return False


def start_installer(plan: ClassArchive, gateway: Any) -> None:
    """When the JVM just launched dumps its classes at exit, start the process that installs the dump
    once that JVM has exited (:mod:`floe.spark.runtime.class_archive_installer`), detached, so neither
    the program's exit waits nor a killed program leaves a half-written archive in place.

    ``gateway`` is PySpark's gateway to that JVM: its ``proc`` is the JVM (Spark's launcher ``exec``s it)
    and its ``jvm`` gives the class path the dump is checked against, read now while the JVM is up.
    """
    if plan.dump is None:
        return
    proc = getattr(gateway, "proc", None)
    if proc is None:
        release(plan)
        return
    try:
        system = gateway.jvm.java.lang.System
        java = str(Path(system.getProperty("java.home")) / "bin" / "java")
        classpath = str(system.getProperty("java.class.path"))
        installer = Path(__file__).with_name("class_archive_installer.py")
        subprocess.Popen(
            [sys.executable, "-I", str(installer), str(proc.pid), str(plan.dump), str(plan.archive), java, classpath],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
    except Exception as e:  # noqa: BLE001 - an archive only saves time: never fail the session over it
        _log.debug("class archive installer not started: %s", e)
        release(plan)


def _launcher_java(env: Mapping[str, str]) -> Path | None:
    """The ``java`` Spark's launcher runs (``$JAVA_HOME/bin/java``, else the one on PATH), resolved."""
    home = env.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java", path=env.get("PATH"))
    if not found or not Path(found).is_file():
        return None
    return Path(os.path.realpath(found))


def _private_dir(directory: Path) -> bool:
    """Create ``directory`` if needed; True when it is the user's alone (a JVM maps what it holds)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = directory.stat()
    except OSError:
        return False
    owner = getattr(os, "getuid", None)  # POSIX only
    return owner is not None and st.st_uid == owner() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _key(java: Path, java_home: Path, spark_home: Path, extra_classpath: str, env: Mapping[str, str]) -> str:
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        digest.update(repr(parts).encode())

    for path in (java, java_home / "lib" / "server" / "libjvm.so", java_home / "lib" / "modules"):
        add(str(path), *_stamp(path))
    add(str(spark_home), extra_classpath, *(env.get(name, "") for name in _CLASSPATH_ENV))
    jars = spark_home / "jars"
    for name in sorted(os.listdir(jars)) if jars.is_dir() else ():
        add(name, *_stamp(jars / name))
    return digest.hexdigest()[:20]


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)
