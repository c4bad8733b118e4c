"""TableScan: an immutable, fluent description of what to read from a table, and its planning.

Every ``with_*``/``filter``/``select`` call returns a new scan. ``plan_files()`` yields one
:class:`FileScanTask` per data file with the delete files that apply and the residual filter;
``plan_tasks()`` splits and bin-packs them by the table's read properties; ``to_arrow()`` reads small
tables on the driver with pyarrow (no Spark).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.expressions.base import AlwaysTrue, BooleanExpression, and_
from floe.io.fileio import FileIO
from floe.io.manifest_reader import read_manifest_files
from floe.scan import _filters
from floe.scan.arrow_read import read_tasks_to_arrow
from floe.scan.planner import DEFAULT_PLANNING_THREADS, ManifestPlanner
from floe.scan.tasks import CombinedScanTask, FileScanTask, pack_tasks, split_tasks
from floe.spec import properties as P
from floe.spec.manifest import ManifestContent, ManifestEntryStatus
from floe.spec.row_lineage import LINEAGE_FIELDS
from floe.spec.schema import Schema, walk_fields
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import StructType

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SCAN_PROCESSES_OPTION", "SCAN_THREADS_OPTION", "LocatedTable", "TableLike", "TableScan"]

# Scan options (not table properties): manifest reader threads, and worker processes for large plans
# (opt-in, used only from MIN_MANIFESTS_FOR_PROCESSES manifests on: measured slower than threads on a
# busy 2-core machine, where spawning and pickling cost more than the extra core gives).
SCAN_THREADS_OPTION = "planning-threads"
SCAN_PROCESSES_OPTION = "planning-processes"


class TableLike(Protocol):
    """What a scan needs from a table handle."""

    @property
    def metadata(self) -> TableMetadata: ...

    @property
    def io(self) -> FileIO: ...


def _identity(location: str) -> str:
    return location


@dataclass(frozen=True)
class LocatedTable:
    """A read-only table handle whose recorded paths are mapped to readable locations.

    Used for tables copied from other machines (fixtures, backups): metadata and manifests keep the
    writer's paths; ``location_of`` maps each to where the file is now.
    """

    metadata: TableMetadata
    io: FileIO
    location_of: Callable[[str], str]
    table_name: str = ""
    metadata_location: str | None = None

    def name(self) -> str:
        return self.table_name or self.metadata.location

    def scan(self, row_filter: BooleanExpression | str | None = None, **kwargs: object) -> TableScan:
        """A scan of this table (keyword options as :meth:`TableScan.of`)."""
        return TableScan.of(self, row_filter=row_filter, **kwargs)  # type: ignore[arg-type]


def _name_of(table: object) -> str:
    name = getattr(table, "name", None)
    if callable(name):
        name = name()
    return str(name or table.metadata.location)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class TableScan:
    """A scan of one table at one snapshot (or an append-only range of snapshots).

    Build it with :meth:`of` (or ``table.scan()``) and refine it fluently; nothing is read until
    ``plan_files``/``plan_tasks``/``to_arrow``.
    """

    metadata: TableMetadata
    io: FileIO
    table_name: str = ""
    row_filter: BooleanExpression = field(default_factory=AlwaysTrue)
    selected_fields: tuple[str, ...] = ("*",)
    case_sensitive: bool = True
    snapshot_id: int | None = None
    as_of_timestamp: int | None = None
    ref: str | None = None
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    location_of: Callable[[str], str] = _identity
    column_stats: bool = False

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def of(
        cls,
        table: TableLike,
        *,
        row_filter: BooleanExpression | str | None = None,
        selected_fields: tuple[str, ...] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        as_of_timestamp: int | None = None,
        ref: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> TableScan:
        """A scan of ``table`` (anything with ``metadata`` and ``io``; ``name`` and ``location_of`` used if present)."""
        loc = getattr(table, "location_of", None) or getattr(table.io, "location_of", None) or _identity
        return cls(
            metadata=table.metadata,
            io=table.io,
            table_name=_name_of(table),
            row_filter=_filters.to_expression(row_filter),
            selected_fields=tuple(selected_fields),
            case_sensitive=case_sensitive,
            snapshot_id=snapshot_id,
            as_of_timestamp=as_of_timestamp,
            ref=ref,
            options=dict(options or {}),
            location_of=loc,
        )

    # -- fluent refinements --------------------------------------------------------------------------
    def filter(self, expr: BooleanExpression | str) -> TableScan:
        """Also require ``expr`` (an expression or a filter string such as ``"id > 5 and day = '2024-01-01'"``)."""
        return replace(self, row_filter=and_(self.row_filter, _filters.to_expression(expr)))

    def select(self, *names: str) -> TableScan:
        """Read only these columns (dotted names reach into structs)."""
        return replace(self, selected_fields=tuple(names) if names else ("*",))

    def include_column_stats(self, include: bool = True) -> TableScan:
        """Load every column metric of the planned data files (sizes, counts, bounds).

        By default planning loads metrics only for the columns the row filter references (pruning and
        strict-match checks need no others) and for columns with an initial default (readers use them
        to tell whether a file has the column); the other columns are absent from the task data files'
        metrics maps, which are None when no column is loaded.
        """
        return replace(self, column_stats=include)

    def with_case_sensitive(self, case_sensitive: bool = True) -> TableScan:
        return replace(self, case_sensitive=case_sensitive)

    def use_snapshot(self, snapshot_id: int) -> TableScan:
        """Read the table as of this snapshot id (time travel)."""
        return replace(self, snapshot_id=snapshot_id, as_of_timestamp=None, ref=None)

    def as_of(self, timestamp_ms: int) -> TableScan:
        """Read the snapshot that was current at ``timestamp_ms`` (milliseconds since the epoch)."""
        return replace(self, as_of_timestamp=timestamp_ms, snapshot_id=None, ref=None)

    def use_ref(self, name: str) -> TableScan:
        """Read the head of a branch or a tag."""
        return replace(self, ref=name, snapshot_id=None, as_of_timestamp=None)

    def option(self, key: str, value: str) -> TableScan:
        """Set a read option (``read.split.target-size`` ... override table properties for this scan)."""
        return replace(self, options={**self.options, key: str(value)})

    def appends_between(self, start_snapshot_id: int | None, end_snapshot_id: int | None = None) -> TableScan:
        """Read only rows appended after ``start_snapshot_id`` (exclusive) up to ``end_snapshot_id`` (inclusive).

        Planning raises UnsupportedError when a snapshot in the range overwrote or deleted data.
        """
        return replace(self, start_snapshot_id=start_snapshot_id, end_snapshot_id=end_snapshot_id)

    # -- resolution -----------------------------------------------------------------------------------
    @property
    def is_incremental(self) -> bool:
        return self.start_snapshot_id is not None or self.end_snapshot_id is not None

    def snapshot(self) -> Snapshot | None:
        """The snapshot this scan reads (None for an empty table).

        Raises:
            NoSuchSnapshotError: the snapshot id, ref or timestamp names no snapshot (message names it).
            ValidationError: more than one of snapshot id, timestamp and ref was given.
        """
        md = self.metadata
        given = [x for x in (self.snapshot_id, self.as_of_timestamp, self.ref) if x is not None]
        if len(given) > 1:
            raise ValidationError(
                f"Table {self.table_name}: choose one of snapshot-id, as-of-timestamp, branch/tag (got "
                f"snapshot-id={self.snapshot_id}, as-of-timestamp={self.as_of_timestamp}, ref={self.ref})"
            )
        if self.is_incremental:
            return self._end_snapshot()
        if self.snapshot_id is not None:
            snap = md.snapshot_by_id(self.snapshot_id)
            if snap is None:
                raise NoSuchSnapshotError(f"Table {self.table_name}: no snapshot with id {self.snapshot_id}")
            return snap
        if self.as_of_timestamp is not None:
            return md.snapshot_as_of_timestamp(self.as_of_timestamp)
        if self.ref is not None:
            snap = md.snapshot_by_name(self.ref)
            if snap is None:
                raise NoSuchSnapshotError(f"Table {self.table_name}: no branch or tag named {self.ref!r}")
            return snap
        return md.current_snapshot()

    def table_schema(self) -> Schema:
        """The schema rows are read with: the snapshot's for time travel by id/timestamp/tag, else current."""
        md = self.metadata
        time_travel = self.snapshot_id is not None or self.as_of_timestamp is not None
        if self.ref is not None:
            r = md.refs.get(self.ref)
            time_travel = r is not None and not r.is_branch
        if time_travel:
            snap = self.snapshot()
            if snap is not None and snap.schema_id is not None:
                s = md.schema_by_id(snap.schema_id)
                if s is not None:
                    return s
        return md.schema()

    def projection(self) -> Schema:
        """The schema of the rows this scan returns (selected columns only). On a v3 table the row lineage
        fields (``_row_id``, ``_last_updated_sequence_number``) may be selected by name, after the columns."""
        schema = self.table_schema()
        if self.selected_fields == ("*",) or "*" in self.selected_fields:
            return schema
        lineage = [f for f in LINEAGE_FIELDS if schema.find_field_or_none(f.field_id) is None
                   and any(_same_name(n, f.name, self.case_sensitive) for n in self.selected_fields)]
        if not lineage or self.metadata.format_version < 3:
            return schema.select(self.selected_fields, self.case_sensitive)
        names = [n for n in self.selected_fields if not any(_same_name(n, f.name, self.case_sensitive) for f in lineage)]
        selected = schema.select(names, self.case_sensitive) if names else Schema(schema_id=schema.schema_id)
        return Schema(*selected.fields, *lineage, schema_id=schema.schema_id,
                      identifier_field_ids=selected.identifier_field_ids)

    def _prop_int(self, key: str, default: int) -> int:
        if key in self.options:
            return P.property_int(self.options, key, default)
        return P.property_int(self.metadata.properties, key, default)

    def _stats_columns(self) -> frozenset[int] | None:
        """Columns whose metrics planning loads besides the filter's (None: all of them)."""
        if self.column_stats:
            return None
        return frozenset(f.field_id for _, f in walk_fields(self.table_schema().as_struct()) if f.initial_default is not None)

    def _partition_types(self) -> dict[int, StructType]:
        """Partition type of each spec across schema history (specs whose source column was dropped)."""
        out: dict[int, StructType] = {}
        for spec in self.metadata.partition_specs:
            try:
                out[spec.spec_id] = self.metadata.partition_type(spec.spec_id)
            except ValidationError:
                continue  # a source column in no schema: the planner reports it if a manifest uses the spec
        return out

    def _planner(self) -> ManifestPlanner:
        return ManifestPlanner(
            io=self.io,
            schema=self.table_schema(),
            specs_by_id=self.metadata.specs_by_id(),
            row_filter=self.row_filter,
            case_sensitive=self.case_sensitive,
            threads=self._prop_int(SCAN_THREADS_OPTION, DEFAULT_PLANNING_THREADS),
            location_of=self.location_of,
            table_name=self.table_name,
            processes=self._prop_int(SCAN_PROCESSES_OPTION, 0),
            stats_columns=self._stats_columns(),
            partition_types=self._partition_types(),
        )

    # -- planning -----------------------------------------------------------------------------------
    def plan_files(self) -> Iterator[FileScanTask]:
        """One task per live data file that may hold matching rows, with its deletes and residual."""
        if self.is_incremental:
            return self._plan_appends()
        return self._planner().plan(self.snapshot())

    def plan_tasks(self) -> Iterator[CombinedScanTask]:
        """Split large files and bin-pack the pieces (``read.split.*`` properties or options)."""
        target = self._prop_int(P.SPLIT_SIZE, P.SPLIT_SIZE_DEFAULT)
        cost = self._prop_int(P.SPLIT_OPEN_FILE_COST, P.SPLIT_OPEN_FILE_COST_DEFAULT)
        lookback = self._prop_int(P.SPLIT_LOOKBACK, P.SPLIT_LOOKBACK_DEFAULT)
        if target <= 0 or cost < 0:
            raise ValidationError(f"Table {self.table_name}: invalid split size {target} / open-file cost {cost}")
        return pack_tasks(split_tasks(self.plan_files(), target), target_size=target, open_file_cost=cost, lookback=lookback)

    # -- incremental appends -------------------------------------------------------------------------
    def _end_snapshot(self) -> Snapshot | None:
        md = self.metadata
        if self.end_snapshot_id is None:
            return md.current_snapshot()
        snap = md.snapshot_by_id(self.end_snapshot_id)
        if snap is None:
            raise NoSuchSnapshotError(f"Table {self.table_name}: no snapshot with id {self.end_snapshot_id} (end)")
        return snap

    def appended_snapshots(self) -> list[Snapshot]:
        """Snapshots after the start (exclusive) up to the end (inclusive), oldest first.

        Raises:
            NoSuchSnapshotError: the start is not an ancestor of the end.
            UnsupportedError: a snapshot in the range overwrote or deleted rows.
        """
        end = self._end_snapshot()
        if end is None:
            return []
        start = self.start_snapshot_id
        if start is not None and self.metadata.snapshot_by_id(start) is None:
            raise NoSuchSnapshotError(f"Table {self.table_name}: no snapshot with id {start} (start)")
        chain: list[Snapshot] = []
        for s in self.metadata.ancestors_of(end.snapshot_id):
            if s.snapshot_id == start:
                break
            chain.append(s)
        else:
            if start is not None:
                raise NoSuchSnapshotError(
                    f"Table {self.table_name}: start snapshot {start} is not an ancestor of end snapshot "
                    f"{end.snapshot_id}"
                )
        for s in chain:
            op = s.summary.operation if s.summary is not None else Operation.APPEND
            if op in (Operation.OVERWRITE, Operation.DELETE):
                raise UnsupportedError(
                    f"Table {self.table_name}: incremental read covers snapshot {s.snapshot_id} with operation "
                    f"{op.value!r}; only appends can be read incrementally (between {start} and {end.snapshot_id})"
                )
        return list(reversed(chain))

    def _plan_appends(self) -> Iterator[FileScanTask]:
        snaps = self.appended_snapshots()
        ids = {s.snapshot_id for s in snaps if s.summary is None or s.summary.operation == Operation.APPEND}
        if not ids:
            return iter(())
        planner = self._planner()
        end = self._end_snapshot()
        assert end is not None
        manifests = [
            m
            for m in read_manifest_files(self.io, end, self.location_of)
            if m.content == ManifestContent.DATA and m.added_snapshot_id in ids
        ]

        def tasks() -> Iterator[FileScanTask]:
            for e in planner.data_entries(manifests):
                if e.status == ManifestEntryStatus.ADDED and e.snapshot_id in ids:
                    df = e.data_file
                    yield FileScanTask(
                        data_file=df,
                        data_sequence_number=e.sequence_number or 0,
                        residual=planner.residual(df.spec_id, df.partition),
                        spec=self.metadata.spec_by_id(df.spec_id),
                    )

        return tasks()

    # -- reading ---------------------------------------------------------------------------------
    def to_arrow(self) -> pa.Table:
        """Read the matching rows into one Arrow table on the driver (small data; deletes applied)."""
        return read_tasks_to_arrow(self, self.plan_files())


def _same_name(given: str, name: str, case_sensitive: bool) -> bool:
    return given == name if case_sensitive else given.lower() == name.lower()
