"""Interoperability with PyIceberg 0.12's SqlCatalog on the same SQLite catalog, in both directions."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _helpers import row_count, write_data_file

import floe
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.fixture
def uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/catalog.db"


def test_pyiceberg_reads_floe_tables_identically(uri: str, tmp_path: Path, schema: Schema) -> None:
    cat = floe.load_catalog("shared", type="sql", uri=uri, warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db", {"owner": "floe"})
    plain = cat.create_table("db.plain", schema)
    spec = PartitionSpecBuilder(schema).identity("p").build()
    parted = cat.create_table("db.parted", schema, partition_spec=spec)
    for i in range(3):
        plain.append([write_data_file(plain, [{"id": i, "data": f"r{i}", "p": i % 2}])])
        parted.append([write_data_file(parted, [{"id": i, "data": f"r{i}", "p": i % 2}], partition=(i % 2,))])
    parted.new_overwrite().overwrite_by_filter("p = 0").add_file(
        write_data_file(parted, [{"id": 99, "data": "new", "p": 0}], partition=(0,))
    ).commit()
    with plain.update_schema() as u:
        u.add_column("extra", floe.types.LongType())

    py = pyiceberg_sql.SqlCatalog("shared", uri=uri, warehouse=f"file://{tmp_path}/wh")
    assert ("db",) in py.list_namespaces()
    assert sorted(py.list_tables("db")) == [("db", "parted"), ("db", "plain")]
    for name in ("db.plain", "db.parted"):
        ours = cat.load_table(name)
        theirs = py.load_table(name)
        assert theirs.metadata_location == ours.metadata_location
        assert theirs.current_snapshot().snapshot_id == ours.current_snapshot().snapshot_id
        assert _rows(theirs.scan().to_arrow()) == _rows(ours.scan().to_arrow())
    assert _rows(py.load_table("db.parted").scan().to_arrow()) == [(1, "r1", 1), (99, "new", 0)]


def test_floe_opens_and_appends_to_pyiceberg_tables(uri: str, tmp_path: Path) -> None:
    py = pyiceberg_sql.SqlCatalog("shared", uri=uri, warehouse=f"file://{tmp_path}/wh")
    py.create_namespace("ns")
    arrow = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})
    theirs = py.create_table("ns.t", arrow.schema)
    theirs.append(arrow)
    theirs.append(pa.table({"id": pa.array([4], pa.int64()), "name": pa.array(["d"])}))

    cat = floe.load_catalog("shared", type="sql", uri=uri, warehouse=str(tmp_path / "wh"))
    assert cat.list_tables("ns") == [("ns", "t")]
    ours = cat.load_table("ns.t")
    assert ours.metadata_location == py.load_table("ns.t").metadata_location
    assert _rows(ours.scan().to_arrow()) == _rows(py.load_table("ns.t").scan().to_arrow())
    assert len(ours.snapshots()) == 2

    ours.append([write_data_file(ours, [{"id": 5, "name": "e"}])])
    with ours.update_schema() as u:
        u.add_column("score", floe.types.DoubleType())
    again = py.load_table("ns.t")
    assert again.metadata_location == ours.metadata_location
    assert _rows(again.scan().to_arrow()) == _rows(ours.scan().to_arrow())
    assert len(again.scan().to_arrow()) == row_count(ours) == 5
    assert again.schema().find_field("score").field_id == 3
