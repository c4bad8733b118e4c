"""Structured Streaming into Floe tables on an attached session: the Iceberg spelling
(``df.writeStream.format("iceberg")...toTable(name)``), exactly once per micro-batch, and changelogs
applied with equality and position deletes (issue #12).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe.spark
from floe.errors import ValidationError
from floe.spark.streaming.changes import apply_changes
from floe.spark.streaming.sink import EPOCH_ID, QUERY_ID
from floe.spec.manifest import FileContent
from floe.table.table import Table
from tests.spark._changelog import apply_model, as_state, random_batches, write_batch_files

STREAM_SCHEMA = "seq bigint, op string, id bigint, dt string, v string"


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """A SQL (SQLite) catalog ``st_<n>`` configured the Iceberg way, with namespace db."""
    name = f"st_{tmp_path.name.replace('-', '_')[-20:]}"
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "jdbc",
            f"spark.sql.catalog.{name}.uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}",
            f"spark.sql.catalog.{name}.warehouse": str(tmp_path / "wh")}
    for k, v in keys.items():
        spark.conf.set(k, v)
    floe.spark.attach(spark)
    spark.sql(f"CREATE NAMESPACE {name}.db")
    try:
        yield name
    finally:
        for k in keys:
            spark.conf.unset(k)


def _table(spark: SparkSession, name: str) -> Table:
    from floe.spark.runtime.sql_session import floe_sql_state

    return floe_sql_state(spark).context.load(tuple(name.split(".")))


def _cdc_table(spark: SparkSession, lake: str, *, upsert: bool = False, version: int = 2) -> str:
    name = f"{lake}.db.cdc"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT NOT NULL, dt STRING NOT NULL, v STRING) USING iceberg PARTITIONED BY (dt) "
        f"TBLPROPERTIES ('format-version'='{version}', 'write.upsert.enabled'='{str(upsert).lower()}')"
    )
    spark.sql(f"ALTER TABLE {name} SET IDENTIFIER FIELDS id, dt")
    return name


def _state(spark: SparkSession, name: str, snapshot_id: int | None = None) -> dict[tuple[int, str], str]:
    suffix = f" VERSION AS OF {snapshot_id}" if snapshot_id is not None else ""
    return as_state([(r.id, r.dt, r.v) for r in spark.sql(f"SELECT id, dt, v FROM {name}{suffix}").collect()])


def _stream_changes(spark: SparkSession, source: Path, name: str, checkpoint: Path, **options: str) -> None:
    stream = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = (
        stream.writeStream.format("iceberg").outputMode("append")
        .option("checkpointLocation", str(checkpoint)).option("op-column", "op").option("order-column", "seq")
        .options(**options).trigger(availableNow=True).toTable(name)
    )
    query.awaitTermination()


# -- appends ----------------------------------------------------------------------------------------
def test_append_stream_commits_each_batch_once_with_java_summary_keys(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_batch_files(source, [[(i, "+I", b * 10 + i, "2024-01-01", "x") for i in range(5)] for b in range(3)])
    stream = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    checkpoint = tmp_path / "cp"
    name = f"{lake}.db.events"
    query = (stream.drop("op").writeStream.format("iceberg").outputMode("append")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).toTable(name))
    query.awaitTermination()
    table = _table(spark, name)
    snapshots = table.snapshots()
    assert [s.summary[EPOCH_ID] for s in snapshots if s.summary] == ["0", "1", "2"]
    assert {s.summary[QUERY_ID] for s in snapshots if s.summary} == {query.id}
    assert spark.sql(f"SELECT count(*) AS n FROM {name}").first().n == 15

    # A crash after the table commit but before Spark's commit log: Spark replays the batch, Floe skips it.
    os.remove(checkpoint / "commits" / "2")
    os.remove(checkpoint / "commits" / ".2.crc")
    write_batch_files(source, [[(100, "+I", 100, "2024-01-01", "late")]], start=3)
    again = (stream.drop("op").writeStream.format("iceberg").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).toTable(name))
    again.awaitTermination()
    assert again.id == query.id  # the query id lives in the checkpoint
    epochs = [s.summary[EPOCH_ID] for s in _table(spark, name).snapshots() if s.summary]
    assert epochs == ["0", "1", "2", "3"]  # batch 2 not committed twice; batch 3 once
    assert spark.sql(f"SELECT count(*) AS n FROM {name}").first().n == 16


def test_complete_mode_replaces_the_rows_each_batch(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_batch_files(source, [[(i, "+I", i % 2, "2024-01-01", "x") for i in range(b + 2)] for b in range(2)])
    stream = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    name = f"{lake}.db.counts"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, n BIGINT) USING iceberg")
    query = (stream.groupBy("id").count().withColumnRenamed("count", "n").writeStream.format("iceberg")
             .outputMode("complete").option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .toTable(name))
    query.awaitTermination()
    assert sorted((r.id, r.n) for r in spark.sql(f"SELECT * FROM {name}").collect()) == [(0, 3), (1, 2)]
    assert [s.summary.operation.value for s in _table(spark, name).snapshots() if s.summary][-1] == "overwrite"


def test_refusals_name_the_problem(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_batch_files(source, [[(0, "+I", 0, "2024-01-01", "x")]])
    name = f"{lake}.db.r"
    spark.sql(f"CREATE TABLE {name} (seq BIGINT, op STRING, id BIGINT, dt STRING, v STRING) USING iceberg")
    stream = spark.readStream.schema(STREAM_SCHEMA).parquet(str(source))
    writer = stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp"))
    with pytest.raises(ValidationError, match="output mode 'update' is not supported"):
        writer.outputMode("update").toTable(name)
    with pytest.raises(ValidationError, match="option 'fanout' is not supported"):
        stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp")).option("fanout", "x").toTable(name)
    with pytest.raises(ValidationError, match="set option checkpointLocation"):
        stream.writeStream.format("iceberg").toTable(name)
    with pytest.raises(ValidationError, match="upsert-enabled write option\\): the table has no identifier fields"):
        stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp")).option(
            "upsert-enabled", "true").toTable(name)
    with pytest.raises(ValidationError, match="order-column apply to changelogs .* not in upsert mode"):
        stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp")).option(
            "order-column", "seq").toTable(name)


# -- changelogs --------------------------------------------------------------------------------------
@pytest.mark.parametrize("upsert", [False, True], ids=["changelog", "upsert"])
def test_changelog_stream_matches_a_model_after_every_batch(spark: SparkSession, lake: str, tmp_path: Path, upsert: bool) -> None:
    name = _cdc_table(spark, lake, upsert=upsert)
    batches = random_batches(8, keys=40, per_batch=25, seed=7 if upsert else 11, upsert=upsert)
    write_batch_files(tmp_path / "in", batches)
    _stream_changes(spark, tmp_path / "in", name, tmp_path / "cp")
    table = _table(spark, name)
    by_epoch = {int(s.summary[EPOCH_ID]): s.snapshot_id for s in table.snapshots() if s.summary and EPOCH_ID in s.summary}
    assert sorted(by_epoch) == list(range(len(batches)))
    state: dict[tuple[int, str], str] = {}
    for epoch, batch in enumerate(batches):
        state = apply_model(state, batch)
        assert _state(spark, name, by_epoch[epoch]) == state, f"after batch {epoch}"
    contents = {t.content for e in table.scan().plan_files() for t in [e.data_file, *[d.data_file for d in e.deletes]]}
    assert FileContent.EQUALITY_DELETES in contents
    assert FileContent.POSITION_DELETES in contents  # keys written and changed again in one batch
    names = [d.data_file.file_path for e in table.scan().plan_files() for d in e.deletes]
    assert names
    assert all(p.endswith("-deletes.parquet") for p in names)


def test_apply_changes_batch_api_and_v3_deletion_vectors(spark: SparkSession, lake: str) -> None:
    name = _cdc_table(spark, lake, version=3)
    spark.sql(f"INSERT INTO {name} VALUES (1, '2024-01-01', 'a'), (2, '2024-01-01', 'b')")
    changes = spark.createDataFrame(
        [(1, "-U", 1, "2024-01-01", "a"), (2, "+U", 1, "2024-01-01", "a2"), (3, "-D", 2, "2024-01-01", "b"),
         (4, "+I", 3, "2024-01-02", "c"), (5, "-D", 3, "2024-01-02", "c"), (6, "+I", 4, "2024-01-02", "d")],
        STREAM_SCHEMA,
    )
    result = apply_changes(_table(spark, name), changes, order_by="seq")
    assert (result.rows_inserted, result.keys_deleted) == (3, 3)
    assert result.equality_delete_files == 1
    assert result.position_delete_files == 1
    assert _state(spark, name) == {(1, "2024-01-01"): "a2", (4, "2024-01-02"): "d"}
    vectors = [d.data_file for e in _table(spark, name).scan().plan_files() for d in e.deletes
               if d.data_file.content == FileContent.POSITION_DELETES]
    assert vectors
    assert all(v.file_format.value.lower() == "puffin" for v in vectors)  # v3: no Parquet position deletes


def test_apply_changes_refuses_bad_input(spark: SparkSession, lake: str) -> None:
    name = _cdc_table(spark, lake)
    table = _table(spark, name)
    rows = spark.createDataFrame([(1, "+X", 1, "2024-01-01", "a")], STREAM_SCHEMA)
    with pytest.raises(ValidationError, match="operation column 'op' holds '\\+X'"):
        apply_changes(table, rows, order_by="seq")
    assert table.refresh().current_snapshot() is None  # nothing committed
    with pytest.raises(ValidationError, match="no operation column 'kind'"):
        apply_changes(table, rows, op_column="kind")
    spark.sql(f"CREATE TABLE {lake}.db.nokey (id BIGINT, dt STRING, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2')")
    with pytest.raises(ValidationError, match="has no identifier fields"):
        apply_changes(_table(spark, f"{lake}.db.nokey"), rows.drop("seq"))
    spark.sql(f"CREATE TABLE {lake}.db.up (id BIGINT NOT NULL, dt STRING, v STRING) USING iceberg PARTITIONED BY (dt) "
              "TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"ALTER TABLE {lake}.db.up SET IDENTIFIER FIELDS id")
    with pytest.raises(ValidationError, match="partition source column\\(s\\) dt must be identifier fields"):
        apply_changes(_table(spark, f"{lake}.db.up"), rows.drop("seq"), upsert=True)


# -- the streaming source ------------------------------------------------------------------------------
def _drain(spark: SparkSession, name: str, sink: str, checkpoint: Path, **options: str) -> int:
    """Run the source once with Trigger.AvailableNow into table ``sink``; how many micro-batches had rows."""
    reader = spark.readStream.format("iceberg").options(**options).load(name)
    query = (reader.writeStream.format("iceberg").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).toTable(sink))
    query.awaitTermination()
    return sum(1 for p in query.recentProgress if p["numInputRows"])


def test_source_streams_appends_across_restarts_and_refuses_what_it_cannot_express(
        spark: SparkSession, lake: str, tmp_path: Path) -> None:
    name, copy = f"{lake}.db.src", f"{lake}.db.copy"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"CREATE TABLE {copy} (id BIGINT, v STRING) USING iceberg")
    for i in range(3):
        spark.createDataFrame([(i * 10 + k, "a") for k in range(4)], "id bigint, v string").coalesce(1) \
            .writeTo(name).append()
    checkpoint = tmp_path / "cp"
    assert _drain(spark, name, copy, checkpoint, **{"streaming-max-rows-per-micro-batch": "5"}) == 3  # 3 files of 4 rows
    spark.createDataFrame([(99, "b")], "id bigint, v string").writeTo(name).append()
    assert _drain(spark, name, copy, checkpoint) == 1  # resumes after its checkpointed offset
    ids = sorted(r.id for r in spark.table(copy).collect())
    assert ids == sorted([i * 10 + k for i in range(3) for k in range(4)] + [99])

    spark.sql(f"DELETE FROM {name} WHERE id = 99")
    with pytest.raises(Exception, match="snapshot \\d+ is a delete, .* set streaming-skip-delete-snapshots=true"):
        _drain(spark, name, copy, checkpoint)
    spark.sql(f"CALL {lake}.system.rewrite_data_files(table => 'db.src', options => map('min-input-files', '2'))")
    spark.createDataFrame([(100, "c")], "id bigint, v string").writeTo(name).append()
    assert _drain(spark, name, copy, checkpoint, **{"streaming-skip-delete-snapshots": "true"}) == 1
    assert spark.table(copy).count() == 14  # the compaction (replace) added no rows to the stream
    spark.sql(f"INSERT OVERWRITE {name} VALUES (1, 'o')")
    with pytest.raises(Exception, match="is an overwrite, .* set streaming-skip-overwrite-snapshots=true"):
        _drain(spark, name, copy, checkpoint, **{"streaming-skip-delete-snapshots": "true"})
    assert _drain(spark, name, copy, checkpoint, **{"streaming-skip-delete-snapshots": "true",
                                                     "streaming-skip-overwrite-snapshots": "true"}) == 0


def test_source_options_are_checked(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    name = f"{lake}.db.opts"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1)")
    with pytest.raises(Exception, match="streaming-max-files-per-micro-batch must be a positive integer"):
        _drain(spark, name, f"{lake}.db.o2", tmp_path / "cp", **{"streaming-max-files-per-micro-batch": "0"})
    later = spark.sql(f"SELECT max(committed_at) AS t FROM {name}.snapshots").first().t
    spark.sql(f"INSERT INTO {name} VALUES (2)")
    spark.sql(f"CREATE TABLE {lake}.db.o3 (id BIGINT) USING iceberg")
    start = str(int(later.timestamp() * 1000) + 1)
    assert _drain(spark, name, f"{lake}.db.o3", tmp_path / "cp3", **{"stream-from-timestamp": start}) == 1
    assert [r.id for r in spark.table(f"{lake}.db.o3").collect()] == [2]


def test_compaction_applies_equality_and_position_deletes(spark: SparkSession, lake: str) -> None:
    name = _cdc_table(spark, lake)
    spark.sql(f"INSERT INTO {name} SELECT id, CAST(id % 3 AS STRING), 'x' FROM range(60)")
    changes = spark.createDataFrame(
        [(i, "-D", i, str(i % 3), "x") for i in range(0, 60, 7)]
        + [(100 + i, "+I", 1000 + i, "0", "n") for i in range(3)] + [(200, "-D", 1000, "0", "n")],
        STREAM_SCHEMA,
    )
    apply_changes(_table(spark, name), changes, order_by="seq")
    before = _state(spark, name)
    out = spark.sql(f"CALL {lake}.system.rewrite_data_files(table => 'db.cdc', options => "
                    "map('delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))").first()
    assert out.removed_delete_files_count > 0
    assert _state(spark, name) == before
    live = {d.data_file.content for e in _table(spark, name).scan().plan_files() for d in e.deletes}
    assert FileContent.EQUALITY_DELETES not in live  # applied by the rewrite, then dangling and removed


def test_apply_changes_takes_the_session_codec_and_refuses_options_it_cannot_honour(spark: SparkSession, lake: str) -> None:
    import pyarrow.parquet as pq

    from floe.errors import UnsupportedError
    from floe.spark.write.session_settings import COMPRESSION_CODEC_CONF

    name = _cdc_table(spark, lake)
    spark.sql(f"INSERT INTO {name} VALUES (1, '2024-01-01', 'a'), (2, '2024-01-01', 'b')")
    changes = spark.createDataFrame([(1, "-D", 1, "2024-01-01", "a"), (2, "+I", 5, "2024-01-03", "e")], STREAM_SCHEMA)
    with pytest.raises(UnsupportedError, match="write option 'distribution-mode' is not supported when applying changes"):
        apply_changes(_table(spark, name), changes, order_by="seq", write_options={"distribution-mode": "hash"})
    spark.conf.set(COMPRESSION_CODEC_CONF, "snappy")
    try:
        apply_changes(_table(spark, name), changes, order_by="seq")
    finally:
        spark.conf.unset(COMPRESSION_CODEC_CONF)
    snapshot = _table(spark, name).current_snapshot()
    assert snapshot is not None
    written = spark.sql(f"SELECT data_file.file_path, data_file.content FROM {name}.entries "
                        f"WHERE status = 1 AND snapshot_id = {snapshot.snapshot_id}").collect()
    assert {r[1] for r in written} == {0, 2}  # data and equality deletes
    assert {pq.ParquetFile(r[0].removeprefix("file:")).metadata.row_group(0).column(0).compression
            for r in written} == {"SNAPPY"}
    assert _state(spark, name) == {(2, "2024-01-01"): "b", (5, "2024-01-03"): "e"}
