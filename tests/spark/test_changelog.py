"""create_changelog_view and floe.spark.streaming.changelog: change rows per snapshot, carry-over removal, update
images and net changes, as Iceberg Java computes them."""

from __future__ import annotations

import itertools

import pytest
from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.spark.streaming.changelog import (
    ChangelogRange,
    changelog_dataframe,
    changelog_files,
    changelog_range,
)
from floe.sql.engine import SqlSession
from floe.table.table import Table

_N = itertools.count()


def table(session: SqlSession, name: str) -> Table:
    t = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t


def history(session: SqlSession) -> str:
    """A table with four snapshots: insert 1,2 (one file); insert 3; update 2 -> bb; delete 1."""
    name = f"t_{next(_N)}"
    session.sql(f"CREATE TABLE db.{name} (id bigint, name string) USING iceberg")
    session.sql(f"INSERT INTO db.{name} SELECT /*+ COALESCE(1) */ * FROM VALUES (1, 'a'), (2, 'b') AS v(id, name)")
    session.sql(f"INSERT INTO db.{name} VALUES (3, 'c')")
    session.sql(f"UPDATE db.{name} SET name = 'bb' WHERE id = 2")
    session.sql(f"DELETE FROM db.{name} WHERE id = 1")
    return name


def view_rows(spark: SparkSession, view: str, cols: str = "id, name, _change_type, _change_ordinal") -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT {cols} FROM {view}").collect())


def test_changelog_files_skip_nothing_for_four_snapshots(session: SqlSession) -> None:
    t = table(session, history(session))
    assert sorted({f.ordinal for f in changelog_files(t, ChangelogRange())}) == [0, 1, 2, 3]


def test_raw_changelog_keeps_carryover_rows(session: SqlSession, spark: SparkSession) -> None:
    t = table(session, history(session))
    df = changelog_dataframe(spark, t).where("_change_ordinal = 2 AND id = 1")
    assert sorted(r["_change_type"] for r in df.collect()) == ["DELETE", "INSERT"]


def test_view_default_name_is_quoted_like_java(session: SqlSession) -> None:
    name = history(session)
    assert session.sql(f"CALL system.create_changelog_view(table => 'db.{name}')")[-1].rows == [(f"`{name}_changes`",)]


def test_view_removes_carryovers(session: SqlSession, spark: SparkSession) -> None:
    name = history(session)
    session.sql(f"CALL system.create_changelog_view(table => 'db.{name}')")
    assert view_rows(spark, f"{name}_changes") == [
        (1, "a", "DELETE", 3), (1, "a", "INSERT", 0), (2, "b", "DELETE", 2), (2, "b", "INSERT", 0),
        (2, "bb", "INSERT", 2), (3, "c", "INSERT", 1)]


def test_view_snapshot_range_excludes_start(session: SqlSession, spark: SparkSession) -> None:
    name = history(session)
    snaps = table(session, name).snapshots()
    session.sql(f"CALL system.create_changelog_view(table => 'db.{name}', changelog_view => 'v_{name}', options => "
                f"map('start-snapshot-id', '{snaps[0].snapshot_id}', 'end-snapshot-id', '{snaps[2].snapshot_id}'))")
    assert view_rows(spark, f"v_{name}") == [(2, "b", "DELETE", 1), (2, "bb", "INSERT", 1), (3, "c", "INSERT", 0)]


def test_view_identifier_columns_compute_updates(session: SqlSession, spark: SparkSession) -> None:
    name = history(session)
    session.sql(f"CALL system.create_changelog_view(table => 'db.{name}', identifier_columns => array('id'))")
    rows = view_rows(spark, f"{name}_changes", "id, name, _change_type")
    assert [r for r in rows if r[2].startswith("UPDATE")] == [(2, "b", "UPDATE_BEFORE"), (2, "bb", "UPDATE_AFTER")]


def test_view_net_changes(session: SqlSession, spark: SparkSession) -> None:
    name = history(session)
    session.sql(f"CALL system.create_changelog_view(table => 'db.{name}', net_changes => true)")
    assert view_rows(spark, f"{name}_changes", "id, name, _change_type") == [(2, "bb", "INSERT"), (3, "c", "INSERT")]


def test_view_net_changes_with_updates_refused(session: SqlSession) -> None:
    name = history(session)
    with pytest.raises(ValidationError, match="net changes"):
        session.sql(f"CALL system.create_changelog_view(table => 'db.{name}', net_changes => true, "
                    "identifier_columns => array('id'))")


def test_range_start_timestamp_equal_to_commit_excludes_it(session: SqlSession) -> None:
    t = table(session, history(session))
    snaps = t.snapshots()
    rng = changelog_range(t, start_timestamp_ms=snaps[1].timestamp_ms)
    assert rng.start_exclusive == snaps[1].snapshot_id


def test_range_start_not_ancestor_refused(session: SqlSession) -> None:
    t = table(session, history(session))
    snaps = t.snapshots()
    with pytest.raises(ValidationError, match="not a parent ancestor"):
        changelog_files(t, ChangelogRange(snaps[2].snapshot_id, snaps[1].snapshot_id))


def test_range_snapshot_and_timestamp_refused(session: SqlSession) -> None:
    t = table(session, history(session))
    with pytest.raises(ValidationError, match="both start-snapshot-id and start-timestamp"):
        changelog_range(t, start_snapshot_id=1, start_timestamp_ms=1)
