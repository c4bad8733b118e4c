"""Hadoop catalog specifics: v<N> files, version hint recovery, exclusive version creation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _helpers import fake_data_file, live_files

import floe
from floe.catalog.hadoop import HadoopTableOperations
from floe.errors import CommitFailedError, ValidationError
from floe.spec.schema import Schema


def _table(tmp_path: Path, schema: Schema):
    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat, cat.create_table("db.t", schema)


def test_commits_write_consecutive_versions_and_hint(tmp_path: Path, schema: Schema) -> None:
    _, t = _table(tmp_path, schema)
    for i in range(3):
        t.append([fake_data_file(f"/d/{i}.parquet")])
    meta = Path(t.location()) / "metadata"
    versions = sorted(f for f in os.listdir(meta) if f.endswith(".metadata.json"))
    assert versions == ["v1.metadata.json", "v2.metadata.json", "v3.metadata.json", "v4.metadata.json"]
    assert (meta / "version-hint.text").read_text() == "4"
    assert t.metadata.metadata_log[-1].metadata_file.endswith("v3.metadata.json")


@pytest.mark.parametrize("hint", [None, "", "garbage", "2"])
def test_missing_corrupt_or_stale_hint_still_finds_latest(
    tmp_path: Path, schema: Schema, hint: str | None
) -> None:
    cat, t = _table(tmp_path, schema)
    for i in range(3):
        t.append([fake_data_file(f"/d/{i}.parquet")])
    hint_file = Path(t.location()) / "metadata" / "version-hint.text"
    if hint is None:
        hint_file.unlink()
    else:
        hint_file.write_text(hint)
    loaded = cat.load_table("db.t")
    assert loaded.metadata_location.endswith("v4.metadata.json")
    assert live_files(loaded) == {"/d/0.parquet", "/d/1.parquet", "/d/2.parquet"}
    loaded.append([fake_data_file("/d/3.parquet")])  # commits on top of the true latest version
    assert cat.load_table("db.t").metadata_location.endswith("v5.metadata.json")


def test_commit_from_stale_version_fails_without_overwriting(tmp_path: Path, schema: Schema) -> None:
    cat, t = _table(tmp_path, schema)
    ops = HadoopTableOperations(t.identifier, t.io, t.location())
    base, base_location = ops.load()
    t.append([fake_data_file("/d/a.parquet")])
    with pytest.raises(CommitFailedError, match="changed concurrently"):
        ops.commit(base, base_location, base)
    assert live_files(cat.load_table("db.t")) == {"/d/a.parquet"}


def test_custom_location_is_rejected(tmp_path: Path, schema: Schema) -> None:
    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match="custom location"):
        cat.create_table("db.t", schema, location=str(tmp_path / "elsewhere"))


def test_namespaces_are_folders_and_tables_are_not_namespaces(tmp_path: Path, schema: Schema) -> None:
    cat, _ = _table(tmp_path, schema)
    assert (tmp_path / "wh" / "db").is_dir()
    assert cat.list_namespaces() == [("db",)]
    assert cat.list_namespaces("db") == []
    assert not cat.namespace_exists("db.t")


def test_drop_table_removes_its_folder_so_the_namespace_drops(tmp_path: Path, schema: Schema) -> None:
    """As Java's HadoopCatalog: DROP TABLE (no purge) deletes the table's folder, data included, so a
    namespace whose tables were all dropped can be dropped; files the metadata keeps elsewhere stay."""
    from _helpers import write_data_file

    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    cat.drop_table("db.t")
    assert not (tmp_path / "wh" / "db" / "t").exists()
    cat.drop_namespace("db")
    assert not cat.namespace_exists("db")


def test_register_into_hadoop_from_elsewhere_reads_as_java_registers_it(tmp_path: Path, schema: Schema, jsql) -> None:
    """Metadata of a table outside the Hadoop warehouse registers as Java's HadoopCatalog registers it (copied
    as version 1 of the table's folder); Iceberg Java reads the registered table, and Floe reads the one Java
    registers from the same metadata."""
    from _helpers import write_data_file

    source = floe.load_catalog("src", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "elsewhere"))
    source.create_namespace("db")
    table = source.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}, {"id": 2, "data": "b", "p": 2}])])
    hadoop = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    hadoop.create_namespace("db")
    hadoop.register_table("db.floe_r", str(table.metadata_location))
    results = jsql.run([
        "SELECT id, data FROM h.db.floe_r ORDER BY id",
        f"CALL h.system.register_table(table => 'db.java_r', metadata_file => '{table.metadata_location}')",
    ], jsql.hadoop_catalog("h", tmp_path / "wh"))
    assert results[0]["rows"] == [[1, "a"], [2, "b"]]
    java_registered = hadoop.load_table("db.java_r")
    assert sorted(r["id"] for r in java_registered.scan().to_arrow().to_pylist()) == [1, 2]
    def names(table: str) -> list[str]:  # checksums and Floe's commit lock aside
        return sorted(n for n in os.listdir(tmp_path / "wh" / "db" / table / "metadata") if not n.startswith("."))

    assert names("java_r") == names("floe_r") == ["v1.metadata.json", "version-hint.text"]
