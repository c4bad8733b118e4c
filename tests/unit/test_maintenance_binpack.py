"""Bin-pack planning for rewrite_data_files (pure: tasks in, groups out) and compaction planning on a table."""

from __future__ import annotations

from pathlib import Path

import pytest
from _table_testing import data_file, entries, live, make_table

from floe.errors import CommitConflictError, ValidationError
from floe.maintenance.binpack import RewriteOptions, plan_groups
from floe.maintenance.rewrite_data_files import commit_rewrite, plan_rewrite
from floe.scan.tasks import FileScanTask
from floe.spec.manifest import FileContent, ManifestEntry, ManifestEntryStatus

MB = 1024 * 1024


def task(name: str, size_mb: float, *, p: int | None = 0, deletes: int = 0) -> FileScanTask:
    f = data_file(name, p=p, size=int(size_mb * MB))
    dels = tuple(
        ManifestEntry(ManifestEntryStatus.ADDED, 1, 1, 1, data_file(f"{name}-d{i}", p=p, content=FileContent.POSITION_DELETES))
        for i in range(deletes)
    )
    return FileScanTask(f, 0, dels)


def opts(**options: object) -> RewriteOptions:
    return RewriteOptions.parse({k.replace("_", "-"): str(v) for k, v in options.items()}, {})


def names(groups: list) -> list[list[str]]:
    return [sorted(t.data_file.file_path.rsplit("/", 1)[-1].removesuffix(".parquet") for t in g.tasks) for g in groups]


def test_options_default_from_table_property_and_validate() -> None:
    o = RewriteOptions.parse(None, {"write.target-file-size-bytes": str(100 * MB)})
    assert (o.target_file_size_bytes, o.min_file_size_bytes, o.max_file_size_bytes) == (100 * MB, 75 * MB, 180 * MB)
    assert o.min_input_files == 5
    assert not o.rewrite_all
    assert not o.partial_progress_enabled
    assert RewriteOptions.parse({"target-file-size-bytes": 1000}, {}).max_file_size_bytes == 1800
    with pytest.raises(ValidationError, match="Unknown rewrite_data_files option.*bogus"):
        RewriteOptions.parse({"bogus": "1"}, {})
    with pytest.raises(ValidationError, match="min-input-files must be an integer"):
        RewriteOptions.parse({"min-input-files": "x"}, {})
    with pytest.raises(ValidationError, match="min-file-size-bytes"):
        RewriteOptions.parse({"target-file-size-bytes": "100", "min-file-size-bytes": "200"}, {})
    with pytest.raises(ValidationError, match="rewrite-all must be true or false"):
        RewriteOptions.parse({"rewrite-all": "yes"}, {})


def test_small_files_group_per_partition_once_there_are_enough() -> None:
    tasks = [task(f"a{i}", 1, p=0) for i in range(5)] + [task(f"b{i}", 1, p=1) for i in range(4)]
    tasks.append(task("ok", 100, p=0))  # within [75, 180] MB: left alone
    groups = plan_groups(tasks, opts(target_file_size_bytes=100 * MB))
    # partition 0 has 5 small files (min-input-files); partition 1 only 4 and 4 MB < target
    assert names(groups) == [[f"a{i}" for i in range(5)]]
    assert groups[0].partition == (0,)
    groups = plan_groups(tasks, opts(target_file_size_bytes=100 * MB, min_input_files=2))
    assert names(groups) == [[f"a{i}" for i in range(5)], [f"b{i}" for i in range(4)]]
    assert groups[1].size_bytes == 4 * MB


