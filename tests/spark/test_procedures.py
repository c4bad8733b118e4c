"""Maintenance procedures through SQL CALL (rewrite_data_files, expire_snapshots, remove_orphan_files,
rewrite_manifests) on real tables, with PyIceberg 0.12 reading the results as an independent check."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _sql_helpers import rows, run, table

from floe.errors import ValidationError
from floe.io.locations import to_local_path
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.sql.engine import SqlSession
from floe.table.table import Table


def pyiceberg_rows(t: Table) -> list[tuple[object, ...]]:
    """The table's rows as PyIceberg 0.12 reads them from the current metadata file."""
    static = pytest.importorskip("pyiceberg.table").StaticTable.from_metadata(t.refresh().metadata_location)
    data = static.scan().to_arrow()
    return sorted(zip(*(data.column(i).to_pylist() for i in range(data.num_columns))), key=repr)


def add_position_delete(t: Table, data_path: str, partition: tuple[object, ...], pos: int) -> None:
    """Commit a position delete file removing row ``pos`` of ``data_path`` (merge-on-read)."""
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    local = Path(to_local_path(t.location())) / "data" / "pos-delete.parquet"
    pq.write_table(pa.table({"file_path": [data_path], "pos": [pos]}, schema=schema), local)
    f = DataFile(
        FileContent.POSITION_DELETES, t.location() + "/data/pos-delete.parquet", FileFormat.PARQUET, partition, 1,
        local.stat().st_size, spec_id=t.spec().spec_id, referenced_data_file=data_path,
    )
    t.new_row_delta().add_deletes(f).commit()


def test_rewrite_data_files_compacts_each_partition_and_keeps_rows(session: SqlSession) -> None:
    session.sql("CREATE TABLE comp (id BIGINT, name STRING, dt STRING) USING iceberg PARTITIONED BY (dt)")
    for i in range(4):
        run(session, f"INSERT INTO comp VALUES ({i}, 'a{i}', 'a'), ({i + 10}, 'b{i}', 'b'), ({i + 20}, 'x{i}', 'a')")
    t = table(session, "comp")
    files = run(session, "SELECT file_path, partition['dt'], file_size_in_bytes FROM floe.db.comp.files").rows
    assert len(files) == 8
    first_a = next(r[0] for r in files if r[1] == "a")
    add_position_delete(t, first_a, ("a",), 0)  # a merge-on-read delete the rewrite must honour
    expected = rows(session, "SELECT * FROM comp")
    assert len(expected) == 11
    # fewer than min-input-files (default 5) per partition: nothing to do
    # (the delete covers half of its file: Java's delete-ratio-threshold would pick it, so raise it)
    none = run(
        session, "CALL floe.system.rewrite_data_files('db.comp', options => map('delete-ratio-threshold', '1'))"
    )
    assert none.columns == [
        "rewritten_data_files_count", "added_data_files_count", "rewritten_bytes_count",
        "failed_data_files_count", "removed_delete_files_count",
    ]
    assert none.rows == [(0, 0, 0, 0, 0)]
    result = run(session, "CALL floe.system.rewrite_data_files(table => 'db.comp', options => map('min-input-files', '2'))")
    assert result.rows == [(8, 2, sum(r[2] for r in files), 0, 0)]
    assert rows(session, "SELECT * FROM comp") == expected
    after = run(session, "SELECT partition['dt'], record_count FROM floe.db.comp.files WHERE content = 0").rows
    assert sorted(after) == [("a", 7), ("b", 4)]  # the deleted row is gone from the new file
    snap = run(session, "SELECT operation, summary['added-data-files'], summary['deleted-data-files'] FROM floe.db.comp.snapshots ORDER BY committed_at").rows[-1]
    assert snap == ("replace", "2", "8")
    assert pyiceberg_rows(t) == expected
    # a filter limits the rewrite to the partitions it may match
    for i in range(2):
        run(session, f"INSERT INTO comp VALUES ({i + 30}, 'c', 'a'), ({i + 40}, 'd', 'b')")
    expected = rows(session, "SELECT * FROM comp")
    result = run(
        session,
        "CALL floe.system.rewrite_data_files('db.comp', 'binpack', NULL, map('min-input-files', '2'), 'dt = \\'b\\'')",
    )
    assert result.rows[0][:2] == (3, 1)
    counts = run(session, "SELECT partition['dt'], count(*) FROM floe.db.comp.files WHERE content = 0 GROUP BY 1").rows
    assert sorted(counts) == [("a", 3), ("b", 1)]
    assert rows(session, "SELECT * FROM comp") == expected
    with pytest.raises(ValidationError, match="Cannot sort data without a valid sort order"):
        run(session, "CALL floe.system.rewrite_data_files(table => 'db.comp', strategy => 'sort')")
    with pytest.raises(ValidationError, match="Unknown rewrite_data_files option"):
        run(session, "CALL floe.system.rewrite_data_files('db.comp', options => map('bogus', '1'))")


