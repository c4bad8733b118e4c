"""A CDC stream of 50 micro-batches written by Floe, read back by Iceberg Java after every batch (issue #12).

Floe's streaming sink applies mixed inserts, updates and deletes (equality deletes for keys of earlier
commits, position deletes for keys written in the same batch) to a partitioned v2 table with identifier
fields; Iceberg Java 1.10 (jsql, through the same JDBC catalog) reads every batch's snapshot by time
travel, and both engines must hold the rows of a plain Python model of the changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe.spark
from floe.spark.runtime.sql_session import floe_sql_state
from floe.spark.streaming.sink import EPOCH_ID
from tests.conftest import Jsql
from tests.spark._changelog import apply_model, as_state, random_batches, write_batch_files


def _conf(root: Path) -> dict[str, str]:
    prefix = "spark.sql.catalog.jcdc"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": f"jdbc:sqlite:{root}/catalog.db",
        f"{prefix}.warehouse": f"file:{root}/wh",
    }


@pytest.fixture
def catalog(spark: SparkSession, tmp_path: Path) -> Iterator[dict[str, str]]:
    conf = _conf(tmp_path)
    for k, v in conf.items():
        spark.conf.set(k, v)
    floe.spark.attach(spark)
    spark.sql("CREATE NAMESPACE jcdc.db")
    try:
        yield conf
    finally:
        for k in conf:
            spark.conf.unset(k)


@pytest.mark.parametrize(("upsert", "n_batches"), [(False, 50), (True, 15)], ids=["changelog", "upsert"])
def test_java_reads_every_batch_of_a_cdc_stream(spark: SparkSession, catalog: dict[str, str], jsql: Jsql,
                                                tmp_path: Path, upsert: bool, n_batches: int) -> None:
    name = "jcdc.db.cdc"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT NOT NULL, dt STRING NOT NULL, v STRING) USING iceberg PARTITIONED BY (dt) "
        f"TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='{str(upsert).lower()}')"
    )
    spark.sql(f"ALTER TABLE {name} SET IDENTIFIER FIELDS id, dt")
    batches = random_batches(n_batches, keys=200, per_batch=40, seed=2024 + upsert, upsert=upsert)
    write_batch_files(tmp_path / "in", batches)
    stream = spark.readStream.schema("seq bigint, op string, id bigint, dt string, v string").option(
        "maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    (stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp"))
     .option("op-column", "op").option("order-column", "seq").trigger(availableNow=True).toTable(name)
     .awaitTermination())

    table = floe_sql_state(spark).context.load(("jcdc", "db", "cdc"))
    by_epoch = {int(s.summary[EPOCH_ID]): s.snapshot_id for s in table.snapshots() if s.summary and EPOCH_ID in s.summary}
    assert sorted(by_epoch) == list(range(n_batches))
    models = []
    state: dict[tuple[int, str], str] = {}
    for batch in batches:
        state = apply_model(state, batch)
        models.append(state)

    java = jsql.run([f"SELECT id, dt, v FROM {name} VERSION AS OF {by_epoch[e]}" for e in range(n_batches)], catalog)
    for epoch in range(n_batches):
        floe_rows = spark.sql(f"SELECT id, dt, v FROM {name} VERSION AS OF {by_epoch[epoch]}").collect()
        assert as_state([(r.id, r.dt, r.v) for r in floe_rows]) == models[epoch], f"Floe after batch {epoch}"
        java_rows = java[epoch]["rows"]
        assert isinstance(java_rows, list)
        assert as_state([(int(r[0]), r[1], r[2]) for r in java_rows]) == models[epoch], f"Java after batch {epoch}"
