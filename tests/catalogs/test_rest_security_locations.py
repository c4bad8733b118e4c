"""``floe serve`` as an attacker meets it: where the server writes, deletes and reads metadata (issue 34, 1-5).

The arena: namespace ``reports`` holds the victim table ``reports.secret`` (three rows over two commits);
the attacker may write in ``sales`` and only read ``reports``. Every test sends the attack, checks the
status and the one-line message naming the rule, then that nothing outside the warehouse was created,
changed or deleted, that the victim's files are byte for byte as before, and that it loads with its rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _helpers import fake_data_file
from _rest import Served, assert_error, file_digests, prefix, request, served_catalog

from floe.catalog.base import Catalog
from floe.catalog.rest_protocol import ForbiddenError
from floe.server import ServerSettings
from floe.spec.properties import LOCATION_PROPERTIES
from floe.spec.updates import SetProperties

ADMIN, ATTACKER = "admin-t0ken", "sales-writer-t0ken"
SETTINGS = ServerSettings.from_mapping({
    "tokens": {
        "admin": {"token": ADMIN, "grants": {"*": "admin"}},
        "attacker": {"token": ATTACKER, "grants": {"sales": "write", "reports": "read"}},
    },
})
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
IDS = pa.schema([pa.field("id", pa.int64())])


@dataclass
class Arena:
    served: Served
    root: Path  # holds the warehouse and, beside it, "outside" with a bait file
    outside: Path
    admin: Catalog
    attacker: Catalog

    @property
    def warehouse(self) -> Path:
        return self.served.warehouse

    @property
    def victim(self) -> Path:
        return self.warehouse / "reports" / "secret"

    def victim_metadata(self) -> str:
        return str(self.served.backing.load_table("reports.secret").metadata_location)

    def snapshot(self) -> dict[str, Any]:
        return {
            "outside": file_digests(self.root, skip=(self.warehouse,)),
            "victim": file_digests(self.victim),
        }

    def assert_untouched(self, before: dict[str, Any]) -> None:
        """Nothing outside the warehouse changed, the victim's files are as they were, its rows load."""
        assert self.snapshot() == before
        rows = self.served.backing.load_table("reports.secret").scan().to_arrow().column("id").to_pylist()
        assert sorted(rows) == [1, 2, 3]

    def post(self, path: str, body: Any, *, token: str = ATTACKER) -> Any:
        return request(self.served, "POST", prefix(self.served) + path, token=token, json=body)


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Arena]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bait.txt").write_text("must survive")
    with served_catalog(tmp_path, SETTINGS) as s:
        admin = s.client(token=ADMIN)
        for ns in ("sales", "reports"):
            admin.create_namespace(ns)
        victim = admin.create_table("reports.secret", IDS)
        victim.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
        admin.load_table("reports.secret").append(pa.table({"id": pa.array([3], pa.int64())}))
        admin.create_table("sales.t", IDS).append(pa.table({"id": pa.array([10], pa.int64())}))
        yield Arena(s, tmp_path, outside, admin, s.client(token=ATTACKER))


def _set_properties(updates: dict[str, str]) -> dict[str, Any]:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": updates}]}


def _crafted(arena: Arena, folder: Path, **changes: Any) -> Path:
    """A metadata file in ``folder``: sales.t's current metadata with ``changes`` (JSON keys) applied."""
    metadata = json.loads(Path(arena.served.backing.load_table("sales.t").metadata_location or "").read_text())
    metadata.update(changes)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "00000-crafted.metadata.json"
    path.write_text(json.dumps(metadata))
    return path


