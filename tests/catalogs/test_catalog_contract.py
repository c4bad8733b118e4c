"""The catalog contract, identical for Hadoop, SQLite, PostgreSQL, MariaDB and REST catalogs.

REST is Floe's client against ``floe serve`` over SQLite, started in a thread for each test.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from _helpers import catalog_props, missing_references, open_catalog, row_count, write_data_file

import floe
from floe.catalog.base import Catalog
from floe.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema


@pytest.fixture(params=["hadoop", "sqlite", "postgres", "mysql", "rest"])
def props(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_props(request.param, tmp_path, request)


def test_namespace_lifecycle_create_list_drop_roundtrips(props: dict[str, str]) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    cat.create_namespace(("db", "inner"))
    assert ("db",) in cat.list_namespaces()
    assert cat.list_namespaces("db") == [("db", "inner")]
    assert cat.namespace_exists("db")
    assert not cat.namespace_exists("nope")
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("db")
    cat.create_namespace_if_not_exists("db")
    cat.drop_namespace("db.inner")
    assert cat.list_namespaces("db") == []
    with pytest.raises(NoSuchNamespaceError):
        cat.drop_namespace("nope")
    with pytest.raises(NoSuchNamespaceError):
        cat.list_tables("nope")


def test_namespace_properties_sql_catalog_stores_and_updates(props: dict[str, str]) -> None:
    cat = open_catalog(props)
    if props["type"] == "hadoop":
        cat.create_namespace("db")
        assert "location" in cat.load_namespace_properties("db")
        with pytest.raises(UnsupportedError):
            cat.update_namespace_properties("db", updates={"a": "b"})
        return
    cat.create_namespace("db", {"owner": "me", "k": "v"})
    # as Java's JdbcCatalog.loadNamespaceMetadata: no internal 'exists' marker, the default 'location'
    location = cat.load_namespace_properties("db").pop("location")
    assert location.rstrip("/").endswith("/db")
    assert cat.load_namespace_properties("db") == {"owner": "me", "k": "v", "location": location}
    summary = cat.update_namespace_properties(
        "db", removals=["k", "missing", "exists"], updates={"owner": "you", "n": "1"}
    )
    assert summary.removed == ["k"]
    assert sorted(summary.missing or []) == ["exists", "missing"]
    assert cat.load_namespace_properties("db") == {"owner": "you", "n": "1", "location": location}
    cat.update_namespace_properties("db", removals=["owner", "n"])  # the namespace outlives its properties
    assert cat.namespace_exists("db")
    assert cat.load_namespace_properties("db") == {"location": location}
    with pytest.raises(ValidationError, match="reserved"):
        cat.update_namespace_properties("db", updates={"exists": "false"})


def test_table_lifecycle_create_load_list_drop(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema, properties={"owner": "x"})
    assert table.metadata.format_version == 2
    assert table.properties["owner"] == "x"
    assert cat.table_exists("db.t")
    assert not cat.table_exists("db.other")
    assert cat.list_tables("db") == [("db", "t")]
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", schema)
    assert cat.create_table_if_not_exists("db.t", schema).metadata_location == table.metadata_location
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_table("nope.t", schema)
    loaded = cat.load_table(("db", "t"))
    assert loaded.schema().column_names == ["id", "data", "p"]
    cat.drop_table("db.t")
    assert not cat.table_exists("db.t")
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.t")
    with pytest.raises(NoSuchTableError):
        cat.drop_table("db.t")


def test_create_table_pyarrow_schema_assigns_field_ids(props: dict[str, str]) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    arrow = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.list_(pa.string()))])
    table = cat.create_table("db.arrow", arrow)
    s = table.schema()
    assert [f.name for f in s.fields] == ["a", "b"]
    assert s.find_field("a").required
    assert s.highest_field_id == 3


def test_append_and_load_reads_rows_and_history(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    for i in range(3):
        table.append(
            [write_data_file(table, [{"id": i, "data": "x", "p": 1}, {"id": i + 10, "data": None, "p": 2}])]
        )
    loaded = cat.load_table("db.t")
    assert len(loaded.snapshots()) == 3
    assert len(loaded.history()) == 3
    assert loaded.current_snapshot() is not None
    assert loaded.current_snapshot().summary["total-records"] == "6"
    assert row_count(loaded) == 6
    assert missing_references(loaded) == []


def test_drop_table_purge_deletes_files(props: dict[str, str], schema: Schema, tmp_path) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    f = write_data_file(table, [{"id": 1, "data": "a", "p": 1}])
    outside = tmp_path / "outside" / "x.parquet"  # purge follows references, not the table folder
    outside.parent.mkdir()
    outside.write_bytes(Path(f.file_path).read_bytes())
    table.append([f, f.with_changes(file_path=str(outside))])
    manifest_list = table.current_snapshot().manifest_list
    cat.drop_table("db.t", purge=True)
    # floe serve deletes only inside the table's folder: a remote client's metadata may name any file
    assert not table.io.exists(f.file_path)
    assert outside.exists() == (props["type"] == "rest")
    assert not table.io.exists(manifest_list)
    assert not table.io.exists(table.metadata_location)


def test_purge_is_refused_while_gc_is_disabled(props: dict[str, str], schema: Schema) -> None:
    # as Iceberg on Spark: files of a gc.enabled=false table may be shared, so a purge must not delete them
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema, properties={"gc.enabled": "false"})
    f = write_data_file(table, [{"id": 1, "data": "a", "p": 1}])
    table.append([f])
    with pytest.raises(ValidationError, match="gc.enabled is false"):
        cat.drop_table("db.t", purge=True)
    assert cat.table_exists("db.t")
    assert table.io.exists(f.file_path)


def test_rename_table_moves_entry_or_is_unsupported(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    cat.create_namespace("db2")
    cat.create_table("db.t", schema)
    if props["type"] == "hadoop":
        with pytest.raises(UnsupportedError):
            cat.rename_table("db.t", "db2.t")
        return
    renamed = cat.rename_table("db.t", "db2.u")
    assert renamed.identifier == ("db2", "u")
    assert cat.list_tables("db") == []
    assert cat.list_tables("db2") == [("db2", "u")]
    with pytest.raises(NoSuchTableError):
        cat.rename_table("db.t", "db2.v")


def test_register_table_existing_metadata_loads_same_state(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    location = table.metadata_location
    if props["type"] == "hadoop":  # as Java's: the metadata becomes version 1 of the table's own folder
        other = cat.register_table("db.other", location)
        assert other.metadata_location != location and "/db/other/metadata/" in str(other.metadata_location)
        assert other.location() == table.location() and row_count(cat.load_table("db.other")) == 1
        with pytest.raises(TableAlreadyExistsError):
            cat.register_table("db.other", location)
        return
    cat.drop_table("db.t")
    registered = cat.register_table("db.r", location)
    assert registered.metadata_location == location
    assert row_count(cat.load_table("db.r")) == 1
    with pytest.raises(TableAlreadyExistsError):
        cat.register_table("db.r", location)


def test_create_or_replace_table_keeps_history_and_reuses_ids(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    old_snapshot = table.current_snapshot().snapshot_id
    from floe.spec.types import LongType, NestedField, StringType

    new_schema = Schema(NestedField(10, "data", StringType()), NestedField(11, "extra", LongType()))
    replaced = cat.create_or_replace_table("db.t", new_schema)
    assert replaced.current_snapshot() is None
    assert replaced.metadata.snapshot_by_id(old_snapshot) is not None
    assert replaced.schema().find_field("data").field_id == 2  # reused by name
    assert replaced.schema().find_field("extra").field_id == 4  # after last-column-id
    assert replaced.metadata.table_uuid == table.metadata.table_uuid
    created = cat.create_or_replace_table("db.fresh", schema)
    assert created.schema().column_names == ["id", "data", "p"]


def test_create_table_transaction_stages_data_until_commit(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    spec = PartitionSpecBuilder(schema).identity("p").build()
    txn = cat.create_table_transaction("db.t", schema, partition_spec=spec)
    assert not cat.table_exists("db.t")
    staged = txn.table
    f = write_data_file(staged, [{"id": 1, "data": "a", "p": 7}], partition=(7,))
    txn.new_append().append_file(f).commit()
    table = txn.commit_transaction()
    assert cat.table_exists("db.t")
    assert table.spec().fields[0].name == "p"
    assert row_count(cat.load_table("db.t")) == 1


def test_load_table_by_location_opens_hadoop_and_catalog_tables(
    props: dict[str, str], schema: Schema
) -> None:
    cat = open_catalog(props)
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    by_path = floe.load_table(table.location())
    assert by_path.metadata_location == table.metadata_location
    assert row_count(by_path) == 1
    by_file = floe.load_table(table.metadata_location)
    assert by_file.current_snapshot().snapshot_id == table.current_snapshot().snapshot_id
    if props["type"] == "hadoop":
        by_path.append([write_data_file(by_path, [{"id": 2, "data": "b", "p": 1}])])
        assert row_count(cat.load_table("db.t")) == 2
    else:
        with pytest.raises(UnsupportedError):
            by_path.append([write_data_file(by_path, [{"id": 2, "data": "b", "p": 1}])])


def test_load_table_by_location_missing_raises_no_such_table(tmp_path) -> None:
    with pytest.raises(NoSuchTableError):
        floe.load_table(str(tmp_path / "nothing"))


def test_catalog_listings_every_namespace_location_and_metadata_file(props: dict[str, str], schema: Schema) -> None:
    cat = open_catalog(props)
    cat.create_namespace("a")
    cat.create_namespace(("a", "b"))
    cat.create_namespace("c")
    table = cat.create_table(("a", "b", "t"), schema)
    cat.create_table("c.u", schema)
    assert cat.all_namespaces() == [("a",), ("c",), ("a", "b")]
    # one-query answers (SQL) agree with the walk every catalog inherits
    assert cat.all_namespaces() == Catalog.all_namespaces(cat)
    locations = cat.namespace_locations()
    assert locations == Catalog.namespace_locations(cat)
    assert locations[("a", "b")].rstrip("/").endswith("/a/b")
    assert cat.table_metadata_locations() == Catalog.table_metadata_locations(cat)
    assert cat.table_metadata_locations()[("a", "b", "t")] == table.metadata_location
