"""Snapshot management: refs, rollback, set-current, cherry-pick."""

from __future__ import annotations

import pytest
from _table_testing import data_file, live, make_table

from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.spec.refs import SnapshotRefType


def _three(tmp_path):
    t = make_table(tmp_path)
    for n in "abc":
        t.append([data_file(n)])
    return t, [s.snapshot_id for s in t.snapshots()]


def test_branch_and_tag_lifecycle(tmp_path) -> None:
    t, (s1, s2, s3) = _three(tmp_path)
    t.manage_snapshots().create_tag(s1, "v1").create_branch(s2, "dev", max_ref_age_ms=1000).commit()
    assert t.refs()["v1"].type == SnapshotRefType.TAG
    assert t.refs()["v1"].snapshot_id == s1
    assert t.refs()["dev"].snapshot_id == s2
    assert t.refs()["dev"].max_ref_age_ms == 1000
    t.manage_snapshots().replace_branch("dev", s3).replace_tag("v1", s2).commit()
    assert t.refs()["dev"].snapshot_id == s3
    assert t.refs()["dev"].max_ref_age_ms == 1000
    t.manage_snapshots().rename_branch("dev", "feature").commit()
    assert "dev" not in t.refs()
    assert t.refs()["feature"].snapshot_id == s3
    t.manage_snapshots().remove_branch("feature").remove_tag("v1").commit()
    assert set(t.refs()) == {"main"}
    with pytest.raises(ValidationError):
        t.manage_snapshots().create_tag(None, "main").commit()
    with pytest.raises(ValidationError):
        t.manage_snapshots().remove_branch("main").commit()
    with pytest.raises(NoSuchSnapshotError):
        t.manage_snapshots().create_tag(123, "x").commit()


def test_rollback_to_ancestor_and_time(tmp_path) -> None:
    t, (s1, s2, s3) = _three(tmp_path)
    t.rollback_to_snapshot(s2)
    assert t.current_snapshot().snapshot_id == s2
    assert live(t) == {"a", "b"}
    assert [h.snapshot_id for h in t.history()][-1] == s2
    t.set_current_snapshot(s3)  # not an ancestor any more, but set-current allows it
    assert t.current_snapshot().snapshot_id == s3
    ts2 = t.snapshot_by_id(s2).timestamp_ms
    t.rollback_to_timestamp(ts2 + 1)
    assert t.current_snapshot().snapshot_id in (s2, s1)
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.rollback_to_snapshot(s3)


def test_fast_forward_branch(tmp_path) -> None:
    t, (s1, _, s3) = _three(tmp_path)
    t.manage_snapshots().create_branch(s1, "old").commit()
    t.manage_snapshots().fast_forward("old", "main").commit()
    assert t.refs()["old"].snapshot_id == s3


def test_cherry_pick_staged_snapshot_fast_forwards(tmp_path) -> None:
    t, (_, _, s3) = _three(tmp_path)
    op = t.new_append().append_file(data_file("wap")).stage_only()
    op.commit()
    assert t.current_snapshot().snapshot_id == s3
    t.cherry_pick(op.snapshot_id)
    assert t.current_snapshot().snapshot_id == op.snapshot_id
    assert "wap" in live(t)


def test_cherry_pick_onto_new_parent_reappends_files(tmp_path) -> None:
    t, _ = _three(tmp_path)
    staged = t.new_append().append_file(data_file("wap")).stage_only()
    staged.commit()
    t.append([data_file("d")])
    t.cherry_pick(staged.snapshot_id)
    snap = t.current_snapshot()
    assert snap.snapshot_id != staged.snapshot_id
    assert snap.summary["source-snapshot-id"] == str(
        staged.snapshot_id
    )
    assert live(t) == {"a", "b", "c", "d", "wap"}
    with pytest.raises(ValidationError, match="Duplicate"):
        t.cherry_pick(staged.snapshot_id)


def test_cherry_pick_overwrite_onto_other_parent_unsupported(tmp_path) -> None:
    t, _ = _three(tmp_path)
    staged = t.new_overwrite().overwrite_by_filter("p = 0").add_file(data_file("x")).stage_only()
    staged.commit()
    t.append([data_file("d")])
    with pytest.raises(UnsupportedError):
        t.cherry_pick(staged.snapshot_id)
