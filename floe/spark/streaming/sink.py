"""The streaming sink: Structured Streaming micro-batches committed to a table exactly once.

Each micro-batch runs on the driver through ``foreachBatch`` and writes with Floe's batch writers
(Spark's native Parquet writer for appends, the delta writer for changelogs), then commits at most one
snapshot whose summary carries ``spark.sql.streaming.queryId`` and ``spark.sql.streaming.epochId``, the
keys Iceberg Java's sink writes. Before writing, the sink walks the target branch's history back to the
newest snapshot of the same query: a batch whose epoch is not newer was committed already (a replay after
a crash between the commit and Spark's own commit log) and is skipped, whichever engine committed it.

Output modes: ``append`` (each batch appended); ``complete`` (each batch replaces the table's rows, as
Iceberg Java's sink overwrites); changelogs (an ``op-column`` option) are applied as row deltas, and so is
every batch into an upsert table (``write.upsert.enabled``, or the ``upsert-enabled`` option): each row
replaces its key's row, as Flink's upsert sink writes (complete mode is refused there). Those two may
convert their equality deletes every N commits (``rewrite-equality-deletes.commit-count``,
floe.spark.streaming.conversion_schedule). ``update`` is refused, as Iceberg Java refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

from floe.errors import ValidationError
from floe.spark.streaming.changes import apply_changes, upsert_dataframe
from floe.spark.streaming.conversion_schedule import SCHEDULE_OPTION, schedule_commit_count
from floe.spark.write.dataframe_write import write_dataframe
from floe.spark.write.session_settings import SESSION_WRITE_OPTIONS
from floe.spec import properties as P
from floe.write.upsert_mode import check_upsert_table, upsert_requested

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "EPOCH_ID",
    "QUERY_ID",
    "StreamSink",
    "last_committed_epoch",
    "sink_options",
]

QUERY_ID = "spark.sql.streaming.queryId"
EPOCH_ID = "spark.sql.streaming.epochId"
_QUERY_ID_PROPERTY = "sql.streaming.queryId"  # Spark's local property on the micro-batch thread

_SNAPSHOT_PROPERTY = "snapshot-property."
# Options of the sink itself; every other key is refused rather than ignored.
_WRITE_OPTIONS = {
    "target-file-size-bytes", "advisory-partition-size", "fanout-enabled", "branch", *SESSION_WRITE_OPTIONS,
}
_CHANGE_OPTIONS = {"op-column", "upsert-enabled", "equality-field-columns", "order-column", SCHEDULE_OPTION}
_SPARK_OPTIONS = {"checkpointlocation", "path"}


@dataclass(frozen=True)
class SinkOptions:
    """A sink's options, checked once when the query starts."""

    write: dict[str, str] = field(default_factory=dict)
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    branch: str | None = None
    op_column: str | None = None
    upsert: bool | None = None
    keys: tuple[str, ...] | None = None
    order_column: str | None = None
    rewrite_every: str | None = None  # rewrite-equality-deletes.commit-count, checked against the table


def sink_options(options: Mapping[str, object], *, table_name: str) -> SinkOptions:
    """Split a stream writer's options into write options, summary properties and changelog options.

    Raises:
        ValidationError: an option the sink does not know (named with the table).
    """
    write: dict[str, str] = {}
    summary: dict[str, str] = {}
    change: dict[str, str] = {}
    for raw_key, value in options.items():
        key = str(raw_key)
        low = key.lower()
        if low.startswith(_SNAPSHOT_PROPERTY):
            summary[key[len(_SNAPSHOT_PROPERTY):]] = str(value)
        elif low in _WRITE_OPTIONS:
            write[low] = str(value)
        elif low in _CHANGE_OPTIONS:
            change[low] = str(value)
        elif low not in _SPARK_OPTIONS:
            raise ValidationError(
                f"Streaming write to {table_name}: option {key!r} is not supported (known: checkpointLocation, "
                f"{', '.join(sorted(_WRITE_OPTIONS | _CHANGE_OPTIONS))}, snapshot-property.<key>)"
            )
    fanout = write.pop("fanout-enabled", "true").strip().lower()
    if fanout not in ("true", "false"):
        raise ValidationError(f"Streaming write to {table_name}: fanout-enabled must be true or false, got {fanout!r}")
    # Floe's writers always fan out (one open file per partition): both values write correct files.
    upsert_raw = change.get("upsert-enabled")
    upsert = None if upsert_raw is None else P.property_bool({"upsert-enabled": upsert_raw}, "upsert-enabled", False)
    keys = change.get("equality-field-columns")  # without op-column: an upsert's key (checked per batch)
    return SinkOptions(
        write=write, snapshot_properties=summary, branch=write.pop("branch", None), op_column=change.get("op-column"),
        upsert=upsert, keys=tuple(k.strip() for k in keys.split(",")) if keys else None,
        order_column=change.get("order-column"), rewrite_every=change.get(SCHEDULE_OPTION),
    )


