"""Iceberg Java's own ``S3FileIO`` (jsql after ``setup.sh --s3``) and Floe on one S3 warehouse (moto), through
one SQL catalog (Iceberg's JDBC tables in SQLite): each writes rows, row-level changes and compactions the
other reads, with the same Spark catalog confs on both engines (Java's ``io-impl`` and ``client.region``,
Floe's ``s3.*``). Floe's side runs Spark's pip-only S3 path.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe.spark

JAVA_ICEBERG = Path(__file__).resolve().parents[2].parent / "shared" / "tools" / "java-iceberg" / "setup.sh"

pytestmark = [pytest.mark.slow]

Row = tuple[int, str, float]


@pytest.fixture(scope="module")
def java_s3() -> None:
    """The AWS SDK v2 jars beside Java's runtime jar (jsql then loads them); idempotent."""
    proc = subprocess.run(["bash", str(JAVA_ICEBERG), "--s3"], capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _rows(raw: list[list[object]] | list[tuple[object, ...]]) -> list[Row]:
    return sorted((int(r[0]), str(r[1]), float(r[2])) for r in raw)  # type: ignore[arg-type]


def test_java_s3fileio_and_floe_share_an_s3_warehouse(
    java_s3: None, jsql, spark: SparkSession, s3_endpoint, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    name = f"j{uuid.uuid4().hex[:8]}"
    props = s3_endpoint.properties
    p = f"spark.sql.catalog.{name}"
    conf = {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": f"jdbc:sqlite:{tmp_path}/cat.db",
            f"{p}.warehouse": s3_endpoint.location(f"java-{uuid.uuid4().hex[:8]}"),
            f"{p}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO", f"{p}.client.region": props["s3.region"],
            **{f"{p}.{k}": v for k, v in props.items()}}
    t = f"{name}.db.events"
    java = jsql.run([
        f"CREATE NAMESPACE {name}.db",
        (f"CREATE TABLE {t} (id BIGINT, cat STRING, v DOUBLE) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"),
        f"INSERT INTO {t} SELECT id, concat('c', id % 3), id * 0.5 FROM range(0, 300)",
        f"DELETE FROM {t} WHERE id % 10 = 0",
    ], conf)
    assert "error" not in str(java)
    model = {i: (f"c{i % 3}", i * 0.5) for i in range(300) if i % 10}

    def expected() -> list[Row]:
        return sorted((k, c, v) for k, (c, v) in model.items())

    floe.spark.attach(spark, conf=conf)
    try:
        def floe_rows() -> list[Row]:
            return _rows([tuple(r) for r in spark.sql(f"SELECT id, cat, v FROM {t}").collect()])

        assert floe_rows() == expected()  # Java's data and position delete files, read from S3
        spark.createDataFrame([(5, 50.0), (11, 110.0), (400, 4.0)], "id bigint, v double").createOrReplaceTempView("s3j_src")
        spark.sql(f"MERGE INTO {t} t USING s3j_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                  "WHEN NOT MATCHED THEN INSERT (id, cat, v) VALUES (s.id, 'c1', s.v)")
        model |= {5: ("c2", 50.0), 11: ("c2", 110.0), 400: ("c1", 4.0)}
        spark.sql(f"DELETE FROM {t} WHERE id BETWEEN 20 AND 29")
        model = {k: r for k, r in model.items() if not 20 <= k <= 29}
        spark.sql(f"INSERT INTO {t} VALUES (500, 'c0', 1.5)")
        model[500] = ("c0", 1.5)
        assert floe_rows() == expected()

        java = jsql.run([
            f"SELECT id, cat, v FROM {t}",
            f"CALL {name}.system.rewrite_data_files(table => 'db.events', options => map('rewrite-all', 'true'))",
            f"UPDATE {t} SET v = -1.0 WHERE id = 500",
            f"SELECT count(*) FROM {t}.delete_files",
        ], conf)
        assert _rows(java[0]["rows"]) == expected()  # Floe's files, read by S3FileIO
        model[500] = ("c0", -1.0)
        assert floe_rows() == expected()  # Java's compaction and update
        files = [str(r[0]) for r in spark.sql(f"SELECT file_path FROM {t}.files").collect()]
        assert files and all(f.startswith(f"s3://{s3_endpoint.bucket}/") for f in files)
    finally:
        for key in conf:
            spark.conf.unset(key)
