"""Transactions: atomic multi-change commits, replay after lost races, conflicts, cleanup, retry policy."""

from __future__ import annotations

import os

import pytest
from _table_testing import data_file, live, make_table, sql_catalog

from floe.catalog.hadoop import HadoopTableOperations
from floe.errors import CommitConflictError, CommitFailedError, CommitStateUnknownError, ValidationError
from floe.spec.metadata_builder import apply_updates
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import LongType
from floe.table.retry import RetryPolicy, run_with_retries
from floe.table.table import Table


@pytest.fixture(params=[1, 2, 3], ids=lambda v: f"v{v}")
def version(request: pytest.FixtureRequest) -> int:
    """The table format version (DESIGN rule 9: commits are tested across format versions)."""
    return int(request.param)


def _files_in(folder: str) -> set[str]:
    return {f for f in os.listdir(folder)}


def test_transaction_commits_all_changes_as_one_version(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    before = t.metadata_location
    txn = t.transaction()
    txn.set_properties(owner="me")
    txn.update_schema().add_column("extra", LongType()).commit()
    txn.new_append().append_file(data_file("a")).commit()
    assert t.metadata_location == before  # nothing visible before commit_transaction
    txn.commit_transaction()
    assert t.properties["owner"] == "me"
    assert "extra" in t.schema().column_names
    assert live(t) == {"a"}
    assert t.metadata_location.rsplit("/", 1)[-1].startswith("00001-")
    assert [e.metadata_file for e in t.metadata.metadata_log] == [before]


def test_stale_handle_replays_append_on_fresh_base(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    other = sql_catalog(tmp_path).load_table("db.t")
    t.append([data_file("a")])
    other.append([data_file("b")])  # lost the race once, refreshed, re-applied
    assert live(other) == {"a", "b"}
    assert len(other.snapshots()) == 2
    assert other.current_snapshot().parent_snapshot_id == t.snapshots()[0].snapshot_id
    assert other.current_snapshot().summary["total-data-files"] == "2"


def test_retried_append_deletes_files_of_failed_attempts(tmp_path) -> None:
    t = make_table(tmp_path)
    other = sql_catalog(tmp_path).load_table("db.t")
    t.append([data_file("a")])
    other.append([data_file("b")])
    metadata_dir = os.path.join(t.location(), "metadata")
    lists = [f for f in _files_in(metadata_dir) if f.startswith("snap-")]
    assert len(lists) == 2  # the first attempt's manifest list was removed
    referenced = {
        s.manifest_list.rsplit("/", 1)[-1] for s in sql_catalog(tmp_path).load_table("db.t").snapshots()
    }
    assert set(lists) == referenced


def test_overwrite_conflicts_with_concurrent_append_to_same_partition(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=0)])
    stale = sql_catalog(tmp_path).load_table("db.t")
    op = stale.new_overwrite().overwrite_by_filter("p = 0").add_file(data_file("new", p=0))
    t.append([data_file("concurrent", p=0)])
    with pytest.raises(CommitConflictError, match="concurrent.parquet"):
        op.commit()
    assert live(t.refresh()) == {"a", "concurrent"}


def test_overwrite_other_partition_append_does_not_conflict(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=0)])
    stale = sql_catalog(tmp_path).load_table("db.t")
    op = stale.new_overwrite().overwrite_by_filter("p = 0").add_file(data_file("new", p=0))
    t.append([data_file("other", p=1)])
    op.commit()
    assert live(t.refresh()) == {"new", "other"}


def test_replace_partitions_conflicts_on_concurrent_write_to_replaced_partition(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    stale = sql_catalog(tmp_path).load_table("db.t")
    op = stale.new_replace_partitions().add_file(data_file("new", p=3))
    t.append([data_file("concurrent", p=3)])
    with pytest.raises(CommitConflictError):
        op.commit()
    stale2 = sql_catalog(tmp_path).load_table("db.t")
    op2 = stale2.new_replace_partitions().add_file(data_file("new2", p=3)).skip_validation()
    t.append([data_file("c2", p=3)])
    op2.commit()  # explicitly unvalidated: last writer wins
    assert live(t.refresh()) == {"new2"}


def test_delete_file_removed_concurrently_conflicts(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("a"), data_file("b")])
    stale = sql_catalog(tmp_path).load_table("db.t")
    op = stale.new_delete().delete_file("/data/a.parquet")
    t.new_delete().delete_file("/data/a.parquet").commit()
    with pytest.raises(CommitConflictError, match="a.parquet"):
        op.commit()


