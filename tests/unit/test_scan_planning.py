"""Scan planning without Spark: manifest/partition/metrics pruning, delete-file rules, splitting, packing.

Manifests are written directly with ManifestWriter (no data files needed: planning only reads metadata).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from floe.expressions.base import AlwaysTrue
from floe.io.fileio import FileIO
from floe.scan.delete_index import DeleteFileIndex
from floe.scan.planner import ManifestPlanner
from floe.scan.table_scan import LocatedTable
from floe.scan.tasks import FileScanTask, pack_tasks, split_task
from floe.serde.manifest_writer import ManifestWriter
from floe.serde.single_value import to_bytes
from floe.spec.manifest import (
    POSITION_DELETE_FILE_PATH_ID,
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import DateType, LongType, NestedField, StringType
from floe.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "day", DateType()),
)
EPOCH = dt.date(1970, 1, 1)


def _days(d: dt.date) -> int:
    return (d - EPOCH).days


def _data_file(path: str, partition: tuple[object, ...], spec_id: int, *, content: FileContent = FileContent.DATA,
               size: int = 1000, **kw: object) -> DataFile:
    return DataFile(content, path, FileFormat.PARQUET, partition, 10, size, spec_id=spec_id, **kw)  # type: ignore[arg-type]


def _write_manifest(tmp: Path, name: str, spec: PartitionSpec, files: list[DataFile], *,
                    content: ManifestContent = ManifestContent.DATA, seq: int = 1,
                    statuses: list[ManifestEntryStatus] | None = None, version: int = 2) -> ManifestFile:
    path = tmp / f"{name}.avro"
    with open(path, "wb") as out:
        w = ManifestWriter(out, spec=spec, schema=SCHEMA, format_version=version, snapshot_id=seq, content=content,
                           manifest_path=str(path))
        for i, f in enumerate(files):
            status = statuses[i] if statuses else ManifestEntryStatus.ADDED
            w.add_entry(ManifestEntry(status, seq, seq, seq, f))
        m = w.close()
    return m.with_changes(sequence_number=seq, min_sequence_number=seq)


def _planner(specs: list[PartitionSpec], row_filter: object = None) -> ManifestPlanner:
    from floe.scan._filters import to_expression

    return ManifestPlanner(io=FileIO(), schema=SCHEMA, specs_by_id={s.spec_id: s for s in specs},
                           row_filter=to_expression(row_filter), threads=4)  # type: ignore[arg-type]


DAY_SPEC = PartitionSpec(0, (PartitionField(3, 1000, DayTransform(), "day_day"),))


@pytest.fixture(scope="module", params=[1, 2, 3], ids=lambda v: f"v{v}")
def version(request: pytest.FixtureRequest) -> int:
    """The format version manifests are written in (DESIGN rule 9: scans are tested across format versions)."""
    return int(request.param)


@pytest.fixture(scope="module")
def year_table(tmp_path_factory: pytest.TempPathFactory, version: int) -> list[ManifestFile]:
    """365 daily partitions, 3 files each, one manifest per month."""
    tmp = tmp_path_factory.mktemp("year")
    by_month: dict[int, list[DataFile]] = {}
    for i in range(365):
        d = dt.date(2024, 1, 1) + dt.timedelta(days=i)
        for k in range(3):
            by_month.setdefault(d.month, []).append(
                _data_file(f"/data/day={d}/f{k}.parquet", (_days(d),), 0)
            )
    return [_write_manifest(tmp, f"m{mo}", DAY_SPEC, files, version=version) for mo, files in sorted(by_month.items())]


def test_plan_daily_partitions_one_day_filter_plans_only_that_day(year_table: list[ManifestFile]) -> None:
    p = _planner([DAY_SPEC], "day = DATE '2024-03-15'")
    tasks = list(p.plan_manifests(year_table))
    assert sorted(t.file_path for t in tasks) == [f"/data/day=2024-03-15/f{k}.parquet" for k in range(3)]
    assert p.metrics["scanned_manifests"] == 1
    assert p.metrics["skipped_manifests"] == 11


def test_plan_daily_partitions_no_filter_plans_every_file(year_table: list[ManifestFile]) -> None:
    tasks = list(_planner([DAY_SPEC]).plan_manifests(year_table))
    assert len(tasks) == 365 * 3


def test_plan_range_filter_plans_matching_days(year_table: list[ManifestFile]) -> None:
    tasks = list(_planner([DAY_SPEC], "day >= '2024-12-29'").plan_manifests(year_table))
    assert len(tasks) == 2 * 3


def test_plan_bucket_filter_prunes_other_buckets(tmp_path: Path, version: int) -> None:
    spec = PartitionSpec(0, (PartitionField(1, 1000, BucketTransform(16), "id_bucket"),))
    bucket = BucketTransform(16)
    files = [_data_file(f"/d/b{b}.parquet", (b,), 0) for b in range(16)]
    m = _write_manifest(tmp_path, "m", spec, files, version=version)
    tasks = list(_planner([spec], "id = 34").plan_manifests([m]))
    assert [t.file_path for t in tasks] == [f"/d/b{bucket.apply(LongType(), 34)}.parquet"]
    assert str(tasks[0].residual) != "true"  # bucket equality cannot decide id = 34


def test_plan_truncate_filter_prunes_other_prefixes(tmp_path: Path, version: int) -> None:
    spec = PartitionSpec(0, (PartitionField(2, 1000, TruncateTransform(3), "name_trunc"),))
    files = [_data_file(f"/d/{p}.parquet", (p,), 0) for p in ("abc", "abd", "xyz")]
    m = _write_manifest(tmp_path, "m", spec, files, version=version)
    assert [t.file_path for t in _planner([spec], "name = 'abcdef'").plan_manifests([m])] == ["/d/abc.parquet"]
    assert [t.file_path for t in _planner([spec], "name like 'xy%'").plan_manifests([m])] == ["/d/xyz.parquet"]


def test_plan_after_partition_evolution_both_specs_prune(tmp_path: Path, version: int) -> None:
    spec0 = PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "name"),))
    spec1 = PartitionSpec(1, (PartitionField(2, 1000, IdentityTransform(), "name"),
                              PartitionField(3, 1001, DayTransform(), "day_day")))
    d = _days(dt.date(2024, 5, 1))
    m0 = _write_manifest(tmp_path, "m0", spec0, [_data_file("/d/0a", ("a",), 0), _data_file("/d/0b", ("b",), 0)],
                         version=version)
    m1 = _write_manifest(tmp_path, "m1", spec1, [_data_file("/d/1a", ("a", d), 1), _data_file("/d/1b", ("b", d), 1),
                                                 _data_file("/d/1a2", ("a", d + 1), 1)], seq=2, version=version)
    tasks = list(_planner([spec0, spec1], "name = 'a'").plan_manifests([m0, m1]))
    assert sorted(t.file_path for t in tasks) == ["/d/0a", "/d/1a", "/d/1a2"]
    assert all(isinstance(t.residual, AlwaysTrue) for t in tasks)  # identity partitions decide name = 'a'
    got = sorted(t.file_path for t in _planner([spec0, spec1], "name = 'a' and day = '2024-05-02'")
                 .plan_manifests([m0, m1]))
    assert got == ["/d/0a", "/d/1a2"]  # spec 0 has no day field: it cannot prune on day


def test_plan_metrics_prune_files_by_bounds(tmp_path: Path, version: int) -> None:
    spec = PartitionSpec(0, ())
    lo = {1: (0).to_bytes(8, "little", signed=True)}
    files = [
        _data_file("/d/low", (), 0, lower_bounds=lo, upper_bounds={1: (9).to_bytes(8, "little", signed=True)}),
        _data_file("/d/high", (), 0, lower_bounds={1: (10).to_bytes(8, "little", signed=True)},
                   upper_bounds={1: (20).to_bytes(8, "little", signed=True)}),
    ]
    m = _write_manifest(tmp_path, "m", spec, files, version=version)
    assert [t.file_path for t in _planner([spec], "id > 12").plan_manifests([m])] == ["/d/high"]


def test_plan_deleted_entries_are_not_planned(tmp_path: Path, version: int) -> None:
    spec = PartitionSpec(0, ())
    m = _write_manifest(tmp_path, "m", spec, [_data_file("/d/a", (), 0), _data_file("/d/b", (), 0)],
                        statuses=[ManifestEntryStatus.EXISTING, ManifestEntryStatus.DELETED], version=version)
    assert [t.file_path for t in _planner([spec]).plan_manifests([m])] == ["/d/a"]


# -- delete-file index ---------------------------------------------------------------------------
ID_SPEC = PartitionSpec(1, (PartitionField(2, 1000, IdentityTransform(), "name"),))
UNPART = PartitionSpec(0, ())


def _entry(f: DataFile, seq: int) -> ManifestEntry:
    return ManifestEntry(ManifestEntryStatus.ADDED, 1, seq, seq, f)


def _paths(entries: tuple[ManifestEntry, ...]) -> list[str]:
    return sorted(e.data_file.file_path for e in entries)


def test_delete_index_position_deletes_apply_to_older_and_same_sequence_only() -> None:
    pos = _entry(_data_file("/del/pos", ("a",), 1, content=FileContent.POSITION_DELETES), 2)
    idx = DeleteFileIndex([pos], {0: UNPART, 1: ID_SPEC})
    assert _paths(idx.for_data_file(1, 1, ("a",), "/d/x")) == ["/del/pos"]
    assert _paths(idx.for_data_file(2, 1, ("a",), "/d/x")) == ["/del/pos"]  # same commit: applies
    assert _paths(idx.for_data_file(3, 1, ("a",), "/d/x")) == []  # newer data
    assert _paths(idx.for_data_file(1, 1, ("b",), "/d/x")) == []  # other partition


def test_delete_index_equality_deletes_apply_to_strictly_older_only() -> None:
    eq = _entry(_data_file("/del/eq", ("a",), 1, content=FileContent.EQUALITY_DELETES, equality_ids=(1,)), 2)
    idx = DeleteFileIndex([eq], {0: UNPART, 1: ID_SPEC})
    assert _paths(idx.for_data_file(1, 1, ("a",), "/d/x")) == ["/del/eq"]
    assert _paths(idx.for_data_file(2, 1, ("a",), "/d/x")) == []  # same sequence: not applied
    assert _paths(idx.for_data_file(1, 1, ("b",), "/d/x")) == []


def test_delete_index_unpartitioned_equality_deletes_are_global() -> None:
    eq = _entry(_data_file("/del/g", (), 0, content=FileContent.EQUALITY_DELETES, equality_ids=(1,)), 5)
    idx = DeleteFileIndex([eq], {0: UNPART, 1: ID_SPEC})
    assert _paths(idx.for_data_file(4, 1, ("zzz",), "/d/x")) == ["/del/g"]
    assert _paths(idx.for_data_file(5, 1, ("zzz",), "/d/x")) == []


def test_delete_index_position_deletes_respect_referenced_file_and_path_bounds() -> None:
    ref = _entry(_data_file("/del/ref", ("a",), 1, content=FileContent.POSITION_DELETES,
                            referenced_data_file="/d/one"), 3)
    bounded = _entry(_data_file("/del/bounded", ("a",), 1, content=FileContent.POSITION_DELETES,
                                lower_bounds={POSITION_DELETE_FILE_PATH_ID: b"/d/m"},
                                upper_bounds={POSITION_DELETE_FILE_PATH_ID: b"/d/p"}), 3)
    idx = DeleteFileIndex([ref, bounded], {0: UNPART, 1: ID_SPEC})
    assert _paths(idx.for_data_file(1, 1, ("a",), "/d/one")) == ["/del/bounded", "/del/ref"]
    assert _paths(idx.for_data_file(1, 1, ("a",), "/d/two")) == []
    assert _paths(idx.for_data_file(1, 1, ("a",), "/d/nine")) == ["/del/bounded"]


def test_plan_attaches_deletes_by_sequence_number(tmp_path: Path) -> None:
    data1 = _write_manifest(tmp_path, "d1", ID_SPEC, [_data_file("/d/a1", ("a",), 1)], seq=1)
    data3 = _write_manifest(tmp_path, "d3", ID_SPEC, [_data_file("/d/a3", ("a",), 1)], seq=3)
    dels = _write_manifest(tmp_path, "x2", ID_SPEC, [
        _data_file("/del/eq2", ("a",), 1, content=FileContent.EQUALITY_DELETES, equality_ids=(1,)),
        _data_file("/del/pos2", ("a",), 1, content=FileContent.POSITION_DELETES),
    ], content=ManifestContent.DELETES, seq=2)
    tasks = {t.file_path: t for t in _planner([UNPART, ID_SPEC]).plan_manifests([data1, data3, dels])}
    assert _paths(tasks["/d/a1"].deletes) == ["/del/eq2", "/del/pos2"]
    assert tasks["/d/a1"].data_sequence_number == 1
    assert tasks["/d/a3"].deletes == ()


# -- splitting and bin-packing -------------------------------------------------------------------
def _task(path: str, size: int, offsets: tuple[int, ...] | None = None) -> FileScanTask:
    return FileScanTask(_data_file(path, (), 0, size=size, split_offsets=offsets), 0)


def test_split_task_with_offsets_splits_at_row_groups() -> None:
    mb = 1 << 20
    t = _task("/d/big", 300 * mb, (4, 100 * mb, 200 * mb))
    parts = list(split_task(t, 128 * mb))
    assert [(p.start, p.length) for p in parts] == [(0, 100 * mb), (100 * mb, 100 * mb), (200 * mb, 100 * mb)]


def test_split_task_merges_small_row_groups_up_to_target() -> None:
    t = _task("/d/f", 100, (4, 20, 40, 60, 80))
    assert [(p.start, p.length) for p in split_task(t, 50)] == [(0, 40), (40, 40), (80, 20)]


def test_split_task_without_offsets_uses_fixed_size() -> None:
    parts = list(split_task(_task("/d/f", 250), 100))
    assert [(p.start, p.length) for p in parts] == [(0, 100), (100, 100), (200, 50)]


def test_pack_tasks_small_files_share_a_group_weighted_by_open_cost() -> None:
    tasks = [_task(f"/d/{i}", 10) for i in range(10)]
    groups = list(pack_tasks(tasks, target_size=100, open_file_cost=25, lookback=10))
    assert [len(g) for g in groups] == [4, 4, 2]
    assert sum(len(g) for g in groups) == 10


def test_pack_tasks_lookback_one_emits_in_order() -> None:
    tasks = [_task("/d/a", 60), _task("/d/b", 60), _task("/d/c", 30)]
    groups = list(pack_tasks(tasks, target_size=100, open_file_cost=1, lookback=1))
    assert [[t.file_path for t in g.tasks] for g in groups] == [["/d/a"], ["/d/b", "/d/c"]]


# -- column statistics projection and specs over dropped columns --------------------------------------
def _table(tmp: Path, schemas: tuple[Schema, ...], specs: tuple[PartitionSpec, ...],
           manifests: list[ManifestFile]) -> LocatedTable:
    """A one-snapshot table over ``manifests`` (the last schema and spec are current)."""
    import uuid

    from floe.serde.manifest_avro import write_manifest_list
    from floe.spec.refs import SnapshotRef
    from floe.spec.snapshot import Operation, Snapshot, SnapshotLogEntry, Summary
    from floe.spec.sort_order import UNSORTED_SORT_ORDER
    from floe.spec.table_metadata import TableMetadata

    list_path = tmp / "snap-1.avro"
    with open(list_path, "wb") as out:
        write_manifest_list(out, manifests, format_version=2, snapshot_id=1, parent_snapshot_id=None,
                            sequence_number=1)
    snap = Snapshot(1, 1_700_000_000_000, Summary.of(Operation.APPEND, {}), str(list_path), schemas[-1].schema_id, 1, 0)
    md = TableMetadata(
        format_version=2, table_uuid=uuid.uuid4(), location=str(tmp), last_updated_ms=1_700_000_000_000,
        last_column_id=max(s.highest_field_id for s in schemas), schemas=schemas,
        current_schema_id=schemas[-1].schema_id, partition_specs=specs, default_spec_id=specs[-1].spec_id,
        last_partition_id=1000 + len(specs), sort_orders=(UNSORTED_SORT_ORDER,), default_sort_order_id=0,
        current_snapshot_id=1, snapshots=(snap,), snapshot_log=(SnapshotLogEntry(1_700_000_000_000, 1),),
        refs={"main": SnapshotRef(1)}, last_sequence_number=1,
    )
    return LocatedTable(md, FileIO(), lambda p: p)


def _metrics_files() -> list[DataFile]:
    return [
        _data_file(f"/d/{lo}", (), 0, value_counts={1: 10, 2: 10}, null_value_counts={1: 0, 2: 0},
                   column_sizes={1: 5, 2: 7}, lower_bounds={1: to_bytes(LongType(), lo), 2: b"a"},
                   upper_bounds={1: to_bytes(LongType(), lo + 9), 2: b"z"})
        for lo in (0, 10, 20)
    ]


def test_plan_files_unfiltered_loads_no_column_stats(tmp_path: Path) -> None:
    m = _write_manifest(tmp_path, "m", UNPART, _metrics_files())
    table = _table(tmp_path, (SCHEMA,), (UNPART,), [m])
    tasks = list(table.scan().plan_files())
    assert len(tasks) == 3
    assert all(t.data_file.value_counts is None and t.data_file.lower_bounds is None for t in tasks)
    full = list(table.scan().include_column_stats().plan_files())
    assert all(t.data_file.value_counts == {1: 10, 2: 10} and t.data_file.column_sizes == {1: 5, 2: 7} for t in full)


def test_plan_files_filtered_loads_stats_of_filter_columns_only(tmp_path: Path) -> None:
    m = _write_manifest(tmp_path, "m", UNPART, _metrics_files())
    table = _table(tmp_path, (SCHEMA,), (UNPART,), [m])
    tasks = list(table.scan("id >= 12").plan_files())
    assert sorted(t.file_path for t in tasks) == ["/d/10", "/d/20"]
    for t in tasks:
        assert set(t.data_file.lower_bounds or {}) == {1}
        assert set(t.data_file.value_counts or {}) == {1}


def test_plan_files_spec_over_dropped_column_still_plans(tmp_path: Path) -> None:
    # Files written under identity(name); `name` was dropped later and the table is now unpartitioned.
    old_spec = PartitionSpec(0, (PartitionField(2, 1000, IdentityTransform(), "name"),))
    new_schema = Schema(SCHEMA.fields[0], SCHEMA.fields[2], schema_id=1)
    new_spec = PartitionSpec(1)
    files = [_data_file(f"/d/{n}", (n,), 0, lower_bounds={1: to_bytes(LongType(), i * 10)},
                        upper_bounds={1: to_bytes(LongType(), i * 10 + 9)}, value_counts={1: 10})
             for i, n in enumerate(["a", "b", "c"])]
    m = _write_manifest(tmp_path, "m", old_spec, files)
    table = _table(tmp_path, (SCHEMA, new_schema), (old_spec, new_spec), [m])
    assert sorted(t.file_path for t in table.scan("id < 15").plan_files()) == ["/d/a", "/d/b"]
    assert len(list(table.scan().plan_files())) == 3


def test_plan_remote_style_locations_fetch_in_threads_same_tasks(
    year_table: list[ManifestFile], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative locations are not recognised as local files: bytes are fetched by the thread pool.
    from floe.scan._filters import to_expression

    root = Path(year_table[0].manifest_path).parent
    monkeypatch.chdir(root)

    def plan(threads: int, relative: bool) -> list[str]:
        p = ManifestPlanner(io=FileIO(), schema=SCHEMA, specs_by_id={0: DAY_SPEC},
                            row_filter=to_expression("day >= '2024-06-01'"), threads=threads,
                            location_of=(lambda s: Path(s).name) if relative else None)
        return [t.file_path for t in p.plan_manifests(year_table)]

    assert plan(4, relative=True) == plan(1, relative=False)
    assert len(plan(4, relative=True)) == 3 * (365 - 152)
