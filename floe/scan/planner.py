"""The planning engine: manifest list -> pruned manifests -> pruned entries -> file scan tasks.

Pruning happens at three levels (spec "Scan Planning"):
1. manifests, by their partition field summaries (one manifest evaluator per partition spec id);
2. entries, by partition values (the row filter's inclusive projection onto each entry's spec, so files
   written under older specs prune too) — evaluated once per distinct partition tuple and cached;
3. entries, by column metrics (lower/upper bounds, null and NaN counts).

Manifest bytes are fetched by a thread pool, a bounded window ahead of the decoder; entries are decoded
and filtered one manifest at a time: memory grows with the files selected, not with the table's history.
Data manifests are decoded with column metrics for the filter's columns only (see ``stats_columns``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from floe.errors import UnsupportedError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from floe.io.fileio import FileIO
from floe.scan import _filters
from floe.scan.delete_index import DeleteFileIndex
from floe.scan.parallel import MIN_MANIFESTS_FOR_PROCESSES, PlanJob, plan_in_processes
from floe.scan.tasks import FileScanTask
from floe.serde.manifest_avro import read_manifest, read_manifest_header, read_manifest_list
from floe.spec.manifest import (
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot
from floe.spec.types import StructType

__all__ = ["DEFAULT_PLANNING_THREADS", "ManifestPlanner", "read_manifest_files", "referenced_field_ids"]

DEFAULT_PLANNING_THREADS = 4
_T = TypeVar("_T")
_DELETED = ManifestEntryStatus.DELETED
_DATA = FileContent.DATA


def read_manifest_files(
    io: FileIO, snapshot: Snapshot, location_of: Callable[[str], str] | None = None
) -> list[ManifestFile]:
    """The manifest list of ``snapshot`` (v1 snapshots may list manifests inline)."""
    loc = location_of or (lambda s: s)
    if snapshot.manifest_list:
        with io.new_input(loc(snapshot.manifest_list)).open() as fo:
            return read_manifest_list(fo.read())
    out: list[ManifestFile] = []
    for path in snapshot.manifests or ():
        # v1 snapshots without a manifest list name their manifests inline; the spec id is in the header.
        with io.new_input(loc(path)).open() as fo:
            header = read_manifest_header(fo.read())
        spec_id = int(header.get("partition-spec-id", "0"))
        out.append(
            ManifestFile(path, 0, spec_id, ManifestContent.DATA, 0, 0, snapshot.snapshot_id,
                         None, None, None, None, None, None)
        )
    return out


@dataclass(slots=True)
class _SpecFilters:
    """Per-spec pruning state: manifest evaluator, partition evaluator with cache, residuals."""

    spec: PartitionSpec
    manifest_ok: Callable[[ManifestFile], bool]
    partition_ok: Callable[[tuple[object, ...]], bool]
    residual_for: Callable[[tuple[object, ...]], BooleanExpression]


class ManifestPlanner:
    """Plans the file scan tasks of one snapshot.

    Args:
        io: reads manifest lists and manifests.
        schema: the schema the row filter binds to.
        specs_by_id: every partition spec of the table.
        row_filter: an unbound filter expression.
        case_sensitive: whether column names in the filter match case-sensitively.
        threads: manifest reader threads.
        processes: worker processes for plans over many manifests (0 or 1: none).
        location_of: maps a location in metadata to one FileIO can read (relocated fixture tables).
        stats_columns: None (the default) loads every column metric of the planned data files. A
            collection of field ids loads metrics only for those columns and the ones the row filter
            references (the metrics maps of task data files then hold just those; with neither, they are
            None: not loaded). Decoding the metrics maps is most of the cost of planning a large table.
            Delete files always keep their metrics (the delete index reads them).
        partition_types: partition type per spec id (``TableMetadata.partition_type``), so specs whose
            source column was dropped still prune; specs left out are typed from ``schema``.
    """

    def __init__(
        self,
        *,
        io: FileIO,
        schema: Schema,
        specs_by_id: Mapping[int, PartitionSpec],
        row_filter: BooleanExpression | None = None,
        case_sensitive: bool = True,
        threads: int = DEFAULT_PLANNING_THREADS,
        location_of: Callable[[str], str] | None = None,
        table_name: str = "",
        processes: int = 0,
        stats_columns: Collection[int] | None = None,
        partition_types: Mapping[int, StructType] | None = None,
    ) -> None:
        self._io = io
        self._schema = schema
        self._specs = dict(specs_by_id)
        self._partition_types = dict(partition_types or {})
        self._filter = row_filter if row_filter is not None else AlwaysTrue()
        self._case_sensitive = case_sensitive
        self._threads = max(1, threads)
        self._loc = location_of or (lambda s: s)
        self._table = table_name
        self._processes = processes
        self._bound = _filters.bind_filter(schema, self._filter, case_sensitive)
        self._trivial = isinstance(self._bound, AlwaysTrue)
        self._filters: dict[int, _SpecFilters] = {}
        # Planning counters (like Iceberg's ScanMetrics): manifests read/skipped, files kept/skipped.
        self.metrics: dict[str, int] = {
            "scanned_manifests": 0,
            "skipped_manifests": 0,
            "result_data_files": 0,
            "skipped_data_files": 0,
            "result_delete_files": 0,
        }
        self._metrics_ok = (
            None if isinstance(self._bound, AlwaysTrue) else _filters.metrics_evaluator(schema, self._filter, case_sensitive)
        )
        self._stats: frozenset[int] | None = (
            None if stats_columns is None else frozenset(stats_columns) | referenced_field_ids(self._bound)
        )

    # -- per-spec state ---------------------------------------------------------------------------
    def _for_spec(self, spec_id: int) -> _SpecFilters:
        got = self._filters.get(spec_id)
        if got is not None:
            return got
        spec = self._specs.get(spec_id)
        if spec is None:
            raise UnsupportedError(f"Table {self._table}: manifest uses unknown partition spec id {spec_id}")
        if isinstance(self._bound, AlwaysTrue):
            f = _SpecFilters(spec, lambda m: True, lambda p: True, lambda p: AlwaysTrue())
        else:
            args = (spec, self._schema, self._filter, self._case_sensitive)
            ptype = self._partition_types.get(spec_id)
            f = _SpecFilters(
                spec,
                _filters.manifest_evaluator(*args, partition_type=ptype),
                _cached(_filters.partition_evaluator(*args, partition_type=ptype)),
                _cached(_filters.residual_evaluator(*args, partition_type=ptype)),
            )
        self._filters[spec_id] = f
        return f

    def residual(self, spec_id: int, partition: tuple[object, ...]) -> BooleanExpression:
        """The filter still to apply to rows of a file with this spec and partition tuple."""
        return self._for_spec(spec_id).residual_for(partition)

    # -- manifests --------------------------------------------------------------------------------
    def _manifest_selected(self, m: ManifestFile) -> bool:
        ok = not isinstance(self._bound, AlwaysFalse) and self._for_spec(m.partition_spec_id).manifest_ok(m)
        self.metrics["scanned_manifests" if ok else "skipped_manifests"] += 1
        return ok

    def _fetch(self, m: ManifestFile) -> bytes:
        with self._io.new_input(self._loc(m.manifest_path)).open() as fo:
            data: bytes = fo.read()
        return data

    def _read_entries(self, m: ManifestFile, data: bytes | None = None) -> list[ManifestEntry]:
        spec = self._specs.get(m.partition_spec_id)
        if data is None:
            data = self._fetch(m)
        stats = self._stats if m.content == ManifestContent.DATA else None
        return read_manifest(data, manifest_file=m, partition_spec=spec, schema=self._schema, stats_columns=stats)

    def live_matching(self, m: ManifestFile, data: bytes | None = None) -> list[ManifestEntry]:
        """Entries of one manifest that are live and may match the filter (``data``: its bytes if read)."""
        entries = self._read_entries(m, data)
        if self._trivial:
            return [e for e in entries if e.status is not _DELETED]
        part_ok, metrics_ok = self._for_spec(m.partition_spec_id).partition_ok, self._metrics_ok
        out: list[ManifestEntry] = []
        skipped = 0
        for e in entries:
            if e.status is _DELETED:
                continue
            df = e.data_file
            if not part_ok(df.partition) or (metrics_ok is not None and not metrics_ok(df)):
                skipped += 1
                continue
            out.append(e)
        self.metrics["skipped_data_files"] += skipped
        return out

    def _stream(
        self, manifests: list[ManifestFile], work: Callable[[ManifestFile, bytes | None], list[ManifestEntry]]
    ) -> Iterator[ManifestEntry]:
        """``work`` over each manifest, flattened, in order."""
        for chunk in self._chunks(manifests, work):
            yield from chunk

    def _chunks(
        self, manifests: list[ManifestFile], work: Callable[[ManifestFile, bytes | None], list[ManifestEntry]]
    ) -> Iterator[list[ManifestEntry]]:
        """``work`` over each manifest, one list per manifest, in order. Threads only fetch bytes, a window
        ahead: decoding is pure Python, and decoding in several threads measured slower than in one.
        Local files are read inline: there the pool's GIL hand-offs cost more CPU (~10%) than reads."""
        if self._threads == 1 or len(manifests) <= 1 or _is_local(self._loc(manifests[0].manifest_path)):
            for m in manifests:
                yield work(m, None)
            return
        window = self._threads * 2
        with ThreadPoolExecutor(self._threads, thread_name_prefix="floe-plan") as pool:
            pending: deque[tuple[ManifestFile, Future[bytes]]] = deque()
            it = iter(manifests)
            for m in it:
                pending.append((m, pool.submit(self._fetch, m)))
                if len(pending) >= window:
                    break
            while pending:
                m, fut = pending.popleft()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append((nxt, pool.submit(self._fetch, nxt)))
                yield work(m, fut.result())

    # -- public -----------------------------------------------------------------------------------
    def delete_index(self, manifests: Iterable[ManifestFile]) -> DeleteFileIndex:
        """Index the live delete files of the given manifests that may match the filter."""
        deletes = [m for m in manifests if m.content == ManifestContent.DELETES and self._manifest_selected(m)]
        entries = list(self._stream(deletes, self._live_matching_deletes))
        self.metrics["result_delete_files"] += len(entries)
        return DeleteFileIndex(entries, self._specs, self._table)

    def _live_matching_deletes(self, m: ManifestFile, data: bytes | None = None) -> list[ManifestEntry]:
        f = self._for_spec(m.partition_spec_id)
        return [
            e
            for e in self._read_entries(m, data)
            if e.status is not _DELETED and e.data_file.content != _DATA and f.partition_ok(e.data_file.partition)
        ]

    def _data_manifests(self, manifests: Iterable[ManifestFile]) -> list[ManifestFile]:
        return [m for m in manifests if m.content == ManifestContent.DATA and self._manifest_selected(m)]

    def _use_processes(self, data: list[ManifestFile]) -> bool:
        return self._processes > 1 and len(data) >= MIN_MANIFESTS_FOR_PROCESSES

    def data_entries(self, manifests: Iterable[ManifestFile]) -> Iterator[ManifestEntry]:
        """Live data entries of the given manifests that may match the filter, streamed."""
        return self._entries_of(self._data_manifests(manifests))

    def _entries_of(self, data: list[ManifestFile]) -> Iterator[ManifestEntry]:
        if self._use_processes(data):
            job = PlanJob(
                dict(self._io.properties), self._schema, self._specs, self._filter, self._case_sensitive,
                self._partition_types,
            )
            return plan_in_processes(job, [(m, self._loc(m.manifest_path)) for m in data], processes=self._processes)
        return self._stream(data, self.live_matching)

    def plan(self, snapshot: Snapshot | None) -> Iterator[FileScanTask]:
        """File scan tasks of ``snapshot`` (none for a table without snapshots)."""
        if snapshot is None:
            return iter(())
        manifests = read_manifest_files(self._io, snapshot, self._loc)
        return self.plan_manifests(manifests)

    def plan_manifests(self, manifests: list[ManifestFile]) -> Iterator[FileScanTask]:
        """File scan tasks from a list of manifests (data and delete manifests of one snapshot)."""
        index = self.delete_index(manifests)
        lookup = None if index.is_empty else index.for_data_file
        residuals: dict[int, Callable[[tuple[object, ...]], BooleanExpression]] = {}
        specs = self._specs
        always = AlwaysTrue()
        count = 0
        data = self._data_manifests(manifests)
        if lookup is None and not self._use_processes(data):
            yield from self._plan_without_deletes(data)
            return
        try:
            for e in self._entries_of(data):
                df = e.data_file
                seq = e.sequence_number or 0
                residual_for = residuals.get(df.spec_id)
                if residual_for is None:
                    residual_for = residuals[df.spec_id] = self._for_spec(df.spec_id).residual_for
                residual = always if self._trivial else residual_for(df.partition)
                deletes: tuple[ManifestEntry, ...] = ()
                if lookup is not None:
                    deletes = lookup(seq, df.spec_id, df.partition, df.file_path)
                count += 1
                yield FileScanTask(df, seq, deletes, residual, 0, -1, specs.get(df.spec_id))
        finally:
            self.metrics["result_data_files"] += count

    def _plan_without_deletes(self, data: list[ManifestFile]) -> Iterator[FileScanTask]:
        """The common case, one manifest's tasks at a time (a list comprehension per manifest: the
        per-file cost of this loop shows at millions of files)."""
        always = AlwaysTrue()
        for chunk in self._chunks(data, self.live_matching):
            if not chunk:
                continue
            spec_id = chunk[0].data_file.spec_id  # one manifest: one spec
            spec = self._specs.get(spec_id)
            if self._trivial:
                tasks = [FileScanTask(e.data_file, e.sequence_number or 0, (), always, 0, -1, spec) for e in chunk]
            else:
                res = self._for_spec(spec_id).residual_for
                tasks = [
                    FileScanTask(e.data_file, e.sequence_number or 0, (), res(e.data_file.partition), 0, -1, spec)
                    for e in chunk
                ]
            self.metrics["result_data_files"] += len(tasks)
            yield from tasks


def _is_local(location: str) -> bool:
    return location.startswith(("/", "file:"))


def _cached(fn: Callable[[tuple[object, ...]], _T]) -> Callable[[tuple[object, ...]], _T]:
    """Memoise a function of a partition tuple (tables have far fewer partitions than files)."""
    cache: dict[tuple[object, ...], _T] = {}

    def lookup(p: tuple[object, ...]) -> _T:
        try:
            return cache[p]
        except KeyError:
            v = cache[p] = fn(p)
            return v
        except TypeError:  # an unhashable partition value: evaluate directly
            return fn(p)

    return lookup


def referenced_field_ids(bound: BooleanExpression) -> set[int]:
    """Field ids the bound expression reads (every level of each referenced column's path)."""
    from floe.expressions.base import And, Not, Or
    from floe.expressions.predicates import Predicate

    out: set[int] = set()
    stack: list[BooleanExpression] = [bound]
    while stack:
        e = stack.pop()
        if isinstance(e, (And, Or)):
            stack.extend((e.left, e.right))
        elif isinstance(e, Not):
            stack.append(e.child)
        elif isinstance(e, Predicate) and e.is_bound:
            out.update(e.ref.path_ids)
    return out
