"""The spec's every type through every write path: the same two rows (one holding a value of each type, one
of nulls) written by pyarrow (``table.append``), SQL ``INSERT ... SELECT``, ``writeTo().append()``,
``format("iceberg").save`` by name and by path (Floe's native writer) and by path through the Python data source
(a session that is not Floe-aware), and a streaming micro-batch, each read back equal to the
Arrow-written table by Floe's Arrow scan, by Spark and by PyIceberg."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _every_type import ALL_TYPES, build_rows
from _sql_helpers import iceberg_catalog
from pyiceberg.table import StaticTable
from pyspark.sql import DataFrame, SparkSession

import floe
from floe.catalog.base import Catalog
from floe.io.arrow_schema import schema_to_arrow
from floe.spark.runtime.transparent import TRANSPARENT_CONF
from floe.table.table import Table

pytestmark = pytest.mark.spark

Writer = Callable[[SparkSession, DataFrame, str, Table, Path], None]


def _stream(spark: SparkSession, source: DataFrame, name: str, target: Table, tmp: Path) -> None:
    source.write.parquet(str(tmp / "feed"))
    query = (
        spark.readStream.schema(source.schema).parquet(str(tmp / "feed")).writeStream.format("iceberg")
        .option("checkpointLocation", str(tmp / "cp")).trigger(availableNow=True).toTable(name)
    )
    query.awaitTermination()


def _sql_insert(spark: SparkSession, source: DataFrame, name: str, target: Table, tmp: Path) -> None:
    source.createOrReplaceTempView("every_type_source")
    try:
        spark.sql(f"INSERT INTO {name} SELECT * FROM every_type_source")
    finally:
        spark.catalog.dropTempView("every_type_source")


def _datasource_save(spark: SparkSession, source: DataFrame, target: Table) -> None:
    """The Python data source's writer: what ``save`` runs on a session that is not Floe-aware."""
    spark.conf.set(TRANSPARENT_CONF, "false")
    try:
        source.write.format("iceberg").mode("append").save(target.location())
    finally:
        spark.conf.unset(TRANSPARENT_CONF)


WRITERS: dict[str, Writer] = {
    "sql-insert": _sql_insert,
    "write-to": lambda spark, source, name, target, tmp: source.writeTo(name).append(),
    "save-by-name": lambda spark, source, name, target, tmp: source.write.format("iceberg").mode("append").save(name),
    "save-by-path": lambda spark, source, name, target, tmp: (
        source.write.format("iceberg").mode("append").save(target.location())
    ),
    "datasource-save-by-path": lambda spark, source, name, target, tmp: _datasource_save(spark, source, target),
    "stream": _stream,
}


@pytest.fixture(scope="module")
def lake(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Catalog, Table]]:
    """A Hadoop catalog configured the Iceberg way, holding ``db.src`` written by pyarrow."""
    warehouse = tmp_path_factory.mktemp("every_type") / "wh"
    with iceberg_catalog(spark, "every_type", type="hadoop", warehouse=str(warehouse)) as name:
        catalog = floe.load_catalog(name, type="hadoop", warehouse=str(warehouse))
        catalog.create_namespace("db")
        source = catalog.create_table("db.src", ALL_TYPES)
        source.append(build_rows(schema_to_arrow(ALL_TYPES)))
        yield name, catalog, source.refresh()


def _arrow(table: Table) -> list[dict[str, object]]:
    return table.refresh().scan().to_arrow().sort_by("id").to_pylist()


def test_arrow_written_rows_hold_every_value(lake: tuple[str, Catalog, Table]) -> None:
    _, _, source = lake
    rows = _arrow(source)
    assert [r["id"] for r in rows] == [1, 2]
    assert all(v is not None for v in rows[0].values())
    assert all(v is None for k, v in rows[1].items() if k != "id")


@pytest.mark.parametrize("path", sorted(WRITERS))
def test_every_type_round_trips_through_the_write_path(
    spark: SparkSession, lake: tuple[str, Catalog, Table], path: str, tmp_path: Path
) -> None:
    name, catalog, source = lake
    target = catalog.create_table(f"db.{path.replace('-', '_')}", ALL_TYPES)
    full_name = f"{name}.db.{path.replace('-', '_')}"
    WRITERS[path](spark, spark.table(f"{name}.db.src"), full_name, target, tmp_path)
    assert _arrow(target) == _arrow(source), f"{path}: Floe's Arrow read differs from the pyarrow-written rows"
    ordered = spark.table(full_name).orderBy("id").collect()
    assert ordered == spark.table(f"{name}.db.src").orderBy("id").collect(), f"{path}: Spark reads differ"
    assert target.current_snapshot() is not None
    pyiceberg_rows = StaticTable.from_metadata(str(target.metadata_location)).scan().to_arrow().sort_by("id")
    assert _plain(pyiceberg_rows.to_pylist()) == _plain(_arrow(source)), f"{path}: PyIceberg reads differ"


def _plain(value: object) -> object:
    """UUIDs as their 16 bytes (PyIceberg and Floe hand them out as different Python types)."""
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
