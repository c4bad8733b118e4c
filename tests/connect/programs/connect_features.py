"""Iceberg-on-Spark calls beyond the README's pipeline, on a classic or a Spark Connect session.

Usage: python connect_features.py MASTER WAREHOUSE   (MASTER: local[2] or sc://host:port)
Prints one JSON object: for each step, its rows (sorted) or, for the steps that need Floe on the server,
the first line of the error they raise (Connect only).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe
import floe.spark

master, warehouse = sys.argv[1:3]
remote = master.startswith("sc://")
builder = SparkSession.builder.remote(master) if remote else SparkSession.builder.master(master)
spark = (
    builder.config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
    .config("spark.sql.catalog.lake.type", "hadoop")
    .config("spark.sql.catalog.lake.warehouse", warehouse)
    .config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
floe.spark.attach(spark)
S = spark.sql
out: dict[str, Any] = {}


def rows(df: Any) -> list[list[Any]]:
    return sorted(([str(v) for v in r] for r in df.collect()), key=repr)


def step(name: str, fn: Callable[[], Any]) -> None:
    out[name] = fn()


def refused(name: str, fn: Callable[[], Any]) -> None:
    if not remote:
        return
    try:
        fn()
        out[name] = "no error"
    except Exception as e:  # noqa: BLE001 - the message is what the test checks
        out[name] = f"{type(e).__name__}: {str(e).splitlines()[0]}"


MOR = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
S(f"CREATE TABLE lake.db.m (id BIGINT, s STRING, d DATE) USING iceberg PARTITIONED BY (truncate(1, s), months(d)) "
  f"TBLPROPERTIES ({MOR})")
S("INSERT INTO lake.db.m VALUES (1, 'aa', DATE '2024-01-01'), (2, 'ab', DATE '2024-02-02'), (3, 'bb', DATE '2024-03-03'), "
  "(4, 'bc', NULL)")
S("DELETE FROM lake.db.m WHERE id = 2")
S("UPDATE lake.db.m SET s = 'bz' WHERE id = 3")
spark.createDataFrame([(1, "zz", None), (9, "q", None)], "id bigint, s string, d date").createOrReplaceTempView("src")
S("MERGE INTO lake.db.m t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = s.s WHEN NOT MATCHED THEN INSERT *")
step("merge_on_read", lambda: rows(spark.table("lake.db.m")))
step("position_deletes", lambda: S("SELECT count(*) FROM lake.db.m.position_deletes").collect()[0][0])
step("metadata_columns", lambda: rows(S("SELECT id, _pos, _spec_id FROM lake.db.m WHERE id = 4")))
first = S("SELECT snapshot_id FROM lake.db.m.snapshots ORDER BY committed_at").collect()[0][0]
step("version_as_of", lambda: rows(S(f"SELECT * FROM lake.db.m VERSION AS OF {first}")))
step("snapshot_option", lambda: rows(spark.read.format("iceberg").option("snapshot-id", first).load("lake.db.m")))
step("filtered_read", lambda: rows(floe.spark.read(spark, "lake.db.m", filter="id > 1")))

S("CREATE TABLE lake.db.v3 (id BIGINT, b STRING) USING iceberg "
  "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')")
S("INSERT INTO lake.db.v3 SELECT id, cast(id AS STRING) FROM range(100)")
S("DELETE FROM lake.db.v3 WHERE id % 10 = 0")
step("deletion_vectors", lambda: spark.table("lake.db.v3").agg(F.count("*"), F.sum("id")).collect()[0][:])

events = spark.range(6).selectExpr("id", "timestamp_seconds(id * 86400) AS ts", "cast(id % 2 AS INT) AS k")
events.writeTo("lake.db.e").partitionedBy(F.days("ts"), F.expr("bucket(3, id)"), F.expr("truncate(2, k)")).create()
events.write.format("iceberg").mode("append").save("lake.db.e")
events.where("id < 2").write.insertInto("lake.db.e")
events.where("id >= 4").writeTo("lake.db.e").overwrite(F.col("id") >= 4)
step("writes", lambda: rows(spark.table("lake.db.e")))
step("partitions", lambda: rows(S("SELECT partition, record_count FROM lake.db.e.partitions")))
step("compaction", lambda: S("CALL lake.system.rewrite_data_files(table => 'db.e')").collect()[0][:2])
step("after_compaction", lambda: rows(spark.table("lake.db.e")))
step("expire", lambda: S("CALL lake.system.expire_snapshots(table => 'db.e', retain_last => 1)").collect()[0][0])
S("ALTER TABLE lake.db.e ADD COLUMN note STRING")
S("ALTER TABLE lake.db.e RENAME COLUMN k TO kind")
step("evolved", lambda: rows(S("SELECT id, kind, note FROM lake.db.e WHERE id < 3")))
step("ctas", lambda: rows(S("CREATE TABLE lake.db.c USING iceberg AS SELECT * FROM lake.db.e WHERE id < 2")
                          and spark.read.table("lake.db.c")))

S("CREATE TABLE lake.db.bs USING iceberg PARTITIONED BY (bucket(4, s), bucket(3, b)) "
  "AS SELECT concat('user-', id) AS s, encode(repeat('x', cast(id AS INT)), 'UTF-8') AS b FROM range(20)")
step("bucket_of_string", lambda: rows(S("SELECT partition, record_count FROM lake.db.bs.partitions")))
refused("bucket_of_decimal", lambda: S("CREATE TABLE lake.db.bd USING iceberg PARTITIONED BY (bucket(4, d)) "
                                       "AS SELECT CAST(1.5 AS DECIMAL(9, 2)) AS d").collect())
refused("data_source_option", lambda: spark.read.format("iceberg").option("split-size", "1024").load("lake.db.m"))
step("save_by_location", lambda: (
    events.selectExpr("id + 100 AS id", "ts", "k AS kind", "CAST(NULL AS STRING) AS note")
    .write.format("iceberg").mode("append").save(f"{warehouse}/db/e"),
    rows(S("SELECT id, kind FROM lake.db.e WHERE id >= 100")))[1])
refused("save_with_catalog_options", lambda: events.write.format("iceberg").mode("append")
        .option("catalog-name", "inline").option("catalog.type", "sql")
        .option("catalog.uri", f"sqlite:///{warehouse}/inline.db").save("db.x"))
refused("stream_write", lambda: spark.readStream.format("rate").load().writeStream.toTable("lake.db.e"))
refused("stream_read", lambda: spark.readStream.format("iceberg").load("lake.db.e"))
print("RESULT " + json.dumps(out, default=str))
spark.stop()
