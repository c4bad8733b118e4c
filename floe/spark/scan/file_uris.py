"""Which string Spark reports in ``_metadata.file_path`` for each file it reads, asked of Spark itself.

The read path keys rows by their file to apply deletes and fill columns, so it must know, for every data
and delete file, the exact ``_metadata.file_path`` Spark gives its rows. Predicting that string from a
location (Hadoop qualifies relative paths, collapses ``//``, resolves ``..``, percent-encodes some
characters but not others) goes silently wrong on the first spelling it did not foresee, and a key that
matches nothing drops every delete without an error. So Floe does not predict: a relation's
``inputFiles()`` lists the URIs Spark will report (the same ``Path.toUri`` strings, listed when the
relation was created, no job run), and each is matched back to the location Floe passed by undoing the
URI encoding. A file that cannot be matched fails the read.

``inputFiles()`` and ``_metadata.file_path`` encode paths identically but may spell an empty authority
differently (``file:///p`` listed, ``file:/p`` reported, on Spark 4). Which spelling the rows carry is
read from one real row (a ``limit(1)`` job) the first time a session reads files of a scheme, then kept.
"""

from __future__ import annotations

import os
import posixpath
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import ReadError
from floe.io.locations import is_local, to_local_path
from floe.spark.runtime.connect import application_id, is_connect
from floe.spark.runtime.frame_calls import java_strings, python_strings
from floe.spark.scan.file_status_log import loggable_uri, status_log_folder

__all__ = ["file_relation", "reads_each_file_whole", "reported_uris", "spark_location"]


def reads_each_file_whole(spark: SparkSession, sizes: Sequence[int]) -> bool:
    """Whether Spark's file source reads each file of one relation of files of ``sizes`` (bytes) in a single
    task: none is longer than the split size Spark computes for the relation (its
    ``FilePartition.maxSplitBytes``: the largest split, bounded by the bytes per core, open costs counted)."""
    if not sizes:
        return True
    conf = spark._jsparkSession.sessionState().conf()
    open_cost = int(conf.filesOpenCostInBytes())
    minimum = conf.filesMinPartitionNum()
    partitions = int(minimum.get()) if minimum.isDefined() else int(spark._jsparkSession.leafNodeDefaultParallelism())
    per_core = sum(size + open_cost for size in sizes) // max(partitions, 1)
    return max(sizes) <= min(int(conf.filesMaxPartitionBytes()), max(open_cost, per_core))


def spark_location(location: str) -> str:
    """The string handed to Spark's file sources for a location (local paths absolute, ``s3`` as ``s3a``).

    Local paths are made absolute here, against this process's working directory, rather than by the
    JVM against its own.
    """
    if is_local(location):
        return os.path.abspath(to_local_path(location))
    scheme, sep, rest = location.partition("://")
    if sep and scheme.lower() in ("s3", "s3n"):  # Hadoop's one S3 file system is S3A
        return "s3a://" + rest
    return location


_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@contextmanager
def _listed_on_driver(spark: SparkSession, paths: int) -> Iterator[None]:
    """Let a relation over ``paths`` explicit files be created without Spark's listing job.

    Spark lists more than 32 paths with a job of one task per path (measured: 2-5 s for 960 files, against
    0.2 s listed on the driver). Floe hands Spark files it already knows from the manifests, so there is
    nothing to discover: the threshold is raised while the relation is created, then restored (one
    relation at a time: concurrent rewrites of file groups create theirs from several threads).
    """
    with _LISTING_CONF:
        yield from _threshold_raised(spark, paths)


_LISTING_CONF = threading.Lock()


def _threshold_raised(spark: SparkSession, paths: int) -> Iterator[None]:
    conf = spark.conf
    before = conf.get(_DISCOVERY_THRESHOLD, None)
    if before is not None and int(before) >= paths:
        yield
        return
    conf.set(_DISCOVERY_THRESHOLD, str(paths + 1))
    try:
        yield
    finally:
        if before is None:
            conf.unset(_DISCOVERY_THRESHOLD)
        else:
            conf.set(_DISCOVERY_THRESHOLD, before)


