"""Iceberg views through ``floe serve``: PyIceberg's RestCatalog and Floe's REST client create, list, load,
replace, rename and drop views (REST spec routes, advertised in /v1/config), under the server's grants and
location policy; the ``namespace-separator`` the server advertises is what PyIceberg then uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from _rest import assert_error, prefix, request, served_catalog

from floe.catalog.rest_protocol import VIEW_ENDPOINTS
from floe.catalog.views import new_view_metadata, view_with_properties, view_with_version
from floe.errors import CommitFailedError, NamespaceNotEmptyError, NoSuchViewError, TableAlreadyExistsError
from floe.server import ServerSettings
from floe.server.settings import Principal
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType

rest = pytest.importorskip("pyiceberg.catalog.rest")
from pyiceberg.exceptions import NoSuchViewError as PyNoSuchViewError
from pyiceberg.schema import Schema as PySchema
from pyiceberg.types import LongType as PyLong
from pyiceberg.types import NestedField as PyField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

SCHEMA = Schema(NestedField(1, "id", LongType(), False), NestedField(2, "name", StringType()))


def _py_version(sql: str) -> ViewVersion:
    return ViewVersion(
        version_id=1, schema_id=1, timestamp_ms=1_700_000_000_000, summary={"engine-name": "spark"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=["db"],
    )


def test_config_advertises_view_endpoints_and_separator(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        body = request(served, "GET", "/v1/config", token=None).json()
        assert set(VIEW_ENDPOINTS) <= set(body["endpoints"])
        assert body["overrides"]["namespace-separator"] == "%1F"


def test_pyiceberg_views_create_list_load_drop(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        py = rest.RestCatalog("py", uri=served.uri)
        py.create_namespace("db")
        py.create_table("db.t", schema=PySchema(PyField(1, "id", PyLong(), required=False)))
        schema = PySchema(PyField(1, "id", PyLong(), required=False))
        view = py.create_view(("db", "v"), schema, _py_version("SELECT id FROM db.t"), properties={"owner": "me"})
        assert py.view_exists(("db", "v")) and not py.view_exists(("db", "nope"))
        assert py.list_views("db") == [("db", "v")]
        assert py.list_tables("db") == [("db", "t")]  # a view is not a table
        loaded = py.load_view(("db", "v"))
        assert loaded == view
        assert loaded.metadata.properties["owner"] == "me"
        assert loaded.current_version().representations[0].root.sql == "SELECT id FROM db.t"
        assert loaded.metadata.location == str(served.warehouse / "db" / "v")
        with pytest.raises(PyNoSuchViewError):
            py.load_view(("db", "t"))  # a table is not a view
        # Floe's backing catalog holds the same view (Java's JDBC layout)
        metadata, location = served.backing.load_view(("db", "v"))  # type: ignore[attr-defined]
        assert str(metadata.view_uuid) == str(loaded.metadata.view_uuid) and Path(location).is_file()
        with pytest.raises(NamespaceNotEmptyError):
            served.backing.drop_table(("db", "t"))
            served.backing.drop_namespace(("db",))
        py.drop_view(("db", "v"))
        assert not py.view_exists(("db", "v")) and py.list_views("db") == []
        with pytest.raises(PyNoSuchViewError):
            py.drop_view(("db", "v"))


def test_floe_client_views_replace_rename_and_conflicts(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client()
        cat.create_namespace("db")
        cat.create_namespace("other")
        version = {
            "sql": "SELECT 1 AS id", "dialect": "spark", "catalog": "c", "namespace": ("db",),
            "properties": {"a": "1"}, "engine": {"engine-name": "floe"},
        }
        first = new_view_metadata(location="rest:server-placed", schema=SCHEMA, **version)  # type: ignore[arg-type]
        location = cat.create_view(("db", "v"), first)  # type: ignore[attr-defined]
        with pytest.raises(TableAlreadyExistsError):
            cat.create_view(("db", "v"), first)  # type: ignore[attr-defined]
        base, base_location = cat.load_view(("db", "v"))  # type: ignore[attr-defined]
        assert base_location == location and base.location == str(served.warehouse / "db" / "v")
        # a new version with a new schema, then properties: ids as Java's view builder assigns them
        wider = Schema(*SCHEMA.fields, NestedField(3, "x", LongType()))
        v2 = view_with_version(base, **{**version, "schema": wider, "sql": "SELECT 1 AS id, 'a' AS name, 2 AS x"})  # type: ignore[arg-type]
        second = cat.replace_view(("db", "v"), base_location, v2)  # type: ignore[attr-defined]
        with pytest.raises(CommitFailedError):  # base_location is stale now
            cat.replace_view(("db", "v"), base_location, v2)  # type: ignore[attr-defined]
        now, now_location = cat.load_view(("db", "v"))  # type: ignore[attr-defined]
        assert now_location == second
        assert now.current_version_id == 2 and now.schema().schema_id == 1
        assert [f.name for f in now.schema().fields] == ["id", "name", "x"]
        assert [e.version_id for e in now.version_log] == [1, 2]
        third = cat.replace_view(("db", "v"), second, view_with_properties(now, {"b": "2"}, ["a"]))  # type: ignore[attr-defined]
        props, _ = cat.load_view(("db", "v"))  # type: ignore[attr-defined]
        assert props.properties == {"b": "2"} and third != second
        cat.rename_view(("db", "v"), ("other", "w"))  # type: ignore[attr-defined]
        assert cat.list_views("db") == [] and cat.list_views("other") == [("other", "w")]  # type: ignore[attr-defined]
        with pytest.raises(NoSuchViewError):
            cat.load_view(("db", "v"))  # type: ignore[attr-defined]
        cat.drop_view(("other", "w"))  # type: ignore[attr-defined]
        assert not cat.view_exists(("other", "w"))  # type: ignore[attr-defined]


def test_views_pass_grants_and_location_policy(tmp_path: Path) -> None:
    settings = ServerSettings(tokens={
        "admin": Principal("admin", {"*": "admin"}),
        "reader": Principal("reader", {"db": "read"}),
    })
    with served_catalog(tmp_path, settings) as served:
        base = prefix(served)
        assert request(served, "POST", f"{base}/namespaces", token="admin", json={"namespace": ["db"]}).status_code == 200
        table = {"name": "t", "schema": {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}}
        assert request(served, "POST", f"{base}/namespaces/db/tables", token="admin", json=table).status_code == 200
        view = {
            "name": "v", "schema": {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]},
            "view-version": {
                "version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {},
                "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}], "default-namespace": ["db"],
            },
            "properties": {},
        }
        # a reader may not create; its request body is not even read
        assert_error(request(served, "POST", f"{base}/namespaces/db/views", token="reader", json=view), 403, "ForbiddenException")
        # a view inside a table's folder, or outside the warehouse, is refused; nothing is written
        inside = {**view, "location": str(served.warehouse / "db" / "t" / "v")}
        message = assert_error(request(served, "POST", f"{base}/namespaces/db/views", token="admin", json=inside), 403, "ForbiddenException")
        assert "no overlapping tables" in message
        outside = {**view, "location": str(tmp_path / "elsewhere")}
        message = assert_error(request(served, "POST", f"{base}/namespaces/db/views", token="admin", json=outside), 403, "ForbiddenException")
        assert "allowed locations" in message
        assert not (tmp_path / "elsewhere").exists()
        created = request(served, "POST", f"{base}/namespaces/db/views", token="admin", json=view)
        assert created.status_code == 200, created.text
        uuid = created.json()["metadata"]["view-uuid"]
        assert request(served, "GET", f"{base}/namespaces/db/views/v", token="reader").status_code == 200
        assert_error(request(served, "DELETE", f"{base}/namespaces/db/views/v", token="reader"), 403, "ForbiddenException")
        # moving the view's location outside the warehouse by a commit is refused too
        move = {"requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
                "updates": [{"action": "set-location", "location": str(tmp_path / "elsewhere")}]}
        assert_error(request(served, "POST", f"{base}/namespaces/db/views/v", token="admin", json=move), 403, "ForbiddenException")
        # a table may not be created where the view keeps its metadata
        over = {**table, "name": "t2", "location": str(served.warehouse / "db" / "v")}
        message = assert_error(request(served, "POST", f"{base}/namespaces/db/tables", token="admin", json=over), 403, "ForbiddenException")
        assert "of view db.v" in message
        wrong = {"requirements": [{"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}], "updates": []}
        assert_error(request(served, "POST", f"{base}/namespaces/db/views/v", token="admin", json=wrong), 409, "CommitFailedException")
        bad = {"updates": [{"action": "add-snapshot", "snapshot": {}}]}
        assert_error(request(served, "POST", f"{base}/namespaces/db/views/v", token="admin", json=bad), 400, "BadRequestException")


def test_custom_namespace_separator_as_pyiceberg_uses_it(tmp_path: Path) -> None:
    with served_catalog(tmp_path, ServerSettings(namespace_separator=".")) as served:
        py = rest.RestCatalog("py", uri=served.uri)
        assert py._namespace_separator == "."
        py.create_namespace(("parent",))
        py.create_namespace(("parent", "child"))
        assert ("parent", "child") in py.list_namespaces(("parent",))
        table = py.create_table(("parent", "child", "t"), schema=PySchema(PyField(1, "id", PyLong(), required=False)))
        assert table.name() == ("parent", "child", "t")
        assert py.list_tables(("parent", "child")) == [("parent", "child", "t")]
        assert py.load_table(("parent", "child", "t")).name() == ("parent", "child", "t")
        # clients that join levels with 0x1F (Floe's, older ones) are still understood
        assert served.client().list_tables(("parent", "child")) == [("parent", "child", "t")]
    with pytest.raises(Exception, match="namespace-separator"):
        ServerSettings.from_mapping({"namespace-separator": "/"})
