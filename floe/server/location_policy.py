"""The location policy of ``floe serve``: where a client may make the server write, delete or read metadata.

Apache Polaris's defaults are the anchor (allowed locations from the storage configuration,
``ALLOW_TABLE_LOCATION_OVERLAP=false``, ``ALLOW_EXTERNAL_METADATA_FILE_LOCATION=false``). The handlers run
:meth:`LocationPolicy.check_table` on the table metadata of every create, register, commit (also the
staged create and every table of a multi-table commit) and purge, before anything is written or deleted;
the metadata is checked whole each time, because a metadata file on shared storage may have been
rewritten since the server last accepted it. The rules, each refusal naming its rule in one line:

1. **Allowed locations** (403): resolved (local symlinks followed, :mod:`floe.catalog.resolved_locations`),
   every path lies inside an allowed location (default: the warehouse): the table location, every
   location property (``write.data.path``, ``write.metadata.path``, ``write.object-storage.path``,
   ``write.folder-storage.path``), ``metadata-log`` entries, manifest lists, statistics and partition
   statistics files, and a registered metadata file. Malformed paths (relative, ``..`` on object stores)
   are refused with 400.
2. **No overlapping tables** (403): a table's folders (its location and location properties) neither
   contain nor lie inside another table's folders, nor a view's location (where the server writes the
   view's metadata files; :meth:`LocationPolicy.check_view` places views by rules 1, 2 and 4).
3. **Metadata inside the table** (403): a registered metadata file lies inside the table's location or
   its ``write.metadata.path``.
4. **Namespace folders** (authorization by what is touched): a table folder inside another namespace's
   folder (its ``location`` property, else ``<warehouse>/<levels>``), or containing one, needs write on
   that namespace. :meth:`check_table` returns these as :class:`Touched`; the handler checks the grants.

Deletes are confined separately: a purge deletes only files inside the table's location, a commit only
old metadata files inside the metadata folder (:func:`floe.catalog.metadata_files.delete_removed_metadata_files`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from floe.catalog.base import WAREHOUSE, Catalog
from floe.catalog.metadata_files import read_metadata
from floe.catalog.resolved_locations import ResolvedLocation, resolve_location
from floe.catalog.rest_protocol import ForbiddenError
from floe.catalog.views import read_view_metadata
from floe.errors import FloeError, ValidationError
from floe.spec.properties import LOCATION_PROPERTIES, WRITE_METADATA_LOCATION
from floe.spec.table_metadata import TableMetadata
from floe.spec.view_metadata import ViewMetadata
from floe.table.identifiers import Identifier, Namespace, identifier_to_string, namespace_to_string

__all__ = ["LocationPolicy", "Touched"]

log = logging.getLogger("floe.server")

# (what, location, resolved): "table location", "/w/db/t", ResolvedLocation("file", "/w/db/t")
_Folder = tuple[str, str, ResolvedLocation]


@dataclass(frozen=True, slots=True)
class Touched:
    """A namespace whose folder a request's table folders lie in or contain (write on it is needed)."""

    namespace: Namespace
    reason: str


def _forbidden(rule: str, message: str) -> ForbiddenError:
    return ForbiddenError(f"Location policy ({rule}): {message}", code=403, error_type="ForbiddenException")


def table_folders(metadata: TableMetadata) -> Iterator[tuple[str, str]]:
    """``(what, location)`` of the folders a table writes files into: its location and location properties."""
    yield "table location", metadata.location
    for key in LOCATION_PROPERTIES:
        value = metadata.properties.get(key)
        if value:
            yield key, value


def _references(metadata: TableMetadata) -> set[tuple[str, str]]:
    """Files the metadata points at that the server may read (purge) but never writes."""
    refs: set[tuple[str, str]] = set()
    for s in metadata.snapshots:
        if s.manifest_list:
            refs.add((f"manifest list of snapshot {s.snapshot_id}", s.manifest_list))
        refs.update((f"manifest of snapshot {s.snapshot_id}", m) for m in s.manifests or ())
    refs.update(("statistics file", f.statistics_path) for f in metadata.statistics)
    refs.update(("partition statistics file", f.statistics_path) for f in metadata.partition_statistics)
    return refs


