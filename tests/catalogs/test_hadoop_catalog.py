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
