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
    assert all_m.num_rows >= m.num_rows and "reference_snapshot_id" in all_m.column_names


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
