"""Rewrite groups run concurrently (``max-concurrent-file-group-rewrites``), and a failure leaves no file."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from floe.io.fileio import FileIO
from floe.spark.procedures.group_rewrites import rewrite_groups
from floe.spec.manifest import DataFile, FileContent, FileFormat


def _file(path: Path) -> DataFile:
    path.write_bytes(b"x")
    return DataFile(content=FileContent.DATA, file_path=str(path), file_format=FileFormat.PARQUET,
                    partition=(), record_count=1, file_size_in_bytes=1)


def test_groups_run_at_once_up_to_the_limit_and_keep_their_order(tmp_path: Path) -> None:
    meet = threading.Barrier(3, timeout=10)  # passes only when three groups run at the same time
    running, peak, lock = 0, 0, threading.Lock()

    def rewrite(g: int) -> list[DataFile]:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        if g < 3:
            meet.wait()
        with lock:
            running -= 1
        return [_file(tmp_path / f"{g}.parquet")]

    done = rewrite_groups(list(range(7)), rewrite, concurrency=3, io=FileIO())
    assert [g for g, _ in done] == list(range(7))
    assert [Path(f[0].file_path).name for _, f in done] == [f"{g}.parquet" for g in range(7)]
    assert peak == 3


def test_one_at_a_time_when_the_limit_is_one(tmp_path: Path) -> None:
    threads: set[str] = set()

    def rewrite(g: int) -> list[DataFile]:
        threads.add(threading.current_thread().name)
        return [_file(tmp_path / f"{g}.parquet")]

    assert len(rewrite_groups([1, 2, 3], rewrite, concurrency=1, io=FileIO())) == 3
    assert threads == {threading.current_thread().name}


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_failed_group_deletes_every_file_written_and_starts_no_other(tmp_path: Path, concurrency: int) -> None:
    started: list[int] = []
    failing = threading.Event()

    def rewrite(g: int) -> list[DataFile]:
        started.append(g)
        if g == 1:
            failing.set()
            raise RuntimeError("group 1 failed")
        if concurrency > 1:  # group 0 ends after group 1 failed: its file is written, then deleted
            failing.wait(10)
            time.sleep(0.2)
        return [_file(tmp_path / f"{g}.parquet")]

    with pytest.raises(RuntimeError, match="group 1 failed"):
        rewrite_groups(list(range(6)), rewrite, concurrency=concurrency, io=FileIO())
    assert list(tmp_path.iterdir()) == []
    assert sorted(started) == [0, 1]