# Floe's reads must fail when a file of the table is missing or unreadable, whatever the session says:
# a skipped delete file would bring deleted rows back in silence (Spark reads these options per relation).
_NEVER_SKIP = {"ignoreMissingFiles": "false", "ignoreCorruptFiles": "false"}
_COMPACT_INTERVAL = "spark.sql.streaming.fileSink.log.compactInterval"
# Parquet's vectored reads hand each range of a local file to an asynchronous channel's thread and wait for
# it (Hadoop's RawLocalFileSystem.readVectored): for local files that is only a cost (local[2], 2026-12-04,
# one task reading 2,000 files of 1,000 rows: 1.6 s with it, 1.0 s without; 20M rows in 4 files aggregated:
# 1.3 s, 1.1 s). Object stores keep it: there it merges ranges into fewer, parallel requests.
_LOCAL_PARQUET = {"parquet.hadoop.vectored.io.enabled": "false"}


def file_relation(
    spark: SparkSession,
    fmt: str,
    schema: T.StructType | str,
    locations: Sequence[str],
    size_of: Mapping[str, int] | None = None,
) -> DataFrame:
    """Spark's ``fmt`` (parquet or orc) relation over the files at ``locations``, with ``schema``.

    With ``size_of`` (each location's bytes, from the manifests) and local files of those sizes, Spark is
    handed the files' statuses (:mod:`floe.spark.scan.file_status_log`) and looks none up; otherwise it
    lists them on the driver (see :func:`_listed_on_driver`). A missing or corrupt file fails the read
    either way. The statuses are the faster way for one file as for thousands: measured on local[2]
    (2026-12-07, medians of 15), a relation over 1, 2, 4, 8 and 16 files took 13-22, 12-14, 11-21, 14-19
    and 14-18 ms from a log, against 14-26, 20-24, 17-28, 18-29 and 35-38 ms listed; a read builds one
    or two such relations on every query.
    """
    paths = [spark_location(x) for x in locations]
    reader = spark.read.format(fmt).schema(schema).options(**_NEVER_SKIP)
    if fmt == "parquet" and all(is_local(x) for x in locations):
        reader = reader.options(**_LOCAL_PARQUET)
    if is_connect(spark):  # the server lists the files itself (a status log here may not be its to read)
        with _listed_on_driver(spark, len(paths)):
            return reader.load(paths)
    if size_of is not None:
        sizes = [size_of[x] for x in locations]
        # Each file once (Spark's own listing keeps one status per path; a log would read a repeat twice).
        # The URIs are checked before the files are: a string match is cheaper than a stat.
        statuses = {loggable_uri(p): n for p, n in zip(paths, sizes, strict=True)}
        if None not in statuses and _sizes_hold(paths, sizes):
            interval = int(spark.conf.get(_COMPACT_INTERVAL, "10") or "10")
            with status_log_folder([(u, n) for u, n in statuses.items() if u is not None], interval) as folder:
                if folder is not None:
                    # No partition columns inferred from the files' folders (``k=v``): Floe fills its own.
                    return reader.option("recursiveFileLookup", "true").load(folder)
    with _listed_on_driver(spark, len(paths)):
        if len(paths) == 1:
            return reader.load(paths[0])
        array = java_strings(spark._jvm, paths)
        if array is None:
            return reader.load(paths)
        return DataFrame(reader._jreader.load(array), spark)


def _sizes_hold(paths: Sequence[str], sizes: Sequence[int]) -> bool:
    """Whether every path is a local file of the size given. Spark's Parquet reader opens a file at its real
    length but keeps to the row groups inside the size it was handed, so a short size in a manifest would
    drop rows in silence where Iceberg Java's reader fails; local sizes are checked here (a ``stat`` is
    microseconds from Python, where Hadoop's status costs Spark about 0.1 ms), others are left to Spark's
    listing, as is any file missing or of another size."""
    for path, size in zip(paths, sizes, strict=True):
        if not path.startswith("/"):
            return False
        try:
            if os.stat(path).st_size != size:
                return False
        except OSError:
            return False
    return True