def test_enough_bytes_too_large_files_deletes_and_rewrite_all() -> None:
    o = opts(target_file_size_bytes=10 * MB)
    # two files adding up to more than one target file: worth merging even below min-input-files
    assert names(plan_groups([task("x", 7), task("y", 7)], o)) == [["x", "y"]]
    # a single file too large is split; a single small file alone is not worth a rewrite
    assert names(plan_groups([task("big", 30, p=0), task("tiny", 1, p=1)], o)) == [["big"]]
    # files with many deletes are rewritten even at a good size
    tasks = [task("good", 10, p=0, deletes=3), task("fine", 10, p=1, deletes=1)]
    assert names(plan_groups(tasks, opts(target_file_size_bytes=10 * MB, delete_file_threshold=2))) == [["good"]]
    assert names(plan_groups(tasks, opts(target_file_size_bytes=10 * MB, rewrite_all="true"))) == [["good"], ["fine"]]


def test_groups_are_cut_at_max_group_size_and_unpartitioned_files_group_together() -> None:
    tasks = [task(f"f{i}", 4, p=None) for i in range(6)]
    groups = plan_groups(tasks, opts(target_file_size_bytes=10 * MB, max_file_group_size_bytes=9 * MB, min_input_files=2))
    assert [len(g.tasks) for g in groups] == [2, 2, 2]
    assert all(g.partition == () for g in groups)
    assert all(g.size_bytes <= 9 * MB for g in groups)


def test_plan_rewrite_on_a_table_uses_the_filter_and_the_snapshot_sequence_number(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    assert plan_rewrite(t).groups == ()  # empty table: nothing to do
    for i in range(3):
        t.new_fast_append().append_file(data_file(f"a{i}", p=0, size=100)).append_file(data_file(f"b{i}", p=1, size=100)).commit()
    plan = plan_rewrite(t, options={"min-input-files": "2", "target-file-size-bytes": "1000"})
    assert names(list(plan.groups)) == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]
    assert plan.snapshot_id == t.current_snapshot().snapshot_id
    assert plan.sequence_number == 3
    plan = plan_rewrite(t, where="p = 1", options={"min-input-files": "2", "target-file-size-bytes": "1000"})
    assert names(list(plan.groups)) == [["b0", "b1", "b2"]]
    assert plan.read_scan.row_filter.__class__.__name__ == "AlwaysTrue"  # rows are read whole


def test_commit_rewrite_is_one_replace_snapshot_and_conflicts_with_concurrent_deletes(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for i in range(3):
        t.new_fast_append().append_file(data_file(f"a{i}", p=0, size=100)).commit()
    options = {"min-input-files": "2", "target-file-size-bytes": "1000"}
    plan = plan_rewrite(t, options=options)
    (group,) = plan.groups
    commit_rewrite(t, plan, [(group, [data_file("merged", p=0, size=300, records=30)])])
    snap = t.current_snapshot()
    assert snap.summary["operation"] == "replace"
    assert snap.summary["deleted-data-files"] == "3"
    assert live(t) == {"merged"}
    merged = next(e for e in entries(t) if e.is_live)
    assert merged.sequence_number == plan.sequence_number == 3  # older equality deletes keep applying
    # a position delete for a file being rewritten lands first: the rewrite must not drop it silently
    for i in range(2):
        t.new_fast_append().append_file(data_file(f"b{i}", p=1, size=100)).commit()
    plan = plan_rewrite(t, options=options)
    (group,) = plan.groups
    target = group.tasks[0].data_file.file_path
    t.new_row_delta().add_deletes(
        data_file("pos", p=1, content=FileContent.POSITION_DELETES, referenced_data_file=target)
    ).commit()
    with pytest.raises(CommitConflictError):
        commit_rewrite(t, plan, [(group, [data_file("merged-b", p=1, size=200, records=20)])])
    # a rewritten file deleted meanwhile conflicts too
    plan = plan_rewrite(t, options=options)
    (group,) = plan.groups
    t.new_delete().delete_file(group.tasks[1].data_file.file_path).commit()
    with pytest.raises(CommitConflictError):
        commit_rewrite(t, plan, [(group, [data_file("merged-b", p=1, size=200, records=20)])])
    assert "merged-b" not in live(t)
