"""Position deletes applied by Floe's JVM helper on executors in other JVMs (local-cluster).

Usage: python deletes_on_executors.py MASTER WAREHOUSE
Writes a merge-on-read table, deletes rows by position twice, and prints one JSON object with what the reads
returned and how their plans applied the deletes.
"""

from __future__ import annotations

import json
import sys

import floe.spark

master, warehouse = sys.argv[1:3]
p = "spark.sql.catalog.lake"
spark = floe.spark.session({
    "spark.master": master,
    "spark.executor.memory": "768m",
    "spark.sql.shuffle.partitions": "4",
    p: "org.apache.iceberg.spark.SparkCatalog",
    f"{p}.type": "hadoop",
    f"{p}.warehouse": warehouse,
})
spark.sql("CREATE TABLE lake.db.t (id BIGINT, tag STRING) USING iceberg "
          "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
spark.sql("INSERT INTO lake.db.t SELECT id, concat('t', id % 3) FROM range(0, 20000, 1, 4)")
out = {}
for step, condition in (("first", "id % 7 = 0"), ("second", "id % 11 = 0")):
    spark.sql(f"DELETE FROM lake.db.t WHERE {condition}")
    df = spark.sql("SELECT count(*) AS n, sum(id) AS s FROM lake.db.t")
    row = df.collect()[0]
    out[step] = {"n": row["n"], "s": row["s"], "plan": df._jdf.queryExecution().executedPlan().toString()}
print("RESULT " + json.dumps(out))
spark.stop()
