"""PyIceberg's RestCatalog against ``floe serve``, and Floe's REST client on the same tables."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _helpers import write_data_file
from _rest import served_catalog

from floe.errors import CommitFailedError

rest = pytest.importorskip("pyiceberg.catalog.rest")
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "dt": ["a", "a", "b"]})


def _py_schema() -> PySchema:
    return PySchema(NestedField(1, "id", LongType(), required=False), NestedField(2, "dt", StringType(), required=False))


def test_rest_pyiceberg_creates_appends_reads_and_floe_reads_it(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        py = rest.RestCatalog("py", uri=served.uri)
        py.create_namespace("db", {"owner": "py"})
        with pytest.raises(NamespaceAlreadyExistsError):
            py.create_namespace("db")
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="dt"))
        table = py.create_table("db.events", schema=_py_schema(), partition_spec=spec)
        with pytest.raises(TableAlreadyExistsError):
            py.create_table("db.events", schema=_py_schema())
        table.append(ROWS)
        table.append(ROWS.slice(0, 1))
        assert py.load_table("db.events").scan().to_arrow().num_rows == 4
        assert py.list_tables("db") == [("db", "events")]
        assert py.load_namespace_properties("db")["owner"] == "py"
        # Floe reads what PyIceberg committed through the server, by REST and directly from the backing catalog
        floe_table = served.client().load_table("db.events")
        assert floe_table.scan().to_arrow().num_rows == 4
        assert len(floe_table.snapshots()) == 2
        assert floe_table.spec().fields[0].name == "dt"
        assert served.backing.load_table("db.events").metadata_location == floe_table.metadata_location
        with pytest.raises(NoSuchTableError):
            py.load_table("db.nope")


def test_rest_pyiceberg_reads_floe_writes_and_evolves_schema(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client()
        cat.create_namespace("db")
        table = cat.create_table("db.t", ROWS.schema)
        table.append(ROWS)
        table.update_schema().add_column("note", __import__("floe").types.StringType()).commit()
        table.append(pa.table({"id": pa.array([9], pa.int64()), "dt": ["c"], "note": ["n"]}))
        py = rest.RestCatalog("py", uri=served.uri)
        got = py.load_table("db.t").scan().to_arrow().sort_by("id")
        assert got.column("id").to_pylist() == [1, 2, 3, 9]
        assert got.column("note").to_pylist() == [None, None, None, "n"]
        # PyIceberg's schema change goes as requirements + updates; Floe sees it
        py_table = py.load_table("db.t")
        with py_table.update_schema() as update:
            update.add_column("extra", LongType())
        assert cat.load_table("db.t").schema().column_names == ["id", "dt", "note", "extra"]
        # a stale PyIceberg handle gets 409 (assert-ref-snapshot-id), refreshes and retries: both rows stay
        stale = py.load_table("db.t")
        def row(i: int) -> pa.Table:
            return pa.table({
                "id": pa.array([i], pa.int64()), "dt": ["d"], "note": pa.array([None], pa.string()),
                "extra": pa.array([i], pa.int64()),
            })

        table.refresh().append(row(10))
        stale.append(row(11))
        ids = cat.load_table("db.t").scan().to_arrow().column("id").to_pylist()
        assert sorted(ids) == [1, 2, 3, 9, 10, 11]


def test_rest_pyiceberg_create_transaction_stages_then_commits(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        py = rest.RestCatalog("py", uri=served.uri)
        py.create_namespace("db")
        txn = py.create_table_transaction("db.staged", schema=_py_schema())
        txn.append(ROWS)
        assert not served.backing.table_exists("db.staged")
        txn.commit_transaction()
        assert served.client().load_table("db.staged").scan().to_arrow().num_rows == 3


def test_rest_floe_create_transaction_and_stale_commit_conflict(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        cat = served.client()
        cat.create_namespace("db")
        txn = cat.create_table_transaction("db.ctas", ROWS.schema)
        staged = write_data_file(txn.table, ROWS.to_pylist())  # under the location the server chose
        txn.new_append().append_file(staged).commit()
        assert not cat.table_exists("db.ctas")
        created = txn.commit_transaction()
        assert cat.table_exists("db.ctas")
        assert created.metadata_location is not None
        # requirements are checked by the server: a commit planned on an old base gets 409
        from floe.spec.updates import AssertRefSnapshotId, SetProperties

        cat.load_table("db.ctas").append(ROWS)
        with pytest.raises(CommitFailedError):
            cat.commit_table("db.ctas", [AssertRefSnapshotId("main", None)], [SetProperties({"k": "v"})])
        assert "k" not in cat.load_table("db.ctas").properties
        py = rest.RestCatalog("py", uri=served.uri)
        assert py.load_table("db.ctas").scan().to_arrow().num_rows == 6
