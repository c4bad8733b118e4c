"""Security of ``floe serve``: every refused request gets the spec's error model and changes nothing.

Covered: no token, a wrong token, an expired OAuth2 token, a token for another namespace, path traversal
and SQL injection in identifiers, oversized bodies, the rate limit, malformed and unknown commits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from _rest import Served, assert_error, prefix, served_catalog
from _rest import request as raw_request

from floe.catalog.rest_protocol import ForbiddenError, NotAuthorizedError
from floe.errors import ValidationError
from floe.server import ServerSettings
from floe.spec.updates import SetCurrentSchema

ADMIN, SALES_WRITER, SALES_READER = "admin-t0ken", "sales-writer-t0ken", "sales-reader-t0ken"
SETTINGS = ServerSettings.from_mapping({
    "max-body-bytes": 65536,
    "tokens": {
        "admin": {"token": ADMIN, "grants": {"*": "admin"}},
        "sales-writer": {"token": SALES_WRITER, "grants": {"sales": "write"}},
        "sales-reader": {"token": SALES_READER, "grants": {"sales": "read"}},
    },
    "clients": {"etl": {"secret": "s3cret", "grants": {"*": "write"}}},
})
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with served_catalog(tmp_path, SETTINGS) as s:
        admin = s.client(token=ADMIN)
        for ns in ("sales", "hr"):
            admin.create_namespace(ns)
            admin.create_table(f"{ns}.t", pa.schema([pa.field("id", pa.int64())])).append(
                pa.table({"id": pa.array([1], pa.int64())})
            )
        yield s


def state(s: Served) -> dict[str, Any]:
    """Everything a refused request must leave unchanged: namespaces, tables, metadata, warehouse files."""
    cat = s.backing
    tables = {ns: cat.list_tables(ns) for ns in cat.list_namespaces()}
    return {
        "namespaces": cat.list_namespaces(),
        "tables": tables,
        "metadata": {t: cat.load_table(t).metadata_location for ts in tables.values() for t in ts},
        "files": sorted(str(p) for p in s.warehouse.parent.rglob("*") if "served.db" not in p.name),
    }


def request(s: Served, method: str, path: str, *, token: str | None = ADMIN, **kwargs: Any) -> httpx.Response:
    return raw_request(s, method, path, token=token, **kwargs)


def test_rest_security_no_token_is_401_and_changes_nothing(served: Served) -> None:
    before = state(served)
    assert_error(request(served, "GET", "/v1/config", token=None), 401, "NotAuthorizedException")
    resp = request(served, "POST", f"{prefix(served)}/namespaces", token=None, json={"namespace": ["x"]})
    assert_error(resp, 401, "NotAuthorizedException")
    resp = request(served, "DELETE", f"{prefix(served)}/namespaces/sales/tables/t", token=None)
    assert_error(resp, 401, "NotAuthorizedException")
    assert state(served) == before


def test_rest_security_wrong_token_is_401_for_http_and_the_client(served: Served) -> None:
    before = state(served)
    resp = request(served, "POST", f"{prefix(served)}/namespaces", token="nope", json={"namespace": ["x"]})
    assert "Invalid token" in assert_error(resp, 401, "NotAuthorizedException")
    resp = request(served, "GET", "/v1/config", token=None, headers={"Authorization": "Basic Zm9vOmJhcg=="})
    assert_error(resp, 401, "NotAuthorizedException")
    with pytest.raises(NotAuthorizedError, match="HTTP 401"):
        served.client(token="nope")
    with pytest.raises(NotAuthorizedError, match="invalid_client"):
        served.client(credential="etl:wrong")
    resp = httpx.post(f"{served.uri}/v1/oauth/tokens", data={"grant_type": "client_credentials", "client_id": "etl", "client_secret": "x"})
    assert resp.status_code == 401
    assert resp.json()["error"] == "invalid_client"
    resp = httpx.post(f"{served.uri}/v1/oauth/tokens", data={"grant_type": "password", "username": "a"})
    assert resp.status_code == 400
    assert resp.json()["error"] == "unsupported_grant_type"
    assert state(served) == before


def test_rest_security_oauth_token_expires_and_client_refreshes(tmp_path: Path) -> None:
    settings = ServerSettings.from_mapping({
        "token-ttl-s": 1, "clients": {"etl": {"secret": "s3cret", "grants": {"*": "admin"}}},
    })
    with served_catalog(tmp_path, settings) as s:
        issued = httpx.post(
            f"{s.uri}/v1/oauth/tokens",
            data={"grant_type": "client_credentials", "client_id": "etl", "client_secret": "s3cret", "scope": "catalog"},
        ).json()
        assert issued["token_type"] == "bearer"
        assert issued["expires_in"] == 1
        token = issued["access_token"]
        assert request(s, "GET", "/v1/config", token=token).status_code == 200
        cat = s.client(credential="etl:s3cret")  # OAuth2 client credentials against /v1/oauth/tokens
        cat.create_namespace("db")
        time.sleep(1.3)
        message = assert_error(request(s, "GET", "/v1/config", token=token), 401, "NotAuthorizedException")
        assert "expired" in message
        cat.create_namespace("db2")  # the client's token expired too: it fetched a fresh one and went on
        assert s.backing.list_namespaces() == [("db",), ("db2",)]


def test_rest_security_token_for_another_namespace_is_403_and_changes_nothing(served: Served) -> None:
    before = state(served)
    writer = served.client(token=SALES_WRITER)
    assert writer.list_namespaces() == [("sales",)]  # hr is not even listed
    with pytest.raises(ForbiddenError, match="HTTP 403"):
        writer.load_table("hr.t")
    with pytest.raises(ForbiddenError):
        writer.create_table("hr.new", pa.schema([pa.field("id", pa.int64())]))
    with pytest.raises(ForbiddenError):
        writer.drop_table("hr.t", purge=True)
    with pytest.raises(ForbiddenError):
        writer.rename_table("sales.t", "hr.moved")
    with pytest.raises(ForbiddenError):
        writer.drop_namespace("sales")  # dropping a namespace needs admin
    with pytest.raises(ForbiddenError):
        writer.table_exists("hr.nope")  # a HEAD says nothing about names it may not read
    for method, path, body in [
        ("POST", "/namespaces/hr/tables/t", {"requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "b"}}]}),
        ("GET", "/namespaces/hr", None),
        ("POST", "/namespaces", {"namespace": ["finance"]}),
        ("POST", "/namespaces/hr/properties", {"updates": {"owner": "me"}}),
    ]:
        resp = request(served, method, prefix(served) + path, token=SALES_WRITER, json=body)
        assert_error(resp, 403, "ForbiddenException")
    reader = served.client(token=SALES_READER)
    assert reader.load_table("sales.t").scan().to_arrow().num_rows == 1
    with pytest.raises(ForbiddenError):
        reader.load_table("sales.t").append(pa.table({"id": pa.array([2], pa.int64())}))
    assert state(served) == before
    writer.load_table("sales.t").append(pa.table({"id": pa.array([2], pa.int64())}))  # its own grant works
    assert served.backing.load_table("sales.t").scan().to_arrow().num_rows == 2


TRAVERSAL = ["..", ".", "../..", "../../outside", "a/b", "a\\b", "a\x00b", "a\nb"]


@pytest.mark.parametrize("name", TRAVERSAL, ids=["dotdot", "dot", "dotdot2", "escape", "slash", "backslash", "nul", "newline"])
def test_rest_security_path_traversal_in_names_is_400_and_changes_nothing(served: Served, name: str) -> None:
    before = state(served)
    p = prefix(served)
    # one path segment: '/' travels as %2F, dots as %2E (HTTP clients remove literal dot segments)
    raw = quote(name, safe="").replace(".", "%2E")
    cases = [
        ("POST", f"{p}/namespaces", {"namespace": [name]}),
        ("POST", f"{p}/namespaces", {"namespace": ["sales", name]}),
        ("POST", f"{p}/namespaces/sales/tables", {"name": name, "schema": SCHEMA}),
        ("POST", f"{p}/namespaces/sales/tables", {"name": name, "schema": SCHEMA, "stage-create": True}),
        ("POST", f"{p}/namespaces/sales/register", {"name": name, "metadata-location": served.backing.load_table("sales.t").metadata_location}),
        ("POST", f"{p}/tables/rename", {"source": {"namespace": ["sales"], "name": "t"}, "destination": {"namespace": ["sales"], "name": name}}),
        ("POST", f"{p}/namespaces/sales/tables/{raw}", {
            "requirements": [{"type": "assert-create"}],
            "updates": [{"action": "upgrade-format-version", "format-version": 2}, {"action": "set-location", "location": str(served.warehouse / "sales" / "x")}],
        }),
    ]
    for method, path, body in cases:
        resp = request(served, method, path, json=body)
        message = assert_error(resp, 400, "BadRequestException")
        assert "name" in message or "namespace" in message or "level" in message, message
    # names the server cannot resolve are simply not found (never a path outside the warehouse)
    assert request(served, "GET", f"{p}/namespaces/sales/tables/{raw}").status_code in (400, 404)
    assert request(served, "DELETE", f"{p}/namespaces/sales/tables/{raw}?purgeRequested=true").status_code in (400, 404)
    assert state(served) == before


INJECTIONS = ["x'; DROP TABLE iceberg_tables; --", "%' OR '1'='1", "a\"b", "t; DELETE FROM iceberg_namespace_properties"]


def test_rest_security_sql_injection_names_are_stored_exactly(served: Served) -> None:
    cat = served.client(token=ADMIN)
    for i, name in enumerate(INJECTIONS):
        cat.create_namespace(("inj", name))
        cat.create_table(("inj", name, f"{name}{i}"), pa.schema([pa.field("id", pa.int64())]))
        assert cat.list_tables(("inj", name)) == [("inj", name, f"{name}{i}")]
        assert cat.table_exists(("inj", name, f"{name}{i}"))
    assert cat.list_namespaces("inj") == sorted(("inj", n) for n in INJECTIONS)
    assert not cat.table_exists(("inj", "%' OR '1'='1", "anything"))
    # the catalog's own tables are intact: the tables created before still load with their data
    assert served.backing.load_table("sales.t").scan().to_arrow().num_rows == 1
    assert served.backing.list_namespaces() == [("hr",), ("inj",), ("sales",)]


def test_rest_security_oversized_body_is_413_and_changes_nothing(served: Served) -> None:
    before = state(served)
    big = {"name": "big", "schema": SCHEMA, "properties": {"pad": "x" * 70000}}
    resp = request(served, "POST", f"{prefix(served)}/namespaces/sales/tables", json=big)
    assert_error(resp, 413, "RequestTooLargeException")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts while reading
        data = json.dumps(big).encode()
        for i in range(0, len(data), 8192):
            yield data[i : i + 8192]

    resp = request(served, "POST", f"{prefix(served)}/namespaces/sales/tables", content=chunks())
    assert_error(resp, 413, "RequestTooLargeException")
    with pytest.raises(Exception, match="413"):
        served.client(token=ADMIN).create_table("sales.big", pa.schema([pa.field("id", pa.int64())]), properties={"pad": "x" * 70000})
    assert state(served) == before


def test_rest_security_rate_limit_is_429_with_retry_after(tmp_path: Path) -> None:
    settings = ServerSettings.from_mapping({
        "rate-limit-per-s": 0.5, "rate-limit-burst": 5, "tokens": {"a": {"token": ADMIN, "grants": {"*": "admin"}}},
    })
    with served_catalog(tmp_path, settings) as s:
        codes = [request(s, "GET", "/v1/config").status_code for _ in range(5)]
        assert codes == [200] * 5
        # POSTs that would change nothing (the root namespace is refused) until the bucket is empty
        resp = request(s, "POST", f"{prefix(s)}/namespaces", json={"namespace": []})
        while resp.status_code != 429:  # a loaded machine may have refilled the bucket meanwhile
            assert_error(resp, 400, "BadRequestException")
            resp = request(s, "POST", f"{prefix(s)}/namespaces", json={"namespace": []})
        assert "Rate limit exceeded" in assert_error(resp, 429, "TooManyRequestsException")
        assert int(resp.headers["Retry-After"]) >= 1
        assert s.backing.list_namespaces() == []
        # Floe's client waits out a 429 (Retry-After) and sends again: the request goes through
        s.client(token=ADMIN).create_namespace("after-wait")
        assert s.backing.list_namespaces() == [("after-wait",)]
        # unauthenticated guessing is limited per address too
        codes = [request(s, "GET", "/v1/config", token=f"guess{i}").status_code for i in range(5)]
        assert codes == [401] * 5
        while codes[-1] != 429:  # a loaded machine may have refilled the bucket meanwhile
            codes.append(request(s, "GET", "/v1/config", token=f"guess{len(codes)}").status_code)
            assert len(codes) < 50 and codes[-1] in (401, 429), codes


def test_rest_security_malformed_and_unknown_commits_are_400(served: Served) -> None:
    before = state(served)
    p = prefix(served)
    resp = request(served, "POST", f"{p}/namespaces/sales/tables/t", content=b"{not json", headers={"Content-Type": "application/json"})
    assert_error(resp, 400, "BadRequestException")
    resp = request(served, "POST", f"{p}/namespaces/sales/tables/t", json={"requirements": [], "updates": [{"action": "drop-everything"}]})
    assert "drop-everything" in assert_error(resp, 400, "BadRequestException")
    resp = request(served, "POST", f"{p}/namespaces/sales/tables/t", json={"requirements": [{"type": "assert-nothing"}], "updates": []})
    assert_error(resp, 400, "BadRequestException")
    resp = request(served, "GET", f"{p}/namespaces/sales/views/v")
    assert_error(resp, 404, "NoSuchViewException")
    resp = request(served, "POST", f"{p}/namespaces/sales/register-view", json={"name": "v", "metadata-location": "/x"})
    assert_error(resp, 406, "UnsupportedOperationException")
    assert_error(request(served, "GET", "/v1/elsewhere/namespaces"), 404, "NoSuchEndpointException")
    with pytest.raises(ValidationError, match="HTTP 400"):  # an update that does not apply, found by the server
        served.client(token=ADMIN).commit_table("sales.t", [], [SetCurrentSchema(99)])
    assert state(served) == before


def test_rest_security_locations_outside_the_warehouse_are_403(served: Served, tmp_path: Path) -> None:
    cat = served.client(token=ADMIN)
    outside = tmp_path / "elsewhere"
    before = state(served)
    with pytest.raises(ForbiddenError, match="outside the locations this server allows"):
        cat.create_table("sales.out", pa.schema([pa.field("id", pa.int64())]), location=str(outside / "t"))
    with pytest.raises(ForbiddenError):
        cat.create_table("sales.up", pa.schema([pa.field("id", pa.int64())]), location=str(served.warehouse / ".." / "x"))
    from floe.spec.updates import SetLocation

    with pytest.raises(ForbiddenError):
        cat.commit_table("sales.t", [], [SetLocation(str(outside))])
    foreign = served.backing.load_table("hr.t").metadata_location
    (outside / "metadata").mkdir(parents=True)
    copied = outside / "metadata" / "v1.metadata.json"
    copied.write_bytes(Path(foreign).read_bytes())
    before["files"] = sorted(str(p) for p in served.warehouse.parent.rglob("*") if "served.db" not in p.name)
    with pytest.raises(ForbiddenError):
        cat.register_table("sales.reg", str(copied))
    assert state(served) == before
    inside = cat.create_table("sales.in", pa.schema([pa.field("id", pa.int64())]), location=str(served.warehouse / "custom" / "in"))
    assert inside.location().endswith("custom/in")


def test_rest_security_allowed_locations_star_allows_anywhere(tmp_path: Path) -> None:
    settings = ServerSettings.from_mapping({"allowed-locations": ["*"], "tokens": {"a": {"token": ADMIN, "grants": {"*": "admin"}}}})
    with served_catalog(tmp_path, settings) as s:
        cat = s.client(token=ADMIN)
        cat.create_namespace("db")
        table = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]), location=str(tmp_path / "elsewhere" / "t"))
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        assert s.backing.load_table("db.t").scan().to_arrow().num_rows == 1


HOSTILE = ["q'uote", "semi;colon", "ünï cödé 表", "%2F", "a%00b", "x" * 255, "a" * 10000, "ü" * 3000, "$(rm -rf ~)"]


def test_rest_security_hostile_names_roundtrip_or_refused_clearly(served: Served, tmp_path: Path) -> None:
    cat = served.client(token=ADMIN)
    outside_before = {p for p in tmp_path.rglob("*") if served.warehouse not in p.parents and "served.db" not in p.name}
    for name in HOSTILE:
        if len(name) > 255:  # refused in one clear line, before any lookup (floe.server.names)
            with pytest.raises(ValidationError, match="names are limited to 255 characters"):
                cat.create_namespace(("h", name))
            continue
        if len(f"h.{name}") > 255:  # a legal level, but "h.<name>" overflows the SQL catalog's column
            with pytest.raises(ValidationError, match="its column holds 255"):
                cat.create_namespace(("h", name))
            continue
        cat.create_namespace(("h", name))
        ident = ("h", name, name)
        table = cat.create_table(ident, pa.schema([pa.field("id", pa.int64())]))
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        assert cat.load_table(ident).identifier == ident
        assert cat.list_tables(("h", name)) == [ident]
        assert served.backing.load_table(ident).scan().to_arrow().num_rows == 1
    assert sorted(cat.list_namespaces("h")) == sorted(("h", n) for n in HOSTILE if len(n) <= 253)
    outside_after = {p for p in tmp_path.rglob("*") if served.warehouse not in p.parents and "served.db" not in p.name}
    assert outside_after == outside_before  # nothing was created outside the warehouse
