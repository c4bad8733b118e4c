"""Run representative Floe writes on ``local-cluster[2,1,1024]`` (two executor JVMs) and check them.

Executed in a subprocess by tests/spark/test_write_cluster.py (one process can hold one SparkContext);
prints ``OK <checks>`` on success. Nothing here may rely on driver-local state in tasks.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
from pyspark.sql import functions as F


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pyiceberg.table import StaticTable

    import floe
    import floe.spark.datasource
    from floe.spark.session import session
    from floe.spark.transforms import ensure_workers_import_floe
    from floe.spec.partitioning import PartitionSpecBuilder

    spark = session({"spark.master": "local-cluster[2,1,1024]", "spark.sql.shuffle.partitions": "4"}, app_name="floe-cluster")
    ensure_workers_import_floe(spark)  # executors run in their own work dirs: ship floe to them
    tmp = Path(tempfile.mkdtemp(prefix="floe-cluster-"))
    cat = floe.load_catalog("c", type="hadoop", warehouse=str(tmp / "wh"))
    cat.create_namespace("db")
    checks = 0

    def rows(t: floe.Table) -> list[dict[str, object]]:
        return StaticTable.from_metadata(t.metadata_location).scan().to_arrow().sort_by("id").to_pylist()

    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
    t = cat.create_table("db.native", schema)
    spec = PartitionSpecBuilder(t.schema()).bucket("s", 4).day("ts").build()
    cat.drop_table("db.native")
    t = cat.create_table("db.native", schema, partition_spec=spec)
    df = spark.range(0, 500, numPartitions=4).select(
        "id", F.concat(F.lit("k"), (F.col("id") % 7).cast("string")).alias("s"),
        F.timestamp_micros(F.col("id") * 3_600_000_000).alias("ts"),
    )
    t.append(df)
    assert [r["id"] for r in rows(t)] == list(range(500)), "native partitioned append"
    checks += 1

    nested = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    n = cat.create_table("db.nested", nested)
    n.append(spark.range(0, 100, numPartitions=3).select("id", F.array(F.col("id").cast("string")).alias("tags")))
    assert [r["tags"] for r in rows(n)] == [[str(i)] for i in range(100)], "arrow path"
    checks += 1

    d = cat.create_table("db.ds", schema)
    df.write.format("iceberg").mode("append").save(d.location())
    d.refresh()
    assert len(rows(d)) == 500, "data source append"
    checks += 1

    @F.udf("long")
    def boom(x: int) -> int:
        if x == 321:
            raise RuntimeError("boom 321")
        return x

    before = {p for p in Path(t.location(), "data").rglob("*") if p.is_file()}
    snap = t.current_snapshot().snapshot_id
    try:
        t.append(df.select(boom("id").alias("id"), "s", "ts"))
        raise AssertionError("the failing write succeeded")
    except Exception as e:  # noqa: BLE001 - Spark wraps the task error
        assert "boom 321" in str(e), str(e)[:500]
    t.refresh()
    assert t.current_snapshot().snapshot_id == snap, "failed write committed"
    assert {p for p in Path(t.location(), "data").rglob("*") if p.is_file()} == before, "failed write left files"
    checks += 1
    spark.stop()
    print(f"OK {checks}")


if __name__ == "__main__":
    main()
