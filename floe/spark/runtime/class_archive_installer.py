"""Install a driver JVM's class-data dump once that JVM has exited (see :mod:`floe.spark.runtime.class_archive`).

Run as a detached process by path, so it imports nothing but the standard library::

    python -I class_archive_installer.py PID DUMP ARCHIVE JAVA CLASSPATH

It waits for process PID (the JVM, which writes DUMP as it exits), has JAVA load DUMP with CLASSPATH under
``-Xshare:on`` (a torn, foreign or mismatched archive fails that load, in this throwaway JVM), and only then
moves DUMP to ARCHIVE, so no JVM ever maps a partial file. It then releases the dump's lock, keeps the
newest :data:`KEPT_ARCHIVES` archives and removes dumps left for over a day. Waiting for a process that is
not its child: on Linux a pidfd (exact even if the PID is reused later), elsewhere polling.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

KEPT_ARCHIVES = 3
_STALE_DUMP_SECONDS = 86_400


def lock_for(archive: Path) -> Path:
    """The file that marks a dump of ``archive`` under way (one JVM dumps at a time per archive)."""
    return archive.with_suffix(".lock")


def wait_for_exit(pid: int) -> None:
    """Return once process ``pid`` has exited (a zombie counts as exited)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        try:
            select.select([fd], [], [])
        finally:
            os.close(fd)
        return
    while _alive(pid):
        time.sleep(1.0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"


def loads(java: str, archive: Path, classpath: str) -> bool:
    """Whether a JVM with ``classpath`` maps ``archive`` (``-Xshare:on`` exits non-zero otherwise).

    A truncated archive crashes that JVM (SIGBUS): its crash report goes to a file beside the archive, removed
    here, and no core is dumped, so nothing lands in the directory the program ran in."""
    report = archive.with_name(f"{archive.name}.crash.log")
    cmd = [java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={report}",
           "-XX:-CreateCoredumpOnCrash", "-Xlog:disable", "-cp", classpath, "-version"]
    try:
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=archive.parent,
                              timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        report.unlink(missing_ok=True)
    return done.returncode == 0


def install(dump: Path, archive: Path, java: str, classpath: str) -> bool:
    """Move ``dump`` to ``archive`` if a JVM loads it, else delete it; then release the dump's lock and
    prune the directory."""
    try:
        ok = dump.is_file() and loads(java, dump, classpath)
        if ok:
            os.replace(dump, archive)
        else:
            dump.unlink(missing_ok=True)
    finally:
        lock_for(archive).unlink(missing_ok=True)
    prune(archive.parent)
    return ok


def prune(directory: Path) -> None:
    """Keep the newest :data:`KEPT_ARCHIVES` archives; drop dumps over a day old (their JVM died)."""
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    archives = sorted(directory.glob("spark-*.jsa"), key=mtime, reverse=True)
    for old in archives[KEPT_ARCHIVES:]:
        old.unlink(missing_ok=True)
    for dump in directory.glob("spark-*.part"):
        if mtime(dump) < time.time() - _STALE_DUMP_SECONDS:
            dump.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    pid, dump, archive, java, classpath = argv
    wait_for_exit(int(pid))
    return 0 if install(Path(dump), Path(archive), java, classpath) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
