"""Metadata tables as Arrow (floe.scan.metadata_tables) on Java-written fixture tables: names, types, counts."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from floe.errors import ValidationError
from floe.io.fileio import FileIO
from floe.io.table_folder import open_table_folder
from floe.scan.metadata_tables import METADATA_TABLES, metadata_table
from floe.scan.table_scan import LocatedTable


def _table(java_tables: Path, name: str) -> LocatedTable:
    ft = open_table_folder(java_tables / name)
    return LocatedTable(ft.metadata, FileIO(), lambda p: str(ft.local_path(p)), name, str(ft.metadata_file))


def test_metadata_tables_every_table_builds_on_a_deletes_fixture(java_tables: Path) -> None:
    t = _table(java_tables, "duckdb__equality_deletes_mytable_partitioned")
    for name in METADATA_TABLES:
        assert isinstance(metadata_table(t, name), pa.Table), name


def test_metadata_tables_files_split_into_data_and_delete_files(java_tables: Path) -> None:
    t = _table(java_tables, "duckdb__equality_deletes_mytable_partitioned")
    files, data, deletes = (metadata_table(t, n) for n in ("files", "data_files", "delete_files"))
    assert files.num_rows == data.num_rows + deletes.num_rows
    assert set(data.column("content").to_pylist()) == {0}
    assert set(deletes.column("content").to_pylist()) == {2}
    assert files.schema.field("record_count").type == pa.int64()
    assert files.schema.field("lower_bounds").type == pa.map_(pa.int32(), pa.binary())


def test_metadata_tables_snapshots_and_history_follow_metadata(java_tables: Path) -> None:
    t = _table(java_tables, "duckdb__equality_deletes_mytable_partitioned")
    snaps = metadata_table(t, "snapshots")
    assert snaps.column_names == ["committed_at", "snapshot_id", "parent_id", "operation", "manifest_list", "summary"]
    assert snaps.num_rows == len(t.metadata.snapshots)
    assert snaps.schema.field("committed_at").type == pa.timestamp("us", tz="UTC")
    history = metadata_table(t, "history")
    assert history.column("is_current_ancestor").to_pylist()[-1] is True


def test_metadata_tables_partitions_count_records_per_partition(java_tables: Path) -> None:
    t = _table(java_tables, "dremio__v2_orders")
    parts = metadata_table(t, "partitions")
    data = metadata_table(t, "data_files")
    assert sum(parts.column("record_count").to_pylist()) == sum(data.column("record_count").to_pylist())
    assert sum(parts.column("file_count").to_pylist()) == data.num_rows


def test_metadata_tables_manifests_count_added_files(java_tables: Path) -> None:
    t = _table(java_tables, "glaredb__v2_lineitem_versioned")
    m = metadata_table(t, "manifests")
    assert "partition_summaries" in m.column_names
    all_m = metadata_table(t, "all_manifests")
    assert all_m.num_rows >= m.num_rows
    assert "reference_snapshot_id" in all_m.column_names


def test_metadata_table_unknown_name_raises() -> None:
    with pytest.raises(ValidationError, match="nope"):
        metadata_table(None, "nope")  # type: ignore[arg-type]


def test_inspect_has_every_metadata_table_as_arrow_without_spark(tmp_path: Path) -> None:
    import sys

    import pyarrow as pa

    import floe
    from floe.scan.metadata_tables import METADATA_TABLES, metadata_table

    cat = floe.load_catalog("insp", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.x", schema=pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2]}))
    t = t.refresh()
    for name in METADATA_TABLES:
        got = getattr(t.inspect, name)()
        assert got.equals(metadata_table(t, name)), name
    assert t.inspect.snapshots().num_rows == 1
    assert "pyspark" not in sys.modules or "floe.spark" in sys.modules  # inspect itself never loads Spark


# -- all_ tables, position_deletes, summaries (Iceberg Java 1.10 behaviour) ----------------------------------
def _two_appends_and_rewrite(tmp_path: Path) -> object:
    import floe
    from floe.maintenance import rewrite_manifests

    cat = floe.load_catalog("all", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.x", schema=pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2]}))
    t = t.refresh()
    t.append(pa.table({"id": [3]}))
    t = t.refresh()
    rewrite_manifests(t)
    return t.refresh()


def test_all_data_files_one_row_per_live_entry_of_each_distinct_manifest(tmp_path: Path) -> None:
    t = _two_appends_and_rewrite(tmp_path)
    # manifests: a (file 1), b (file 2) and the rewritten one holding both: 4 rows, as Java lists them
    assert metadata_table(t, "all_data_files").num_rows == 4  # type: ignore[arg-type]


def test_all_files_equals_all_data_files_without_deletes(tmp_path: Path) -> None:
    t = _two_appends_and_rewrite(tmp_path)
    assert metadata_table(t, "all_files").num_rows == 4  # type: ignore[arg-type]


def test_all_delete_files_empty_without_deletes(tmp_path: Path) -> None:
    t = _two_appends_and_rewrite(tmp_path)
    assert metadata_table(t, "all_delete_files").num_rows == 0  # type: ignore[arg-type]


def test_all_entries_lists_every_entry_of_every_distinct_manifest(tmp_path: Path) -> None:
    t = _two_appends_and_rewrite(tmp_path)
    got = metadata_table(t, "all_entries")  # type: ignore[arg-type]
    assert sorted(got.column("status").to_pylist()) == [0, 0, 1, 1]  # rewritten entries are EXISTING (0)


def test_all_tables_refuse_a_snapshot(tmp_path: Path) -> None:
    from floe.errors import UnsupportedError

    t = _two_appends_and_rewrite(tmp_path)
    with pytest.raises(UnsupportedError, match="all_files"):
        metadata_table(t, "all_files", snapshot_id=t.metadata.current_snapshot_id)  # type: ignore[arg-type,attr-defined]


def test_manifests_length_is_the_manifest_file_size(tmp_path: Path) -> None:
    import os

    t = _two_appends_and_rewrite(tmp_path)
    m = metadata_table(t, "manifests")  # type: ignore[arg-type]
    path, length = m.column("path")[0].as_py(), m.column("length")[0].as_py()
    assert os.path.getsize(path.removeprefix("file:")) == length


def test_append_summary_has_no_manifest_counts(tmp_path: Path) -> None:
    t = _two_appends_and_rewrite(tmp_path)
    append = t.metadata.snapshots[1].summary  # type: ignore[attr-defined]
    assert "manifests-created" not in append


def test_rewrite_manifests_summary_has_manifest_counts(tmp_path: Path) -> None:
    t = _two_appends_and_rewrite(tmp_path)
    assert t.current_snapshot().summary["manifests-replaced"] == "2"  # type: ignore[attr-defined]


def test_position_deletes_columns_of_a_v2_table(java_tables: Path) -> None:
    t = _table(java_tables, "impala__iceberg_v2_delete_positional")
    got = metadata_table(t, "position_deletes")
    assert got.column_names[:3] == ["file_path", "pos", "row"]
    assert got.column_names[-2:] == ["spec_id", "delete_file_path"]


def test_position_deletes_one_row_per_deleted_position(java_tables: Path) -> None:
    t = _table(java_tables, "impala__iceberg_v2_delete_positional")
    deletes = metadata_table(t, "delete_files")
    assert metadata_table(t, "position_deletes").num_rows == sum(deletes.column("record_count").to_pylist())


def test_position_deletes_reads_deletion_vectors(java_tables: Path) -> None:
    t = _table(java_tables, "impala__iceberg_v3_deletion_vectors")
    got = metadata_table(t, "position_deletes")
    deletes = metadata_table(t, "delete_files")
    assert got.num_rows == sum(deletes.column("record_count").to_pylist()) > 0


def test_position_deletes_v3_has_content_offset_and_size(java_tables: Path) -> None:
    t = _table(java_tables, "impala__iceberg_v3_deletion_vectors")
    got = metadata_table(t, "position_deletes")
    assert got.column_names[-2:] == ["content_offset", "content_size_in_bytes"]
    assert None not in got.column("content_offset").to_pylist()
