"""A warehouse on S3 (moto's server on loopback) from a Spark Connect session: the server has S3A (hadoop-aws
in ``spark.jars``, from ../shared/tools/s3a) and nothing of Floe's; the client plans and commits through
pyarrow's S3 client, and the catalog's ``s3.*`` properties reach the server's S3A as session confs (the
secret key through ``attach(spark, conf=...)``, kept on the client: the server never returns secret-looking confs)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _connect_server import ConnectServer, running_server

ROOT = Path(__file__).resolve().parents[2]

_CLIENT = """
import json, sys
from pyspark.sql import SparkSession
import floe.spark

url, warehouse, catalog_db, props = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
p = "spark.sql.catalog.lake"
builder = (SparkSession.builder.remote(url).config(p, "org.apache.iceberg.spark.SparkCatalog")
           .config(f"{p}.type", "jdbc").config(f"{p}.uri", f"jdbc:sqlite:{catalog_db}")
           .config(f"{p}.warehouse", warehouse))
spark = builder.getOrCreate()
# Credentials through attach: a Connect server never hands back confs whose names look secret.
floe.spark.attach(spark, conf={f"{p}.{key}": value for key, value in props.items()})
spark.sql("CREATE TABLE lake.db.t (id BIGINT, s STRING) USING iceberg PARTITIONED BY (bucket(2, s)) "
          "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
spark.sql("INSERT INTO lake.db.t SELECT id, concat('k', id % 5) FROM range(50)")
spark.sql("DELETE FROM lake.db.t WHERE id % 10 = 0")
spark.sql("UPDATE lake.db.t SET s = 'updated' WHERE id = 7")
rows = spark.sql("SELECT count(*), sum(id), count_if(s = 'updated') FROM lake.db.t").collect()[0]
files = [r[0] for r in spark.sql("SELECT file_path FROM lake.db.t.files").collect()]
print("RESULT " + json.dumps({"rows": list(rows), "files": files}))
"""


@pytest.fixture(scope="module")
def s3a_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    sys.path.insert(0, str(ROOT / "tests" / "spark"))
    try:
        from test_object_storage_s3a import s3a_session_conf
    finally:
        sys.path.remove(str(ROOT / "tests" / "spark"))
    with running_server(tmp_path_factory.mktemp("connect-s3a"), s3a_session_conf()) as server:
        yield server


@pytest.mark.spark
@pytest.mark.slow  # starts a Connect server with hadoop-aws
def test_s3_warehouse_from_a_connect_session(s3a_connect_server: ConnectServer, s3_endpoint, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    warehouse = s3_endpoint.location("wh-connect")
    script = tmp_path / "client.py"
    script.write_text(_CLIENT, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), s3a_connect_server.url, warehouse, str(tmp_path / "catalog.db"),
         json.dumps(s3_endpoint.properties)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[len("RESULT ") :])
    kept = [i for i in range(50) if i % 10]
    assert got["rows"] == [len(kept), sum(kept), 1]
    assert got["files"] and all(f.startswith(warehouse.split("://", 1)[0] + "://") for f in got["files"])