# 1 ------------------------------------------------------------------------------------------------
def test_rest_security_location_properties_outside_the_warehouse_are_403(arena: Arena) -> None:
    before = arena.snapshot()
    sales_before = arena.served.backing.load_table("sales.t").metadata_location
    for key in LOCATION_PROPERTIES:
        for where, rule in ((arena.outside / "m", "allowed locations"), (arena.victim / "metadata", "no overlapping tables")):
            body = {"name": "p", "schema": SCHEMA, "properties": {key: str(where)}}
            message = assert_error(arena.post("/namespaces/sales/tables", body), 403, "ForbiddenException")
            assert f"Location policy ({rule})" in message and key in message, message
            resp = arena.post("/namespaces/sales/tables/t", _set_properties({key: str(where)}))
            message = assert_error(resp, 403, "ForbiddenException")
            assert f"Location policy ({rule})" in message and key in message, message
    # statistics files are paths the metadata records too
    snapshot_id = arena.served.backing.load_table("sales.t").metadata.current_snapshot_id
    stats = {"snapshot-id": snapshot_id, "statistics-path": str(arena.outside / "s.puffin"), "file-size-in-bytes": 1,
             "file-footer-size-in-bytes": 1, "blob-metadata": []}
    resp = arena.post("/namespaces/sales/tables/t", {"requirements": [], "updates": [
        {"action": "set-statistics", "statistics": stats}]})
    assert "statistics file" in assert_error(resp, 403, "ForbiddenException")
    assert arena.served.backing.load_table("sales.t").metadata_location == sales_before
    assert not arena.served.backing.table_exists("sales.p")
    arena.assert_untouched(before)
    # inside its own folder a location property works: the next metadata file is written there
    own = arena.warehouse / "sales" / "t" / "meta2"
    arena.attacker.commit_table("sales.t", [], [SetProperties({"write.metadata.path": str(own)})])
    assert Path(arena.served.backing.load_table("sales.t").metadata_location or "").parent == own


