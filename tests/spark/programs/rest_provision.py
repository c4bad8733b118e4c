"""A provisioning program in the spirit of PyIceberg's dev/provision.py, written as Iceberg's Spark docs write
one, against a REST catalog (``floe serve``); Floe adds one line (``floe.spark.attach``).

Usage: python rest_provision.py MASTER URI
Builds, in namespace ``default`` of catalog ``rest``: every type, NaN/null values, merge-on-read deletes and
updates, branches and tags, every partition transform, partition evolution and a rewrite_data_files. The
test reads the tables back with PyIceberg's RestCatalog.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import floe.spark

master, uri = sys.argv[1:3]
spark = (
    SparkSession.builder.master(master)
    .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    .config("spark.sql.catalog.rest", "org.apache.iceberg.spark.SparkCatalog")
    .config("spark.sql.catalog.rest.type", "rest")
    .config("spark.sql.catalog.rest.uri", uri)
    .config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
floe.spark.attach(spark)  # the one line the program adds
spark.sql("USE rest")
spark.sql("CREATE NAMESPACE IF NOT EXISTS default")

spark.sql("""
CREATE OR REPLACE TABLE default.all_types (
    b BOOLEAN, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), dt DATE, ts TIMESTAMP,
    ts_ntz TIMESTAMP_NTZ, s STRING, bin BINARY, arr ARRAY<INT>, m MAP<STRING, INT>, st STRUCT<a: INT, b: STRING>
) USING iceberg TBLPROPERTIES ('format-version' = '2')
""")
spark.sql("""
INSERT INTO default.all_types VALUES
    (true, 1, 10, 1.5, 2.5, 3.25, DATE '2024-01-01', TIMESTAMP '2024-01-01 10:00:00', TIMESTAMP_NTZ '2024-01-01 10:00:00',
     'a', X'0102', array(1, 2), map('k', 1), named_struct('a', 1, 'b', 'x')),
    (false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
""")

spark.sql("CREATE OR REPLACE TABLE default.test_null_nan (idx INT, col_numeric FLOAT) USING iceberg")
spark.sql("INSERT INTO default.test_null_nan VALUES (1, float('NaN')), (2, NULL), (3, 1)")

spark.sql("""
CREATE OR REPLACE TABLE default.test_positional_mor_deletes (dt DATE, number INT, letter STRING) USING iceberg
TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read',
               'write.merge.mode' = 'merge-on-read', 'format-version' = '2')
""")
spark.sql("""
INSERT INTO default.test_positional_mor_deletes VALUES
    (DATE '2023-03-01', 1, 'a'), (DATE '2023-03-02', 2, 'b'), (DATE '2023-03-03', 3, 'c'), (DATE '2023-03-04', 4, 'd'),
    (DATE '2023-03-05', 5, 'e'), (DATE '2023-03-06', 6, 'f'), (DATE '2023-03-07', 7, 'g'), (DATE '2023-03-08', 8, 'h'),
    (DATE '2023-03-09', 9, 'i'), (DATE '2023-03-10', 10, 'j'), (DATE '2023-03-11', 11, 'k'), (DATE '2023-03-12', 12, 'l')
""")
spark.sql("ALTER TABLE default.test_positional_mor_deletes CREATE TAG tag_12")
spark.sql("ALTER TABLE default.test_positional_mor_deletes CREATE BRANCH without_5")
spark.sql("DELETE FROM default.test_positional_mor_deletes.branch_without_5 WHERE number = 5")
spark.sql("DELETE FROM default.test_positional_mor_deletes WHERE number = 9")
spark.sql("UPDATE default.test_positional_mor_deletes SET letter = 'X' WHERE number = 1")

for name, transform in [
    ("identity", "number"), ("bucket", "bucket(16, number)"), ("truncate", "truncate(1, letter)"),
    ("years", "years(dt)"), ("months", "months(dt)"), ("days", "days(dt)"), ("hours", "hours(ts)"),
]:
    spark.sql(f"CREATE OR REPLACE TABLE default.test_partitioned_by_{name} (dt DATE, ts TIMESTAMP, number INT, letter STRING) "
              f"USING iceberg PARTITIONED BY ({transform})")
    spark.sql(f"""
    INSERT INTO default.test_partitioned_by_{name} VALUES
        (DATE '2022-03-01', TIMESTAMP '2022-03-01 01:22:00', 1, 'a'), (DATE '2022-03-02', TIMESTAMP '2022-03-02 02:22:00', 2, 'b'),
        (DATE '2023-04-03', TIMESTAMP '2023-04-03 03:22:00', 3, 'c'), (DATE '2024-05-04', TIMESTAMP '2024-05-04 04:22:00', 4, 'd')
    """)

spark.sql("CREATE OR REPLACE TABLE default.test_evolution (dt DATE, number INT) USING iceberg PARTITIONED BY (days(dt))")
spark.sql("INSERT INTO default.test_evolution VALUES (DATE '2023-01-01', 1), (DATE '2023-01-02', 2)")
spark.sql("ALTER TABLE default.test_evolution ADD PARTITION FIELD bucket(4, number)")
spark.sql("INSERT INTO default.test_evolution VALUES (DATE '2023-01-03', 3)")
spark.sql("ALTER TABLE default.test_evolution DROP PARTITION FIELD days(dt)")
spark.sql("INSERT INTO default.test_evolution VALUES (DATE '2023-01-04', 4)")
spark.sql("CALL rest.system.rewrite_data_files(table => 'default.test_evolution', options => map('min-input-files', '2'))")
print("PROVISIONED")
spark.stop()
