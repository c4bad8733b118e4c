"""An Iceberg-on-Spark pipeline for a Spark standalone cluster, a REST catalog and an S3 warehouse.

Usage: python cluster_pipeline.py MASTER REST_URI TOKEN S3_ENDPOINT
Writes, merges (merge-on-read), deletes (copy-on-write), updates, compacts and expires through
``spark.sql``; prints one JSON object with what it read, for the test to compare with its model.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import functions as F

import floe.spark

master, uri, token, endpoint = sys.argv[1:5]
p = "spark.sql.catalog.lake"
spark = floe.spark.session({
    "spark.master": master,
    "spark.executor.memory": "768m",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    p: "org.apache.iceberg.spark.SparkCatalog",
    f"{p}.type": "rest",
    f"{p}.uri": uri,
    f"{p}.token": token,
    f"{p}.s3.endpoint": endpoint,
    f"{p}.s3.access-key-id": "testing",
    f"{p}.s3.secret-access-key": "testing",
    f"{p}.s3.region": "us-east-1",
    f"{p}.s3.path-style-access": "true",
})


def rows(start: int, end: int) -> None:
    (spark.range(start, end, numPartitions=4)
     .select("id", (F.lit(1_704_067_200) + (F.col("id") % 7) * 86400).cast("timestamp").alias("ts"),
             F.concat(F.lit("r"), (F.col("id") % 5).cast("string")).alias("region"), (F.col("id") * 1.5).alias("amount"))
     .createOrReplaceTempView("src"))


def state() -> dict[str, float]:
    r = spark.sql("SELECT count(*) AS n, sum(id) AS ids, sum(amount) AS amounts FROM lake.db.orders").collect()[0]
    return {"n": r["n"], "ids": r["ids"], "amounts": r["amounts"]}


spark.sql("CREATE NAMESPACE lake.db")
spark.sql("CREATE TABLE lake.db.orders (id bigint, ts timestamp, region string, amount double) USING iceberg "
          "PARTITIONED BY (days(ts), bucket(4, id)) TBLPROPERTIES ('format-version'='2', "
          "'write.merge.mode'='merge-on-read', 'write.delete.mode'='copy-on-write', 'write.update.mode'='merge-on-read')")
out: dict[str, object] = {}
rows(0, 20_000)
spark.sql("INSERT INTO lake.db.orders SELECT * FROM src")
out["inserted"] = state()
rows(19_000, 21_000)
spark.sql("MERGE INTO lake.db.orders t USING src s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET amount = s.amount * 2 WHEN NOT MATCHED THEN INSERT *")
out["merged"] = state()
spark.sql("DELETE FROM lake.db.orders WHERE id % 100 = 0")
spark.sql("UPDATE lake.db.orders SET amount = 0 WHERE id % 100 = 1")
out["changed"] = state()
compacted = spark.sql("CALL lake.system.rewrite_data_files(table => 'db.orders', options => map('rewrite-all', 'true'))").collect()[0]
out["rewritten"] = compacted[0]
spark.sql("CALL lake.system.expire_snapshots(table => 'db.orders', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
out["final"] = state()
out["snapshots"] = spark.sql("SELECT count(*) FROM lake.db.orders.snapshots").collect()[0][0]
out["locations"] = sorted({r[0].split("/")[2] for r in spark.sql("SELECT file_path FROM lake.db.orders.files").collect()})
# Executors that ran tasks, besides the driver: the work left this process.
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
print(json.dumps(out))
spark.stop()