def _input_files(relation: DataFrame) -> list[str]:
    """``relation.inputFiles()``, brought over in one py4j call (one RPC on Spark Connect)."""
    if is_connect(relation.sparkSession):
        return [str(f) for f in relation.inputFiles()]
    return python_strings(relation.sparkSession._jvm, relation._jdf.inputFiles())


def _normal_path(path: str) -> str:
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("//") else out  # normpath keeps a leading '//'


def _passed_identity(passed: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a string Floe passed to Spark (Hadoop takes its path literally)."""
    if passed.startswith("/"):
        return "file", "", _normal_path(passed)
    parts = urlsplit(passed)
    return parts.scheme.lower(), parts.netloc, _normal_path(parts.path or "/")


def _reported_identity(uri: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a URI Spark reports (its path percent-encoded)."""
    parts = urlsplit(uri)
    netloc = "" if parts.scheme == "file" and parts.netloc in ("", "localhost") else parts.netloc
    return parts.scheme.lower(), netloc, _normal_path(unquote(parts.path or "/"))


# (Spark application id, scheme) -> whether rows keep the listed ``scheme:///`` spelling of an empty authority.
_KEEPS_EMPTY_AUTHORITY: dict[tuple[str, str], bool] = {}


def _without_empty_authority(uri: str) -> str:
    scheme, sep, rest = uri.partition(":///")
    return f"{scheme}:/{rest}" if sep and "/" not in scheme else uri


def _row_spelling(relation: DataFrame, listed: list[str], table_name: str) -> dict[str, str]:
    """Listed URI -> the string rows carry (learnt per session and scheme from one row)."""
    if not any(":///" in u for u in listed):
        return {u: u for u in listed}
    scheme = listed[0].split(":", 1)[0].lower()
    key = (application_id(relation.sparkSession), scheme)
    keeps = _KEEPS_EMPTY_AUTHORITY.get(key)
    if keeps is None:
        first = relation.select(F.col("_metadata.file_path")).limit(1).collect()
        if not first:
            return {u: u for u in listed}  # no rows at all: nothing to key
        reported = str(first[0][0])
        if reported in listed:
            keeps = True
        elif reported in {_without_empty_authority(u) for u in listed}:
            keeps = False
        else:
            raise ReadError(
                f"Table {table_name}: Spark reports rows of file {reported}, which is none of the files it "
                f"lists ({', '.join(sorted(listed)[:3])}); refusing to read without applying deletes"
            )
        _KEEPS_EMPTY_AUTHORITY[key] = keeps
    return {u: u if keeps else _without_empty_authority(u) for u in listed}


def reported_uris(relation: DataFrame, locations: Sequence[str], *, table_name: str) -> dict[str, str]:
    """Each location (as given to :func:`spark_location`) -> the ``_metadata.file_path`` of its rows.

    Args:
        relation: a file-source relation created from ``[spark_location(x) for x in locations]``.
        locations: the locations read.
        table_name: for the error message.

    Raises:
        ReadError: Spark reads a location under a URI this cannot match (its rows could not be told apart,
            so deletes could not be applied to them).
    """
    listed = _input_files(relation)
    carried = _row_spelling(relation, listed, table_name)
    reported = {_reported_identity(u): carried[u] for u in listed}
    out: dict[str, str] = {}
    for loc in locations:
        uri = reported.get(_passed_identity(spark_location(loc)))
        if uri is None:
            sample = ", ".join(sorted(reported.values())[:3])
            raise ReadError(
                f"Table {table_name}: cannot tell which of the files Spark reads is {loc} "
                f"(Spark reports e.g. {sample}); refusing to read without applying its deletes"
            )
        out[loc] = uri
    return out