def test_rewrite_conflicts_with_new_deletes_for_rewritten_file(tmp_path) -> None:
    t = make_table(tmp_path)
    t.append([data_file("a", p=0)])
    stale = sql_catalog(tmp_path).load_table("db.t")
    op = stale.new_rewrite().rewrite_files(["/data/a.parquet"], [data_file("a2", p=0)])
    from floe.spec.manifest import FileContent

    t.new_row_delta().add_deletes(
        data_file("pos", p=0, content=FileContent.POSITION_DELETES, referenced_data_file="/data/a.parquet")
    ).commit()
    with pytest.raises(CommitConflictError):
        op.commit()


class _UnknownOutcomeOps(HadoopTableOperations):
    """Commits for real, then reports an unknown outcome (a lost acknowledgement)."""

    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        super().commit(base, base_location, new)
        raise CommitStateUnknownError("connection lost after commit")


class _AlwaysStaleOps(HadoopTableOperations):
    """Every commit loses the race."""

    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        raise CommitFailedError("someone else committed")


def _hadoop_table(tmp_path, ops_cls: type[HadoopTableOperations]) -> Table:
    import floe

    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "hw"))
    cat.create_namespace("db")
    real = cat.create_table(
        "db.t",
        make_table(tmp_path, partitioned=False).schema(),
        properties={
            "commit.retry.num-retries": "2",
            "commit.retry.min-wait-ms": "1",
            "commit.retry.max-wait-ms": "2",
        },
    )
    ops = ops_cls(real.identifier, real.io, real.location())
    return Table(real.identifier, real.metadata, real.metadata_location, ops, catalog=cat)


def test_commit_state_unknown_keeps_every_written_file(tmp_path) -> None:
    t = _hadoop_table(tmp_path, _UnknownOutcomeOps)
    with pytest.raises(CommitStateUnknownError):
        t.append([data_file("a", p=None)])
    meta = os.path.join(t.location(), "metadata")
    assert any(f.startswith("snap-") for f in _files_in(meta))
    assert any(f.endswith("-m1.avro") for f in _files_in(meta))
    import floe

    assert live(floe.load_table(t.location())) == {"a"}  # it did commit, and nothing it needs was deleted


def test_commit_failed_after_retries_deletes_written_files(tmp_path) -> None:
    t = _hadoop_table(tmp_path, _AlwaysStaleOps)
    with pytest.raises(CommitFailedError):
        t.append([data_file("a", p=None)])
    meta = os.path.join(t.location(), "metadata")
    assert not [f for f in _files_in(meta) if f.endswith(".avro")]


