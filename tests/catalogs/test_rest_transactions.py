"""Multi-table transactions through ``floe serve`` (``POST /v1/{prefix}/transactions/commit``).

The SQL catalog swaps every table in one database transaction: all tables change or none does.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _rest import served_catalog

import floe
from floe.catalog.rest import RestCatalog
from floe.errors import CommitFailedError, UnsupportedError
from floe.server import background_server

ROWS = pa.table({"id": pa.array([1, 2], pa.int64())})


def test_rest_multi_table_commit_changes_all_tables(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client()
        assert isinstance(cat, RestCatalog)
        assert cat.supports("POST /v1/{prefix}/transactions/commit")
        cat.create_namespace("db")
        a = cat.create_table("db.a", ROWS.schema)
        b = cat.create_table("db.b", ROWS.schema)
        ta, tb = a.transaction(), b.transaction()
        ta.set_properties(step="1")
        tb.set_properties(step="1")
        tb.remove_properties("nothing")
        a2, b2 = cat.commit_transactions([ta, tb])
        assert a2.properties["step"] == "1"
        assert b2.properties["step"] == "1"
        assert served.backing.load_table("db.a").properties["step"] == "1"


def test_rest_multi_table_commit_conflict_changes_no_table(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client()
        cat.create_namespace("db")
        a = cat.create_table("db.a", ROWS.schema)
        b = cat.create_table("db.b", ROWS.schema)
        a.append(ROWS)
        b.append(ROWS)
        ta, tb = a.transaction(), b.transaction()
        ta.set_properties(step="2")
        tb.manage_snapshots().create_tag(b.current_snapshot().snapshot_id, "t1").commit()  # asserts t1 is absent
        cat.load_table("db.b").manage_snapshots().create_tag(b.current_snapshot().snapshot_id, "t1").commit()
        before = {n: served.backing.load_table(n).metadata_location for n in ("db.a", "db.b")}
        with pytest.raises(CommitFailedError, match="t1"):
            cat.commit_transactions([ta, tb])
        after = {n: served.backing.load_table(n).metadata_location for n in ("db.a", "db.b")}
        assert after == before  # db.a's change passed its requirements but was not committed either
        assert "step" not in served.backing.load_table("db.a").properties


def test_rest_multi_table_commit_refused_when_catalog_cannot(tmp_path: Path) -> None:
    hadoop = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    with background_server(hadoop) as server:
        cat = floe.load_catalog("r", type="rest", uri=server.uri)
        assert isinstance(cat, RestCatalog)
        assert not cat.supports("POST /v1/{prefix}/transactions/commit")
        with pytest.raises(UnsupportedError, match="transactions/commit"):
            cat.commit_transaction([])
