"""Table maintenance without Spark: expiry planning and file cleanup, orphan files, manifest rewrites."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _table_testing import SCHEMA, entries, live, make_table, sql_catalog

from floe.errors import NoSuchSnapshotError, ValidationError
from floe.io.fileio import FileEntry
from floe.io.locations import comparison_key, to_local_path
from floe.maintenance import expire_snapshots, plan_expiry, remove_orphan_files, rewrite_manifests
from floe.maintenance.orphan_files import find_orphans
from floe.scan.planner import read_manifest_files
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntryStatus
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.snapshot import Operation
from floe.table.rewrite_manifests import cluster_by_partition, target_manifest_count
from floe.table.table import Table

DAY_MS = 24 * 60 * 60 * 1000


def real_file(
    t: Table, name: str, *, p: int | None = 0, content: FileContent = FileContent.DATA, **extra: object
) -> DataFile:
    """A descriptor for a file that exists under the table's data folder (so deletion is observable).

    The path is spelled like the table location (plain path, ``file:/`` or ``file:///``).
    """
    local = Path(to_local_path(t.location())) / "data" / f"{name}.parquet"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(b"x" * 100)
    partition = () if p is None and not t.spec().fields else (p,)
    return DataFile(
        content, t.location() + f"/data/{name}.parquet", FileFormat.PARQUET, partition, 10, 100,
        spec_id=t.spec().spec_id, **extra,  # type: ignore[arg-type]
    )


def exists(f: DataFile | str) -> bool:
    return os.path.exists(to_local_path(f if isinstance(f, str) else f.file_path))


def five_appends(t: Table) -> list[int]:
    for i in range(5):
        t.new_fast_append().append_file(real_file(t, f"f{i}", p=i % 2)).commit()
    return [s.snapshot_id for s in t.snapshots()]


# -- expiry planning (pure) ---------------------------------------------------------------------------
def test_plan_expiry_keeps_retain_last_ancestors_and_snapshots_newer_than_cutoff(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    ids = five_appends(t)
    md = t.metadata
    ts = {s.snapshot_id: s.timestamp_ms for s in md.snapshots}
    now = ts[ids[-1]] + 10 * DAY_MS
    # the book's call: older than the third snapshot, keep 3 -> the first two go
    plan = plan_expiry(md, now_ms=now, older_than_ms=ts[ids[2]], retain_last=3)
    assert set(plan.expired_snapshot_ids) == {i for i in ids if ts[i] < ts[ids[2]]}
    # retain_last wins over age: everything is old, the 4 newest ancestors stay
    plan = plan_expiry(md, now_ms=now, older_than_ms=now, retain_last=4)
    assert plan.expired_snapshot_ids == (ids[0],)
    # defaults from table properties: 5 days of age (all too old at now) and 1 snapshot
    assert set(plan_expiry(md, now_ms=now).expired_snapshot_ids) == set(ids[:-1])
    assert plan_expiry(md, now_ms=ts[ids[-1]]).is_empty  # nothing is 5 days old yet
    t.set_properties({"history.expire.min-snapshots-to-keep": "2"})
    assert set(plan_expiry(t.metadata, now_ms=now).expired_snapshot_ids) == set(ids[:-2])
    with pytest.raises(ValidationError, match="retain_last"):
        plan_expiry(md, now_ms=now, retain_last=0)


def test_plan_expiry_respects_tags_branches_and_their_retention(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    ids = five_appends(t)
    t.manage_snapshots().create_tag(ids[0], "v1").create_branch(ids[1], "b", min_snapshots_to_keep=2).commit()
    md = t.metadata
    now = md.snapshot_by_id(ids[-1]).timestamp_ms + 10 * DAY_MS
    plan = plan_expiry(md, now_ms=now)
    # the tag keeps ids[0]; branch b keeps its head and parent (ids[1], ids[0]); main keeps its head
    assert set(plan.expired_snapshot_ids) == {ids[2], ids[3]}
    assert plan.removed_refs == ()
    # an aged-out tag is dropped and its snapshot expires (main never ages out)
    t.manage_snapshots().remove_branch("b").remove_tag("v1").commit()
    t.manage_snapshots().create_tag(ids[0], "v1", max_ref_age_ms=DAY_MS).commit()
    plan = plan_expiry(t.metadata, now_ms=now)
    assert plan.removed_refs == ("v1",)
    assert set(plan.expired_snapshot_ids) == set(ids[:-1])
    with pytest.raises(ValidationError, match=r"still referenced by 'main'"):
        plan_expiry(t.metadata, now_ms=now, snapshot_ids=[ids[-1]])
    with pytest.raises(NoSuchSnapshotError):
        plan_expiry(t.metadata, now_ms=now, snapshot_ids=[12345])
    # explicit ids expire even when young
    young = plan_expiry(t.metadata, now_ms=md.snapshot_by_id(ids[-1]).timestamp_ms, snapshot_ids=[ids[1]])
    assert young.expired_snapshot_ids == (ids[1],)


def test_plan_expiry_keeps_young_unreferenced_snapshots(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    ids = five_appends(t)
    staged = t.new_fast_append().append_file(real_file(t, "wap"))
    staged.stage_only().commit()
    md = t.refresh().metadata
    cutoff = md.snapshot_by_id(ids[-1]).timestamp_ms
    plan = plan_expiry(md, now_ms=cutoff + DAY_MS, older_than_ms=cutoff)
    assert staged.snapshot_id not in plan.expired_snapshot_ids
    plan = plan_expiry(md, now_ms=cutoff + DAY_MS, older_than_ms=cutoff + DAY_MS)
    assert staged.snapshot_id in plan.expired_snapshot_ids


# -- expire_snapshots (commit, then delete) -------------------------------------------------------------
def test_expire_snapshots_deletes_only_files_no_remaining_snapshot_needs(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    a, b, c = real_file(t, "a"), real_file(t, "b", p=1), real_file(t, "c")
    t.new_fast_append().append_file(a).commit()
    s1 = t.current_snapshot()
    t.new_fast_append().append_file(b).commit()
    s2 = t.current_snapshot()
    t.new_overwrite().delete_file(a).add_file(c).commit()
    s3 = t.current_snapshot()
    pos = real_file(t, "pos", content=FileContent.POSITION_DELETES, referenced_data_file=b.file_path)
    t.new_row_delta().add_deletes(pos).commit()
    old_lists = [s1.manifest_list, s2.manifest_list]
    old_manifests = {m.manifest_path for s in (s1, s2) for m in read_manifest_files(t.io, s)}
    kept_manifests = {m.manifest_path for m in read_manifest_files(t.io, t.current_snapshot())}
    result = expire_snapshots(t, older_than_ms=s3.timestamp_ms, retain_last=1)
    assert set(result.expired_snapshot_ids) == {s1.snapshot_id, s2.snapshot_id}
    assert next(s.snapshot_id for s in t.snapshots()) == s3.snapshot_id
    assert t.refresh().metadata.snapshot_by_id(s1.snapshot_id) is None  # committed, not just in memory
    assert not exists(a)
    assert exists(b)
    assert exists(c)
    assert exists(pos)
    assert result.deleted_data_files_count == 1
    assert result.deleted_position_delete_files_count == 0
    assert result.deleted_manifest_lists_count == 2
    assert not any(exists(p) for p in old_lists)
    gone = old_manifests - kept_manifests
    assert result.deleted_manifest_files_count == len(gone) > 0
    assert not any(exists(p) for p in gone)
    assert all(exists(p) for p in kept_manifests)
    assert live(t) == {"b", "c", "pos"}
    # expiring the overwrite and the row delta's parent: the delete file stays with the current snapshot
    result = expire_snapshots(t, older_than_ms=t.current_snapshot().timestamp_ms + 1)
    assert result.expired_snapshot_ids == (s3.snapshot_id,)
    assert result.deleted_data_files_count == 0
    assert exists(b)
    assert exists(c)
    assert exists(pos)
    # nothing left to expire: no commit
    location = t.metadata_location
    assert expire_snapshots(t, older_than_ms=0).expired_snapshot_ids == ()
    assert t.metadata_location == location


def test_expire_snapshots_keeps_files_of_tagged_snapshots_and_counts_delete_kinds(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    a = real_file(t, "a")
    t.new_fast_append().append_file(a).commit()
    eq = real_file(t, "eq", content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    t.new_row_delta().add_deletes(eq).commit()
    tagged = t.current_snapshot().snapshot_id
    t.manage_snapshots().create_tag(tagged, "keep").commit()
    t.new_delete().delete_file(a).commit()
    t.new_row_delta().remove_deletes(eq).commit()
    now = t.current_snapshot().timestamp_ms
    result = expire_snapshots(t, older_than_ms=now)
    assert tagged not in result.expired_snapshot_ids
    assert exists(a)
    assert exists(eq)
    t.manage_snapshots().remove_tag("keep").commit()
    result = expire_snapshots(t, older_than_ms=now + 1)
    assert result.deleted_data_files_count == 1
    assert result.deleted_equality_delete_files_count == 1
    assert not exists(a)
    assert not exists(eq)


def test_expire_snapshots_replans_on_the_fresh_metadata_after_losing_a_race(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    files = [real_file(t, n) for n in ("a", "b")]
    for f in files:
        t.new_fast_append().append_file(f).commit()
    stale = sql_catalog(tmp_path).load_table("db.t")
    s1, s2 = (s.snapshot_id for s in stale.snapshots())
    c = real_file(t, "c")
    t.new_fast_append().append_file(c).commit()  # the stale handle does not see this commit
    s3 = t.current_snapshot()
    result = expire_snapshots(stale, older_than_ms=s3.timestamp_ms + 1, retain_last=1)
    # planned again on the table as it is at commit time: the newest snapshot stays current
    assert set(result.expired_snapshot_ids) == {s1, s2}
    assert [s.snapshot_id for s in t.refresh().snapshots()] == [s3.snapshot_id]
    assert all(exists(f) for f in [*files, c])
    assert live(t) == {"a", "b", "c"}
    assert result.deleted_data_files_count == 0
    assert result.deleted_manifest_lists_count == 2


def test_expire_snapshots_refuses_when_gc_is_disabled_and_deletes_nothing(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"gc.enabled": "false"})
    ids = five_appends(t)
    with pytest.raises(ValidationError, match="gc.enabled"):
        expire_snapshots(t, older_than_ms=t.current_snapshot().timestamp_ms + 1)
    assert [s.snapshot_id for s in t.refresh().snapshots()] == ids


def test_expire_snapshots_clean_expired_metadata_removes_unused_specs(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.new_fast_append().append_file(real_file(t, "a")).commit()
    with t.update_spec() as u:
        u.remove_field("p")
    t.new_overwrite().overwrite_by_filter("true").commit()
    t.new_fast_append().append_file(real_file(t, "b", p=None)).commit()
    expire_snapshots(t, older_than_ms=t.current_snapshot().timestamp_ms, clean_expired_metadata=True)
    assert len(t.metadata.partition_specs) == 2  # the overwrite's manifest (spec 0) is still listed
    t.set_properties({"commit.manifest.target-size-bytes": "1"})  # else Java's rule skips a lone manifest
    rewrite_manifests(t, spec_id=0)  # drops the manifest that only recorded the deletion
    expire_snapshots(t, older_than_ms=t.current_snapshot().timestamp_ms, clean_expired_metadata=True)
    assert [s.spec_id for s in t.refresh().metadata.partition_specs] == [t.spec().spec_id]


# -- orphan files ---------------------------------------------------------------------------------------
def test_find_orphans_compares_spellings_and_respects_age() -> None:
    listed = [
        FileEntry("file:///w/t/data/a.parquet", 1, 10),
        FileEntry("file:///w/t/data/stray.parquet", 1, 10),
        FileEntry("file:///w/t/data/new.parquet", 1, 500),
        FileEntry("file:///w/t/metadata/version-hint.text", 1, 10),
    ]
    referenced = {"/w/t/data/a.parquet"}
    assert find_orphans(listed, referenced, older_than_ms=100) == ["file:///w/t/data/stray.parquet"]


@pytest.mark.parametrize("style", ["path", "file:/", "file:///"])
def test_remove_orphan_files_deletes_unreferenced_old_files(tmp_path: Path, style: str) -> None:
    cat = sql_catalog(tmp_path)
    root = str(tmp_path / "t")
    location = {"path": root, "file:/": "file:" + root, "file:///": "file://" + root}[style]
    t = cat.create_table("db.t", SCHEMA, location=location, partition_spec=PartitionSpecBuilder(SCHEMA).identity("p").build())
    a = real_file(t, "a")
    assert a.file_path.startswith(location + "/data/")
    t.new_fast_append().append_file(a).commit()
    stray = Path(root) / "data" / "p=0" / "stray.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"junk")
    young = Path(root) / "data" / "young.parquet"
    young.write_bytes(b"junk")
    old = 1_000_000_000
    for p in Path(root).rglob("*"):
        if p.is_file() and p != young:
            os.utime(p, (old, old))
    result = remove_orphan_files(t, dry_run=True)
    assert [comparison_key(x) for x in result.orphan_file_locations] == [str(stray)]
    assert stray.exists()
    result = remove_orphan_files(t)
    assert not stray.exists()
    assert young.exists()
    assert Path(root, "data", "a.parquet").exists()
    assert exists(t.metadata_location)
    assert live(t) == {"a"}  # the table still reads: every metadata file survived
    result = remove_orphan_files(t, older_than_ms=2**62)
    assert [comparison_key(x) for x in result.orphan_file_locations] == [str(young)]


# -- rewrite manifests ----------------------------------------------------------------------------------
def test_cluster_by_partition_sorts_live_entries_and_cuts_groups(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for i, p in enumerate([2, 0, 1, 0, None, 2]):
        t.new_fast_append().append_file(real_file(t, f"f{i}", p=p)).commit()  # type: ignore[arg-type]
    groups = cluster_by_partition(entries(t), 2)
    assert [[e.data_file.partition for e in g] for g in groups] == [[(None,), (0,), (0,)], [(1,), (2,), (2,)]]
    manifests = read_manifest_files(t.io, t.current_snapshot())
    assert target_manifest_count(manifests, (sum(m.manifest_length for m in manifests) + 1) // 2) == 2


def test_rewrite_manifests_clusters_by_partition_into_one_replace_snapshot(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for i in range(6):
        t.new_fast_append().append_file(real_file(t, f"f{i}", p=i % 3)).commit()
    t.new_delete().delete_file(str(Path(t.location()) / "data" / "f0.parquet")).commit()
    before = {(e.data_file.file_path, e.sequence_number, e.snapshot_id) for e in entries(t) if e.is_live}
    parent = t.current_snapshot()
    result = rewrite_manifests(t)
    snap = t.current_snapshot()
    manifests = read_manifest_files(t.io, snap)
    assert (result.rewritten_manifests_count, result.added_manifests_count) == (6, 1)
    assert len(manifests) == 1
    assert snap.summary["operation"] == Operation.REPLACE.value
    assert snap.parent_snapshot_id == parent.snapshot_id
    assert snap.summary["manifests-created"] == "1"
    assert snap.summary["manifests-replaced"] == "6"
    assert snap.summary["total-data-files"] == parent.summary["total-data-files"] == "5"
    after = entries(t)
    assert all(e.status == ManifestEntryStatus.EXISTING for e in after)
    assert {(e.data_file.file_path, e.sequence_number, e.snapshot_id) for e in after} == before
    # a tiny target: one manifest per ~entry, each partition contiguous across manifests
    t.set_properties({"commit.manifest.target-size-bytes": "1"})
    result = rewrite_manifests(t)
    assert result == type(result)(1, 5)
    parts = [e.data_file.partition for m in read_manifest_files(t.io, t.current_snapshot()) for e in _entries(t, m)]
    assert parts == sorted(parts)


def test_rewrite_manifests_keeps_row_ids_on_format_v3(tmp_path: Path) -> None:
    """Row lineage (v3): each data file keeps the first row id it inherited; the rewritten manifests take
    fresh ranges from the manifest list (as Java's writer assigns them), so next-row-id moves past them."""
    t = make_table(tmp_path, version=3)
    for i in range(3):
        t.new_fast_append().append_file(real_file(t, f"f{i}", p=i % 2)).commit()
    before = {e.data_file.file_path: e.data_file.first_row_id for e in entries(t) if e.is_live}
    assert sorted(before.values()) == [0, 10, 20]
    next_row_id = t.metadata.next_row_id
    result = rewrite_manifests(t)
    assert result.rewritten_manifests_count == 3
    assert {e.data_file.file_path: e.data_file.first_row_id for e in entries(t) if e.is_live} == before
    snap = t.current_snapshot()
    assert snap.first_row_id == next_row_id
    assert t.refresh().metadata.next_row_id == next_row_id + 30


def test_rewrite_manifests_spec_id_and_empty_table(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    assert rewrite_manifests(t) == type(rewrite_manifests(t))(0, 0)
    assert t.current_snapshot() is None
    t.new_fast_append().append_file(real_file(t, "a")).commit()
    with pytest.raises(ValidationError, match="Invalid spec id 7"):
        rewrite_manifests(t, spec_id=7)
    assert rewrite_manifests(t, spec_id=0).rewritten_manifests_count == 0  # one compact manifest: skipped


def _entries(t: Table, m: object) -> list:
    from floe.serde.manifest_avro import read_manifest

    with t.io.new_input(m.manifest_path).open() as fo:  # type: ignore[attr-defined]
        return read_manifest(fo.read(), manifest_file=m)  # type: ignore[arg-type]
