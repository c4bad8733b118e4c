"""Scan planning: manifest list -> pruned manifests -> pruned entries -> file scan tasks.

Pruning happens at three levels (spec "Scan Planning"): manifests by partition summaries, entries by
partition tuple, entries by column metrics; floe.scan.pruning turns the row filter into those predicates.
Reading and selecting run in floe.io.manifest_group.ManifestGroup (manifest bytes fetched by a thread pool a
bounded window ahead of the decoder, entries decoded and filtered one manifest at a time: memory grows with
the files selected, not with the table's history). This module adds the delete files that apply, the
residuals and the tasks. Data manifests are decoded with column metrics for the filter's columns only (see
``stats_columns``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup, PruneCounts
from floe.io.manifest_reader import read_manifest_files
from floe.scan.delete_index import DeleteFileIndex
from floe.scan.parallel import MIN_MANIFESTS_FOR_PROCESSES, PlanJob, plan_in_processes
from floe.scan.pruning import RowFilterPruning, referenced_field_ids
from floe.scan.tasks import FileScanTask, new_file_scan_task
from floe.spec.manifest import FileContent, ManifestEntry, ManifestFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot
from floe.spec.types import StructType

# read_manifest_files (floe.io.manifest_reader) and referenced_field_ids (floe.scan.pruning) stay importable
# from here for older callers.
__all__ = ["DEFAULT_PLANNING_THREADS", "ManifestPlanner", "read_manifest_files", "referenced_field_ids"]

DEFAULT_PLANNING_THREADS = 4
_DATA = FileContent.DATA


def _is_delete(e: ManifestEntry) -> bool:
    return e.data_file.content is not _DATA


class ManifestPlanner:
    """Plans the file scan tasks of one snapshot: the row filter's pruning (floe.scan.pruning) applied to
    a :class:`~floe.io.manifest_group.ManifestGroup` (which reads the manifests), then the tasks.

    Args:
        io: reads manifest lists and manifests.
        schema: the schema the row filter binds to.
        specs_by_id: every partition spec of the table.
        row_filter: an unbound filter expression.
        case_sensitive: whether column names in the filter match case-sensitively.
        threads: manifest reader threads.
        processes: worker processes for plans over many manifests (0 or 1: none); not when
            ``stats_columns`` asks for metrics, which the workers do not return.
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
        self._location_of = location_of
        self._loc = location_of or (lambda s: s)
        self._table = table_name
        self._processes = processes
        self._pruning = RowFilterPruning(
            schema=schema, specs_by_id=self._specs, row_filter=self._filter, case_sensitive=case_sensitive,
            partition_types=self._partition_types, table_name=table_name,
        )
        self._trivial = self._pruning.trivial
        # Planning counters (like Iceberg's ScanMetrics): manifests read/skipped, files kept/skipped.
        self._counts = {"scanned_manifests": 0, "skipped_manifests": 0, "result_data_files": 0, "result_delete_files": 0}
        self._pruned = PruneCounts()
        self._stats: frozenset[int] | None = (
            None if stats_columns is None else frozenset(stats_columns) | referenced_field_ids(self._pruning.bound)
        )
        # Worker processes return entries without column metrics: only for plans whose callers need none.
        self._metrics_free = stats_columns is not None and not stats_columns

    @property
    def metrics(self) -> dict[str, int]:
        """Planning counters so far: manifests scanned/skipped, data files kept/skipped, delete files kept."""
        c = self._counts
        return {
            "scanned_manifests": c["scanned_manifests"],
            "skipped_manifests": c["skipped_manifests"],
            "result_data_files": c["result_data_files"],
            "skipped_data_files": self._pruned.entries_skipped,
            "result_delete_files": c["result_delete_files"],
        }

    def residual(self, spec_id: int, partition: tuple[object, ...]) -> BooleanExpression:
        """The filter still to apply to rows of a file with this spec and partition tuple."""
        return self._pruning.residual_for(spec_id)(partition)

    # -- the manifest group ------------------------------------------------------------------------
    def _manifest_selected(self, m: ManifestFile) -> bool:
        ok = self._pruning.manifest_may_match(m)
        self._counts["scanned_manifests" if ok else "skipped_manifests"] += 1
        return ok

    def _group(self, manifests: Iterable[ManifestFile]) -> ManifestGroup:
        """Live entries of the manifests whose partition summaries may match."""
        group = ManifestGroup(
            io=self._io,
            manifests=tuple(manifests),
            specs_by_id=self._specs,
            schema=self._schema,
            location_of=self._location_of,
            threads=self._threads,
        )
        # Planning streams: keeping decoded manifests alive for the FileIO's cache measured 4% more CPU on a
        # million-file plan (more live objects for the garbage collector), for little reuse.
        return group.without_cache().ignore_deleted().filter_manifests(self._manifest_selected)

    def _data_group(self, manifests: Iterable[ManifestFile]) -> ManifestGroup:
        """Data manifests pruned by partition and column metrics, decoding only the metrics planning needs."""
        group = self._group(manifests).data_only().select_stats(self._stats).count_into(self._pruned)
        return self._pruning.prune_entries(group)

    # -- public -----------------------------------------------------------------------------------
    def delete_index(self, manifests: Iterable[ManifestFile]) -> DeleteFileIndex:
        """Index the live delete files of the given manifests that may match the filter."""
        deletes = self._group(manifests).deletes_only().filter_entries(_is_delete)
        if not self._trivial:
            deletes = deletes.filter_partitions(self._pruning.partition_filter)
        entries = list(deletes.entries())  # delete files keep every metric: the index reads them
        self._counts["result_delete_files"] += len(entries)
        return DeleteFileIndex(entries, self._specs, self._table)

    def _use_processes(self, data: ManifestGroup) -> bool:
        return self._processes > 1 and self._metrics_free and len(data.manifests) >= MIN_MANIFESTS_FOR_PROCESSES

    def data_entries(self, manifests: Iterable[ManifestFile]) -> Iterator[ManifestEntry]:
        """Live data entries of the given manifests that may match the filter, streamed."""
        return self._entries_of(self._data_group(manifests).pruned())

    def _entries_of(self, data: ManifestGroup) -> Iterator[ManifestEntry]:
        if self._use_processes(data):
            job = PlanJob(
                dict(self._io.properties), self._schema, self._specs, self._filter, self._case_sensitive,
                self._partition_types,
            )
            located = [(m, self._loc(m.manifest_path)) for m in data.manifests]
            return plan_in_processes(job, located, processes=self._processes)
        return data.entries()

    def plan(self, snapshot: Snapshot | None) -> Iterator[FileScanTask]:
        """File scan tasks of ``snapshot`` (none for a table without snapshots)."""
        if snapshot is None:
            return iter(())
        manifests = read_manifest_files(self._io, snapshot, self._location_of)
        return self.plan_manifests(manifests)

    def plan_manifests(self, manifests: list[ManifestFile]) -> Iterator[FileScanTask]:
        """File scan tasks from a list of manifests (data and delete manifests of one snapshot)."""
        index = self.delete_index(manifests)
        lookup = None if index.is_empty else index.for_data_file
        residuals: dict[int, Callable[[tuple[object, ...]], BooleanExpression]] = {}
        specs = self._specs
        always = AlwaysTrue()
        count = 0
        data = self._data_group(manifests).pruned()
        if lookup is None and not self._use_processes(data):
            yield from self._plan_without_deletes(data)
            return
        try:
            for e in self._entries_of(data):
                df = e.data_file
                seq = e.sequence_number or 0
                residual_for = residuals.get(df.spec_id)
                if residual_for is None:
                    residual_for = residuals[df.spec_id] = self._pruning.residual_for(df.spec_id)
                residual = always if self._trivial else residual_for(df.partition)
                deletes: tuple[ManifestEntry, ...] = ()
                if lookup is not None:
                    deletes = lookup(seq, df.spec_id, df.partition, df.file_path)
                count += 1
                # Positional: keywords cost ~0.4 us more per task (3% of a million-file plan).
                yield new_file_scan_task(df, seq, deletes, residual, 0, -1, specs.get(df.spec_id))
        finally:
            self._counts["result_data_files"] += count

    def _plan_without_deletes(self, data: ManifestGroup) -> Iterator[FileScanTask]:
        """The common case, one manifest's tasks at a time (a list comprehension per manifest: the
        per-file cost of this loop shows at millions of files)."""
        always = AlwaysTrue()
        for _, chunk in data.entries_by_manifest():
            if not chunk:
                continue
            spec_id = chunk[0].data_file.spec_id  # one manifest: one spec
            spec = self._specs.get(spec_id)
            # FileScanTask(data_file, data_sequence_number, deletes, residual, start, length, spec), positional:
            # keywords cost ~0.4 us more per task (3% of a million-file plan).
            if self._trivial:
                tasks = [new_file_scan_task(e.data_file, e.sequence_number or 0, (), always, 0, -1, spec) for e in chunk]
            else:
                res = self._pruning.residual_for(spec_id)
                tasks = [
                    new_file_scan_task(e.data_file, e.sequence_number or 0, (), res(e.data_file.partition), 0, -1, spec)
                    for e in chunk
                ]
            self._counts["result_data_files"] += len(tasks)
            yield from tasks