class LocationPolicy:
    """The rules of the module docstring for one served catalog.

    Args:
        catalog: the served catalog (its tables and namespaces are what locations are compared with).
        allowed: folders locations must lie in; ``()`` = the catalog's warehouse, None = anywhere (rule 1
            off; the other rules still hold).
    """

    def __init__(self, catalog: Catalog, allowed: tuple[str, ...] | None) -> None:
        self.catalog = catalog
        self.warehouse = catalog.properties.get(WAREHOUSE)
        roots = None if allowed is None else (allowed or tuple(r for r in (self.warehouse,) if r))
        self.allowed_roots = roots
        self._allowed = None if roots is None else [resolve_location(r) for r in roots]
        # metadata file -> the table folders it records (other tables' files are read once, not per check)
        self._folders_by_file: dict[str, tuple[_Folder, ...]] = {}
        self._cache_lock = threading.Lock()
        # held by handlers around check + commit of changes that move a table's folders, so two such
        # changes cannot both pass the overlap rule against the state before the other
        self.moving = threading.Lock()

    # -- single locations ----------------------------------------------------------------------------
    def check_location(self, location: str, *, what: str, subject: str) -> ResolvedLocation:
        """Rule 1 for one location; returns it resolved.

        Raises:
            ValidationError: the location is malformed (relative, ``..`` on an object store ...).
            ForbiddenError: it lies outside the allowed locations.
        """
        try:
            resolved = resolve_location(location)
        except ValidationError as e:
            raise ValidationError(f"Location policy (absolute, canonical locations): {what} of {subject}: {e}") from None
        if self._allowed is not None and not any(resolved.is_inside(root) for root in self._allowed):
            shown = location if str(resolved) == location else f"{location} (resolved: {resolved})"
            raise _forbidden(
                "allowed locations",
                f"{what} {shown} of {subject} is outside the locations this server allows "
                f"({', '.join(self.allowed_roots or ()) or 'none'}); see allowed-locations in the [server] settings",
            )
        return resolved

    def check_namespace_location(self, namespace: Namespace, location: str) -> None:
        """Rule 1 for a namespace's ``location`` property (tables are created below it by default).

        Raises:
            ValidationError, ForbiddenError: as :meth:`check_location`.
        """
        self.check_location(location, what="location", subject=f"namespace {namespace_to_string(namespace)}")

    def check_metadata_file(self, location: str, *, subject: str) -> list[Touched]:
        """Before a metadata file is read for ``register_table``: rule 1, and the namespaces whose folders
        it lies in (reading another namespace's file needs write on it, as registering does).

        Raises:
            ValidationError, ForbiddenError: as :meth:`check_location`.
        """
        resolved = self.check_location(location, what="metadata file", subject=subject)
        return self._namespaces_touched([("metadata file", location, resolved)], contained=False)

    # -- whole tables --------------------------------------------------------------------------------
    def check_table(
        self,
        identifier: Identifier,
        metadata: TableMetadata,
        *,
        base: TableMetadata | None = None,
        metadata_file: str | None = None,
    ) -> list[Touched]:
        """Rules 1-3 for a table's metadata; returns rule 4's namespaces for the caller to authorize.

        Args:
            identifier: the table (its own folders are not compared with themselves).
            metadata: the metadata about to be written, registered or purged.
            base: the metadata it replaces: files it already referenced that are only read (manifest lists,
                statistics) are not checked again.
            metadata_file: the file being registered (rule 3).

        Raises:
            ValidationError: a malformed location.
            ForbiddenError: a rule is broken (one line naming it).
        """
        subject = identifier_to_string(identifier)
        folders = [(what, loc, self.check_location(loc, what=what, subject=subject)) for what, loc in table_folders(metadata)]
        for entry in metadata.metadata_log:
            self.check_location(entry.metadata_file, what="metadata-log entry", subject=subject)
        known = _references(base) if base is not None else set()
        for what, loc in sorted(_references(metadata) - known):
            self.check_location(loc, what=what, subject=subject)
        if metadata_file is not None:
            self._check_metadata_inside(metadata, metadata_file, folders, subject)
        self._check_no_overlap(identifier, folders, subject)
        return self._namespaces_touched(folders, contained=True)

    def check_view(self, identifier: Identifier, metadata: ViewMetadata) -> list[Touched]:
        """Rules 1, 2 and 4 for a view's metadata: its location is where the server writes the view's
        metadata files, so it is placed as a table's folder is (allowed, overlapping no table or view).

        Raises:
            ValidationError: a malformed location.
            ForbiddenError: a rule is broken (one line naming it).
        """
        subject = f"view {identifier_to_string(identifier)}"
        folders = [("view location", metadata.location,
                    self.check_location(metadata.location, what="view location", subject=subject))]
        self._check_no_overlap(identifier, folders, subject)
        return self._namespaces_touched(folders, contained=True)

    def _check_no_overlap(self, identifier: Identifier, folders: list[_Folder], subject: str) -> None:
        for kind, other, other_folders in self._others(identifier):
            for what, loc, resolved in folders:
                for other_what, other_loc, other_resolved in other_folders:
                    if resolved.overlaps(other_resolved):
                        raise _forbidden(
                            "no overlapping tables",
                            f"{what} {loc} of {subject} overlaps {other_what} {other_loc} of {kind} "
                            f"{identifier_to_string(other)}; a table's or view's folders may neither contain nor "
                            "lie inside another's",
                        )

    def remember(self, metadata_location: str, metadata: TableMetadata) -> None:
        """Record the folders of a metadata file the server just wrote (so checks need not read it back)."""
        folders = self._resolved_folders(metadata)
        with self._cache_lock:
            self._folders_by_file[metadata_location] = folders

    # -- helpers -------------------------------------------------------------------------------------
    def _check_metadata_inside(
        self, metadata: TableMetadata, metadata_file: str, folders: list[_Folder], subject: str
    ) -> None:
        resolved = self.check_location(metadata_file, what="metadata file", subject=subject)
        homes = [r for what, _, r in folders if what in ("table location", WRITE_METADATA_LOCATION)]
        if not any(resolved.is_inside(home, strictly=True) for home in homes):
            raise _forbidden(
                "metadata inside the table",
                f"metadata file {metadata_file} of {subject} is not inside the table location {metadata.location}"
                f"{' or its write.metadata.path' if len(homes) > 1 else ''}",
            )

    def _resolved_folders(self, metadata: TableMetadata) -> tuple[_Folder, ...]:
        out = []
        for what, loc in table_folders(metadata):
            try:
                out.append((what, loc, resolve_location(loc)))
            except ValidationError:
                continue  # a folder no check would accept cannot be overlapped by one it accepts
        return tuple(out)

    def _others(self, identifier: Identifier) -> list[tuple[str, Identifier, tuple[_Folder, ...]]]:
        """``(kind, identifier, folders)`` of every other table and view of the catalog."""
        tables = self.catalog.table_metadata_locations()
        views = self.catalog.view_metadata_locations()
        out = []
        entries = [("table", i, loc) for i, loc in tables.items()] + [("view", i, loc) for i, loc in views.items()]
        for kind, ident, metadata_location in entries:
            if ident == tuple(identifier):
                continue
            with self._cache_lock:
                folders = self._folders_by_file.get(metadata_location)
            if folders is None:
                try:
                    if kind == "table":
                        folders = self._resolved_folders(read_metadata(self.catalog.io(metadata_location), metadata_location))
                    else:
                        view = read_view_metadata(self.catalog.io(metadata_location), metadata_location)
                        folders = self._view_folders(view)
                except (FloeError, OSError) as e:
                    log.warning("floe serve: cannot read %s of %s %s: %s", metadata_location, kind, ident, e)
                    continue
                with self._cache_lock:
                    self._folders_by_file[metadata_location] = folders
            out.append((kind, ident, folders))
        current = set(tables.values()) | set(views.values())
        with self._cache_lock:  # forget metadata files nothing points at any more
            for stale in [k for k in self._folders_by_file if k not in current]:
                del self._folders_by_file[stale]
        return out

    @staticmethod
    def _view_folders(metadata: ViewMetadata) -> tuple[_Folder, ...]:
        try:
            return (("view location", metadata.location, resolve_location(metadata.location)),)
        except ValidationError:
            return ()

    def remember_view(self, metadata_location: str, metadata: ViewMetadata) -> None:
        """Record the folder of a view metadata file the server just wrote."""
        folders = self._view_folders(metadata)
        with self._cache_lock:
            self._folders_by_file[metadata_location] = folders

    def _namespace_folders(self) -> list[tuple[Namespace, str, ResolvedLocation]]:
        out = []
        for ns, location in self.catalog.namespace_locations().items():
            try:
                out.append((ns, location, resolve_location(location)))
            except ValidationError:
                continue
        return out

    def _namespaces_touched(self, folders: list[_Folder], *, contained: bool) -> list[Touched]:
        """Rule 4: per folder, the deepest namespace whose folder holds it, and (``contained``) every
        namespace whose folder it holds."""
        namespaces = self._namespace_folders()
        touched: dict[Namespace, str] = {}
        for what, loc, resolved in folders:
            holders = [(ns, nl) for ns, nl, nr in namespaces if resolved.is_inside(nr)]
            if holders:
                ns, nl = max(holders, key=lambda h: len(h[0]))
                touched.setdefault(ns, f"{what} {loc} lies in the folder {nl} of namespace {namespace_to_string(ns)}")
            if contained:
                for ns, nl, nr in namespaces:
                    if nr.is_inside(resolved, strictly=True):
                        touched.setdefault(
                            ns, f"{what} {loc} contains the folder {nl} of namespace {namespace_to_string(ns)}"
                        )
        return [Touched(ns, reason) for ns, reason in touched.items()]
