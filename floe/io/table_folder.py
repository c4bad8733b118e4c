"""Open an Iceberg table from a local folder without a catalog (a Hadoop-style table directory).

Finds the current metadata file (``version-hint.text`` or the highest version present) and maps the
absolute or relative paths recorded in metadata by the machine that wrote the table (``/tmp/...``,
``file:/...``, ``hdfs://host/...``, ``s3://bucket/...``, ``lineitem/metadata/...``) onto the folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from floe.errors import FloeError, InvalidMetadataError, NoSuchFileError, NoSuchTableError
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup
from floe.io.manifest_reader import read_manifest_files
from floe.serde.metadata_json import table_metadata_from_bytes
from floe.serde.metadata_names import METADATA_SUFFIX, metadata_version
from floe.spec.manifest import ManifestEntry, ManifestFile
from floe.spec.snapshot import Snapshot
from floe.spec.table_metadata import TableMetadata

__all__ = [
    "FolderFileIO",
    "FolderTable",
    "PathMapper",
    "find_metadata_file",
    "find_table_root",
    "metadata_version",
    "open_table_folder",
]

_HINT_FILES = ("version-hint.text", "version-hint.txt")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def find_table_root(folder: str | Path) -> Path:
    """The table directory (the one holding ``metadata/``): ``folder`` itself or its only child that has one.

    Raises:
        NoSuchTableError: no table directory is found.
    """
    root = Path(folder)
    if (root / "metadata").is_dir():
        return root
    candidates = [c for c in sorted(root.iterdir()) if (c / "metadata").is_dir()] if root.is_dir() else []
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise NoSuchTableError(f"No Iceberg table (metadata/ directory) in {root}")
    names = ", ".join(c.name for c in candidates)
    raise NoSuchTableError(f"Folder {root} holds several tables ({names}); open one of them")


def _read_hint(metadata_dir: Path) -> str | None:
    for name in _HINT_FILES:
        hint = metadata_dir / name
        if hint.is_file():
            text = hint.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                return text
    return None


def find_metadata_file(folder: str | Path) -> Path:
    """The current metadata file of the table in ``folder``.

    Follows the version hint (a number or a file name) and, as Iceberg's Hadoop tables do, moves on to
    newer versions present next to it; without a usable hint takes the highest version number.

    Raises:
        NoSuchTableError: the folder has no metadata files.
    """
    metadata_dir = find_table_root(folder) / "metadata"
    by_version: dict[int, list[Path]] = {}
    for p in metadata_dir.iterdir():
        v = metadata_version(p.name)
        if v is not None and p.is_file():
            by_version.setdefault(v, []).append(p)
    if not by_version:
        raise NoSuchTableError(f"No metadata files (v<N>.metadata.json) in {metadata_dir}")
    hint = _read_hint(metadata_dir)
    chosen: Path | None = None
    if hint is not None:
        named = [metadata_dir / hint, metadata_dir / f"{hint}{METADATA_SUFFIX}"]
        chosen = next((p for p in named if p.is_file() and metadata_version(p.name) is not None), None)
        if chosen is None and hint.isdigit() and int(hint) in by_version:
            chosen = min(by_version[int(hint)])
    if chosen is not None:
        version = metadata_version(chosen.name)
        assert version is not None
        newer = [v for v in by_version if v > version]
        if not newer:
            return chosen
    return min(by_version[max(by_version)])


def _normalise(path: str) -> str:
    """A recorded location without scheme/authority and leading ``./`` or ``/``: comparable across forms."""
    text = path
    if _SCHEME.match(text) and not re.match(r"^[A-Za-z]:[\\/]", text):  # keep Windows drive letters
        text = _SCHEME.sub("", text, count=1)
        if text.startswith("//"):
            text = text[2:]
            slash = text.find("/")
            text = "" if slash < 0 else text[slash:]
    while text.startswith("./"):
        text = text[2:]
    return text.strip("/")


@dataclass(frozen=True, slots=True)
class PathMapper:
    """Maps paths recorded in metadata onto a local table folder."""

    location: str
    root: Path
    prefixes: tuple[str, ...] = field(default=())

    def _known_prefixes(self) -> list[str]:
        normalised = {_normalise(p) for p in (self.location, *self.prefixes) if p}
        return sorted((p for p in normalised if p), key=len, reverse=True)

    def map(self, recorded: str) -> Path:
        """The local path of a recorded path (the file may still be missing)."""
        norm = _normalise(recorded)
        for prefix in self._known_prefixes():
            if norm == prefix:
                return self.root
            if norm.startswith(prefix + "/"):
                mapped = self.root / norm[len(prefix) + 1 :]
                # Some writers record paths that repeat the table name below the location: fall back
                # to a suffix search rather than report a file that is right there as missing.
                return mapped if mapped.exists() else (self._by_suffix(norm) or mapped)
        parts = [p for p in norm.split("/") if p]
        found = self._by_suffix(norm)
        if found is not None:
            return found
        return self.root.joinpath(*parts[-2:]) if len(parts) >= 2 else self.root / norm

    def _by_suffix(self, norm: str) -> Path | None:
        """The longest suffix of ``norm`` that exists under the folder, preferring metadata/ and data/ anchors."""
        parts = [p for p in norm.split("/") if p]
        for anchor in ("metadata", "data"):
            if anchor in parts:
                i = len(parts) - 1 - parts[::-1].index(anchor)
                candidate = self.root.joinpath(*parts[i:])
                if candidate.exists():
                    return candidate
        for i in range(len(parts)):
            candidate = self.root.joinpath(*parts[i:])
            if candidate.exists():
                return candidate
        return None


class FolderFileIO(FileIO):
    """A FileIO for a table folder whose ``location_of`` maps recorded paths onto the folder: scans and
    metadata tables of a table handle with this FileIO read the copied files (they look for the method)."""

    def __init__(self, paths: PathMapper) -> None:
        super().__init__()
        self._paths = paths

    def location_of(self, recorded: str) -> str:
        """The local path of a path recorded in metadata."""
        return str(self._paths.map(recorded))


@dataclass(frozen=True, slots=True)
class FolderTable:
    """A table opened from a folder: its metadata plus readers for manifest lists and manifests.

    ``io`` reads the mapped local paths (manifests through floe.io.manifest_group, cached per FileIO).
    """

    root: Path
    metadata_file: Path
    metadata: TableMetadata
    paths: PathMapper
    io: FileIO = field(default_factory=FileIO, compare=False)

    def local_path(self, recorded: str) -> Path:
        """Where a path recorded in metadata lives in this folder."""
        return self.paths.map(recorded)

    def location_of(self, recorded: str) -> str:
        """The readable location of a path recorded in metadata (``location_of`` of scans)."""
        return str(self.paths.map(recorded))

    def _missing(self, exc: NoSuchFileError) -> NoSuchFileError:
        return NoSuchFileError(f"{exc} (referenced by table {self.root.name}, recorded paths mapped onto {self.root})")

    def read_bytes(self, recorded: str) -> bytes:
        """The bytes of a file the metadata refers to.

        Raises:
            NoSuchFileError: the file is not in the folder (the message names both paths).
        """
        local = self.local_path(recorded)
        try:
            return local.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise NoSuchFileError(
                f"File {recorded!r} referenced by table {self.root.name} is missing (looked for {local})"
            ) from exc

    def manifest_files(self, snapshot: Snapshot | None = None) -> list[ManifestFile]:
        """The manifests of a snapshot (default: the current one; none for an empty table).

        v1 snapshots that list manifests inline (no manifest list) get ManifestFile values built from
        each manifest's header.
        """
        snap = snapshot if snapshot is not None else self.metadata.current_snapshot()
        if snap is None:
            return []
        try:
            return read_manifest_files(
                self.io, snap, self.location_of, default_spec_id=self.metadata.default_spec_id
            )
        except NoSuchFileError as exc:
            raise self._missing(exc) from exc

    def manifest_entries(self, manifest: ManifestFile) -> list[ManifestEntry]:
        """All entries of a manifest, with inherited sequence numbers and the table's partition spec."""
        group = ManifestGroup.of(self.io, (manifest,), location_of=self.location_of).with_metadata(self.metadata)
        try:
            return group.entries_of(manifest)
        except NoSuchFileError as exc:
            raise self._missing(exc) from exc

    def entries(self, snapshot: Snapshot | None = None) -> list[ManifestEntry]:
        """Entries of every manifest of a snapshot (default: current)."""
        return [e for m in self.manifest_files(snapshot) for e in self.manifest_entries(m)]


def open_table_folder(folder: str | Path, *, prefixes: Iterable[str] = ()) -> FolderTable:
    """Open the table stored in ``folder`` (or in its only sub-folder holding ``metadata/``).

    Args:
        folder: the table folder.
        prefixes: extra recorded path prefixes to map onto the folder (e.g. a fixture's ref_prefixes);
            the table location recorded in metadata is always used.

    Raises:
        NoSuchTableError: no table in the folder.
        InvalidMetadataError: the metadata file cannot be parsed.
    """
    root = find_table_root(folder)
    metadata_file = find_metadata_file(root)
    try:
        metadata = table_metadata_from_bytes(metadata_file.read_bytes())
    except InvalidMetadataError as exc:
        raise InvalidMetadataError(f"{metadata_file}: {exc}") from exc
    except FloeError as exc:
        raise InvalidMetadataError(f"Cannot read table metadata {metadata_file}: {exc}") from exc
    mapper = PathMapper(metadata.location, root, tuple(prefixes))
    return FolderTable(
        root=root, metadata_file=metadata_file, metadata=metadata, paths=mapper, io=FolderFileIO(mapper)
    )
