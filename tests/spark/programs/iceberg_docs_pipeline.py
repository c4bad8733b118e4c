"""A PySpark pipeline written as Iceberg's Spark documentation writes it; Floe adds one line.

Usage: python iceberg_docs_pipeline.py MASTER WAREHOUSE attach|session
Prints one JSON object with what each step read, for the test to compare with its model.
"""

from __future__ import annotations

import datetime as dt
import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import partitioning

import floe.spark

master, warehouse, how = sys.argv[1:4]
conf = {
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.catalog.cat": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.cat.type": "hadoop",
    "spark.sql.catalog.cat.warehouse": warehouse,
    "spark.sql.session.timeZone": "UTC",
}
remote = master.startswith("sc://")  # a Spark Connect server (tests/connect)
if how == "attach":
    builder = SparkSession.builder.remote(master) if remote else SparkSession.builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    floe.spark.attach(spark)  # the one line a pipeline adds
else:  # as PyIceberg's provisioning script does, the Iceberg catalog is also the default one
    spark = floe.spark.session({**conf, "spark.master": master, "spark.sql.defaultCatalog": "cat"})
SCHEMA = "id bigint, ts timestamp, region string, amount double"


def rows(df):
    return sorted([r["id"], r["ts"].isoformat(), r["region"], r["amount"]] for r in df.collect())


out: dict[str, object] = {}
spark.sql("CREATE TABLE cat.db.sales (id BIGINT, ts TIMESTAMP, region STRING, amount DOUBLE) "
          "USING iceberg PARTITIONED BY (days(ts), bucket(4, id)) TBLPROPERTIES ('format-version'='2')")
first = spark.createDataFrame(
    [(i, dt.datetime(2024, 1, 1 + i % 4), ["eu", "us", "apac"][i % 3], float(i)) for i in range(40)], SCHEMA
)
first.writeTo("cat.db.sales").append()
out["after_append"] = len(spark.table("cat.db.sales").collect())
spark.createDataFrame([(100 + i, dt.datetime(2024, 1, 2), "us", 50.0) for i in range(4)], SCHEMA) \
    .writeTo("cat.db.sales").overwritePartitions()
spark.createDataFrame([(0, dt.datetime(2024, 1, 1), "eu", 99.0), (5, dt.datetime(2024, 1, 2), "apac", 99.0),
                       (200, dt.datetime(2024, 1, 3), "us", 99.0)], SCHEMA).createOrReplaceTempView("updates")
spark.sql("MERGE INTO cat.db.sales t USING updates s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *")
spark.sql("UPDATE cat.db.sales SET region = 'EU' WHERE region = 'eu'")
spark.sql("DELETE FROM cat.db.sales WHERE amount < 5")
table = spark.table("cat.db.sales")
out["plan"] = table._explain_string() if remote else table._jdf.queryExecution().executedPlan().toString()
out["table"] = rows(table)
out["read_table"] = rows(spark.read.table("cat.db.sales"))
out["by_name"] = rows(spark.read.format("iceberg").load("cat.db.sales"))
out["by_path"] = rows(spark.read.format("iceberg").load(f"{warehouse}/db/sales"))
out["sql"] = rows(spark.sql("SELECT * FROM cat.db.sales WHERE amount >= 0"))
out["joined"] = spark.sql("SELECT count(*) FROM cat.db.sales s JOIN updates u ON s.id = u.id").collect()[0][0]
snapshots = spark.sql("SELECT snapshot_id, operation FROM cat.db.sales.snapshots ORDER BY committed_at").collect()
out["operations"] = [r["operation"] for r in snapshots]
oldest = snapshots[0]["snapshot_id"]
out["time_travel_option"] = rows(spark.read.option("snapshot-id", oldest).format("iceberg").load("cat.db.sales"))
out["time_travel_sql"] = rows(spark.sql(f"SELECT * FROM cat.db.sales VERSION AS OF {oldest}"))
out["rewrite"] = [list(r) for r in spark.sql("CALL cat.system.rewrite_data_files(table => 'db.sales')").collect()]
out["after_rewrite"] = rows(spark.table("cat.db.sales"))
first.where(F.col("id") < 8).writeTo("cat.db.copy").partitionedBy(partitioning.bucket(2, "id")).create()
out["copy"] = rows(spark.table("cat.db.copy"))
spark.range(3).createOrReplaceTempView("plain")
out["spark_view"] = spark.sql("SELECT count(*) FROM plain").collect()[0][0]
# Spark's own functions resolve whichever catalog is the default (Spark looks them up in its current catalog).
out["functions"] = [[r[0], str(r[1]), r[2]] for r in spark.sql(
    "SELECT upper(region), date_add(to_date(ts), 1), size(array(1, 2)) FROM cat.db.sales WHERE id = 0").collect()]
if how != "attach":
    out["unqualified"] = spark.sql("SELECT count(*) FROM db.sales").collect()[0][0]
print("RESULT " + json.dumps(out))
spark.stop()
