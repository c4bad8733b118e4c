"""Helpers the Spark SQL test modules share: run a statement, its rows in a stable order, load a table, an
Iceberg-style catalog on the shared session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

import floe.spark
from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.sql import ResultSet
from floe.sql.engine import SqlSession
from floe.table.table import Table


def run(session: SqlSession, sql: str) -> ResultSet:
    """The last statement's result."""
    return session.sql(sql)[-1]


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    """The result's rows, sorted (SQL gives no order without ORDER BY)."""
    return sorted(run(session, sql).rows, key=repr)


def table(session: SqlSession, name: str) -> Table:
    """Table ``db.<name>`` of the session's current catalog."""
    t = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t


@contextmanager
def iceberg_catalog(spark: SparkSession, name: str, **props: str) -> Iterator[str]:
    """Catalog ``name`` configured on the shared session as Iceberg's docs write it, Floe attached; the
    confs are removed afterwards (catalog confs are runtime SQL settings)."""
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            **{f"spark.sql.catalog.{name}.{k}": v for k, v in props.items()}}
    for k, v in keys.items():
        spark.conf.set(k, v)
    floe.spark.attach(spark)
    try:
        yield name
    finally:
        for k in keys:
            spark.conf.unset(k)


@contextmanager
def hadoop_lake(spark: SparkSession, tmp_path: Path, prefix: str) -> Iterator[str]:
    """A Hadoop catalog on the shared session, warehouse under ``tmp_path``, named ``<prefix>_<test folder>``
    (a name per test: catalogs are session-wide); removed when the block ends."""
    name = f"{prefix}_{tmp_path.name.replace('-', '_')[-20:]}"
    with iceberg_catalog(spark, name, type="hadoop", warehouse=str(tmp_path / "wh")):
        yield name


def hadoop_session(spark: SparkSession, warehouse: Path, home: Path, catalog: str = "c") -> SqlSession:
    """A Floe SQL session whose catalog ``catalog`` is an Iceberg Hadoop catalog on ``warehouse`` (the layout
    jsql's ``Jsql.hadoop_catalog`` opens), with its Floe home under ``home``."""
    prefix = f"spark.sql.catalog.{catalog}"
    conf = {"spark.sql.session.timeZone": "UTC", prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.type": "hadoop", f"{prefix}.warehouse": f"file:{warehouse}"}
    cfg = FloeConfig.load(conf, environ={"HOME": str(home), "FLOE_HOME": str(home / ".floe")}, cwd=home)
    return make_session(cfg, spark=spark)
