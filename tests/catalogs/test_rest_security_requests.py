"""``floe serve`` and the requests themselves: names, sizes, nesting, types, namespace properties (issue 34,
6, 7, 9, 11). Each refusal is checked for its status, its one-line message naming the rule, and for
changing nothing (namespaces, tables, metadata files and every file beside the warehouse)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from _rest import Served, assert_error, file_digests, prefix, request, served_catalog

from floe.catalog.rest_protocol import encode_namespace
from floe.errors import NamespaceAlreadyExistsError, ValidationError
from floe.server import ServerSettings

ADMIN, SALES_READER, SALES_WRITER = "admin-t0ken", "sales-reader-t0ken", "sales-writer-t0ken"
SETTINGS = ServerSettings.from_mapping({
    "tokens": {
        "admin": {"token": ADMIN, "grants": {"*": "admin"}},
        "sales-reader": {"token": SALES_READER, "grants": {"sales": "read"}},
        "sales-writer": {"token": SALES_WRITER, "grants": {"sales": "write"}},
    },
})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with served_catalog(tmp_path, SETTINGS) as s:
        admin = s.client(token=ADMIN)
        admin.create_namespace("sales")
        admin.create_table("sales.t", pa.schema([pa.field("id", pa.int64())])).append(
            pa.table({"id": pa.array([1, 2], pa.int64())})
        )
        yield s


def state(s: Served) -> dict[str, Any]:
    """What a refused request must leave as it was."""
    cat = s.backing
    table = cat.load_table("sales.t")
    return {
        "namespaces": cat.all_namespaces(),
        "tables": cat.table_metadata_locations(),
        "properties": dict(table.metadata.properties),
        "rows": sorted(table.scan().to_arrow().column("id").to_pylist()),
        "files": file_digests(s.warehouse.parent),
    }


def commit(s: Served, body: Any, *, token: str = ADMIN, **kwargs: Any) -> httpx.Response:
    return request(s, "POST", f"{prefix(s)}/namespaces/sales/tables/t", token=token, json=body, **kwargs)


# 6 ------------------------------------------------------------------------------------------------
def test_rest_security_huge_names_and_deep_json_are_400_after_the_permission_check(served: Served) -> None:
    before = state(served)
    p = prefix(served)
    for path in (f"{p}/namespaces/{'a' * 60000}", f"{p}/namespaces/{'_' * 60000}/tables"):
        message = assert_error(request(served, "GET", path, token=ADMIN), 400, "BadRequestException")
        assert "names are limited to 255 characters" in message and len(message) < 300
    resp = request(served, "GET", f"{p}/namespaces", token=ADMIN, params={"parent": "%" * 20000})
    assert "limited to 255 characters" in assert_error(resp, 400, "BadRequestException")
    # 240 legal levels make a 60,000-character namespace: looked up without a LIKE pattern, simply not found
    deep = encode_namespace(["x" * 249] * 240)
    assert_error(request(served, "GET", f"{p}/namespaces/{deep}", token=ADMIN), 404, "NoSuchNamespaceException")
    for depth in (1000, 200_000):  # nested beyond the limit; the second beyond Python's recursion limit too
        body = b'{"requirements": [], "updates": ' + b"[" * depth + b"]" * depth + b"}"
        resp = commit(served, None, content=body, headers={"Content-Type": "application/json"})
        assert "nested deeper than 128 levels" in assert_error(resp, 400, "BadRequestException")
        # a caller without the grant is refused before its body is read: 403, never 400 or 500
        resp = commit(served, None, token=SALES_READER, content=body, headers={"Content-Type": "application/json"})
        assert "sales-reader may not write in namespace sales" in assert_error(resp, 403, "ForbiddenException")
    resp = commit(served, None, token=SALES_READER, content=b"{not json", headers={"Content-Type": "application/json"})
    assert_error(resp, 403, "ForbiddenException")
    resp = request(served, "POST", f"{p}/namespaces", token=SALES_WRITER, content=b"[[[", headers={"Content-Type": "application/json"})
    assert "sales-writer may not admin in any namespace" in assert_error(resp, 403, "ForbiddenException")
    assert state(served) == before


# 7 ------------------------------------------------------------------------------------------------
def test_rest_security_bodies_must_have_the_spec_types(served: Served) -> None:
    before = state(served)
    snapshot = served.backing.load_table("sales.t").metadata.current_snapshot()
    assert snapshot is not None
    big_snapshot = {"snapshot-id": 2**64, "timestamp-ms": 1, "manifest-list": snapshot.manifest_list,
                    "summary": {"operation": "append"}, "parent-snapshot-id": snapshot.snapshot_id}
    cases = [  # (update, what the message says)
        ({"action": "set-properties", "updates": {"a": {"b": 1}}}, 'updates[0].updates["a"] must be a string, got an object'),
        ({"action": "set-properties", "updates": {"a": 5}}, 'updates[0].updates["a"] must be a string, got number 5'),
        ({"action": "set-properties", "updates": {"a": None}}, "must be a string, got null"),
        ({"action": "remove-properties", "removals": "abc"}, 'updates[0].removals must be an array, got "abc"'),
        ({"action": "remove-properties", "removals": [1]}, "updates[0].removals[0] must be a string"),
        ({"action": "add-snapshot", "snapshot": big_snapshot},
         f"updates[0].snapshot.snapshot-id must be a signed 64-bit integer, got number {2**64}"),
        ({"action": "set-current-schema", "schema-id": 2**31}, "must be a 32-bit integer"),
        ({"action": "set-current-schema", "schema-id": True}, "must be a 32-bit integer, got boolean true"),
        ({"action": "set-location"}, "updates[0].location is required by the REST spec"),
    ]
    for update, expected in cases:
        message = assert_error(commit(served, {"requirements": [], "updates": [update]}), 400, "BadRequestException")
        assert message.startswith("Invalid CommitTableRequest: ") and expected in message, message
    resp = commit(served, {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": -(2**63) - 1}],
                           "updates": []})
    assert "requirements[0].snapshot-id must be a signed 64-bit integer" in assert_error(resp, 400, "BadRequestException")
    resp = request(served, "POST", f"{prefix(served)}/namespaces", token=ADMIN, json={"namespace": ["n"], "properties": {"k": 1}})
    assert 'properties["k"] must be a string' in assert_error(resp, 400, "BadRequestException")
    resp = request(served, "POST", f"{prefix(served)}/namespaces/sales/properties", token=ADMIN, json={"removals": "k"})
    assert "removals must be an array" in assert_error(resp, 400, "BadRequestException")
    assert state(served) == before
    assert not any("{" in v for v in served.backing.load_table("sales.t").properties.values())


# 9 ------------------------------------------------------------------------------------------------
def test_rest_security_names_are_nfc_without_control_or_bidi_characters(served: Served) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    cat = served.client(token=ADMIN)
    cat.create_namespace(nfc)
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace(nfd)
    cat.create_table((nfd, nfd), pa.schema([pa.field("id", pa.int64())]))  # created as NFC
    assert served.backing.list_namespaces() == [(nfc,), ("sales",)]
    assert served.backing.list_tables((nfc,)) == [(nfc, nfc)]
    assert cat.load_table((nfc, nfd)).metadata_location == served.backing.load_table((nfc, nfc)).metadata_location
    resp = request(served, "GET", f"{prefix(served)}/namespaces/{quote(nfd)}/tables/{quote(nfd)}", token=ADMIN)
    assert resp.status_code == 200
    before = state(served)
    for name, rule in (("invoice\u202eexe.pdf", "bidirectional formatting characters"),
                       ("a\u2066b", "bidirectional formatting characters"), ("bell\x07", "control characters")):
        with pytest.raises(ValidationError, match=rule):
            cat.create_namespace(name)
        with pytest.raises(ValidationError, match=rule):
            cat.create_table(("sales", name), pa.schema([pa.field("id", pa.int64())]))
        resp = request(served, "GET", f"{prefix(served)}/namespaces/{quote(name)}", token=ADMIN)
        assert "are not allowed in names" in assert_error(resp, 400, "BadRequestException")
    assert state(served) == before


# 11 -----------------------------------------------------------------------------------------------
def test_rest_security_namespace_properties_hide_exists_and_show_location(served: Served) -> None:
    cat = served.client(token=ADMIN)
    cat.create_namespace("plain")
    cat.create_namespace("custom", {"location": str(served.warehouse / "elsewhere"), "owner": "me"})
    resp = request(served, "GET", f"{prefix(served)}/namespaces/plain", token=ADMIN)
    assert resp.json() == {"namespace": ["plain"], "properties": {"location": str(served.warehouse / "plain")}}
    assert cat.load_namespace_properties("custom") == {"location": str(served.warehouse / "elsewhere"), "owner": "me"}
    # the marker stays in the catalog's rows (other engines look for it), hidden and reserved
    with served.backing.engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.exec_driver_sql(
            "SELECT property_key FROM iceberg_namespace_properties WHERE namespace = 'plain'").all()
    assert rows == [("exists",)]
    resp = request(served, "POST", f"{prefix(served)}/namespaces/plain/properties", token=ADMIN,
                   json={"updates": {"exists": "false"}})
    assert "reserved" in assert_error(resp, 400, "BadRequestException")
    # a namespace location outside the allowed locations would lead new tables there: refused
    resp = request(served, "POST", f"{prefix(served)}/namespaces", token=ADMIN,
                   json={"namespace": ["far"], "properties": {"location": "/etc"}})
    assert "Location policy (allowed locations)" in assert_error(resp, 403, "ForbiddenException")
