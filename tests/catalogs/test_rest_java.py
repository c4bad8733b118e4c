"""Iceberg Java 1.10.2 (``jsql``, Spark 3.5) through ``floe serve``, next to Floe's REST client.

Java authenticates with OAuth2 client credentials, creates a table, inserts, and commits into a table
Floe writes to at the same time; afterwards both sides see every row (nothing lost to the races). Java's
REST client also meets the server's refusals (ForbiddenException naming the rule) and describes served
namespaces exactly as its JDBC catalog does from the same database.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
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


ROLES = ServerSettings.from_mapping({
    "clients": {
        "admin": {"secret": "a-s3cret", "grants": {"*": "admin"}},
        "sales": {"secret": "s-s3cret", "grants": {"sales": "write", "reports": "read"}},
    }
})


def _jsql_keep_going(jsql, statements: list[str], conf: dict[str, str]) -> list[dict[str, object]]:
    """Every statement's result or ``error`` (jsql --keep-going): refusals are what is compared here."""
    args = [str(jsql.command), "--keep-going"]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    script = Path(tempfile.mkdtemp()) / "statements.sql"
    script.write_text(";\n".join(statements) + ";\n")
    proc = subprocess.run([*args, "-f", str(script)], capture_output=True, text=True, timeout=600, check=False)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(statements), proc.stderr[-2000:]
    return results


