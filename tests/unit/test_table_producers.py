"""Snapshot producers: append, merge, overwrite, replace partitions, delete, rewrite, row delta."""

from __future__ import annotations

import pytest
from _table_testing import data_file, entries, live, make_table

from floe.errors import CommitConflictError, ValidationError
from floe.scan.planner import read_manifest_files
from floe.spec.manifest import FileContent, ManifestContent, ManifestEntryStatus
from floe.spec.snapshot import Operation

VERSIONS = [1, 2, 3]  # DESIGN rule 9: commits are tested across format versions
ROW_LEVEL_VERSIONS = [2, 3]  # delete files and data sequence numbers start in v2


@pytest.mark.parametrize("version", VERSIONS)
def test_fast_append_new_manifest_keeps_existing_ones(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.new_fast_append().append_file(data_file("a")).commit()
    first = read_manifest_files(t.io, t.current_snapshot())
    t.new_fast_append().append_file(data_file("b", p=1)).append_file(data_file("c", p=1)).commit()
    snap = t.current_snapshot()
    manifests = read_manifest_files(t.io, snap)
    assert len(manifests) == 2
    assert manifests[1].manifest_path == first[0].manifest_path
    s = snap.summary
    assert s["operation"] == "append"
    assert s["added-data-files"] == "2"
    assert s["added-records"] == "20"
    assert s["total-data-files"] == "3"
    assert s["total-records"] == "30"
    assert s["changed-partition-count"] == "1"
    assert s["added-files-size"] == "2000"
    assert s["total-files-size"] == "3000"
    assert live(t) == {"a", "b", "c"}
    assert snap.sequence_number == (0 if version == 1 else 2)
    assert snap.parent_snapshot_id == t.snapshots()[0].snapshot_id


@pytest.mark.parametrize("version", VERSIONS)
def test_manifest_and_list_names_follow_iceberg(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    op = t.new_append().append_file(data_file("a"))
    op.commit()
    snap = t.current_snapshot()
    name = snap.manifest_list.rsplit("/", 1)[-1]
    assert name.startswith(f"snap-{op.snapshot_id}-0-")
    assert name.endswith(".avro")
    manifest = read_manifest_files(t.io, snap)[0].manifest_path.rsplit("/", 1)[-1]
    assert manifest.endswith("-m1.avro")
    assert snap.manifest_list.startswith(t.location() + "/metadata/")


def test_write_metadata_path_moves_manifests(tmp_path) -> None:
    t = make_table(tmp_path, **{"write.metadata.path": str(tmp_path / "elsewhere")})
    t.append([data_file("a")])
    assert t.current_snapshot().manifest_list.startswith(str(tmp_path / "elsewhere") + "/snap-")
    assert t.metadata_location.startswith(str(tmp_path / "elsewhere") + "/00001-")


@pytest.mark.parametrize("version", VERSIONS)
def test_merge_append_merges_at_min_count(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version, **{"commit.manifest.min-count-to-merge": "3"})
    t.append([data_file("a")])
    t.append([data_file("b")])
    assert len(read_manifest_files(t.io, t.current_snapshot())) == 2
    t.append([data_file("c")])
    manifests = read_manifest_files(t.io, t.current_snapshot())
    assert len(manifests) == 1
    m = manifests[0]
    assert (m.added_files_count, m.existing_files_count) == (1, 2)
    assert live(t) == {"a", "b", "c"}
    s = t.current_snapshot().summary
    assert "manifests-created" not in s  # Iceberg 1.10 writes manifest counts for rewrite_manifests only
    if version >= 2:
        seqs = {e.data_file.file_path[-9:-8]: e.sequence_number for e in entries(t)}
        assert seqs == {"a": 1, "b": 2, "c": 3}  # existing entries keep their data sequence numbers


def test_merge_append_disabled_or_small_target_keeps_manifests(tmp_path) -> None:
    t = make_table(
        tmp_path, **{"commit.manifest.min-count-to-merge": "2", "commit.manifest-merge.enabled": "false"}
    )
    for n in "abc":
        t.append([data_file(n)])
    assert len(read_manifest_files(t.io, t.current_snapshot())) == 3
    t2 = make_table(
        tmp_path,
        name="db.t2",
        **{"commit.manifest.min-count-to-merge": "2", "commit.manifest.target-size-bytes": "1"},
    )
    for n in "abc":
        t2.append([data_file(n)])
    assert len(read_manifest_files(t2.io, t2.current_snapshot())) == 3  # every bin holds one manifest


@pytest.mark.parametrize("version", VERSIONS)
def test_overwrite_by_filter_replaces_partition(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=0), data_file("b", p=1)])
    t.new_overwrite().overwrite_by_filter("p = 0").add_file(data_file("c", p=0)).commit()
    snap = t.current_snapshot()
    assert snap.operation == Operation.OVERWRITE
    assert live(t) == {"b", "c"}
    s = snap.summary
    assert s["deleted-data-files"] == "1"
    assert s["deleted-records"] == "10"
    assert s["total-data-files"] == "2"
    deleted = [e for e in entries(t) if e.status == ManifestEntryStatus.DELETED]
    assert [e.data_file.file_path for e in deleted] == ["/data/a.parquet"]
    assert deleted[0].snapshot_id == snap.snapshot_id


