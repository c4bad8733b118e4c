"""Which locations Spark's own file sources reach, and the S3A settings that point them at an ``s3.*`` store.

pyspark from PyPI ships no hadoop-aws, so ``s3://``, ``s3a://`` and ``s3n://`` locations have no Hadoop
file system in a plain ``pip install`` (writes fail with ``No FileSystem for scheme``, reads with
``ClassNotFoundException: S3AFileSystem``). Floe asks Spark's JVM, once per session and scheme, whether
a file system class resolves for the scheme Floe hands Spark (``s3a`` for all three):

- it does (the user added hadoop-aws, e.g. ``spark.jars.packages``): Spark's native Parquet reader and
  writer move the bytes, with the table's ``s3.*`` properties copied to per-bucket S3A settings;
- it does not: the bytes move through pyarrow's S3 file system inside Spark's Python workers
  (:mod:`floe.spark.scan.worker_read` for reads, the Arrow write path of :mod:`floe.spark.write.dataframe_write`), with the
  same ``s3.*`` properties. Nothing runs on the driver but planning and commits.

``spark.floe.s3.data-path`` chooses per session: ``auto`` (the default, as above), ``python`` (the Python
workers even where S3A is on the classpath: to compare the paths, or to bypass a cluster's S3A set-up) or
``native`` (S3A required: a session without it is refused instead of taking the slower path unnoticed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from threading import Lock

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.io.fileio import (
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)
from floe.io.locations import LOCAL_SCHEMES, S3_SCHEMES, scheme_of, split_bucket
from floe.spark.runtime.connect import is_connect, refuse
from floe.spark.runtime.java_classes import java_class

__all__ = ["S3_DATA_PATH_CONF", "configure_native_s3", "s3a_settings", "spark_reaches"]

S3_DATA_PATH_CONF = "spark.floe.s3.data-path"
_DATA_PATHS = ("auto", "python", "native")

_known: dict[tuple[str, str], bool] = {}
_lock = Lock()

# Iceberg's FileIO property -> the S3A setting (under fs.s3a.bucket.<bucket>.) with the same meaning.
_S3A_KEYS = {
    S3_ENDPOINT: "endpoint",
    S3_ACCESS_KEY_ID: "access.key",
    S3_SECRET_ACCESS_KEY: "secret.key",
    S3_SESSION_TOKEN: "session.token",
    S3_REGION: "endpoint.region",
    S3_PATH_STYLE_ACCESS: "path.style.access",
}


def _hadoop_scheme(location: str) -> str:
    scheme = scheme_of(location)
    return "s3a" if scheme in S3_SCHEMES else scheme


def spark_reaches(spark: SparkSession, location: str) -> bool:
    """Whether Spark's file sources can read and write ``location`` (a Hadoop file system for its scheme)."""
    scheme = _hadoop_scheme(location)
    if scheme in LOCAL_SCHEMES:
        return True
    wanted = _s3_data_path(spark) if scheme == "s3a" else "auto"
    if is_connect(spark):  # no JVM to ask: the server's own file system for the scheme, or its error
        if wanted == "python":
            raise refuse(f"{S3_DATA_PATH_CONF}=python (pyarrow's S3 client in Spark's Python workers)")
        return True
    if wanted == "python":
        return False
    found = _file_system_resolves(spark, scheme)
    if wanted == "native" and not found:
        raise ValidationError(
            f"{S3_DATA_PATH_CONF}=native but Spark has no S3A file system for {location}: add hadoop-aws "
            "(of your pyspark's Hadoop version) to spark.jars.packages or spark.jars, or set it to auto"
        )
    return found


def _s3_data_path(spark: SparkSession) -> str:
    value = str(spark.conf.get(S3_DATA_PATH_CONF, "auto")).strip().lower()
    if value not in _DATA_PATHS:
        raise ValidationError(f"Invalid {S3_DATA_PATH_CONF}={value!r}: expected one of {', '.join(_DATA_PATHS)}")
    return value


def _file_system_resolves(spark: SparkSession, scheme: str) -> bool:
    """Whether Spark's JVM has a Hadoop file system class for ``scheme`` (asked once per application)."""
    key = (spark.sparkContext.applicationId, scheme)
    with _lock:
        known = _known.get(key)
    if known is not None:
        return known
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        file_systems = java_class(jvm, "org.apache.hadoop.fs.FileSystem")
        file_systems.getFileSystemClass(scheme, spark.sparkContext._jsc.hadoopConfiguration())
        found = True
    except Py4JJavaError:  # UnsupportedFileSystemException, or ClassNotFoundException (no hadoop-aws)
        found = False
    with _lock:
        _known[key] = found
    return found


def s3a_settings(location: str, properties: Mapping[str, str]) -> dict[str, str]:
    """The Hadoop settings that make S3A reach ``location``'s bucket as the ``s3.*`` properties say.

    Per bucket (``fs.s3a.bucket.<bucket>.*``), so tables on other stores keep their own settings.
    """
    if scheme_of(location) not in S3_SCHEMES:
        return {}
    _, bucket, _ = split_bucket(location)
    out = {f"fs.s3a.bucket.{bucket}.{s3a}": properties[key] for key, s3a in _S3A_KEYS.items() if key in properties}
    endpoint = properties.get(S3_ENDPOINT, "")
    if endpoint.startswith("http://"):
        out[f"fs.s3a.bucket.{bucket}.connection.ssl.enabled"] = "false"
    if S3_ACCESS_KEY_ID in properties:
        out[f"fs.s3a.bucket.{bucket}.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            if S3_SESSION_TOKEN in properties
            else "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        )
    return out


def configure_native_s3(spark: SparkSession, locations: Iterable[str], properties: Mapping[str, str]) -> None:
    """Copy the table's ``s3.*`` properties into Spark's Hadoop configuration before a native read or write
    of ``locations`` (per bucket, see :func:`s3a_settings`)."""
    settings: dict[str, str] = {}
    buckets: set[str] = set()
    for location in locations:
        if scheme_of(location) in S3_SCHEMES and (bucket := split_bucket(location)[1]) not in buckets:
            buckets.add(bucket)
            settings.update(s3a_settings(location, properties))
    if not settings:
        return
    if is_connect(spark):  # a session's SQL confs reach the Hadoop configuration its file sources use
        for k, v in settings.items():
            spark.conf.set(k, v)
        return
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for k, v in settings.items():
        if conf.get(k) != v:
            conf.set(k, v)
