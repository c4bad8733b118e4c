"""ManifestGroup: which entries of which manifests to read, and reading them (Iceberg Java's ManifestGroup).

A group starts from manifests (a snapshot's, the distinct ones of several snapshots, or a list) and each
call returns a narrower group: by content (data or delete manifests), by entry status (``ignore_deleted``,
``ignore_existing``; a manifest whose counts show none of the wanted statuses is not read), by manifest
(partition summaries), by partition tuple (a predicate per spec id), by data file (column metrics) and by
entry; ``select_stats`` chooses the column metrics decoded. Reading streams one manifest at a time, in
order. With threads, a pool fetches and inflates manifests a bounded window ahead of the decoding thread
(local ones in C without the GIL, see ``_fetched``): decoding holds the GIL, and decoding in several threads
measured slower than in one (GIL hand-offs). Decoded values come through
:mod:`floe.io.manifest_reader` and its cache.

Row filters are expressions (``floe.expressions``), which this layer does not import: ``floe.scan``
turns a row filter into the manifest, partition and file predicates a group takes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from floe.io.fileio import FileIO
from floe.io.locations import LOCAL_SCHEMES, scheme_of, to_local_path
from floe.io.manifest_reader import cached_entries, fetch_manifest, read_entries, read_manifest_files
from floe.io.read_ahead import read_ahead
from floe.serde.avro_decoder import InflatedContainer, inflate_container, read_inflated
from floe.spec.manifest import DataFile, ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot
from floe.spec.table_metadata import TableMetadata

__all__ = ["ManifestGroup", "PartitionFilter", "PruneCounts"]

Partition = tuple[object, ...]
# Per partition spec id, a predicate over partition tuples of that spec (None: every tuple matches).
PartitionFilter = Callable[[int], Callable[[Partition], bool] | None]

_ADDED = ManifestEntryStatus.ADDED
_EXISTING = ManifestEntryStatus.EXISTING
_DELETED = ManifestEntryStatus.DELETED
_ALL = frozenset(ManifestEntryStatus)
_LIVE = frozenset({_ADDED, _EXISTING})
_T = TypeVar("_T")
# A manifest as the prefetch pool hands it over: inflated, raw (when it does not parse), or None (read later).
Fetched = InflatedContainer | bytes | None


@dataclass(slots=True)
class PruneCounts:
    """Entries a group's partition and file filters rejected, counted as it reads (Iceberg's ScanMetrics)."""

    entries_skipped: int = 0


def _is_local(location: str) -> bool:
    return scheme_of(location) in LOCAL_SCHEMES


def _same(location: str) -> str:
    return location


@dataclass(frozen=True, slots=True)
class ManifestGroup:
    """Manifests to read and what to keep of them; immutable (every refinement returns a new group).

    Build one with :meth:`of`, :meth:`of_snapshot` or :meth:`of_snapshots`; nothing but manifest lists is
    read until :meth:`entries`/:meth:`entries_by_manifest`.
    """

    io: FileIO
    manifests: tuple[ManifestFile, ...]
    specs_by_id: Mapping[int, PartitionSpec] = field(default_factory=dict)
    schema: Schema | None = None
    location_of: Callable[[str], str] | None = None
    content: ManifestContent | None = None
    statuses: frozenset[ManifestEntryStatus] = _ALL
    manifest_filter: Callable[[ManifestFile], bool] | None = None
    partition_filter: PartitionFilter | None = None
    file_filter: Callable[[DataFile], bool] | None = None
    entry_filter: Callable[[ManifestEntry], bool] | None = None
    stats_columns: frozenset[int] | None = None
    threads: int = 1
    missing_ok: bool = False
    use_cache: bool = True
    counts: PruneCounts | None = None
    metrics_prefilter: tuple[Any, ...] | None = None

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def of(
        cls, io: FileIO, manifests: Iterable[ManifestFile], *, location_of: Callable[[str], str] | None = None
    ) -> ManifestGroup:
        """A group over these manifests (``location_of`` maps recorded locations to readable ones)."""
        return cls(io=io, manifests=tuple(manifests), location_of=location_of)

    @classmethod
    def of_snapshot(
        cls,
        io: FileIO,
        snapshot: Snapshot | None,
        *,
        location_of: Callable[[str], str] | None = None,
        default_spec_id: int = 0,
    ) -> ManifestGroup:
        """A group over a snapshot's manifests (none for no snapshot).

        Raises:
            NoSuchFileError: its manifest list is missing.
        """
        if snapshot is None:
            return cls(io=io, manifests=(), location_of=location_of)
        found = read_manifest_files(io, snapshot, location_of, default_spec_id=default_spec_id)
        return cls(io=io, manifests=tuple(found), location_of=location_of)

    @classmethod
    def of_snapshots(
        cls,
        io: FileIO,
        snapshots: Iterable[Snapshot],
        *,
        location_of: Callable[[str], str] | None = None,
        threads: int = 1,
        missing_ok: bool = False,
    ) -> ManifestGroup:
        """A group over the distinct manifests (by path) of several snapshots, in the order they are first
        listed (that listing's values win).

        Args:
            threads: read remote manifest lists in a pool of this many threads (and manifests later).
            missing_ok: a missing manifest list lists nothing (the group's manifests must still exist).

        Raises:
            NoSuchFileError: a manifest list is missing and ``missing_ok`` is False.
        """
        snaps = list(snapshots)
        loc = location_of or _same

        def one(s: Snapshot) -> list[ManifestFile]:
            try:
                return read_manifest_files(io, s, location_of)
            except FileNotFoundError:
                if missing_ok:
                    return []
                raise

        lists: Iterable[list[ManifestFile]]
        remote = any(s.manifest_list and not _is_local(loc(s.manifest_list)) for s in snaps)
        if threads > 1 and len(snaps) > 1 and remote:
            with ThreadPoolExecutor(min(threads, len(snaps)), thread_name_prefix="floe-lists") as pool:
                lists = list(pool.map(one, snaps))
        else:
            lists = map(one, snaps)
        seen: dict[str, ManifestFile] = {}
        for manifests in lists:
            for m in manifests:
                seen.setdefault(m.manifest_path, m)
        return cls(io=io, manifests=tuple(seen.values()), location_of=location_of, threads=threads)

    # -- refinements -------------------------------------------------------------------------------
    def with_metadata(self, metadata: TableMetadata) -> ManifestGroup:
        """Decode with the table's partition specs and current schema (typed partition tuples)."""
        return replace(self, specs_by_id=metadata.specs_by_id(), schema=metadata.schema())

    def with_specs(self, specs_by_id: Mapping[int, PartitionSpec], schema: Schema | None) -> ManifestGroup:
        """Decode with these partition specs and this schema (e.g. a time-travel snapshot's)."""
        return replace(self, specs_by_id=specs_by_id, schema=schema)

    def data_only(self) -> ManifestGroup:
        """Read data manifests only."""
        return replace(self, content=ManifestContent.DATA)

    def deletes_only(self) -> ManifestGroup:
        """Read delete manifests only."""
        return replace(self, content=ManifestContent.DELETES)

    def with_content(self, content: ManifestContent | None) -> ManifestGroup:
        """Read manifests of this content only (None: both)."""
        return replace(self, content=content)

    def ignore_deleted(self) -> ManifestGroup:
        """Skip DELETED entries (keep the live ones)."""
        return replace(self, statuses=self.statuses - {_DELETED})

    def ignore_existing(self) -> ManifestGroup:
        """Skip EXISTING entries (keep what snapshots added or deleted)."""
        return replace(self, statuses=self.statuses - {_EXISTING})

    def only_statuses(self, *statuses: ManifestEntryStatus) -> ManifestGroup:
        """Keep entries with these statuses only."""
        return replace(self, statuses=frozenset(statuses))

    def filter_manifests(self, keep: Callable[[ManifestFile], bool]) -> ManifestGroup:
        """Also require ``keep(manifest)`` (e.g. its partition summaries may match a filter)."""
        return replace(self, manifest_filter=_both(self.manifest_filter, keep))

    def filter_partitions(self, per_spec: PartitionFilter) -> ManifestGroup:
        """Also require the predicate ``per_spec(spec_id)`` gives (if any) of each entry's partition tuple."""
        before = self.partition_filter
        if before is None:
            return replace(self, partition_filter=per_spec)

        def combined(spec_id: int) -> Callable[[Partition], bool] | None:
            a, b = before(spec_id), per_spec(spec_id)
            if a is None or b is None:
                return b if a is None else a
            return lambda p: a(p) and b(p)

        return replace(self, partition_filter=combined)

    def filter_files(self, keep: Callable[[DataFile], bool]) -> ManifestGroup:
        """Also require ``keep(data_file)`` (e.g. its column metrics may match a filter)."""
        return replace(self, file_filter=_both(self.file_filter, keep))

    def prefilter_metrics(self, spec: tuple[Any, ...] | None) -> ManifestGroup:
        """Let the manifest decoder drop, before building them, entries whose column metrics prove ``spec``
        (InclusiveMetricsEvaluator.prefilter) cannot match: a shortcut of the file filter built from the same
        expression, which still runs on every entry kept. Only for groups that do not use the manifest cache
        (cached manifests hold every entry)."""
        return replace(self, metrics_prefilter=spec)

    def filter_entries(self, keep: Callable[[ManifestEntry], bool]) -> ManifestGroup:
        """Also require ``keep(entry)`` (not counted as pruned: e.g. which snapshot wrote it)."""
        return replace(self, entry_filter=_both(self.entry_filter, keep))

    def select_stats(self, columns: Collection[int] | None) -> ManifestGroup:
        """Decode column metrics of these field ids only (empty: none, the maps read as None; None: all)."""
        return replace(self, stats_columns=None if columns is None else frozenset(columns))

    def plan_with(self, threads: int) -> ManifestGroup:
        """Fetch remote manifests with this many threads (1: none)."""
        return replace(self, threads=max(1, threads))

    def skip_missing(self, missing_ok: bool = True) -> ManifestGroup:
        """Read a missing manifest as empty instead of failing (for what is about to be deleted)."""
        return replace(self, missing_ok=missing_ok)

    def without_cache(self) -> ManifestGroup:
        """Neither look up nor keep decoded manifests in the FileIO's cache."""
        return replace(self, use_cache=False)

    def count_into(self, counts: PruneCounts) -> ManifestGroup:
        """Count entries the partition and file filters reject into ``counts``."""
        return replace(self, counts=counts)

    # -- manifests ---------------------------------------------------------------------------------
    def selected_manifests(self) -> list[ManifestFile]:
        """The manifests that will be read: of the content asked for, passing the manifest filter (in this
        order, so a counting filter sees only those of the content), possibly holding a wanted status."""
        content, keep, statuses = self.content, self.manifest_filter, self.statuses
        out = []
        for m in self.manifests:
            if content is not None and m.content != content:
                continue
            if keep is not None and not keep(m):
                continue
            if statuses != _ALL and not _may_hold(m, statuses):
                continue
            out.append(m)
        return out

    def pruned(self) -> ManifestGroup:
        """This group over :meth:`selected_manifests` (manifest filters evaluated once, now)."""
        return replace(self, manifests=tuple(self.selected_manifests()), content=None, manifest_filter=None)

    # -- entries -----------------------------------------------------------------------------------
    def entries(self) -> Iterator[ManifestEntry]:
        """The selected entries of every selected manifest, streamed in manifest order."""
        for _, chunk in self.entries_by_manifest():
            yield from chunk

    def entries_by_manifest(self) -> Iterator[tuple[ManifestFile, list[ManifestEntry]]]:
        """Each selected manifest with its selected entries, in order.

        Raises:
            NoSuchFileError: a manifest is missing (unless ``skip_missing``).
            InvalidMetadataError: a file is not a manifest.
        """
        for m, data in self._fetched(self.selected_manifests()):
            yield m, self._select(m, self._decode(m, data))

    def entries_of(self, manifest: ManifestFile) -> list[ManifestEntry]:
        """The selected entries of one manifest (the group's manifest-level filters are not applied)."""
        return self._select(manifest, self._decode(manifest, None))

    def _fetched(self, manifests: list[ManifestFile]) -> Iterator[tuple[ManifestFile, Fetched]]:
        """Each manifest with its bytes, inflated, when the pool fetched them ahead (None: read when decoded).
        The pool reads and inflates a bounded window ahead of the decoder: on a million-entry plan inflating
        was as long as decoding. A local manifest is read and inflated in one C call without the GIL
        (floe/serde/_inflate_native.c): through FileIO and Python's zlib, each step took the GIL back from the
        busy decoder, and the decoder waited 1.0-1.5 s for the pool (20 ms since)."""
        if self.threads <= 1 or len(manifests) <= 1:
            for m in manifests:
                yield m, None
            return
        yield from zip(manifests, read_ahead(self._prefetch, manifests, threads=self.threads))

    def _prefetch(self, m: ManifestFile) -> Fetched:
        if self.use_cache and cached_entries(
            self.io, m, spec=self.specs_by_id.get(m.partition_spec_id), schema=self.schema,
            stats_columns=self.stats_columns, location_of=self.location_of,
        ) is not None:
            return None  # decoded already: nothing to fetch
        location = (self.location_of or _same)(m.manifest_path)
        if _is_local(location):
            try:  # read and inflated without the GIL (the pool's threads otherwise wait for it at each step)
                whole = read_inflated(os.path.abspath(to_local_path(location)))
            except (OSError, ValueError, EOFError):
                whole = None  # the FileIO read below raises the error naming the manifest
            if whole is not None:
                return whole
        try:
            data = fetch_manifest(self.io, m, self.location_of)
        except FileNotFoundError:
            if self.missing_ok:
                return None  # decoding tries once more and reads it as empty
            raise
        try:
            return inflate_container(data)
        except (ValueError, EOFError):
            return data  # not a sound Avro file: the decoder raises the error naming it

    def _decode(self, m: ManifestFile, data: Fetched) -> list[ManifestEntry]:
        try:
            return read_entries(
                self.io,
                m,
                spec=self.specs_by_id.get(m.partition_spec_id),
                schema=self.schema,
                stats_columns=self.stats_columns,
                location_of=self.location_of,
                data=data,
                use_cache=self.use_cache,
                prefilter=None if self.use_cache else self.metrics_prefilter,
                dropped=self._count_dropped,
            )
        except FileNotFoundError:
            if self.missing_ok:
                return []
            raise

    def _count_dropped(self, n: int) -> None:
        if self.counts is not None:
            self.counts.entries_skipped += n

    def _select(self, m: ManifestFile, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """The entries to keep (one list comprehension in the common cases: this runs per file)."""
        statuses = self.statuses
        part_ok = None if self.partition_filter is None else self.partition_filter(m.partition_spec_id)
        file_ok, entry_ok = self.file_filter, self.entry_filter
        if part_ok is None and file_ok is None and entry_ok is None:
            if statuses == _ALL:
                return entries
            if statuses == _LIVE:
                return [e for e in entries if e.status is not _DELETED]
            return [e for e in entries if e.status in statuses]
        live_only = statuses == _LIVE
        out: list[ManifestEntry] = []
        skipped = 0
        for e in entries:
            if (e.status is _DELETED) if live_only else (e.status not in statuses):
                continue
            df = e.data_file
            if (part_ok is not None and not part_ok(df.partition)) or (file_ok is not None and not file_ok(df)):
                skipped += 1
                continue
            if entry_ok is not None and not entry_ok(e):
                continue
            out.append(e)
        if skipped and self.counts is not None:
            self.counts.entries_skipped += skipped
        return out


def _may_hold(m: ManifestFile, statuses: frozenset[ManifestEntryStatus]) -> bool:
    """Whether the manifest's counts allow an entry of these statuses (unknown counts allow any)."""
    return (
        (_ADDED in statuses and m.has_added_files())
        or (_EXISTING in statuses and m.has_existing_files())
        or (_DELETED in statuses and m.has_deleted_files())
    )


def _both(a: Callable[[_T], bool] | None, b: Callable[[_T], bool]) -> Callable[[_T], bool]:
    return b if a is None else (lambda x: a(x) and b(x))
