"""File groups of a rewrite procedure run as concurrent Spark jobs (``max-concurrent-file-group-rewrites``).

A group that compacts into one file is one Spark task; run one after another, a table of many such
groups (one per partition, typically) keeps a single core busy. Java's actions submit up to
``max-concurrent-file-group-rewrites`` groups at once (default 5) and Spark shares the cores between their
jobs; so does this, from driver threads (PySpark pins each to a JVM thread) that carry the calling
thread's local properties and tags (a job group, a scheduler pool, a description the user set).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from pyspark.sql import SparkSession
from pyspark.util import inheritable_thread_target

from floe.io.fileio import FileIO
from floe.spec.manifest import DataFile

__all__ = ["rewrite_groups"]

G = TypeVar("G")


def rewrite_groups(
    groups: Sequence[G],
    rewrite: Callable[[G], list[DataFile]],
    *,
    concurrency: int,
    io: FileIO,
    spark: SparkSession | None = None,
) -> list[tuple[G, list[DataFile]]]:
    """Each group with the files ``rewrite`` wrote for it, in the order of ``groups``; at most
    ``concurrency`` groups run at once.

    On a failure no further group starts; once the running ones end, every file written is deleted and the
    first error is raised. With ``spark``, the groups' threads take the calling thread's local properties
    and tags.
    """
    if concurrency <= 1 or len(groups) <= 1:
        done: list[tuple[G, list[DataFile]]] = []
        try:
            for group in groups:
                done.append((group, rewrite(group)))
        except BaseException:
            io.delete_many([f.file_path for _, files in done for f in files])
            raise
        return done
    if spark is not None:
        rewrite = inheritable_thread_target(spark)(rewrite)  # captured here, in the calling thread
    with ThreadPoolExecutor(min(concurrency, len(groups)), thread_name_prefix="floe-rewrite") as pool:
        futures: list[Future[list[DataFile]]] = [pool.submit(rewrite, g) for g in groups]
        wait(futures, return_when=FIRST_EXCEPTION)
        for f in futures:
            f.cancel()  # not started yet: never will
        wait(futures)
    failed = [f for f in futures if not f.cancelled() and f.exception() is not None]
    if failed or any(f.cancelled() for f in futures):
        written = [x.file_path for f in futures if not f.cancelled() and f.exception() is None for x in f.result()]
        io.delete_many(written)
        error = failed[0].exception() if failed else None
        assert error is not None  # futures are cancelled only after one failed
        raise error
    return [(g, f.result()) for g, f in zip(groups, futures, strict=True)]
