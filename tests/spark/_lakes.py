"""An Iceberg catalog attached to the shared session for one test or module: SQLite, with its warehouse on
local disk, on S3 through Floe's pip-only path (``s3``) or on S3 through Spark's S3A (``s3a``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe.spark
from floe.spark.runtime.storage import S3_DATA_PATH_CONF

# The data path each kind asks for (spark.floe.s3.data-path): "native" refuses a session without S3A.
DATA_PATHS = {"local": None, "s3": "python", "s3a": "native"}


@dataclass
class Lake:
    """An attached catalog (``name``) on a SQLite file, with its warehouse local or on S3."""

    spark: SparkSession
    name: str
    warehouse: str
    io_properties: dict[str, str]
    catalog_db: Path

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        return [tuple(r) for r in self.spark.sql(statement).collect()]


@contextmanager
def attached_lake(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path, kind: str) -> Iterator[Lake]:
    """A catalog with namespace ``db``; its confs are unset afterwards (the session is shared)."""
    name = f"lake_{kind}_{uuid.uuid4().hex[:8]}"
    props: dict[str, str] = {}
    if kind == "local":
        warehouse = str(tmp_path / "wh")
    else:
        endpoint = request.getfixturevalue("s3_endpoint")
        warehouse = endpoint.location(f"wh-{uuid.uuid4().hex[:10]}")
        if kind == "s3a":  # the scheme Hadoop users write; Floe's FileIO takes it as s3
            warehouse = "s3a://" + warehouse.removeprefix("s3://")
        props = dict(endpoint.properties)
    p = f"spark.sql.catalog.{name}"
    # Only the catalog's s3.* properties point S3A at moto: Floe maps them to per-bucket S3A settings.
    conf = {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc",
            f"{p}.uri": f"jdbc:sqlite:{tmp_path}/catalog.db", f"{p}.warehouse": warehouse,
            **{f"{p}.{k}": v for k, v in props.items()}}
    if (path := DATA_PATHS[kind]) is not None:
        conf[S3_DATA_PATH_CONF] = path
    floe.spark.attach(spark, conf=conf)
    lake = Lake(spark, name, warehouse, props, tmp_path / "catalog.db")
    lake.sql(f"CREATE NAMESPACE {name}.db")
    try:
        yield lake
    finally:
        for key in conf:
            spark.conf.unset(key)
