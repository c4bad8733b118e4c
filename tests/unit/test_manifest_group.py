"""ManifestGroup and the manifest reader: selection by content, status, partition, file and entry; the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from floe.errors import NoSuchFileError
from floe.io import manifest_group
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup, PruneCounts
from floe.io.manifest_reader import ManifestCache, manifest_cache, read_entries, read_manifest_files
from floe.spec.manifest import FileContent, ManifestContent, ManifestEntryStatus
from floe.table.table import Table
from tests.unit._table_testing import data_file, make_table


def _table_with_history(tmp_path: Path) -> Table:
    """Snapshots: append a,b (p=0) + c (p=1); delete b; position delete for a (v2)."""
    t = make_table(tmp_path)
    t.new_append().append_file(data_file("a")).append_file(data_file("b")).append_file(data_file("c", p=1)).commit()
    t.new_delete().delete_file(data_file("b")).commit()
    t.new_row_delta().add_deletes(data_file("a-del", content=FileContent.POSITION_DELETES)).commit()
    return t


def _paths(group: ManifestGroup) -> list[str]:
    return sorted(e.data_file.file_path.rsplit("/", 1)[-1] for e in group.entries())


def test_manifest_group_of_snapshot_reads_every_entry_including_deleted(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).with_metadata(t.metadata)
    statuses = sorted((e.data_file.file_path.rsplit("/", 1)[-1], e.status) for e in group.entries())
    assert ("b.parquet", ManifestEntryStatus.DELETED) in statuses
    assert len(statuses) == 4


def test_manifest_group_ignore_deleted_keeps_live_files_only(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).ignore_deleted()
    assert _paths(group) == ["a-del.parquet", "a.parquet", "c.parquet"]


def test_manifest_group_content_selects_data_or_delete_manifests(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).ignore_deleted()
    assert _paths(group.data_only()) == ["a.parquet", "c.parquet"]
    assert _paths(group.deletes_only()) == ["a-del.parquet"]
    assert all(m.content == ManifestContent.DELETES for m in group.deletes_only().selected_manifests())


def test_manifest_group_only_statuses_skips_manifests_whose_counts_show_none(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).only_statuses(ManifestEntryStatus.DELETED)
    assert _paths(group) == ["b.parquet"]
    assert all(m.has_deleted_files() for m in group.selected_manifests())


def test_manifest_group_partition_and_file_filters_count_skipped_entries(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    counts = PruneCounts()
    group = (
        ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot())
        .with_metadata(t.metadata)
        .data_only()
        .ignore_deleted()
        .filter_partitions(lambda spec_id: lambda p: p == (0,))
        .count_into(counts)
    )
    assert _paths(group) == ["a.parquet"]
    assert counts.entries_skipped == 1
    assert _paths(group.filter_files(lambda f: not f.file_path.endswith("a.parquet"))) == []


def test_manifest_group_filters_combine_with_and(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).ignore_deleted().data_only()
    group = group.filter_entries(lambda e: "a" in e.data_file.file_path).filter_entries(lambda e: True)
    group = group.filter_partitions(lambda s: None).filter_partitions(lambda s: lambda p: p == (0,))
    assert _paths(group) == ["a.parquet"]


def test_manifest_group_select_stats_empty_skips_metrics(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.new_append().append_file(data_file("a", lower=1, upper=5)).commit()
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).with_metadata(t.metadata)
    (full,) = group.entries()
    (bare,) = group.select_stats(()).entries()
    (one,) = group.select_stats({1}).entries()
    assert full.data_file.lower_bounds is not None
    assert 1 in full.data_file.lower_bounds
    assert bare.data_file.lower_bounds is None
    assert one.data_file.lower_bounds == full.data_file.lower_bounds


def test_manifest_group_of_snapshots_lists_distinct_manifests_first_listing_wins(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    snaps = t.metadata.snapshots
    group = ManifestGroup.of_snapshots(t.io, snaps)
    per_snapshot = [m.manifest_path for s in snaps for m in read_manifest_files(t.io, s)]
    assert [m.manifest_path for m in group.manifests] == list(dict.fromkeys(per_snapshot))


def test_manifest_group_missing_manifest_raises_unless_skipped(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).without_cache()
    victim = group.manifests[0].manifest_path
    Path(victim).unlink()
    with pytest.raises(NoSuchFileError, match=Path(victim).name):
        list(group.entries())
    assert len(list(group.skip_missing().entries())) < 4


def test_manifest_group_of_snapshots_missing_list_is_empty_when_missing_ok(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    first = t.metadata.snapshots[0]
    assert first.manifest_list is not None
    Path(first.manifest_list).unlink()
    manifest_cache(t.io).clear()
    with pytest.raises(NoSuchFileError):
        ManifestGroup.of_snapshots(t.io, [first])
    assert ManifestGroup.of_snapshots(t.io, [first], missing_ok=True).manifests == ()


def test_manifest_group_threads_prefetch_remote_manifests_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table_with_history(tmp_path)
    group = ManifestGroup.of_snapshot(t.io, t.metadata.current_snapshot()).with_metadata(t.metadata).without_cache()
    expected = [(m.manifest_path, list(es)) for m, es in group.entries_by_manifest()]
    monkeypatch.setattr(manifest_group, "_is_local", lambda location: False)  # take the pool path
    got = [(m.manifest_path, list(es)) for m, es in group.plan_with(2).entries_by_manifest()]
    assert got == expected
    assert len(got) >= 2


def test_read_entries_cache_hits_return_equal_entries_without_reading(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    (m, *_) = read_manifest_files(t.io, t.metadata.current_snapshot())  # type: ignore[arg-type]
    spec, schema = t.metadata.spec_by_id(m.partition_spec_id), t.metadata.schema()
    first = read_entries(t.io, m, spec=spec, schema=schema)
    Path(m.manifest_path).unlink()  # a cached manifest is not read again
    assert read_entries(t.io, m, spec=spec, schema=schema) == first
    with pytest.raises(NoSuchFileError):  # another decoding (metrics kept) is another cache key
        read_entries(t.io, m, spec=spec, schema=schema, stats_columns=())
    with pytest.raises(NoSuchFileError):  # another FileIO has its own cache
        read_entries(FileIO(), m, spec=spec, schema=schema)


def test_read_entries_cache_key_includes_inherited_sequence_number(tmp_path: Path) -> None:
    t = _table_with_history(tmp_path)
    m = read_manifest_files(t.io, t.metadata.current_snapshot())[0]  # type: ignore[arg-type]
    a = read_entries(t.io, m)
    b = read_entries(t.io, m.with_changes(sequence_number=None, min_sequence_number=None))
    assert [e.data_file for e in a] == [e.data_file for e in b]
    assert any(e.sequence_number is not None for e in a)


def test_manifest_cache_is_bounded_by_entries() -> None:
    cache = ManifestCache(max_entries=3, max_entries_per_manifest=2)
    cache.manifests.put("a", (1, 2))  # type: ignore[arg-type]
    cache.manifests.put("b", (3,))  # type: ignore[arg-type]
    cache.manifests.put("big", (4, 5, 6))  # type: ignore[arg-type]
    assert cache.manifests.get("big") is None  # larger than one manifest may be: never cached
    cache.manifests.put("c", (7,))  # type: ignore[arg-type]
    assert cache.manifests.get("a") is None  # least recently used goes first
    assert cache.manifests.get("b") == (3,)
    assert cache.manifests.get("c") == (7,)