def test_overwrite_partial_file_match_is_an_error(tmp_path) -> None:
    t = make_table(tmp_path, partitioned=False)
    t.append([data_file("a", p=None, lower=0, upper=100)])
    with pytest.raises(ValidationError, match="some, but not all, rows match"):
        t.new_overwrite().overwrite_by_filter("id < 50").commit()
    t.new_overwrite().overwrite_by_filter("id < 500").commit()  # metrics prove every row matches
    assert live(t) == set()
    assert t.current_snapshot().operation == Operation.DELETE


@pytest.mark.parametrize("version", VERSIONS)
def test_replace_partitions_replaces_only_touched_partitions(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=0), data_file("b", p=1), data_file("c", p=1)])
    t.new_replace_partitions().add_file(data_file("d", p=1)).commit()
    assert live(t) == {"a", "d"}
    assert t.current_snapshot().summary["deleted-data-files"] == "2"


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_files_by_path_and_filter(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=0), data_file("b", p=1), data_file("c", p=2)])
    t.new_delete().delete_file("/data/a.parquet").commit()
    assert live(t) == {"b", "c"}
    assert t.current_snapshot().operation == Operation.DELETE
    t.new_delete().delete_from_row_filter("p >= 2").commit()
    assert live(t) == {"b"}
    assert t.current_snapshot().summary["total-records"] == "10"
    with pytest.raises(CommitConflictError, match="Missing required files"):
        t.new_delete().delete_file("/data/a.parquet").commit()


@pytest.mark.parametrize("version", ROW_LEVEL_VERSIONS)
def test_rewrite_files_keeps_rows_and_sequence_number(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=0)])
    t.append([data_file("b", p=0)])
    t.new_rewrite().rewrite_files(
        ["/data/a.parquet", "/data/b.parquet"], [data_file("ab", p=0, records=20)], data_sequence_number=1
    ).commit()
    snap = t.current_snapshot()
    assert snap.operation == Operation.REPLACE
    assert live(t) == {"ab"}
    added = [e for e in entries(t) if e.status == ManifestEntryStatus.ADDED]
    assert added[0].sequence_number == 1
    assert added[0].file_sequence_number == 3
    assert snap.summary["total-records"] == "20"


def test_row_delta_adds_delete_manifest_v2(tmp_path) -> None:
    # v2 only: v3 tables take position deletes as deletion vectors (Iceberg Java refuses Parquet ones there)
    t = make_table(tmp_path)
    t.append([data_file("a", p=0)])
    pos = data_file(
        "a-deletes",
        p=0,
        records=2,
        content=FileContent.POSITION_DELETES,
        referenced_data_file="/data/a.parquet",
    )
    t.new_row_delta().add_deletes(pos).validate_data_files_exist(["/data/a.parquet"]).commit()
    snap = t.current_snapshot()
    assert snap.operation == Operation.DELETE
    manifests = read_manifest_files(t.io, snap)
    assert [m.content for m in manifests] == [ManifestContent.DATA, ManifestContent.DELETES]
    s = snap.summary
    assert s["added-delete-files"] == "1"
    assert s["added-position-deletes"] == "2"
    assert s["total-position-deletes"] == "2"
    t.new_row_delta().add_rows(data_file("b", p=0)).add_deletes(
        data_file("eq", p=0, content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    ).commit()
    assert t.current_snapshot().operation == Operation.OVERWRITE
    assert t.current_snapshot().summary["total-equality-deletes"] == "10"


def test_row_delta_refuses_position_delete_files_in_v3(tmp_path) -> None:
    # spec: position delete files must not be added to v3 tables (deletion vectors replace them)
    t = make_table(tmp_path, version=3)
    t.append([data_file("a", p=0)])
    pos = data_file("a-deletes", p=0, records=2, content=FileContent.POSITION_DELETES, referenced_data_file="/data/a.parquet")
    before = t.current_snapshot()
    with pytest.raises(ValidationError, match="a-deletes.*format version 3 takes deletion vectors"):
        t.new_row_delta().add_deletes(pos).commit()
    assert t.refresh().current_snapshot() == before
    # equality deletes stay valid in v3
    t.new_row_delta().add_deletes(data_file("eq", p=0, content=FileContent.EQUALITY_DELETES, equality_ids=(1,))).commit()
    assert t.current_snapshot().summary["added-equality-deletes"] == "10"


def test_row_delta_rejected_in_v1(tmp_path) -> None:
    t = make_table(tmp_path, version=1)
    with pytest.raises(ValidationError, match="format version 1"):
        t.new_row_delta().add_deletes(data_file("d", content=FileContent.POSITION_DELETES)).commit()


@pytest.mark.parametrize("version", VERSIONS)
def test_append_to_branch_leaves_main(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a")])
    main = t.current_snapshot().snapshot_id
    t.manage_snapshots().create_branch(None, "dev").commit()
    t.append([data_file("b")], branch="dev")
    assert t.current_snapshot().snapshot_id == main
    dev = t.snapshot_by_name("dev")
    assert dev.parent_snapshot_id == main
    assert live(t, dev.snapshot_id) == {"a", "b"}


def test_append_v3_assigns_row_ids(tmp_path) -> None:
    t = make_table(tmp_path, version=3)
    t.append([data_file("a", records=5)])
    t.append([data_file("b", records=7)])
    first, second = t.snapshots()
    assert (first.first_row_id, first.added_rows) == (0, 5)
    assert second.first_row_id == 5
    assert t.metadata.next_row_id == 12