def test_expire_orphans_and_manifests_by_name_then_pyiceberg_reads_the_same_rows(session: SqlSession) -> None:
    session.sql("CREATE TABLE maint (id BIGINT, dt STRING) USING iceberg PARTITIONED BY (dt)")
    for i in range(4):
        run(session, f"INSERT INTO maint VALUES ({i}, 'd{i % 2}')")
    run(session, "DELETE FROM maint WHERE id = 0")
    expected = rows(session, "SELECT * FROM maint")
    t = table(session, "maint")
    snaps = run(session, "SELECT snapshot_id FROM floe.db.maint.snapshots ORDER BY committed_at").rows
    # explicit ids by name, as an array
    result = run(session, f"CALL floe.system.expire_snapshots(table => 'db.maint', snapshot_ids => array({snaps[0][0]}, {snaps[1][0]}))")
    assert dict(zip(result.columns, result.rows[0]))["deleted_manifest_lists_count"] == 2
    assert len(run(session, "SELECT * FROM floe.db.maint.snapshots")) == 3
    # rewrite manifests by name; then everything but the newest expires
    result = run(session, "CALL floe.system.rewrite_manifests(table => 'db.maint', use_caching => false)")
    assert result.rows[0][1] == 1
    assert result.rows[0][0] >= 2
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S")
    result = run(session, f"CALL floe.system.expire_snapshots(table => 'db.maint', older_than => TIMESTAMP '{future}', retain_last => 1)")
    deleted = dict(zip(result.columns, result.rows[0]))
    assert deleted["deleted_data_files_count"] == 1  # the file of the deleted row
    assert deleted["deleted_manifest_lists_count"] == 3
    assert len(run(session, "SELECT * FROM floe.db.maint.snapshots")) == 1
    assert rows(session, "SELECT * FROM maint") == expected == pyiceberg_rows(t)
    # orphan files: a stray file, old enough, is listed by a dry run and deleted by a real one
    root = Path(to_local_path(t.refresh().location()))
    stray = root / "data" / "dt=d0" / "stray.parquet"
    stray.write_bytes(b"not referenced")
    os.utime(stray, (1_000_000_000, 1_000_000_000))
    result = run(session, "CALL floe.system.remove_orphan_files(table => 'db.maint', dry_run => true)")
    assert result.columns == ["orphan_file_location"]
    assert [to_local_path(r[0]) for r in result.rows] == [str(stray)]
    assert stray.exists()
    result = run(session, "CALL floe.system.remove_orphan_files('db.maint')")
    assert len(result.rows) == 1
    assert not stray.exists()
    assert rows(session, "SELECT * FROM maint") == expected == pyiceberg_rows(t)
    with pytest.raises(ValidationError, match="retain_last must be an integer"):
        run(session, "CALL floe.system.expire_snapshots('db.maint', retain_last => 'x')")
