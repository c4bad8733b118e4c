"""Row-level change log of a table between two snapshots, as Iceberg Java's changelog scan and
``create_changelog_view`` compute it.

:func:`changelog_range` turns the options (start/end snapshot id, start/end timestamp) into a snapshot range,
as Java's ``SparkScanBuilder.buildChangelogScan``; :func:`changelog_files` lists, per snapshot of the range
(oldest first, ``replace`` snapshots skipped), the data files it added (``INSERT`` rows) and removed
(``DELETE`` rows), as ``BaseIncrementalChangelogScan``; :func:`changelog_dataframe` reads them with the
table's current schema plus ``_change_type``, ``_change_ordinal`` (the snapshot's index in the range) and
``_commit_snapshot_id`` (the ``changes`` metadata table). Copy-on-write rewrites report unchanged rows as a
DELETE and an INSERT (carry-over rows); :func:`remove_carryovers` cancels them (per snapshot, or across the
range for net changes) and :func:`compute_updates` pairs a DELETE and an INSERT with the same identifier
columns in one snapshot into ``UPDATE_BEFORE`` / ``UPDATE_AFTER``, as Java's ChangelogIterator classes do.
Delete files are refused, as in Java 1.10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.io.manifest_group import ManifestGroup
from floe.scan.planner import read_manifest_files
from floe.scan.tasks import FileScanTask
from floe.spark.scan.driver_rows import empty_frame
from floe.spec.manifest import DataFile, ManifestContent, ManifestEntryStatus
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import format_timestamp_ms

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import types as T

    from floe.table.table import Table

__all__ = [
    "CHANGE_ORDINAL",
    "CHANGE_TYPE",
    "COMMIT_SNAPSHOT_ID",
    "ChangelogFile",
    "ChangelogRange",
    "changelog_dataframe",
    "changelog_files",
    "changelog_range",
    "compute_updates",
    "remove_carryovers",
]

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
METADATA_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER = "INSERT", "DELETE", "UPDATE_BEFORE", "UPDATE_AFTER"


@dataclass(frozen=True, slots=True)
class ChangelogRange:
    """Snapshots after ``start_exclusive`` (None: from the first) up to ``end_inclusive`` (None: current)."""

    start_exclusive: int | None = None
    end_inclusive: int | None = None
    empty: bool = False


@dataclass(frozen=True, slots=True)
class ChangelogFile:
    """A data file whose rows a snapshot of the range inserted or deleted."""

    data_file: DataFile
    change_type: str
    ordinal: int
    snapshot_id: int


def changelog_range(
    table: Table,
    *,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    start_timestamp_ms: int | None = None,
    end_timestamp_ms: int | None = None,
) -> ChangelogRange:
    """The snapshot range the options select (Java: a snapshot committed at the start time is excluded).

    Raises:
        ValidationError: a snapshot id and a timestamp for the same end, or start time not before end time.
    """
    name = table.name()
    if start_snapshot_id is not None and start_timestamp_ms is not None:
        raise ValidationError(f"Changelog of {name}: cannot set both start-snapshot-id and start-timestamp")
    if end_snapshot_id is not None and end_timestamp_ms is not None:
        raise ValidationError(f"Changelog of {name}: cannot set both end-snapshot-id and end-timestamp")
    if start_timestamp_ms is not None and end_timestamp_ms is not None and start_timestamp_ms >= end_timestamp_ms:
        raise ValidationError(
            f"Changelog of {name}: start-timestamp {start_timestamp_ms} must be before end-timestamp {end_timestamp_ms}")
    md = table.metadata
    current = md.current_snapshot()
    empty = False
    if start_timestamp_ms is not None:
        empty = current is None or start_timestamp_ms > current.timestamp_ms
        start_snapshot_id = _start_for_time(table, start_timestamp_ms)
    if end_timestamp_ms is not None:
        end_snapshot_id = next(
            (s.snapshot_id for s in md.ancestors_of(md.current_snapshot_id) if s.timestamp_ms <= end_timestamp_ms), None)
        if end_snapshot_id is None and start_snapshot_id is None or (
                start_snapshot_id is not None and start_snapshot_id == end_snapshot_id):
            empty = True
    return ChangelogRange(start_snapshot_id, end_snapshot_id, empty)


def _start_for_time(table: Table, timestamp_ms: int) -> int | None:
    """Java's getStartSnapshotId: the parent of the oldest current ancestor committed at or after the time
    (that ancestor itself when committed exactly then)."""
    md = table.metadata
    if md.current_snapshot() is None:
        return None
    last: Snapshot | None = None
    for s in md.ancestors_of(md.current_snapshot_id):
        if s.timestamp_ms < timestamp_ms:
            break
        if s.timestamp_ms == timestamp_ms:
            return s.snapshot_id
        last = s
    else:
        if last is not None and last.parent_snapshot_id is not None:
            raise ValidationError(f"Changelog of {table.name()}: cannot find a snapshot older than {format_timestamp_ms(timestamp_ms)}")
    return None if last is None else last.parent_snapshot_id


def _snapshots(table: Table, rng: ChangelogRange) -> list[Snapshot]:
    md, name = table.metadata, table.name()
    if rng.empty:
        return []
    if rng.end_inclusive is None:
        end = md.current_snapshot()
        if end is None:
            if rng.start_exclusive is None:
                return []
            raise ValidationError(f"Changelog of {name}: end snapshot is not set and the table has no current snapshot")
    else:
        end = md.snapshot_by_id(rng.end_inclusive)
        if end is None:
            raise NoSuchSnapshotError(f"Changelog of {name}: no snapshot with id {rng.end_inclusive}")
    chain: list[Snapshot] = []
    for s in md.ancestors_of(end.snapshot_id):
        if s.snapshot_id == rng.start_exclusive:
            break
        chain.append(s)
    else:
        if rng.start_exclusive is not None:
            raise ValidationError(
                f"Changelog of {name}: starting snapshot (exclusive) {rng.start_exclusive} is not a parent ancestor "
                f"of end snapshot {end.snapshot_id}")
    if rng.start_exclusive is not None and not chain:
        raise ValidationError(
            f"Changelog of {name}: starting snapshot (exclusive) {rng.start_exclusive} is not a parent ancestor "
            f"of end snapshot {end.snapshot_id}")
    out = []
    for s in reversed(chain):
        if s.summary is not None and s.summary.operation == Operation.REPLACE:
            continue  # compaction and other rewrites change no rows
        if any(m.content == ManifestContent.DELETES for m in read_manifest_files(table.io, s)):
            raise UnsupportedError(
                f"Changelog of {name}: delete files are not supported in changelog scans (snapshot {s.snapshot_id})")
        out.append(s)
    return out


def changelog_files(table: Table, rng: ChangelogRange) -> list[ChangelogFile]:
    """Per snapshot of the range, oldest first: the data files it added and removed.

    Raises:
        ValidationError / NoSuchSnapshotError: the range does not name a line of snapshots.
        UnsupportedError: a snapshot of the range has delete files (Java 1.10 refuses them too).
    """
    out: list[ChangelogFile] = []
    for ordinal, snap in enumerate(_snapshots(table, rng)):
        for e in _changed_by(table, snap).entries():
            kind = INSERT if e.status == ManifestEntryStatus.ADDED else DELETE
            out.append(ChangelogFile(e.data_file, kind, ordinal, snap.snapshot_id))
    return out


def _changed_by(table: Table, snap: Snapshot) -> ManifestGroup:
    """The data file entries ``snap`` itself added or deleted."""
    sid = snap.snapshot_id
    return (ManifestGroup.of_snapshot(table.io, snap).with_metadata(table.metadata)
            .data_only().ignore_existing()
            .filter_manifests(lambda m: m.added_snapshot_id == sid)
            .filter_entries(lambda e: e.snapshot_id == sid))


def _changelog_schema(table: Table) -> T.StructType:
    from pyspark.sql import types as T

    from floe.spark.types import to_spark_schema

    schema = to_spark_schema(table.schema())
    return T.StructType([*schema.fields, T.StructField(CHANGE_TYPE, T.StringType(), False),
                         T.StructField(CHANGE_ORDINAL, T.IntegerType(), False),
                         T.StructField(COMMIT_SNAPSHOT_ID, T.LongType(), False)])


def changelog_dataframe(
    spark: SparkSession, table: Table, rng: ChangelogRange | None = None, *, errors_when_read: bool = False
) -> DataFrame:
    """The raw change rows of the range (carry-over rows included): the table's columns, then
    ``_change_type``, ``_change_ordinal`` and ``_commit_snapshot_id``.

    With ``errors_when_read`` a range that names no line of snapshots gives a frame that fails with the
    one-line reason when it is read (Java's changelog view is created, its first read fails), not at once.
    """
    from pyspark.sql import functions as F

    from floe.spark.scan.table_read import dataframe_for_scan, scan_for

    try:
        files = changelog_files(table, rng or ChangelogRange())
    except (ValidationError, NoSuchSnapshotError) as e:
        if not errors_when_read:
            raise
        schema = _changelog_schema(table)
        failing = spark.range(1).where(F.raise_error(F.lit(str(e))).isNull())
        return failing.select(*(F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields))
    scan = scan_for(table)
    groups: dict[tuple[str, int, int], list[FileScanTask]] = {}
    for f in files:
        spec = table.metadata.spec_by_id(f.data_file.spec_id)
        groups.setdefault((f.change_type, f.ordinal, f.snapshot_id), []).append(
            FileScanTask(f.data_file, 0, spec=spec))
    frames = [
        dataframe_for_scan(spark, scan, tasks).select(
            "*",
            F.lit(kind).alias(CHANGE_TYPE),
            F.lit(ordinal).cast("int").alias(CHANGE_ORDINAL),
            F.lit(snapshot_id).cast("long").alias(COMMIT_SNAPSHOT_ID),
        )
        for (kind, ordinal, snapshot_id), tasks in groups.items()
    ]
    if not frames:
        return empty_frame(spark, _changelog_schema(table))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def remove_carryovers(df: DataFrame, *, net_changes: bool = False) -> DataFrame:
    """Cancel a DELETE against an identical INSERT: within a snapshot, or (``net_changes``) across the range,
    where the row left is the first of its last uncancelled run (Java's RemoveNetCarryoverIterator)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = df.columns
    sign = F.when(F.col(CHANGE_TYPE) == INSERT, 1).otherwise(-1)
    if not net_changes:
        keys = [_quoted(c) for c in columns if c != CHANGE_TYPE]
        counted = df.groupBy(*keys).agg(F.sum(sign).alias("__floe_n"))
        kept = counted.where(F.col("__floe_n") != 0).withColumn(
            CHANGE_TYPE, F.when(F.col("__floe_n") > 0, F.lit(INSERT)).otherwise(F.lit(DELETE)))
    else:
        keys = [_quoted(c) for c in columns if c not in METADATA_COLUMNS]
        group = Window.partitionBy(*keys)
        ordered = group.orderBy(CHANGE_ORDINAL, CHANGE_TYPE).rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ranked = (df.withColumn("__floe_run", F.sum(sign).over(ordered))
                  .withColumn("__floe_i", F.row_number().over(group.orderBy(CHANGE_ORDINAL, CHANGE_TYPE)))
                  .withColumn("__floe_n", F.sum(sign).over(group)))
        ranked = ranked.withColumn(
            "__floe_zero", F.max(F.when(F.col("__floe_run") == 0, F.col("__floe_i")).otherwise(0)).over(group))
        kept = ranked.where((F.col("__floe_n") != 0) & (F.col("__floe_i") == F.col("__floe_zero") + 1))
    repeated = kept.withColumn("__floe_k", F.explode(F.sequence(F.lit(1), F.abs(F.col("__floe_n")))))
    return repeated.select(*[_quoted(c) for c in columns])


def compute_updates(df: DataFrame, identifier_columns: Sequence[str]) -> DataFrame:
    """Carry-over rows removed, then a DELETE and an INSERT with equal identifier columns in one snapshot
    become ``UPDATE_BEFORE`` and ``UPDATE_AFTER``; two DELETEs of one identifier fail when read, as in Java."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not identifier_columns:
        raise ValidationError("Cannot compute the update images because identifier columns are not set")
    missing = [c for c in identifier_columns if c not in df.columns]
    if missing:
        raise ValidationError(f"Identifier column {missing[0]!r} is not a column of the changelog ({', '.join(df.columns)})")
    columns = df.columns
    clean = remove_carryovers(df)
    ids = [_quoted(c) for c in identifier_columns]
    group = Window.partitionBy(*ids, CHANGE_ORDINAL)
    inserts = Window.partitionBy(*ids, CHANGE_ORDINAL, CHANGE_TYPE).orderBy(F.lit(1))
    deletes = F.sum(F.when(F.col(CHANGE_TYPE) == DELETE, 1).otherwise(0)).over(group)
    has_insert = F.max(F.when(F.col(CHANGE_TYPE) == INSERT, 1).otherwise(0)).over(group) == 1
    message = ("Cannot compute updates because there are multiple rows with the same identifier fields(["
               + ",".join(identifier_columns) + "]). Please make sure the rows are unique.")
    kind = (F.when(deletes >= 2, F.raise_error(F.lit(message)).cast("string"))
            .when((deletes == 1) & has_insert & (F.col(CHANGE_TYPE) == DELETE), F.lit(UPDATE_BEFORE))
            .when((deletes == 1) & (F.col(CHANGE_TYPE) == INSERT) & (F.row_number().over(inserts) == 1),
                  F.lit(UPDATE_AFTER))
            .otherwise(F.col(CHANGE_TYPE)))
    return clean.withColumn(CHANGE_TYPE, kind).select(*[_quoted(c) for c in columns])