def test_retry_policy_from_properties_and_backoff() -> None:
    p = RetryPolicy.from_properties(
        {"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "10", "commit.retry.max-wait-ms": "25"}
    )
    assert (p.num_retries, p.min_wait_ms, p.max_wait_ms) == (2, 10, 25)
    assert 10 <= p.delay_ms(1) <= 11
    assert 20 <= p.delay_ms(2) <= 22
    assert 25 <= p.delay_ms(3) <= 27.5
    assert RetryPolicy.from_properties({}).num_retries == 4
    calls, sleeps = [], []

    def attempt(n: int) -> int:
        calls.append(n)
        if n < 2:
            raise CommitFailedError("lost")
        return n

    assert run_with_retries(attempt, p, sleep=sleeps.append) == 2
    assert calls == [0, 1, 2]
    assert len(sleeps) == 2
    with pytest.raises(CommitFailedError):
        run_with_retries(lambda n: (_ for _ in ()).throw(CommitFailedError("x")), p, sleep=sleeps.append)

    def conflict(n: int) -> int:
        raise CommitConflictError("semantic")

    calls.clear()
    with pytest.raises(CommitConflictError):
        run_with_retries(lambda n: calls.append(n) or conflict(n), p, sleep=sleeps.append)
    assert calls == [0]  # conflicts are never retried


def test_committed_transaction_cannot_be_reused(tmp_path) -> None:
    t = make_table(tmp_path)
    txn = t.transaction().set_properties(a="1")
    txn.commit_transaction()
    with pytest.raises(ValidationError):
        txn.commit_transaction()


def test_commit_table_rest_shape_checks_requirements(tmp_path) -> None:
    from floe.spec.updates import AssertCurrentSchemaId, SetProperties

    t = make_table(tmp_path)
    cat = sql_catalog(tmp_path)
    updated = cat.commit_table("db.t", [AssertCurrentSchemaId(0)], [SetProperties({"k": "v"})])
    assert updated.properties["k"] == "v"
    with pytest.raises(CommitFailedError):
        cat.commit_table("db.t", [AssertCurrentSchemaId(7)], [SetProperties({"k": "w"})])
    assert apply_updates(t.metadata, []) is t.metadata


def test_set_properties_format_version_upgrades_and_refuses_downgrades(tmp_path) -> None:
    import pyarrow as pa

    import floe
    from floe.errors import UnsupportedError, ValidationError

    cat = floe.load_catalog("fv", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.x", schema=pa.schema([("id", pa.int64())]), properties={"format-version": "1"})
    t.set_properties({"format-version": "2", "k": "v"})
    t = t.refresh()
    assert t.format_version == 2
    assert dict(t.properties) == {"k": "v", "write.parquet.compression-codec": "zstd"}  # not stored as a property
    with pytest.raises(ValidationError, match="Cannot downgrade v2 table to v1"):
        t.set_properties({"format-version": "1"})
    with pytest.raises(UnsupportedError, match="99"):
        t.set_properties({"format-version": "99"})
    with pytest.raises(ValidationError, match="must be an integer"):
        t.set_properties({"format-version": "two"})
    t.set_properties({"format-version": "3"})
    assert t.refresh().format_version == 3


def test_property_values_floe_would_fail_on_are_refused_when_set(tmp_path) -> None:
    import pyarrow as pa

    import floe
    from floe.errors import ValidationError

    cat = floe.load_catalog("pv", type="hadoop", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match="commit.manifest.min-count-to-merge must be an integer, got 'many'"):
        cat.create_table("db.x", schema=pa.schema([("id", pa.int64())]),
                         properties={"commit.manifest.min-count-to-merge": "many"})
    t = cat.create_table("db.x", schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(ValidationError, match="commit.manifest-merge.enabled must be true or false, got 'maybe'"):
        t.set_properties({"commit.manifest-merge.enabled": "maybe"})
    with pytest.raises(ValidationError, match="write.delete.mode must be one of copy-on-write, merge-on-read"):
        t.set_properties({"write.delete.mode": "sometimes"})
    t.set_properties({"commit.manifest-merge.enabled": "FALSE", "write.distribution-mode": "range", "custom.key": "x"})
    assert t.refresh().properties["commit.manifest-merge.enabled"] == "FALSE"
    t.append(pa.table({"id": [1]}))  # later writes still work


def test_transaction_as_context_manager_commits_on_exit(tmp_path) -> None:
    t = make_table(tmp_path)
    with t.transaction() as txn:
        txn.set_properties(owner="me")
        txn.new_append().append_file(data_file("a")).commit()
        assert "owner" not in t.properties  # nothing visible inside the block
    assert t.properties["owner"] == "me"
    assert live(t) == {"a"}


def test_transaction_context_manager_commits_nothing_when_the_block_fails(tmp_path) -> None:
    t = make_table(tmp_path)
    before = t.metadata_location
    with pytest.raises(RuntimeError, match="boom"), t.transaction() as txn:
        txn.set_properties(owner="me")
        raise RuntimeError("boom")
    assert t.refresh().metadata_location == before
    assert "owner" not in t.properties
