"""The one reader of manifest lists and manifests: location -> bytes (FileIO) -> decoded values, cached.

Every module that needs manifests goes through here or through :class:`floe.io.manifest_group.ManifestGroup`
(which selects entries on top of this reader); nothing else opens them.

Manifest lists and manifests never change once written (their names carry a snapshot id or a uuid), so
decoded values are cached by location, per FileIO (a catalog's or table handle's): a commit that re-reads
its parent's manifests, conflict validation on a retry, expiry walking every snapshot's list twice, or a
metadata table find them decoded. The cache is small and bounded: manifest lists up to a total number of
listed manifests, manifests only when small and up to a total number of entries, least recently used first
out; scan planning streams past it (``ManifestGroup.without_cache``). Decoded entries also depend on what
they were decoded with (the manifest-list values they inherit, the partition spec and partition types,
which column metrics were kept), so those are part of the key. Entries are frozen values; callers get
their own list of the shared values.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from typing import Any, Generic, TypeVar

from floe.errors import FloeError
from floe.io.fileio import FileIO
from floe.serde.avro_decoder import InflatedContainer
from floe.serde.manifest_avro import IdentityKey, read_manifest, read_manifest_header, read_manifest_list
from floe.spec.manifest import ManifestContent, ManifestEntry, ManifestFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot

__all__ = [
    "ManifestCache",
    "cached_entries",
    "fetch_manifest",
    "manifest_cache",
    "read_entries",
    "read_manifest_files",
]

Locate = Callable[[str], str]

# Bounds per FileIO: about 10k decoded entries with full metrics take tens of MB.
_MAX_LISTED_MANIFESTS = 50_000
_MAX_ENTRIES = 10_000
_MAX_ENTRIES_PER_MANIFEST = 2_000

_V = TypeVar("_V", bound=tuple[object, ...])


def _same(location: str) -> str:
    return location


class _Lru(Generic[_V]):
    """A least-recently-used map bounded by the total size of its values (tuples)."""

    def __init__(self, max_total: int, max_one: int) -> None:
        self._items: OrderedDict[Hashable, _V] = OrderedDict()
        self._total = 0
        self._max_total = max_total
        self._max_one = max_one
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: _V) -> None:
        if len(value) > self._max_one:
            return  # large values stream through; caching them would evict everything else
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= len(old)
            self._items[key] = value
            self._total += len(value)
            while self._total > self._max_total and self._items:
                _, dropped = self._items.popitem(last=False)
                self._total -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0


class ManifestCache:
    """Decoded manifest lists and manifests of one FileIO, bounded (see the module docstring).

    Args:
        max_listed_manifests: total manifests over all cached manifest lists.
        max_entries: total entries over all cached manifests.
        max_entries_per_manifest: manifests with more entries are never cached.
    """

    def __init__(
        self,
        *,
        max_listed_manifests: int = _MAX_LISTED_MANIFESTS,
        max_entries: int = _MAX_ENTRIES,
        max_entries_per_manifest: int = _MAX_ENTRIES_PER_MANIFEST,
    ) -> None:
        self.lists: _Lru[tuple[ManifestFile, ...]] = _Lru(max_listed_manifests, max_listed_manifests)
        self.manifests: _Lru[tuple[ManifestEntry, ...]] = _Lru(max_entries, max_entries_per_manifest)

    def clear(self) -> None:
        """Forget everything (tests that rewrite a file in place)."""
        self.lists.clear()
        self.manifests.clear()


_CACHES: weakref.WeakKeyDictionary[FileIO, ManifestCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def manifest_cache(io: FileIO) -> ManifestCache:
    """The cache shared by every reader of ``io`` (it lives as long as ``io``)."""
    with _CACHES_LOCK:
        cache = _CACHES.get(io)
        if cache is None:
            cache = _CACHES[io] = ManifestCache()
        return cache


def read_manifest_files(
    io: FileIO,
    snapshot: Snapshot,
    location_of: Locate | None = None,
    *,
    default_spec_id: int = 0,
    use_cache: bool = True,
) -> list[ManifestFile]:
    """The manifests of ``snapshot``: its manifest list, or (v1) the manifests it names inline.

    Args:
        location_of: maps a location in metadata to one ``io`` can read (tables copied from elsewhere).
        default_spec_id: the spec id of an inline manifest whose header does not name one.

    Raises:
        NoSuchFileError: the manifest list (or an inline manifest) is missing.
        InvalidMetadataError: it is not a manifest list.
    """
    loc = location_of or _same
    if snapshot.manifest_list:
        location = loc(snapshot.manifest_list)
        cache = manifest_cache(io).lists if use_cache else None
        cached = cache.get(location) if cache is not None else None
        if cached is None:
            cached = tuple(read_manifest_list(io.new_input(location).read_bytes()))
            if cache is not None:
                cache.put(location, cached)
        return list(cached)
    out: list[ManifestFile] = []
    for path in snapshot.manifests or ():
        # v1 snapshots without a manifest list name their manifests inline; the spec id is in the header
        # (Java reads the length from the file, as here).
        data = io.new_input(loc(path)).read_bytes()
        header = read_manifest_header(data)
        out.append(
            ManifestFile(
                manifest_path=path,
                manifest_length=len(data),
                partition_spec_id=int(header.get("partition-spec-id", default_spec_id)),
                content=ManifestContent.DATA,
                sequence_number=0,
                min_sequence_number=0,
                added_snapshot_id=snapshot.snapshot_id,
                added_files_count=None,
                existing_files_count=None,
                deleted_files_count=None,
                added_rows_count=None,
                existing_rows_count=None,
                deleted_rows_count=None,
            )
        )
    return out


def fetch_manifest(io: FileIO, manifest: ManifestFile, location_of: Locate | None = None) -> bytes:
    """The bytes of a manifest.

    Raises:
        NoSuchFileError: it is missing.
    """
    return io.new_input((location_of or _same)(manifest.manifest_path)).read_bytes()


@functools.lru_cache(maxsize=64)
def _decoding_key(spec: IdentityKey, schema: IdentityKey) -> Hashable:
    """What decoding takes from the spec and schema (field ids, partition types), compared by value:
    equal for the same spec and schema of a table reloaded (new objects), computed once per pair."""
    s: PartitionSpec | None = spec.obj  # type: ignore[assignment]
    t: Schema | None = schema.obj  # type: ignore[assignment]
    if s is None:
        return None
    ptype = None
    if t is not None:
        try:
            ptype = s.partition_type(t)
        except FloeError:  # a dropped source column: the decoder uses the Avro types alone, as here
            ptype = None
    return (s.spec_id, s.fields, ptype)


def _entries_key(
    location: str,
    m: ManifestFile,
    spec: PartitionSpec | None,
    schema: Schema | None,
    stats: frozenset[int] | None,
) -> Hashable:
    return (
        location,
        m.partition_spec_id,
        m.added_snapshot_id,
        m.sequence_number,
        m.first_row_id,
        _decoding_key(IdentityKey(spec), IdentityKey(schema)),
        stats,
    )


def cached_entries(
    io: FileIO,
    manifest: ManifestFile,
    *,
    spec: PartitionSpec | None,
    schema: Schema | None,
    stats_columns: frozenset[int] | None,
    location_of: Locate | None = None,
) -> list[ManifestEntry] | None:
    """The entries :func:`read_entries` would return if they are cached, else None (no IO)."""
    key = _entries_key((location_of or _same)(manifest.manifest_path), manifest, spec, schema, stats_columns)
    found = manifest_cache(io).manifests.get(key)
    return None if found is None else list(found)


def read_entries(
    io: FileIO,
    manifest: ManifestFile,
    *,
    spec: PartitionSpec | None = None,
    schema: Schema | None = None,
    stats_columns: Collection[int] | None = None,
    location_of: Locate | None = None,
    data: bytes | InflatedContainer | None = None,
    use_cache: bool = True,
    prefilter: tuple[Any, ...] | None = None,
    dropped: Callable[[int], None] | None = None,
) -> list[ManifestEntry]:
    """Every entry of ``manifest``, with inherited snapshot ids, sequence numbers and first row ids.

    Args:
        spec: the spec the manifest was written with (orders the partition tuple, types its values).
        schema: with ``spec``, gives the partition types.
        stats_columns: None keeps every column metric; field ids keep those columns' metrics only; empty,
            the metrics maps are skipped (None on the entries). Most of decoding is the metrics maps.
        location_of: maps the recorded location to a readable one.
        data: the manifest's bytes (or its inflated container) when the caller fetched them already.
        prefilter: live entries whose metrics prove this (InclusiveMetricsEvaluator.prefilter) cannot match
            are left out, and their number passed to ``dropped`` (not with the cache: it keeps every entry).

    Raises:
        NoSuchFileError: the manifest is missing.
        InvalidMetadataError: it is not a manifest.
    """
    stats = None if stats_columns is None else frozenset(stats_columns)
    location = (location_of or _same)(manifest.manifest_path)
    cache = manifest_cache(io).manifests if use_cache and prefilter is None else None
    key = _entries_key(location, manifest, spec, schema, stats) if cache is not None else None
    if cache is not None:
        found = cache.get(key)
        if found is not None:
            return list(found)
    if data is None:
        data = io.new_input(location).read_bytes()
    entries = read_manifest(
        data, manifest_file=manifest, partition_spec=spec, schema=schema, stats_columns=stats,
        prefilter=prefilter, dropped=dropped,
    )
    if cache is not None:
        cache.put(key, tuple(entries))
    return entries