def test_rest_iceberg_java_sees_floe_serve_refusals_and_namespaces_as_its_own(
    tmp_path: Path, jsql, caplog: pytest.LogCaptureFixture
) -> None:
    """Iceberg Java's REST client meets the location policy as ForbiddenException naming the rule, and
    describes a namespace served by ``floe serve`` exactly as Java's JDBC catalog describes it from the
    same database (no ``exists`` marker, the default ``location``)."""
    _require_java_rest_client()
    caplog.set_level(logging.INFO, logger="floe.server")
    with served_catalog(tmp_path, ROLES) as served:
        admin = served.client(credential="admin:a-s3cret")
        admin.create_namespace("reports", {"owner": "ops", "team": "finance"})
        admin.create_namespace("sales")
        victim = admin.create_table("reports.secret", pa.schema([pa.field("id", pa.int64())]))
        victim.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
        admin.create_table("sales.t", pa.schema([pa.field("id", pa.int64())]))
        victim_metadata = served.backing.load_table("reports.secret").metadata_location
        outside = tmp_path / "outside"
        name = served.backing.name  # the JDBC rows are keyed by the catalog's name
        conf = {
            "spark.sql.catalog.c": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.c.type": "rest",
            "spark.sql.catalog.c.uri": served.uri,
            "spark.sql.catalog.c.credential": "sales:s-s3cret",
            f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "jdbc",
            f"spark.sql.catalog.{name}.uri": f"jdbc:sqlite:{tmp_path / 'served.db'}",
            f"spark.sql.catalog.{name}.warehouse": str(served.warehouse),
        }
        results = _jsql_keep_going(jsql, [
            f"DESCRIBE NAMESPACE EXTENDED {name}.reports",
            "DESCRIBE NAMESPACE EXTENDED c.reports",
            f"DESCRIBE NAMESPACE EXTENDED {name}.sales",
            "DESCRIBE NAMESPACE EXTENDED c.sales",
            f"CREATE TABLE c.sales.evil (id BIGINT) USING iceberg LOCATION '{served.warehouse / 'reports' / 'secret'}'",
            f"ALTER TABLE c.sales.t SET TBLPROPERTIES ('write.metadata.path'='{outside}')",
            f"CALL c.system.register_table(table => 'sales.copy', metadata_file => '{victim_metadata}')",
            "INSERT INTO c.reports.secret VALUES (4)",
            "SELECT count(*) FROM c.reports.secret",
        ], conf)
        java_jdbc, java_rest = ([r for r in results[i]["rows"] if r[0] != "Catalog Name"] for i in (0, 1))
        assert java_rest == java_jdbc
        assert ["Location", str(served.warehouse / "reports")] in java_rest
        assert "exists" not in json.dumps(results[:4])
        assert [r for r in results[2]["rows"] if r[0] != "Catalog Name"] == [r for r in results[3]["rows"] if r[0] != "Catalog Name"]
        # each refused statement failed in Java, and what the server answered it: 403 naming the rule
        assert all("error" in r for r in results[4:8]), results[4:8]
        answers = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        for rule in ("Location policy (no overlapping tables)", "Location policy (allowed locations)",
                     "may not write in namespace reports: metadata file", "sales may not write in namespace reports"):
            assert any("403 ForbiddenException" in a and rule in a for a in answers), (rule, answers)
        assert results[8]["rows"] == [[3]]
        assert sorted(served.backing.load_table("reports.secret").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
        assert not outside.exists()
        assert not served.backing.table_exists("sales.evil") and not served.backing.table_exists("sales.copy")


def test_rest_iceberg_java_creates_and_reads_views_through_floe_serve(tmp_path: Path, jsql) -> None:
    """Iceberg Java's REST client creates, replaces, lists and selects from views that ``floe serve``
    stores; Floe's REST client and PyIceberg load the same views, and a view Floe creates Java reads."""
    _require_java_rest_client()
    from floe.catalog.views import new_view_metadata
    from floe.spec.schema import Schema
    from floe.spec.types import LongType, NestedField

    with served_catalog(tmp_path, SETTINGS) as served:
        floe_client = served.client(credential="floe:f-s3cret")
        admin = served.client(credential="java:j-s3cret")
        admin.create_namespace("db")
        t = admin.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
        t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
        floe_client.create_view(("db", "floe_v"), new_view_metadata(  # type: ignore[attr-defined]
            location="rest:server-placed", schema=Schema(NestedField(1, "id", LongType())),
            sql="SELECT id FROM c.db.t WHERE id > 1", dialect="spark", catalog="c", namespace=("db",),
            properties={}, engine={"engine-name": "floe"},
        ))
        conf = {
            "spark.sql.catalog.c": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.c.type": "rest",
            "spark.sql.catalog.c.uri": served.uri,
            "spark.sql.catalog.c.credential": "java:j-s3cret",
        }
        results = jsql.run([
            "CREATE VIEW c.db.java_v AS SELECT id * 10 AS x FROM c.db.t",
            "SELECT x FROM c.db.java_v ORDER BY x",
            "CREATE OR REPLACE VIEW c.db.java_v AS SELECT id * 100 AS x FROM c.db.t WHERE id < 3",
            "SELECT x FROM c.db.java_v ORDER BY x",
            "SHOW VIEWS IN c.db",
            "SELECT id FROM c.db.floe_v ORDER BY id",
            "ALTER VIEW c.db.java_v SET TBLPROPERTIES ('k' = 'v')",
            "ALTER VIEW c.db.java_v RENAME TO c.db.java_w",
        ], conf)
        assert results[1]["rows"] == [[10], [20], [30]]
        assert results[3]["rows"] == [[100], [200]]
        assert sorted(r[1] for r in results[4]["rows"]) == ["floe_v", "java_v"]
        assert results[5]["rows"] == [[2], [3]]
        metadata, _ = floe_client.load_view(("db", "java_w"))  # type: ignore[attr-defined]
        assert metadata.current_version().sql_for("spark") == "SELECT id * 100 AS x FROM c.db.t WHERE id < 3"
        assert metadata.properties["k"] == "v" and len(metadata.versions) == 2
        py = pytest.importorskip("pyiceberg.catalog.rest").RestCatalog("py", uri=served.uri, credential="java:j-s3cret")
        assert sorted(py.list_views("db")) == [("db", "floe_v"), ("db", "java_w")]
        dropped = jsql.run(["DROP VIEW c.db.java_w", "SHOW VIEWS IN c.db"], conf)
        assert [r[1] for r in dropped[1]["rows"]] == ["floe_v"]
