"""Hadoop (file-system) catalog: ``<warehouse>/<namespace...>/<table>/metadata/v<N>.metadata.json``.

The layout Iceberg's ``HadoopCatalog`` and Spark's ``type=hadoop`` catalogs use. There is no database: the
newest ``v<N>.metadata.json`` is the table's state and ``metadata/version-hint.text`` caches N.

Commit protocol (spec "File System Tables", Java ``HadoopTableOperations``):
1. under a per-table lock, check that the newest version is still the commit's base version N;
2. atomically create ``v<N+1>.metadata.json`` without overwriting (FileIO's exclusive create: a fully
   written temporary file hard-linked to the final name), so two writers can never both win and a
   reader never sees half a file;
3. rewrite ``version-hint.text`` (best effort).
Readers start at the hint and probe forward for newer versions, so a stale or missing hint (a writer
killed between steps 2 and 3) only costs a few existence checks. The lock is an ``fcntl`` lock on a
file in the metadata folder. Object stores are refused (:func:`refuse_object_store`): Iceberg documents the
protocol as unsafe there, and commits on S3 go through a SQL or REST catalog.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from floe.catalog.base import LOCATION, WAREHOUSE, Catalog, PropertiesUpdateSummary
from floe.catalog.metadata_files import (
    delete_removed_metadata_files,
    metadata_suffix,
    parse_version,
    read_metadata,
    write_metadata,
)
from floe.catalog.path_segments import check_identifier_segments, check_namespace_segments, require_inside
from floe.errors import (
    CommitFailedError,
    FileAlreadyExistsError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchFileError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.io.fileio import FileIO
from floe.io.locations import LOCAL_SCHEMES, S3_SCHEMES, join, scheme_of, to_local_path
from floe.serde.metadata_names import (
    METADATA_SUFFIX,
    METADATA_SUFFIXES,
    hadoop_metadata_file_name,
    parse_metadata_file_name,
)
from floe.spec.table_metadata import TableMetadata
from floe.table.identifiers import (
    Identifier,
    IdentifierLike,
    Namespace,
    identifier_to_string,
    namespace_to_string,
    to_identifier,
    to_namespace,
)
from floe.table.operations import TableOperations

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["VERSION_HINT", "HadoopCatalog", "HadoopTableOperations", "is_table_folder"]

VERSION_HINT = "version-hint.text"
LOCK_FILE = ".floe-commit.lock"


def refuse_object_store(location: str, what: str) -> None:
    """Refuse file-system commits on an object store (Iceberg's docs call them unsafe there).

    Raises:
        UnsupportedError: ``location`` is on S3.
    """
    if scheme_of(location) in S3_SCHEMES:
        raise UnsupportedError(
            f"{what}: {location} is on an object store, where the file-system (Hadoop) commit protocol is "
            "unsafe (no atomic rename or lock); use a SQL or REST catalog for tables there"
        )


class HadoopTableOperations(TableOperations):
    """Load and commit a table stored as ``v<N>.metadata.json`` files in ``<table>/metadata``."""

    def __init__(self, identifier: Identifier, io: FileIO, table_location: str) -> None:
        super().__init__(identifier, io)
        self.table_location = table_location.rstrip("/")
        self.metadata_location = join(self.table_location, "metadata")

    # -- reading -------------------------------------------------------------------------------------
    def _version_file(self, version: int, suffix: str = METADATA_SUFFIX) -> str:
        return join(self.metadata_location, hadoop_metadata_file_name(version, suffix))

    def _existing_version_file(self, version: int) -> str | None:
        for suffix in METADATA_SUFFIXES:
            loc = self._version_file(version, suffix)
            if self.io.exists(loc):
                return loc
        return None

    def _read_hint(self) -> int | None:
        try:
            text = self.io.new_input(join(self.metadata_location, VERSION_HINT)).read_bytes()
            return int(text.decode("utf-8").strip())
        except (NoSuchFileError, FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

    def _list_versions(self) -> list[int]:
        fs, path = self.io.resolve(self.metadata_location)
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
        out = []
        for info in infos:
            name = parse_metadata_file_name(info.base_name)
            # Only names this class probes for (not the pre-0.12 ``v<N>.metadata.json.gz``).
            if name is not None and name.hadoop and not name.legacy_gzip and info.type == pafs.FileType.File:
                out.append(name.version)
        return out

    def current_version(self) -> tuple[int, str] | None:
        """The newest version and its file, or None when the folder holds no table.

        Starts at the hint (or a listing when the hint is missing or unreadable) and probes forward, so a
        stale hint never hides a committed version.
        """
        version = self._read_hint()
        location = self._existing_version_file(version) if version is not None else None
        if location is None:
            versions = self._list_versions()
            if not versions:
                return None
            version = max(versions)
            location = self._existing_version_file(version)
            if location is None:
                return None
        assert version is not None
        while (newer := self._existing_version_file(version + 1)) is not None:
            version, location = version + 1, newer
        return version, location

    def load(self) -> tuple[TableMetadata, str]:
        found = self.current_version()
        if found is None:
            raise NoSuchTableError(
                f"Table does not exist: {self.name} (no metadata in {self.metadata_location})"
            )
        # A version may be removed by delete-after-commit between probing and reading: look again once.
        try:
            return read_metadata(self.io, found[1]), found[1]
        except NoSuchFileError:
            found = self.current_version()
            if found is None:
                raise NoSuchTableError(f"Table does not exist: {self.name}") from None
            return read_metadata(self.io, found[1]), found[1]

    # -- committing ----------------------------------------------------------------------------------
    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        refuse_object_store(self.table_location, f"Table {self.name}")
        # As Java's: a path-based table is never relocated. Its first metadata may say another location
        # (register_table of metadata written elsewhere); later commits must keep it.
        if base is not None and new.location.rstrip("/") != base.location.rstrip("/"):
            raise ValidationError(
                f"Hadoop table {self.name} cannot be relocated from {base.location} to {new.location}"
            )
        base_version = 0 if base_location is None else parse_version(base_location)
        if base_location is not None and base_version < 0:
            raise CommitFailedError(
                f"Base metadata {base_location} of {self.name} is not a v<N>.metadata.json file"
            )
        next_location = self._version_file(base_version + 1, metadata_suffix(new))
        with self._lock():
            found = self.current_version()
            current = 0 if found is None else found[0]
            if base is None and found is not None:
                raise TableAlreadyExistsError(f"Table already exists: {self.name} at {self.table_location}")
            if current != base_version:
                raise CommitFailedError(
                    f"Table {self.name} was changed concurrently: base version {base_version}, current {current}"
                )
            try:
                write_metadata(self.io, new, next_location)
            except FileAlreadyExistsError as e:
                if base is None:
                    raise TableAlreadyExistsError(f"Table already exists: {self.name}") from e
                raise CommitFailedError(
                    f"Table {self.name} was changed concurrently: version {base_version + 1} already exists"
                ) from e
            self._write_hint(base_version + 1)
        delete_removed_metadata_files(self.io, base, new)
        return next_location

    def _write_hint(self, version: int) -> None:
        hint = join(self.metadata_location, VERSION_HINT)
        data = str(version).encode("ascii")
        try:
            if scheme_of(hint) in LOCAL_SCHEMES:
                path = to_local_path(hint)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)  # atomic: readers see the old or the new hint, never an empty one
            else:
                self.io.new_output(hint).write_bytes(data, overwrite=True)
        except OSError:
            # The version file is the commit; the hint is a cache that readers verify by probing.
            return

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        if scheme_of(self.metadata_location) not in LOCAL_SCHEMES:
            yield
            return
        directory = to_local_path(self.metadata_location)
        os.makedirs(directory, exist_ok=True)
        fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if the process dies
            yield
        finally:
            os.close(fd)


def is_table_folder(io: FileIO, location: str) -> bool:
    """Whether ``location`` holds a Hadoop table (``metadata/`` with a version hint or version files)."""
    return HadoopTableOperations(("",), io, location).current_version() is not None


class HadoopCatalog(Catalog):
    """A catalog that is a folder tree: namespaces are folders, tables are folders with ``metadata/``.

    Properties: ``warehouse`` (required, local path or URI), FileIO properties.
    """

    def __init__(self, name: str, **properties: str) -> None:
        """Open a warehouse folder.

        Raises:
            ValidationError: ``warehouse`` is missing.
        """
        super().__init__(name, **properties)
        warehouse = self.properties.get(WAREHOUSE)
        if not warehouse:
            raise ValidationError(f"Hadoop catalog {name!r} needs a 'warehouse' property (a folder)")
        self.warehouse = warehouse.rstrip("/")
        refuse_object_store(self.warehouse, f"Hadoop catalog {name!r}")
        self._io = FileIO.for_location(self.warehouse, self.properties)

    def io(self, location: str | None = None) -> FileIO:
        return self._io

    def _ns_location(self, namespace: Namespace) -> str:
        # Namespaces are folders here: every name is checked before it becomes a path segment.
        check_namespace_segments(namespace, catalog=self.name)
        return join(self.warehouse, *namespace)

    def _folder_inside(self, location: str, what: str) -> tuple[pafs.FileSystem, str]:
        """Resolve a folder about to be deleted, refusing it unless it lies strictly inside the warehouse.

        Names are checked before they become paths; this is the second line of defence (a table folder is
        deleted recursively, so a path that escaped would take unrelated data with it).
        """
        fs, path = self._io.resolve(location)
        require_inside(path, self._io.resolve(self.warehouse)[1], what=f"{what} in catalog {self.name!r}")
        return fs, path

    def _subfolders(self, location: str) -> list[str]:
        fs, path = self._io.resolve(location)
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
        return sorted(
            i.base_name
            for i in infos
            if i.type == pafs.FileType.Directory and not i.base_name.startswith(".")
        )

    def _is_dir(self, location: str) -> bool:
        fs, path = self._io.resolve(location)
        return bool(fs.get_file_info(path).type == pafs.FileType.Directory)

    # -- namespaces ----------------------------------------------------------------------------------
    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        ns = to_namespace(namespace)
        loc = self._ns_location(ns)
        return bool(ns) and self._is_dir(loc) and not is_table_folder(self._io, loc)

    def create_namespace(
        self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None
    ) -> None:
        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("Cannot create the root namespace")
        check_namespace_segments(ns, catalog=self.name)
        if properties:
            raise UnsupportedError("The Hadoop catalog cannot store namespace properties")
        if self._is_dir(self._ns_location(ns)):
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {namespace_to_string(ns)}")
        self._io.mkdirs(self._ns_location(ns))

    def list_namespaces(self, namespace: IdentifierLike = ()) -> list[Namespace]:
        parent = to_namespace(namespace)
        if parent and not self.namespace_exists(parent):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace_to_string(parent)}")
        base = self._ns_location(parent)
        return [parent + (d,) for d in self._subfolders(base) if not is_table_folder(self._io, join(base, d))]

    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace_to_string(ns)}")
        return {LOCATION: self._ns_location(ns)}

    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        raise UnsupportedError("The Hadoop catalog cannot store namespace properties")

    def drop_namespace(self, namespace: IdentifierLike) -> None:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace_to_string(ns)}")
        loc = self._ns_location(ns)
        if self._subfolders(loc) or any(True for _ in self._io.list_prefix(loc)):
            raise NamespaceNotEmptyError(f"Namespace {namespace_to_string(ns)} is not empty ({loc})")
        fs, path = self._folder_inside(loc, f"drop namespace {namespace_to_string(ns)}")
        fs.delete_dir(path)

    # -- tables --------------------------------------------------------------------------------------
    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace_to_string(ns)}")
        base = self._ns_location(ns)
        return [ns + (d,) for d in self._subfolders(base) if is_table_folder(self._io, join(base, d))]

    def table_operations(self, identifier: Identifier) -> TableOperations:
        return HadoopTableOperations(identifier, self._io, self.default_table_location(identifier))

    def default_table_location(self, identifier: Identifier) -> str:
        check_identifier_segments(identifier, catalog=self.name)
        return join(self.warehouse, *identifier)

    def table_location(self, identifier: Identifier, location: str | None) -> str:
        expected = self.default_table_location(identifier)
        if location and location.rstrip("/") != expected:
            raise ValidationError(
                f"Cannot set a custom location for a Hadoop table ({location}); it lives at {expected}"
            )
        return expected

    def rename_table(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> Table:
        raise UnsupportedError(
            "Cannot rename Hadoop tables: their location is their name and metadata stores absolute paths"
        )

    def _remove_table_entry(self, identifier: Identifier) -> None:
        ops = HadoopTableOperations(identifier, self._io, self.default_table_location(identifier))
        if ops.current_version() is None:
            raise NoSuchTableError(f"Table does not exist: {identifier_to_string(identifier)}")
        fs, path = self._folder_inside(
            ops.metadata_location, f"drop table {identifier_to_string(identifier)}"
        )
        fs.delete_dir(path)

    def drop_table(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        """Drop a table: its metadata folder, or with ``purge`` every file it references and its folder.

        The metadata is the table here, so a purge reads it before anything is removed (a metastore
        catalog forgets the entry first instead).
        """
        from floe.table.purge import purge_table_files, require_gc_enabled

        ident = to_identifier(identifier)
        if not purge:
            self._remove_table_entry(ident)
            # As Java's HadoopCatalog: the table's folder goes too (files the metadata keeps elsewhere stay),
            # so its namespace can then be dropped
            fs, path = self._folder_inside(self.default_table_location(ident), f"drop table {identifier_to_string(ident)}")
            with contextlib.suppress(FileNotFoundError):
                fs.delete_dir(path)
            return
        table = self.load_table(ident)
        require_gc_enabled(table.metadata, identifier_to_string(ident))
        # Checked before any file is deleted, so a refused purge leaves the table whole.
        fs, path = self._folder_inside(
            self.default_table_location(ident), f"purge table {identifier_to_string(ident)}"
        )
        purge_table_files(table.io, table.metadata, table.metadata_location)
        with contextlib.suppress(FileNotFoundError):
            fs.delete_dir(path)

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        from floe.table.table import Table

        ident = to_identifier(identifier)
        check_identifier_segments(ident, catalog=self.name)
        self._check_namespace(ident[:-1])
        metadata = read_metadata(self._io, metadata_location)
        expected = self.default_table_location(ident)
        # As Java's: the metadata is copied as version 1 of the table's folder; the table's files stay
        # where the metadata says (another folder when it was written elsewhere).
        ops = HadoopTableOperations(ident, self._io, expected)
        if ops.current_version() is not None:
            raise TableAlreadyExistsError(f"Table already exists: {identifier_to_string(ident)}")
        location = ops.commit(None, None, metadata)
        return Table(ident, metadata, location, ops, catalog=self)
