"""A PySpark program on a standalone cluster whose workers' Python cannot import Floe (nor pyarrow).

Usage: python foreign_workers.py MASTER CATALOG_DB S3_ENDPOINT BUCKET FEED [ARCHIVE]
With ARCHIVE (a venv-pack archive of an environment holding Floe), the program ships it as PySpark's docs
say: ``spark.archives=ARCHIVE#environment`` and ``PYSPARK_PYTHON=./environment/bin/python``. The
warehouse is on S3 (moto) without S3A, so reads and writes run in the executors' Python workers. Prints
one JSON object: what the workers ran, and what the read, the MERGE and a streaming micro-batch gave.
Without ARCHIVE, prints ``{"refused": <message>}`` when ``attach`` refuses the workers' interpreter.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import SparkSession

import floe.spark
from floe.errors import ValidationError

master, catalog_db, endpoint, bucket, feed = sys.argv[1:6]
archive = sys.argv[6] if len(sys.argv) > 6 else None
p = "spark.sql.catalog.lake"
conf = {
    "spark.master": master,
    "spark.executor.memory": "768m",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    p: "org.apache.iceberg.spark.SparkCatalog",
    f"{p}.type": "jdbc",
    f"{p}.uri": f"jdbc:sqlite:{catalog_db}",
    f"{p}.warehouse": f"s3://{bucket}/wh",
    f"{p}.s3.endpoint": endpoint,
    f"{p}.s3.access-key-id": "testing",
    f"{p}.s3.secret-access-key": "testing",
    f"{p}.s3.region": "us-east-1",
    f"{p}.s3.path-style-access": "true",
}
if archive:
    conf["spark.archives"] = f"{archive}#environment"
    os.environ["PYSPARK_PYTHON"] = "./environment/bin/python"  # what PySpark's docs set in a plain program
builder = SparkSession.builder.appName("foreign-workers")  # as PySpark's docs build it, then Floe's one line
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
try:
    floe.spark.attach(spark)
except ValidationError as e:
    print(json.dumps({"refused": str(e)}))
    sys.exit(0)


def where(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import floe as worker_floe

    for _ in batches:
        yield pa.RecordBatch.from_pylist([{"floe": worker_floe.__file__, "python": sys.executable, "cwd": os.getcwd()}])


out: dict[str, object] = {}
workers = spark.range(4, numPartitions=4).mapInArrow(where, "floe string, python string, cwd string").collect()
out["workers"] = sorted({(r.floe, r.python) for r in workers})
spark.sql("CREATE NAMESPACE lake.db")
spark.sql("CREATE TABLE lake.db.t (id bigint, cat string, v double) USING iceberg PARTITIONED BY (cat) "
          "TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='merge-on-read')")
spark.range(0, 5000, numPartitions=4).selectExpr("id", "concat('c', id % 4) AS cat", "id * 0.5 AS v") \
    .createOrReplaceTempView("src")
spark.sql("INSERT INTO lake.db.t SELECT * FROM src")
read = spark.sql("SELECT count(*) AS n, sum(id) AS ids, sum(v) AS vs FROM lake.db.t").collect()[0]
out["read"] = [read.n, read.ids, read.vs]
spark.range(4900, 5100, numPartitions=2).selectExpr("id", "'c9' AS cat", "-1.0 AS v").createOrReplaceTempView("upd")
spark.sql("MERGE INTO lake.db.t t USING upd s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
          "WHEN NOT MATCHED THEN INSERT *")
merged = spark.sql("SELECT count(*) AS n, sum(id) AS ids, sum(v) AS vs FROM lake.db.t").collect()[0]
out["merged"] = [merged.n, merged.ids, merged.vs]
stream = spark.readStream.schema("id bigint, cat string, v double").parquet(feed)
(stream.writeStream.format("iceberg").option("checkpointLocation", f"{feed}-checkpoint")
 .trigger(availableNow=True).toTable("lake.db.t").awaitTermination())
streamed = spark.sql("SELECT count(*) AS n, sum(id) AS ids FROM lake.db.t").collect()[0]
out["streamed"] = [streamed.n, streamed.ids]
out["epochs"] = [r[0] for r in spark.sql("SELECT summary['spark.sql.streaming.epochId'] FROM lake.db.t.snapshots "
                                         "WHERE summary['spark.sql.streaming.epochId'] IS NOT NULL").collect()]
print(json.dumps(out))
spark.stop()
