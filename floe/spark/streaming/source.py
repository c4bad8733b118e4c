"""``spark.readStream.format("iceberg").load(table)``: a table's appends as a stream (Python data source).

Offsets are Iceberg Java's streaming offsets: ``{"version": 1, "snapshot_id": S, "position": P,
"scan_all_files": false}`` names the next data file to read, file ``P`` of the files snapshot ``S``
added (ordered by path, so every call sees the same order); everything before it was read. The stream
walks the main branch from its oldest ancestor (or the first snapshot at or after
``stream-from-timestamp``) to its head:

- ``append`` snapshots are read (their added data files, whole);
- ``replace`` snapshots (compaction, rewritten manifests) are skipped: they change no rows;
- ``overwrite`` and ``delete`` snapshots fail the query, naming the snapshot, unless
  ``streaming-skip-overwrite-snapshots`` / ``streaming-skip-delete-snapshots`` is true, as in Iceberg
  Java; a stream of appends cannot express removed rows.

``streaming-max-files-per-micro-batch`` and ``streaming-max-rows-per-micro-batch`` bound a micro-batch
(a batch always takes at least one file); ``Trigger.AvailableNow`` reads everything there was when the
query started. Offsets live in Spark's checkpoint, so a restarted query resumes after its last batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from floe.errors import ValidationError
from floe.scan.table_scan import TableScan
from floe.scan.tasks import FileScanTask
from floe.spark.datasource.reader import IcebergReader, scan_from_options, task_group
from floe.spec.snapshot import Operation, Snapshot

__all__ = ["IcebergStreamReader"]

SKIP_OVERWRITE = "streaming-skip-overwrite-snapshots"
SKIP_DELETE = "streaming-skip-delete-snapshots"
MAX_FILES = "streaming-max-files-per-micro-batch"
MAX_ROWS = "streaming-max-rows-per-micro-batch"
FROM_TIMESTAMP = "stream-from-timestamp"
_STREAM_OPTIONS = (SKIP_OVERWRITE, SKIP_DELETE, MAX_FILES, MAX_ROWS, FROM_TIMESTAMP)
_TIME_TRAVEL = ("snapshot-id", "as-of-timestamp", "branch", "tag", "start-snapshot-id", "end-snapshot-id")


@dataclass(frozen=True)
class _Offset:
    snapshot_id: int  # -1: the table had no snapshot (start from its first)
    position: int

    def as_dict(self) -> dict[str, Any]:
        return {"version": 1, "snapshot_id": self.snapshot_id, "position": self.position, "scan_all_files": False}

    @staticmethod
    def of(raw: Mapping[str, Any]) -> _Offset:
        if raw.get("scan_all_files"):
            raise ValidationError("Streaming offsets that scan all files are not supported")
        return _Offset(int(raw["snapshot_id"]), int(raw["position"]))


def _bool(options: Mapping[str, str], key: str) -> bool:
    raw = options.get(key, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ValidationError(f"Read option {key} must be true or false, got {raw!r}")
    return raw == "true"


def _positive(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValidationError(f"Read option {key} must be a positive integer, got {raw!r}")
    return value


class IcebergStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches of appended files on the driver; reads them like the batch reader."""

    def __init__(self, options: Mapping[str, str], schema: T.StructType) -> None:
        self.options = {str(k).lower(): str(v) for k, v in options.items()}
        given = [k for k in _TIME_TRAVEL if k in self.options]
        if given:
            raise ValidationError(f"Streaming reads start from stream-from-timestamp, not {given[0]}")
        self.schema = schema
        self.skip_overwrite = _bool(self.options, SKIP_OVERWRITE)
        self.skip_delete = _bool(self.options, SKIP_DELETE)
        self.max_files = _positive(self.options, MAX_FILES)
        self.max_rows = _positive(self.options, MAX_ROWS)
        raw_ts = self.options.get(FROM_TIMESTAMP)
        self.from_timestamp = int(raw_ts) if raw_ts is not None else None
        self._batch_reader = IcebergReader(self.options, schema)
        self._files: dict[int, list[FileScanTask]] = {}
        self._head: int | None = None  # Trigger.AvailableNow: the head when the query started

    def prepareForTriggerAvailableNow(self) -> None:
        self._head = self._scan().metadata.current_snapshot_id

    # -- the table's history ------------------------------------------------------------------------
    def _scan(self) -> TableScan:
        return scan_from_options(self.options)

    def _ancestry(self, scan: TableScan) -> list[Snapshot]:
        """Main's snapshots, oldest first (from the first at or after stream-from-timestamp)."""
        meta = scan.metadata
        by_id = {s.snapshot_id: s for s in meta.snapshots}
        chain: list[Snapshot] = []
        head = self._head if self._head is not None else meta.current_snapshot_id
        s = by_id.get(head) if head is not None else None
        while s is not None:
            chain.append(s)
            s = by_id.get(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
        chain.reverse()
        if self.from_timestamp is not None:
            chain = [x for x in chain if x.timestamp_ms >= self.from_timestamp]
        return chain

    def _readable(self, snapshot: Snapshot, table: str) -> bool:
        op = snapshot.summary.operation if snapshot.summary is not None else Operation.APPEND
        if op == Operation.APPEND:
            return True
        if op == Operation.REPLACE:
            return False
        skip = self.skip_overwrite if op == Operation.OVERWRITE else self.skip_delete
        if skip:
            return False
        option = SKIP_OVERWRITE if op == Operation.OVERWRITE else SKIP_DELETE
        article = "an" if op == Operation.OVERWRITE else "a"
        raise ValidationError(
            f"Cannot stream table {table}: snapshot {snapshot.snapshot_id} is {article} {op.value}, which a stream of "
            f"appends cannot express; set {option}=true to skip such snapshots"
        )

    def _added_files(self, scan: TableScan, snapshot: Snapshot) -> list[FileScanTask]:
        cached = self._files.get(snapshot.snapshot_id)
        if cached is None:
            appended = scan.appends_between(snapshot.parent_snapshot_id, snapshot.snapshot_id)
            cached = sorted(appended.plan_files(), key=lambda t: t.data_file.file_path)
            self._files[snapshot.snapshot_id] = cached
        return cached

    # -- offsets ------------------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        chain = self._ancestry(self._scan())
        return _Offset(chain[0].snapshot_id if chain else -1, 0).as_dict()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        scan = self._scan()
        begin = _Offset.of(start)
        max_files = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        files = rows = 0
        end = begin
        for snapshot, first in self._pending(scan, begin):
            tasks = self._added_files(scan, snapshot)
            pos = first
            while pos < len(tasks):
                n = tasks[pos].data_file.record_count
                over_files = max_files is not None and files + 1 > max_files
                over_rows = max_rows is not None and rows + n > max_rows
                if (over_files or over_rows) and files > 0:
                    return end.as_dict()
                files, rows, pos = files + 1, rows + n, pos + 1
                end = _Offset(snapshot.snapshot_id, pos)
            end = _Offset(snapshot.snapshot_id, len(tasks))
        return end.as_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        return ReadAllAvailable()

    def _pending(self, scan: TableScan, begin: _Offset) -> Iterator[tuple[Snapshot, int]]:
        """Readable snapshots from ``begin`` on, each with its first unread file position."""
        chain = self._ancestry(scan)
        ids = [s.snapshot_id for s in chain]
        if begin.snapshot_id == -1:
            start_index, first = 0, 0
        elif begin.snapshot_id in ids:
            start_index, first = ids.index(begin.snapshot_id), begin.position
        else:
            raise ValidationError(
                f"Cannot resume streaming table {scan.table_name}: snapshot {begin.snapshot_id} of the checkpoint "
                "is no longer in the table's history (expired or rolled back)"
            )
        for i, snapshot in enumerate(chain[start_index:]):
            if self._readable(snapshot, scan.table_name):
                yield snapshot, first if i == 0 else 0

    # -- reading ------------------------------------------------------------------------------------
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        scan = self._scan()
        begin, stop = _Offset.of(start), _Offset.of(end)
        tasks: list[FileScanTask] = []
        for snapshot, first in self._pending(scan, begin):
            added = self._added_files(scan, snapshot)
            last = stop.position if snapshot.snapshot_id == stop.snapshot_id else len(added)
            tasks += added[first:last]
            if snapshot.snapshot_id == stop.snapshot_id:
                break
        return [task_group(scan, i, [t]) for i, t in enumerate(tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self._batch_reader.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        done = _Offset.of(end)
        self._files = {k: v for k, v in self._files.items() if k == done.snapshot_id}
