"""Opening a table by location alone (floe.catalog.location): the one resolver for folders and metadata files."""

from __future__ import annotations

import shutil
from pathlib import Path

import floe
from floe.catalog.location import location_operations
from floe.io.table_folder import FolderFileIO
from floe.scan.metadata_tables import metadata_table
from floe.table.operations import ReadOnlyTableOperations
from tests.unit._table_testing import data_file, make_table


def test_location_operations_copied_metastore_folder_maps_recorded_paths(java_tables: Path, tmp_path: Path) -> None:
    # Written at s3://testbucket/...: read here only through the folder's path mapping.
    copy = tmp_path / "t"
    shutil.copytree(java_tables / "icelake__no_hint_table", copy)
    table = floe.load_table(str(copy))
    assert isinstance(table.io, FolderFileIO)
    assert table.metadata.location.startswith("s3://")
    assert len(list(table.scan().plan_files())) == metadata_table(table, "files").num_rows > 0


def test_location_operations_folder_holding_one_table_opens_it(java_tables: Path, tmp_path: Path) -> None:
    shutil.copytree(java_tables / "icelake__no_hint_table", tmp_path / "outer" / "t")
    ops = location_operations(str(tmp_path / "outer"))
    assert isinstance(ops.io, FolderFileIO)


def test_location_operations_metastore_folder_in_place_reads_newest_file_unmapped(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.new_append().append_file(data_file("a")).commit()
    ops = location_operations(t.location())
    assert isinstance(ops, ReadOnlyTableOperations)
    assert not isinstance(ops.io, FolderFileIO)
    metadata, location = ops.load()
    assert location == t.metadata_location
    assert metadata.current_snapshot_id == t.metadata.current_snapshot_id


def test_location_operations_any_json_file_opens_that_version(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    assert t.metadata_location is not None
    other = tmp_path / "copy.json"
    shutil.copy(t.metadata_location, other)
    metadata, location = location_operations(str(other)).load()
    assert location == str(other)
    assert metadata.table_uuid == t.metadata.table_uuid
