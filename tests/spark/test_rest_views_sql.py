"""Floe SQL views in a REST catalog (``floe serve``): CREATE [OR REPLACE] VIEW, SELECT, SHOW VIEWS, ALTER
and DROP VIEW go through the server's view routes, and PyIceberg sees the same views."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe
from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.server import background_server

pytestmark = pytest.mark.spark
rest = pytest.importorskip("pyiceberg.catalog.rest")


def test_floe_sql_views_through_floe_serve(spark: SparkSession, tmp_path: Path) -> None:
    backing = floe.load_catalog(f"v{uuid.uuid4().hex[:8]}", type="sql", uri=f"sqlite:///{tmp_path}/served.db",
                                warehouse=str(tmp_path / "wh"))
    with background_server(backing) as server:
        conf = {
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.catalog.r": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.r.type": "rest",
            "spark.sql.catalog.r.uri": server.uri,
        }
        cfg = FloeConfig.load(conf, environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")}, cwd=tmp_path)
        session = make_session(cfg, spark=spark)
        session.sql("CREATE NAMESPACE r.db; CREATE TABLE r.db.t (id BIGINT) USING iceberg; "
                    "INSERT INTO r.db.t VALUES (1), (2), (3)")
        session.sql("CREATE VIEW r.db.v AS SELECT id * 10 AS x FROM r.db.t WHERE id > 1")
        assert sorted(session.sql("SELECT x FROM r.db.v")[-1].rows) == [(20,), (30,)]
        session.sql("CREATE OR REPLACE VIEW r.db.v AS SELECT id AS x FROM r.db.t")
        assert sorted(session.sql("SELECT x FROM r.db.v")[-1].rows) == [(1,), (2,), (3,)]
        session.sql("ALTER VIEW r.db.v SET TBLPROPERTIES ('k' = 'v')")
        shown = session.sql("SHOW VIEWS IN r.db")[-1].rows  # with the shared session's temporary views, as Spark's
        assert [r[1] for r in shown if not r[2]] == ["v"]
        py = rest.RestCatalog("py", uri=server.uri)
        view = py.load_view(("db", "v"))
        assert view.metadata.properties["k"] == "v" and len(view.metadata.versions) == 2
        assert view.metadata.location == str(tmp_path / "wh" / "db" / "v")
        session.sql("DROP VIEW r.db.v")
        assert py.list_views("db") == []
