"""Iceberg Java 1.10.2 (``jsql``, Spark 3.5) through ``floe serve``, next to Floe's and PyIceberg's REST clients.

Java authenticates with OAuth2 client credentials, creates a table, inserts, and commits into a table
Floe writes to at the same time; afterwards both sides see every row (nothing lost to the races). Three
clients (Java, PyIceberg's RestCatalog, Floe on Spark) take turns on one table with MERGE, DELETE, UPDATE,
INSERT, a schema change and compactions, each reading the others' rows, then append at the same time.
Java's REST client also meets the server's refusals (ForbiddenException naming the rule) and describes
served namespaces exactly as its JDBC catalog does from the same database. (setup.sh installs a runtime jar
that carries the HttpClient 5.4+ Java's REST client needs, and fails when it does not.)
"""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from _rest import served_catalog
from pyspark.sql import SparkSession

import floe.spark
from floe.server import ServerSettings

SETTINGS = ServerSettings.from_mapping({
    "clients": {
        "java": {"secret": "j-s3cret", "grants": {"*": "admin"}},
        "floe": {"secret": "f-s3cret", "grants": {"*": "write"}},
        "py": {"secret": "p-s3cret", "grants": {"*": "write"}},
    }
})
JAVA_INSERTS = 6
FLOE_APPENDS = 10


def test_rest_iceberg_java_creates_writes_and_races_floe(tmp_path: Path, jsql) -> None:
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


Row = tuple[int, str, int, "str | None"]
CONCURRENT = 5  # commits per client in the concurrent phase


def _java_conf(uri: str) -> dict[str, str]:
    return {"spark.sql.catalog.c": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.c.type": "rest",
            "spark.sql.catalog.c.uri": uri, "spark.sql.catalog.c.credential": "java:j-s3cret"}


def _rows(raw: list[list[object]] | list[tuple[object, ...]]) -> list[Row]:
    return sorted((int(r[0]), str(r[1]), int(r[2]), None if r[3] is None else str(r[3])) for r in raw)  # type: ignore[arg-type, call-overload]


def _retrying(action: Callable[[], None], conflicts: list[str]) -> None:
    """PyIceberg reports a lost race (409) as CommitFailedException and leaves the retry to its caller."""
    from pyiceberg.exceptions import CommitFailedException

    for _ in range(30):
        try:
            action()
            return
        except CommitFailedException as e:
            conflicts.append(str(e))
    raise AssertionError(f"PyIceberg lost 30 races in a row: {conflicts[-1]}")


