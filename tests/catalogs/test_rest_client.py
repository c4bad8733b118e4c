"""Floe's REST client: options, paging, refused options, and commits whose outcome is unknown."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _rest import served_catalog

import floe
from floe.catalog.rest import RestCatalog
from floe.errors import CommitStateUnknownError, UnsupportedError, ValidationError
from floe.io.locations import to_local_path
from floe.server import ServerSettings

ROWS = pa.table({"id": pa.array([1, 2], pa.int64())})


def test_rest_client_pages_prefix_warehouse_and_headers(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client(**{"rest-page-size": "1", "header.X-Client": "floe-test"})
        assert isinstance(cat, RestCatalog)
        assert cat.properties["prefix"] == served.backing.name  # from the server's overrides
        for ns in ("a", "b", "c"):
            cat.create_namespace(ns)
            cat.create_table(f"{ns}.t1", ROWS.schema)
            cat.create_table(f"{ns}.t2", ROWS.schema)
        cat.create_namespace(("a", "inner"))
        assert cat.list_namespaces() == [("a",), ("b",), ("c",)]  # three pages of one
        assert cat.list_namespaces("a") == [("a", "inner")]
        assert cat.list_tables("b") == [("b", "t1"), ("b", "t2")]
        assert served.client(warehouse=served.backing.name).list_namespaces() == [("a",), ("b",), ("c",)]
        with pytest.raises(ValidationError, match="not served here"):
            served.client(warehouse="s3://elsewhere/")
        cat.update_namespace_properties("a", updates={"owner": "x"})
        summary = cat.update_namespace_properties("a", removals=["owner", "missing"])
        assert summary.removed == ["owner"]
        assert summary.missing == ["missing"]


def test_rest_client_refuses_unsupported_options(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs a 'uri'"):
        floe.load_catalog("r", type="rest", uri="")
    with pytest.raises(UnsupportedError, match="rest.sigv4-enabled"):
        floe.load_catalog("r", type="rest", uri="http://127.0.0.1:9", **{"rest.sigv4-enabled": "true"})
    with served_catalog(tmp_path) as served, pytest.raises(UnsupportedError, match="server chooses"):
        served.client().default_table_location(("db", "t"))


def test_rest_client_oauth2_server_uri_and_scope(tmp_path: Path) -> None:
    settings = ServerSettings.from_mapping({"clients": {"c": {"secret": "s", "grants": {"*": "admin"}}}})
    with served_catalog(tmp_path, settings) as served:
        cat = served.client(credential="c:s", scope="catalog", **{"oauth2-server-uri": f"{served.uri}/v1/oauth/tokens"})
        cat.create_namespace("db")
        assert cat.namespace_exists("db")


def test_rest_client_commit_to_unreachable_server_is_unknown_and_keeps_files(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client(**{"rest.client.connection-timeout-ms": "2000"})
        cat.create_namespace("db")
        table = cat.create_table("db.t", ROWS.schema)
        table.append(ROWS)
        before = served.backing.load_table("db.t").metadata_location
        served.server.stop()
        root = Path(to_local_path(table.location()))
        data, manifests = set((root / "data").rglob("*")), set((root / "metadata").rglob("*.avro"))
        with pytest.raises(CommitStateUnknownError, match="unknown outcome"):
            table.append(ROWS)
        # the commit may have happened: its data file, manifest and manifest list are all kept
        assert len(set((root / "data").rglob("*")) - data) == 1
        assert len(set((root / "metadata").rglob("*.avro")) - manifests) == 2
        assert served.backing.load_table("db.t").metadata_location == before