# 2 ------------------------------------------------------------------------------------------------
def test_rest_security_register_checks_what_the_metadata_file_says(arena: Arena) -> None:
    before = arena.snapshot()
    crafted_home = arena.warehouse / "sales" / "crafted"
    cases = [  # (what the file says, the rule that refuses it)
        ({"location": str(arena.outside / "t")}, "allowed locations"),
        ({"location": str(crafted_home), "metadata-log": [{"metadata-file": str(arena.outside / "bait.txt"),
                                                           "timestamp-ms": 1}]}, "allowed locations"),
        ({"location": str(arena.warehouse / "sales" / "elsewhere")}, "metadata inside the table"),
        ({"location": str(crafted_home), "properties": {"write.metadata.path": str(arena.outside)}}, "allowed locations"),
    ]
    for changes, rule in cases:
        path = _crafted(arena, crafted_home / "metadata", **changes)
        resp = arena.post("/namespaces/sales/register", {"name": "crafted", "metadata-location": str(path)})
        assert f"Location policy ({rule})" in assert_error(resp, 403, "ForbiddenException")
        assert not arena.served.backing.table_exists("sales.crafted")
    # A metadata-log naming the victim's metadata file, and delete-after-commit keeping one version: the
    # commit may delete old metadata files only inside the table's own metadata folder.
    path = _crafted(
        arena, crafted_home / "metadata", location=str(crafted_home),
        **{"metadata-log": [{"metadata-file": arena.victim_metadata(), "timestamp-ms": 1}]},
    )
    body = {"name": "crafted", "metadata-location": str(path)}
    assert arena.post("/namespaces/sales/register", body).status_code == 200
    arena.attacker.commit_table("sales.crafted", [], [SetProperties({
        "write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "1"})])
    arena.attacker.commit_table("sales.crafted", [], [SetProperties({"x": "y"})])
    assert Path(arena.victim_metadata()).exists()
    # The registered file rewritten afterwards (shared storage): the next commit and a purge check it again.
    current = Path(arena.served.backing.load_table("sales.crafted").metadata_location or "")
    rewritten = json.loads(current.read_text())
    rewritten["location"] = str(arena.victim)
    current.write_text(json.dumps(rewritten))
    crafted_files = file_digests(crafted_home)
    resp = arena.post("/namespaces/sales/tables/crafted", _set_properties({"z": "1"}))
    assert "Location policy (no overlapping tables)" in assert_error(resp, 403, "ForbiddenException")
    resp = request(arena.served, "DELETE", prefix(arena.served) + "/namespaces/sales/tables/crafted?purgeRequested=true",
                   token=ATTACKER)
    assert "Location policy (no overlapping tables)" in assert_error(resp, 403, "ForbiddenException")
    assert file_digests(crafted_home) == crafted_files
    arena.assert_untouched(before)


# 3 ------------------------------------------------------------------------------------------------
def test_rest_security_register_on_another_tables_metadata_is_403(arena: Arena) -> None:
    before = arena.snapshot()
    body = {"name": "copy", "metadata-location": arena.victim_metadata()}
    message = assert_error(arena.post("/namespaces/sales/register", body), 403, "ForbiddenException")
    assert "may not write in namespace reports" in message and "authorization by what is touched" in message
    # refused outright, whatever the grants: the table would share the victim's folder
    message = assert_error(arena.post("/namespaces/sales/register", body, token=ADMIN), 403, "ForbiddenException")
    assert "Location policy (no overlapping tables)" in message and "reports.secret" in message
    # a copy of the victim's metadata in the attacker's own folder still says the victim's location
    copy = arena.warehouse / "sales" / "copy" / "metadata" / "00001-copy.metadata.json"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(Path(arena.victim_metadata()).read_bytes())
    message = assert_error(arena.post("/namespaces/sales/register", {"name": "copy", "metadata-location": str(copy)}),
                           403, "ForbiddenException")
    assert "Location policy (metadata inside the table)" in message
    with pytest.raises(ForbiddenError):  # Floe's client gets the same answer
        arena.attacker.register_table("sales.copy", arena.victim_metadata())
    assert not arena.served.backing.table_exists("sales.copy")
    copy.unlink()
    arena.assert_untouched(before)


# 4 ------------------------------------------------------------------------------------------------
def test_rest_security_table_in_another_tables_folder_is_403_and_purge_stays_home(arena: Arena) -> None:
    before = arena.snapshot()
    for location in (arena.victim / "sub", arena.victim, arena.warehouse / "reports"):
        body = {"name": "f", "schema": SCHEMA, "location": str(location)}
        message = assert_error(arena.post("/namespaces/sales/tables", body), 403, "ForbiddenException")
        assert "Location policy (no overlapping tables)" in message and "reports.secret" in message
    resp = arena.post("/namespaces/sales/tables/t", {"requirements": [], "updates": [
        {"action": "set-location", "location": str(arena.victim)}]})
    assert "Location policy (no overlapping tables)" in assert_error(resp, 403, "ForbiddenException")
    # no table there yet, but the folder is the reports namespace's: writing there needs write on reports
    body = {"name": "f", "schema": SCHEMA, "location": str(arena.warehouse / "reports" / "new")}
    message = assert_error(arena.post("/namespaces/sales/tables", body), 403, "ForbiddenException")
    assert "may not write in namespace reports" in message
    assert arena.post("/namespaces/sales/tables", body, token=ADMIN).status_code == 200
    arena.admin.drop_table("sales.f", purge=True)
    # The victim's data files appended to a table of the attacker, which is then purged: the purge deletes
    # only files inside the purged table's own folder.
    victim_files = [p for p in arena.snapshot()["victim"] if p.endswith(".parquet")]
    assert victim_files
    f = arena.attacker.create_table("sales.f", IDS)
    append = f.new_fast_append()
    for path in victim_files:
        append.append_file(fake_data_file(path))
    append.commit()
    assert arena.attacker.load_table("sales.f").scan().to_arrow().num_rows == 3  # references to the victim's files
    arena.attacker.drop_table("sales.f", purge=True)
    assert not arena.served.backing.table_exists("sales.f")
    arena.assert_untouched(before)


# 5 ------------------------------------------------------------------------------------------------
def test_rest_security_symlinks_in_the_warehouse_are_resolved(arena: Arena) -> None:
    link = arena.warehouse / "sales" / "link"
    os.symlink(arena.outside, link)
    alias = arena.warehouse / "sales" / "alias"
    os.symlink(arena.victim, alias)
    before = arena.snapshot()
    body = {"name": "l", "schema": SCHEMA, "location": str(link / "t")}
    message = assert_error(arena.post("/namespaces/sales/tables", body), 403, "ForbiddenException")
    assert "Location policy (allowed locations)" in message and f"resolved: {arena.outside / 't'}" in message
    body = {"name": "l", "schema": SCHEMA, "location": str(alias)}
    assert "no overlapping tables" in assert_error(arena.post("/namespaces/sales/tables", body), 403, "ForbiddenException")
    resp = arena.post("/namespaces/sales/tables/t", _set_properties({"write.metadata.path": str(link / "m")}))
    assert "Location policy (allowed locations)" in assert_error(resp, 403, "ForbiddenException")
    # A purge follows no symlink out of the table: a data file recorded under a linked folder of the table
    # is the file outside, and stays.
    p = arena.attacker.create_table("sales.p", IDS)
    os.symlink(arena.outside, arena.warehouse / "sales" / "p" / "evil")
    p.new_fast_append().append_file(fake_data_file(str(arena.warehouse / "sales" / "p" / "evil" / "bait.txt"))).commit()
    before["outside"] = file_digests(arena.root, skip=(arena.warehouse,))
    arena.attacker.drop_table("sales.p", purge=True)
    assert (arena.outside / "bait.txt").read_text() == "must survive"
    arena.assert_untouched(before)