def test_rest_java_pyiceberg_and_floe_take_turns_and_race_on_one_table(
    tmp_path: Path, jsql, spark: SparkSession  # type: ignore[no-untyped-def]
) -> None:
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.types import StringType as PyString

    with served_catalog(tmp_path, SETTINGS) as served:
        served.client(credential="java:j-s3cret").create_namespace("db")  # namespaces need admin
        floe_rest = served.client(credential="floe:f-s3cret")
        table = floe_rest.create_table(
            "db.shared", pa.schema([pa.field("id", pa.int64()), pa.field("who", pa.string()), pa.field("v", pa.int64())]),
            properties={"format-version": "2", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
                        "write.merge.mode": "merge-on-read", "commit.retry.num-retries": "30",
                        "commit.retry.min-wait-ms": "20", "commit.retry.max-wait-ms": "500"},
        )
        table.append(pa.table({"id": pa.array(range(10), pa.int64()), "who": ["floe"] * 10,
                               "v": pa.array(range(10), pa.int64())}))
        model: dict[int, tuple[str, int, str | None]] = {i: ("floe", i, None) for i in range(10)}

        def expected() -> list[Row]:
            return sorted((k, w, v, n) for k, (w, v, n) in model.items())

        # 1. Java reads Floe's rows, inserts, deletes (position deletes) and merges over both writers' rows.
        java = jsql.run([
            "SELECT count(*) FROM c.db.shared",
            "INSERT INTO c.db.shared VALUES " + ", ".join(f"({i}, 'java', {i})" for i in range(10, 20)),
            "DELETE FROM c.db.shared WHERE id % 5 = 0",
            ("MERGE INTO c.db.shared t USING (SELECT * FROM VALUES (8, 80), (18, 180), (20, 200) AS s(id, v)) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT (id, who, v) VALUES (s.id, 'java', s.v)"),
        ], _java_conf(served.uri))
        assert java[0]["rows"] == [[10]]
        model |= {i: ("java", i, None) for i in range(10, 20)}
        model = {k: r for k, r in model.items() if k % 5}
        model |= {8: ("floe", 80, None), 18: ("java", 180, None), 20: ("java", 200, None)}

        # 2. PyIceberg reads Java's deletes and merge, adds a column, appends rows that carry it.
        py = RestCatalog("py", uri=served.uri, credential="py:p-s3cret",
                         **{"oauth2-server-uri": f"{served.uri}/v1/oauth/tokens"})
        py_table = py.load_table("db.shared")
        got = py_table.scan().to_arrow()
        assert sorted(zip(got.column("id").to_pylist(), got.column("who").to_pylist(), got.column("v").to_pylist(),
                          [None] * got.num_rows)) == expected()
        with py_table.update_schema() as update:
            update.add_column("note", PyString())
        py_table = py.load_table("db.shared")
        py_table.append(pa.table({"id": pa.array([21, 22, 23], pa.int64()), "who": ["py"] * 3,
                                  "v": pa.array([21, 22, 23], pa.int64()), "note": ["p"] * 3}))
        model |= {i: ("py", i, "p") for i in (21, 22, 23)}

        # 3. Floe (Spark SQL on its REST client) reads both, merges into rows of all three, deletes, compacts.
        prefix = "spark.sql.catalog.f"
        conf = {prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "rest",
                f"{prefix}.uri": served.uri, f"{prefix}.credential": "floe:f-s3cret"}
        floe.spark.attach(spark, conf=conf)
        try:
            def floe_rows() -> list[Row]:
                return _rows([tuple(r) for r in spark.sql("SELECT id, who, v, note FROM f.db.shared").collect()])

            assert floe_rows() == expected()
            spark.createDataFrame([(21, 2100), (11, 1100), (3, 300), (30, 3000)], "id bigint, v bigint") \
                .createOrReplaceTempView("floe_src")
            spark.sql("MERGE INTO f.db.shared t USING floe_src s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET v = s.v, note = 'f' "
                      "WHEN NOT MATCHED THEN INSERT (id, who, v, note) VALUES (s.id, 'floe', s.v, 'f')")
            model |= {21: ("py", 2100, "f"), 11: ("java", 1100, "f"), 3: ("floe", 300, "f"), 30: ("floe", 3000, "f")}
            spark.sql("DELETE FROM f.db.shared WHERE id IN (22, 12)")
            del model[22], model[12]
            spark.sql("CALL f.system.rewrite_data_files(table => 'db.shared', options => map('rewrite-all', 'true'))")
            assert floe_rows() == expected()

            # 4. Java reads the new column and Floe's commits, updates, compacts; PyIceberg reads that.
            java = jsql.run([
                "SELECT id, who, v, note FROM c.db.shared",
                "UPDATE c.db.shared SET note = 'j' WHERE id = 13",
                "CALL c.system.rewrite_data_files(table => 'db.shared', options => map('rewrite-all', 'true'))",
            ], _java_conf(served.uri))
            assert _rows(java[0]["rows"]) == expected()
            model[13] = ("java", 13, "j")
            got = py.load_table("db.shared").scan().to_arrow()
            assert _rows(list(zip(*(got.column(c).to_pylist() for c in ("id", "who", "v", "note"))))) == expected()

            # 5. All three append at once: the Python clients keep appending until Java's statements are done
            # (Java's JVM takes seconds to start); a lost race is retried (Java and Floe by commit.retry.*).
            conflicts: list[str] = []
            errors: list[BaseException] = []
            written: dict[str, list[int]] = {"floe": [], "py": []}
            java_done = threading.Event()

            def appending(who: str, base: int, append: Callable[[pa.Table], None]) -> Callable[[], None]:
                def run() -> None:
                    try:
                        i = 0
                        while i < CONCURRENT or (not java_done.is_set() and i < 200):
                            append(pa.table({"id": pa.array([base + i], pa.int64()), "who": [who],
                                             "v": pa.array([i], pa.int64()), "note": ["c"]}))
                            written[who].append(base + i)
                            i += 1
                    except BaseException as e:  # noqa: BLE001 - re-raised in the test thread
                        errors.append(e)
                return run

            floe_table = served.client(credential="floe:f-s3cret").load_table("db.shared")
            threads = [
                threading.Thread(target=appending("floe", 1000, floe_table.append)),
                threading.Thread(target=appending(
                    "py", 2000, lambda rows: _retrying(lambda: py.load_table("db.shared").append(rows), conflicts))),
            ]
            for th in threads:
                th.start()
            try:
                jsql.run([f"INSERT INTO c.db.shared VALUES ({3000 + i}, 'java', {i}, 'c')" for i in range(CONCURRENT)],
                         _java_conf(served.uri))
            finally:
                java_done.set()
                for th in threads:
                    th.join(timeout=300)
            assert not errors, errors
            model |= {3000 + i: ("java", i, "c") for i in range(CONCURRENT)}
            for who, ids in written.items():
                base = 1000 if who == "floe" else 2000
                model |= {k: (who, k - base, "c") for k in ids}

            # 6. Nothing lost: each client reads every row.
            assert floe_rows() == expected()
            got = py.load_table("db.shared").scan().to_arrow()
            assert _rows(list(zip(*(got.column(c).to_pylist() for c in ("id", "who", "v", "note"))))) == expected()
            final = jsql.run(["SELECT id, who, v, note FROM c.db.shared"], _java_conf(served.uri))
            assert _rows(final[0]["rows"]) == expected()
        finally:
            for key in conf:
                spark.conf.unset(key)


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