def last_committed_epoch(table: Table, query_id: str, branch: str | None = None) -> int | None:
    """The epoch of the newest snapshot on the branch's history written by ``query_id`` (None: none)."""
    head = table.snapshot_by_name(branch) if branch else table.current_snapshot()
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    snapshot = head
    while snapshot is not None:
        summary: Mapping[str, str] = snapshot.summary or {}
        if summary.get(QUERY_ID) == query_id and EPOCH_ID in summary:
            return int(summary[EPOCH_ID])
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id is not None else None
    return None


@dataclass
class StreamSink:
    """The ``foreachBatch`` function of a streaming write to one table."""

    load_table: Callable[[], Table]
    table_name: str
    output_mode: str
    options: SinkOptions
    batches_skipped: int = 0

    def __post_init__(self) -> None:
        mode = self.output_mode.lower()
        if mode not in ("append", "complete"):
            raise ValidationError(
                f"Streaming write to {self.table_name}: output mode {self.output_mode!r} is not supported "
                "(append or complete)"
            )
        if mode == "complete" and self.options.op_column is not None:
            raise ValidationError(f"Streaming write to {self.table_name}: a changelog (op-column) needs output mode append")
        self.output_mode = mode

    def upserts(self, table: Table) -> bool:
        """Whether rows without an operation column are upserted into ``table``; refuses what cannot be.

        Raises:
            ValidationError / UnsupportedError: an upsert the table cannot take (no key, v1, complete mode),
                or upsert options on a table that is not upserted.
        """
        o = self.options
        upsert = o.upsert if o.upsert is not None else upsert_requested(table)
        if upsert:
            check_upsert_table(table, "append" if self.output_mode == "append" else "overwrite", keys_given=bool(o.keys))
        elif o.order_column is not None or o.keys is not None:
            raise ValidationError(
                f"Streaming write to {self.table_name}: equality-field-columns and order-column apply to changelogs "
                "(op-column) and upserts; this table is not in upsert mode"
            )
        elif o.rewrite_every is not None:
            raise ValidationError(
                f"Streaming write to {self.table_name}: {SCHEDULE_OPTION} applies to changelogs (op-column) and "
                "upserts, whose equality deletes it converts; this table is not in upsert mode"
            )
        return upsert

    def rewrite_every(self, table: Table) -> int:
        """The commit count between conversions of equality deletes (the option, else the table property).

        Raises:
            ValidationError: not an integer >= 0, or set for a write to a branch.
        """
        raw = self.options.rewrite_every
        return schedule_commit_count(table, None if raw is None else {SCHEDULE_OPTION: raw}, branch=self.options.branch)

    def __call__(self, batch: DataFrame, epoch_id: int) -> None:
        spark = batch.sparkSession
        query_id = spark.sparkContext.getLocalProperty(_QUERY_ID_PROPERTY)
        if not query_id:
            raise ValidationError(f"Streaming write to {self.table_name}: Spark gave the micro-batch no query id")
        table = self.load_table()
        done = last_committed_epoch(table, query_id, self.options.branch)
        if done is not None and done >= epoch_id:
            self.batches_skipped += 1
            return  # committed before a restart: Spark replays it, the table already has it
        summary = {**self.options.snapshot_properties, QUERY_ID: query_id, EPOCH_ID: str(epoch_id)}
        o = self.options
        if o.op_column is not None:
            apply_changes(
                table, batch, op_column=o.op_column, keys=o.keys, upsert=o.upsert, order_by=o.order_column,
                snapshot_properties=summary, branch=o.branch, rewrite_every=self.rewrite_every(table), write_options=o.write,
            )
            return
        if self.upserts(table):
            # An upsert table (or upsert-enabled): each row replaces its key's row, as Flink's upsert sink.
            if not batch.isEmpty():
                order = {"order-column": o.order_column} if o.order_column else {}
                if o.rewrite_every is not None:
                    order[SCHEDULE_OPTION] = o.rewrite_every
                upsert_dataframe(
                    table, batch, snapshot_properties=summary, branch=o.branch, options={**o.write, **order},
                    keys=o.keys,
                )
            return
        if self.output_mode == "complete":
            write_dataframe(table, batch, mode="overwrite", snapshot_properties=summary, branch=o.branch, options=o.write)
            return
        if batch.isEmpty():
            return  # Iceberg Java commits nothing for an empty append batch either
        write_dataframe(table, batch, mode="append", snapshot_properties=summary, branch=o.branch, options=o.write)


def start_stream(
    df: DataFrame,
    sink: StreamSink,
    *,
    checkpoint_location: str | None,
    trigger: Mapping[str, object] | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Start ``df``'s query with ``sink`` as its foreachBatch function (a checkpoint location is required)."""
    if not checkpoint_location:
        raise ValidationError(
            f"Streaming write to {sink.table_name}: set option checkpointLocation (exactly-once needs a checkpoint)"
        )
    table = sink.load_table()
    if sink.options.op_column is None:
        sink.upserts(table)  # refuse a stream that cannot be upserted before it starts
    sink.rewrite_every(table)  # and a schedule it cannot honour
    writer = df.writeStream.foreachBatch(sink).outputMode(sink.output_mode)
    writer = writer.option("checkpointLocation", checkpoint_location)
    if trigger:
        writer = writer.trigger(**trigger)  # type: ignore[call-overload]
    if query_name:
        writer = writer.queryName(query_name)
    return writer.start()
