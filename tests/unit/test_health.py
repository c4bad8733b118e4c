"""``floe.health``: the report, the score, each finding and its exact statement, from metadata alone.

The statements are run through Spark SQL in tests/spark/test_health_fixes.py; here they are checked as
text, with the numbers the report derives them from.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from _health_tables import create, data_file, deletes_table, many_snapshots, streaming_table
from _table_testing import sql_catalog

import floe
import floe.health
from floe.health import HealthReport
from floe.health.findings import KEEP_SNAPSHOTS
from floe.health.score import score, score_parts
from floe.health.statements import call, sql_string, timestamp_literal, where_for_partitions
from floe.spec.manifest import FileContent

DAY_MS = 24 * 3600 * 1000


def test_health_streaming_500_tiny_files_small_files_finding(tmp_path: Path) -> None:
    table = streaming_table(sql_catalog(tmp_path), "db.stream", appends=500)
    report = floe.health(table)
    assert report.data_files == report.small_files == 500
    assert [p.partition for p in report.partitions] == ["dt=a", "dt=b"]
    assert report.size_histogram[0] == 500  # every file in the first bin (< 1/1024 of 512 MiB)
    f = report.finding("SMALL_FILES")
    assert f is not None
    assert f.statement == (
        "CALL unit.system.rewrite_data_files(table => 'db.stream', where => \"dt = 'a' OR dt = 'b'\")"
    )
    assert (f.files_before, f.files_after) == (500, 2)
    assert f.partitions == ("dt=a", "dt=b")
    assert f.safe_now and "only appends" in f.safe_reason
    # 2 ideal files of 500: file_size = 0.004, no deletes, merged manifests, 500 snapshots within retention
    assert report.score_parts.file_size == pytest.approx(2 / 500)
    assert (report.score_parts.manifests, report.score_parts.snapshots) == (1.0, 1.0)
    assert report.score == round(0.9 * (40 * 2 / 500 + 40 + 20) + 5 + 5) == 64
    assert report.snapshots.count == 500
    assert report.timeline[-1].added_files == 1


def test_health_score_weights_follow_amoro(tmp_path: Path) -> None:
    table = deletes_table(sql_catalog(tmp_path), "db.del")
    report = floe.health(table)
    a, b = report.partitions
    assert (a.partition, a.data_files, a.data_rows) == ("dt=a", 4, 4000)
    assert (a.position_delete_files, a.position_delete_rows) == (8, 1200)
    assert (a.equality_delete_files, a.equality_delete_rows) == (2, 400)
    assert (b.partition, b.small_files, b.delete_files) == ("dt=b", 0, 0)
    parts = score_parts(report.partitions, report.target_file_size_bytes, report.manifests, report.snapshots)
    # 4 small files of 8 MiB pack into one: 1 + 1 ideal files of 5
    assert parts.file_size == pytest.approx(2 / 5)
    assert parts.equality_deletes == pytest.approx(1 - 400 / 54_000)
    assert parts.position_deletes == pytest.approx(1 - 1200 / 54_000)
    # 11 manifests (one per commit) where 2 would do: 9 tolerated (the MANIFESTS finding's bound)
    assert report.manifests.count == 11 and parts.manifests == pytest.approx(9 / 11)
    assert parts.snapshots == 1.0
    data = 40 * 2 / 5 + 40 * (1 - 400 / 54_000) + 20 * (1 - 1200 / 54_000)
    assert report.score == score(parts) == round(0.9 * data + 5 * 9 / 11 + 5)


def test_health_delete_findings_and_statements(tmp_path: Path) -> None:
    report = floe.health(deletes_table(sql_catalog(tmp_path), "db.del"))
    codes = [f.code for f in report.findings]
    assert codes[:3] == ["EQUALITY_DELETES", "DELETED_ROWS", "POSITION_DELETE_FILES"]
    eq = report.finding("EQUALITY_DELETES")
    assert eq is not None
    assert eq.statement == "CALL unit.system.rewrite_equality_deletes(table => 'db.del', where => \"dt = 'a'\")"
    assert (eq.files_before, eq.files_after, eq.partitions) == (2, 0, ("dt=a",))
    rows = report.finding("DELETED_ROWS")
    assert rows is not None
    assert rows.statement == (
        "CALL unit.system.rewrite_data_files(table => 'db.del', where => \"dt = 'a'\", "
        "options => map('delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))"
    )
    assert "1200 of 4000 rows (30%)" in rows.message
    assert rows.severity == "high"
    pos = report.finding("POSITION_DELETE_FILES")
    assert pos is not None
    assert pos.statement == (
        "CALL unit.system.rewrite_position_delete_files(table => 'db.del', options => map('rewrite-all', 'true'))"
    )
    assert (pos.files_before, pos.files_after) == (8, 1)
    # the row deltas were committed moments ago by a named Spark app: file rewrites are not safe now
    assert not rows.safe_now
    assert "spark app app-cdc-42" in rows.safe_reason
    later = floe.health(deletes_table(sql_catalog(tmp_path / "later"), "db.del"), now_ms=int(time.time() * 1000) + DAY_MS)
    assert all(f.safe_now for f in later.findings)


def test_health_v3_deletion_vector_coverage(tmp_path: Path) -> None:
    report = floe.health(deletes_table(sql_catalog(tmp_path), "db.dv", version=3))
    d = report.deletes
    assert (d.dv_count, d.dv_rows, d.position_delete_files) == (4, 600, 0)
    assert (d.data_files_with_dv, d.dv_coverage) == (4, 1.0)
    assert report.finding("POSITION_DELETE_FILES") is None  # vectors are one per data file: nothing to merge
    rows = report.finding("DELETED_ROWS")
    assert rows is not None and rows.metric == "position delete files and vectors"


@pytest.mark.slow  # building 2,000 snapshots takes 15-20 s (a file write per commit)
def test_health_2000_snapshots_many_snapshots_finding(tmp_path: Path) -> None:
    table = many_snapshots(sql_catalog(tmp_path), "db.many", 2000)
    now = int(time.time() * 1000)
    report = floe.health(table, now_ms=now)
    assert report.snapshots.count == 2000
    assert report.snapshots.past_retention == 0
    f = report.finding("SNAPSHOTS_MANY")
    assert f is not None
    assert f.statement == (
        f"CALL unit.system.expire_snapshots(table => 'db.many', older_than => {timestamp_literal(now + 1)}, "
        f"retain_last => {KEEP_SNAPSHOTS})"
    )
    assert (f.files_before, f.files_after) == (2000, KEEP_SNAPSHOTS)
    assert report.score_parts.snapshots == pytest.approx(1000 / 2000)
    growth = report.manifest_growth
    assert len(growth) == 40  # sampled, oldest first, ending at the current snapshot
    assert (growth[0].manifests, growth[-1].snapshot_id) == (1, report.snapshot_id)
    assert growth[-1].manifests == report.manifests.count >= 10  # merge appends keep up to ~100
    manifests = report.finding("MANIFESTS")
    assert manifests is not None
    assert manifests.statement == "CALL unit.system.rewrite_manifests(table => 'db.many')"
    assert (manifests.files_before, manifests.files_after) == (report.manifests.count, 1)
    small = report.finding("SMALL_FILES")  # 336 partitions: more than a where clause names
    assert small is not None and small.statement == "CALL unit.system.rewrite_data_files(table => 'db.many')"


def test_health_retention_and_ref_age_against_table_properties(tmp_path: Path) -> None:
    table = many_snapshots(sql_catalog(tmp_path), "db.old", 5)
    table.set_properties({"history.expire.min-snapshots-to-keep": "2", "history.expire.max-ref-age-ms": str(DAY_MS)})
    table.manage_snapshots().create_tag(table.metadata.snapshots[0].snapshot_id, "first").commit()
    later = int(time.time() * 1000) + 6 * DAY_MS  # past the 5-day default max snapshot age
    report = floe.health(table.refresh(), now_ms=later)
    s = report.snapshots
    assert (s.max_snapshot_age_ms, s.min_snapshots_to_keep, s.past_retention) == (5 * DAY_MS, 2, 3)
    f = report.finding("SNAPSHOTS_PAST_RETENTION")
    assert f is not None
    assert f.statement == (
        f"CALL unit.system.expire_snapshots(table => 'db.old', older_than => {timestamp_literal(later - 5 * DAY_MS)}, "
        "retain_last => 2)"
    )
    assert (f.files_before, f.files_after) == (5, 2)
    assert report.score_parts.snapshots == pytest.approx(2 / 5)
    tag = next(r for r in report.refs if r.name == "first")
    assert tag.past_max_age and tag.max_ref_age_ms == DAY_MS
    refs = report.finding("REFS_PAST_MAX_AGE")
    assert refs is not None and refs.statement == f.statement and "first" in refs.message


def test_health_orphan_candidates_only_when_asked(tmp_path: Path) -> None:
    table = streaming_table(sql_catalog(tmp_path), "db.orph", appends=3)
    stray = Path(table.location()) / "data" / "stray.parquet"
    stray.write_bytes(b"x")
    young = Path(table.location()) / "data" / "young.parquet"
    young.write_bytes(b"y")
    four_days_ago = time.time() - 4 * 24 * 3600
    os.utime(stray, (four_days_ago, four_days_ago))
    assert floe.health(table).orphan_candidates is None
    report = floe.health(table, orphans=True)
    assert report.orphan_candidates == 2
    f = report.finding("ORPHAN_FILES")
    assert f is not None
    assert (f.files_before, f.files_after) == (1, 0)
    assert f.statement.startswith("CALL unit.system.remove_orphan_files(table => 'db.orph', older_than => TIMESTAMP '")
    assert "1 younger ones" in f.message


def test_health_where_clauses_quote_and_refuse() -> None:
    assert sql_string("it's") == "'it\\'s'"
    assert timestamp_literal(0) == "TIMESTAMP '1970-01-01 00:00:00.000+00:00'"
    assert call("c", "rewrite_manifests", "db.t") == "CALL c.system.rewrite_manifests(table => 'db.t')"
    assert call("", "rewrite_manifests", "db.t") == "CALL system.rewrite_manifests(table => 'db.t')"


def test_health_where_clause_per_partition_type(tmp_path: Path) -> None:
    from floe.spec.partitioning import PartitionSpecBuilder
    from floe.spec.schema import Schema
    from floe.spec.types import DateType, IntegerType, NestedField, StringType

    schema = Schema(NestedField(1, "n", IntegerType()), NestedField(2, "day", DateType()), NestedField(3, "s", StringType()))
    spec = PartitionSpecBuilder(schema).identity("n").identity("day").identity("s").build()
    table = sql_catalog(tmp_path).create_table("db.w", schema, partition_spec=spec)
    md = table.metadata
    assert where_for_partitions(md, [(0, (3, 0, "x"))]) == "n = 3 AND day = DATE '1970-01-01' AND s = 'x'"
    assert where_for_partitions(md, [(0, (None, 1, "x")), (0, (4, 2, "y"))]) == (
        "(n IS NULL AND day = DATE '1970-01-02' AND s = 'x') OR (n = 4 AND day = DATE '1970-01-03' AND s = 'y')"
    )
    assert where_for_partitions(md, [(0, (3, 0, "it's"))]) is None  # a quote: the whole table instead
    assert where_for_partitions(md, [(0, (i, 0, "x")) for i in range(21)]) is None  # too many partitions
    bucketed = sql_catalog(tmp_path / "b").create_table(
        "db.b", schema, partition_spec=PartitionSpecBuilder(schema).bucket("n", 4).build()
    )
    assert where_for_partitions(bucketed.metadata, [(0, (1,))]) is None  # not an identity partition


def test_health_report_json_and_callable_module(tmp_path: Path) -> None:
    table = deletes_table(sql_catalog(tmp_path), "db.j")
    report = floe.health.health(table)
    assert isinstance(floe.health(table), HealthReport)  # the package is callable after `import floe.health`
    data = json.loads(json.dumps(report.to_dict()))
    assert data["score"] == report.score
    assert data["partitions"][0]["position_delete_ratio"] == pytest.approx(0.3)
    assert {f["code"] for f in data["findings"]} == {f.code for f in report.findings}
    assert len(data["size_bins"]) == len(data["size_histogram"]) == 10


def test_health_empty_table_scores_full(tmp_path: Path) -> None:
    report = floe.health(create(sql_catalog(tmp_path), "db.empty"))
    assert (report.score, report.findings, report.snapshot_id, report.timeline) == (100, (), None, ())


def test_health_partition_skew(tmp_path: Path) -> None:
    table = create(sql_catalog(tmp_path), "db.skew")
    append = table.new_fast_append()
    for day, rows in (("a", 100), ("b", 100), ("c", 10_000)):
        append.append_file(data_file(table, f"{day}.parquet", day, rows=rows, size=rows * 10))
    append.commit()
    skew = floe.health(table.refresh()).skew
    assert (skew.partitions, skew.largest_partition, skew.max_rows, skew.median_rows) == (3, "dt=c", 10_000, 100)
    assert skew.rows_ratio == 100.0


def test_health_unpartitioned_equality_deletes_convert_without_where(tmp_path: Path) -> None:
    catalog = sql_catalog(tmp_path)
    table = create(catalog, "db.glob")
    table.new_fast_append().append_file(data_file(table, "d.parquet", "a")).commit()
    global_delete = data_file(table, "eq.parquet", "a", content=FileContent.EQUALITY_DELETES, equality_ids=(1,), rows=5)
    table.update_spec().remove_field("dt").commit()
    table.refresh()
    unpartitioned = global_delete.with_changes(partition=(), spec_id=table.metadata.default_spec_id)
    table.new_row_delta().add_deletes(unpartitioned).commit()
    f = floe.health(table.refresh()).finding("EQUALITY_DELETES")
    assert f is not None
    assert f.statement == "CALL unit.system.rewrite_equality_deletes(table => 'db.glob')"


def test_health_recent_writers_skip_maintenance_commits(tmp_path: Path) -> None:
    table = create(sql_catalog(tmp_path), "db.maint")
    table.new_fast_append().append_file(data_file(table, "d.parquet", "a")).set("spark.sql.streaming.queryId", "q1").commit()
    table.new_row_delta().add_deletes(
        data_file(table, "p.parquet", "a", content=FileContent.POSITION_DELETES, rows=1)
    ).set("floe.rewrite-equality-deletes", "1").commit()
    writers = floe.health(table.refresh()).recent_writers
    assert [(w.writer, w.operations, w.snapshots) for w in writers] == [("stream q1", ("append",), 1)]


def test_health_history_rows_per_table_even_with_quotes(tmp_path: Path) -> None:
    from floe.health.history import HISTORY_TABLE, read_scores, record

    catalog = sql_catalog(tmp_path)
    odd = create(catalog, "db.it's")
    plain = deletes_table(catalog, "db.plain")
    history = record(catalog, ("db", HISTORY_TABLE), [floe.health(odd), floe.health(plain)])
    history = record(catalog, ("db", HISTORY_TABLE), [floe.health(odd, now_ms=int(time.time() * 1000) + 1000)])
    scores = read_scores(history, "db.it's")
    assert [s for _, s in scores] == [100, 100] and scores[0][0] < scores[1][0]
    assert [s for _, s in read_scores(history, "db.plain")] == [floe.health(plain).score]
    assert len(history.metadata.snapshots) == 2  # one append per record call
