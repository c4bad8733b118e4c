"""Row positions from the pyarrow reader (floe.scan.arrow_read.read_task_rows), which row-level operations on
stores Spark cannot read delete by: counted in the file before deletes and filters, for whole files and
row-group ranges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from floe.expressions import builders as B
from floe.io.arrow_schema import schema_to_arrow
from floe.io.fileio import FileIO
from floe.scan.arrow_read import ReadContext, read_task_rows
from floe.scan.tasks import FileScanTask
from floe.spec.manifest import (
    POSITION_DELETE_FILE_PATH_ID,
    POSITION_DELETE_POS_ID,
    DataFile,
    FileContent,
    ManifestEntry,
    ManifestEntryStatus,
)
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType
from floe.write.parquet_files import data_file_from_footer

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
DELETES = Schema(
    NestedField(POSITION_DELETE_FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(POSITION_DELETE_POS_ID, "pos", LongType(), required=True),
)


def _write(path: Path, table: pa.Table, schema: Schema, row_group_size: int) -> DataFile:
    pq.write_table(table.cast(schema_to_arrow(schema)), path, row_group_size=row_group_size)
    return data_file_from_footer(
        pq.read_metadata(path), location=str(path), file_size=path.stat().st_size, schema=schema,
        properties={}, partition=(), spec_id=0,
    )


def _setup(tmp_path: Path) -> tuple[ReadContext, DataFile, ManifestEntry]:
    ids = np.arange(20, dtype=np.int64)
    data = _write(tmp_path / "data.parquet", pa.table({"id": ids, "s": [f"v{i}" for i in ids]}), SCHEMA, 5)
    deleted = pa.table({"file_path": [str(tmp_path / "data.parquet")] * 3, "pos": pa.array([1, 7, 12], pa.int64())})
    delete_file = _write(tmp_path / "deletes.parquet", deleted, DELETES, 10).with_changes(
        content=FileContent.POSITION_DELETES
    )
    entry = ManifestEntry(ManifestEntryStatus.ADDED, 1, 2, 2, delete_file)
    ctx = ReadContext(io=FileIO(), table_schema=SCHEMA, projection=SCHEMA, name_mapping=None, location_of=lambda p: p)
    return ctx, data, entry


def test_whole_file_positions_skip_deleted_rows(tmp_path: Path) -> None:
    ctx, data, entry = _setup(tmp_path)
    rows, positions = read_task_rows(ctx, FileScanTask(data, 1, (entry,)))
    expected = [i for i in range(20) if i not in (1, 7, 12)]
    assert rows.column("id").to_pylist() == expected
    assert positions.tolist() == expected


def test_positions_follow_the_residual_filter(tmp_path: Path) -> None:
    ctx, data, entry = _setup(tmp_path)
    task = FileScanTask(data, 1, (entry,), B.greater_than_or_equal("id", 10))
    rows, positions = read_task_rows(ctx, task)
    assert rows.column("id").to_pylist() == [i for i in range(10, 20) if i != 12]
    assert positions.tolist() == rows.column("id").to_pylist()
    assert rows.column_names == ["id", "s"]


def test_row_group_range_positions_count_from_the_file_start(tmp_path: Path) -> None:
    ctx, data, entry = _setup(tmp_path)
    md = pq.read_metadata(tmp_path / "data.parquet")
    second = md.row_group(1).column(0)
    start = second.dictionary_page_offset if second.has_dictionary_page else second.data_page_offset
    third = md.row_group(2).column(0)
    end = third.dictionary_page_offset if third.has_dictionary_page else third.data_page_offset
    task = FileScanTask(data, 1, (entry,), start=start, length=end - start)
    rows, positions = read_task_rows(ctx, task)
    assert positions.tolist() == [5, 6, 8, 9]  # row group 2 holds rows 5..9; 7 is deleted
    assert rows.column("id").to_pylist() == [5, 6, 8, 9]
