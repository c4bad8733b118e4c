"""Iceberg Java 1.10.2 (``jsql``, Spark 3.5) through ``floe serve``, next to Floe's REST client.

Java authenticates with OAuth2 client credentials, creates a table, inserts, and commits into a table
Floe writes to at the same time; afterwards both sides see every row (nothing lost to the races).
"""

from __future__ import annotations

import os
import threading
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest
from _rest import served_catalog

from floe.server import ServerSettings

SETTINGS = ServerSettings.from_mapping({
    "clients": {
        "java": {"secret": "j-s3cret", "grants": {"*": "admin"}},
        "floe": {"secret": "f-s3cret", "grants": {"*": "write"}},
    }
})
# Iceberg Java's REST client (HTTPClient) needs Apache HttpClient 5.4+ relocated into its runtime jar.
_HTTP_CLIENT_CLASS = "org/apache/iceberg/shaded/org/apache/hc/client5/http/ssl/TlsSocketStrategy.class"
JAVA_INSERTS = 6
FLOE_APPENDS = 10


def _require_java_rest_client() -> None:
    home = Path(os.environ.get("FLOE_JAVA_ICEBERG_HOME", Path.home() / ".cache" / "floe-java-iceberg"))
    jars = [Path(line.strip()) for line in (home / "jars.txt").read_text().splitlines() if line.strip()]
    for jar in jars:
        if jar.suffix == ".jar" and jar.is_file() and _HTTP_CLIENT_CLASS in zipfile.ZipFile(jar).namelist():
            return
    pytest.skip(
        "Iceberg Java's REST client cannot run here: its runtime jar (from the snowpark-connect-deps-iceberg "
        "wheel) lacks the relocated Apache HttpClient 5.4+ it needs, Debian ships 5.2 and Maven is unreachable"
    )


def test_rest_iceberg_java_creates_writes_and_races_floe(tmp_path: Path, jsql) -> None:
    _require_java_rest_client()
    with served_catalog(tmp_path, SETTINGS) as served:
        admin = served.client(credential="java:j-s3cret")
        admin.create_namespace("db")
        shared = admin.create_table("db.shared", pa.schema([pa.field("id", pa.int64()), pa.field("who", pa.string())]))
        shared.append(pa.table({"id": pa.array([0], pa.int64()), "who": ["seed"]}))
        conf = {
            "spark.sql.catalog.c": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.c.type": "rest",
            "spark.sql.catalog.c.uri": served.uri,
            "spark.sql.catalog.c.credential": "java:j-s3cret",
        }
        floe_done: list[int] = []

        def floe_writer() -> None:
            cat = served.client(credential="floe:f-s3cret")
            table = cat.load_table("db.shared")
            for i in range(FLOE_APPENDS):
                table.append(pa.table({"id": pa.array([100 + i], pa.int64()), "who": ["floe"]}))
                floe_done.append(i)

        writer = threading.Thread(target=floe_writer)
        statements = [
            "CREATE TABLE c.db.java_t (id BIGINT, data STRING) USING iceberg PARTITIONED BY (data)",
            "INSERT INTO c.db.java_t VALUES (1, 'a'), (2, 'b')",
            "SELECT count(*) AS n FROM c.db.shared",  # Java reads Floe's commits
            *[f"INSERT INTO c.db.shared VALUES ({200 + i}, 'java')" for i in range(JAVA_INSERTS)],
            "SELECT count(*) AS n FROM c.db.java_t",
        ]
        writer.start()
        results = jsql.run(statements, conf)
        writer.join(timeout=300)
        assert results[2]["rows"][0][0] >= 1
        assert results[-1]["rows"][0] == [2]
        assert len(floe_done) == FLOE_APPENDS
        java_table = admin.load_table("db.java_t")  # Floe reads Java's table and its partition spec
        assert sorted(java_table.scan().to_arrow().column("id").to_pylist()) == [1, 2]
        assert java_table.spec().fields[0].name == "data"
        rows = admin.load_table("db.shared").scan().to_arrow().to_pylist()
        assert sorted(r["id"] for r in rows) == [0, *range(100, 100 + FLOE_APPENDS), *range(200, 200 + JAVA_INSERTS)]
        final = jsql.run(["SELECT who, count(*) FROM c.db.shared GROUP BY who ORDER BY who"], conf)
        assert final[0]["rows"] == [["floe", FLOE_APPENDS], ["java", JAVA_INSERTS], ["seed", 1]]
