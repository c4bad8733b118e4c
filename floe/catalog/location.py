"""Open a table by its location alone (``floe.load_table(path)``, the CLI, Spark reads): the one resolver.

- A ``*.json`` (``*.metadata.json``) file opens read-only at exactly that version.
- A folder in the Hadoop layout (``metadata/version-hint.text`` or ``metadata/v<N>.metadata.json``) opens
  with Hadoop commits: the handle can append, evolve and manage snapshots like a catalog table.
- A folder whose metadata files are ``NNNNN-<uuid>.metadata.json`` (written through a metastore catalog)
  opens read-only at its newest version: committing without that catalog would fork the table.
- A local folder copied from elsewhere (fixtures, backups: its metadata records another location), or one
  holding a single table folder, opens read-only through floe.io.table_folder: the paths its metadata
  records are mapped onto the folder by the handle's FileIO (``location_of``, which scans use).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from floe.catalog.hadoop import HadoopTableOperations
from floe.catalog.metadata_files import read_metadata
from floe.errors import NoSuchTableError
from floe.io.fileio import FileIO
from floe.io.locations import comparison_key, is_local, join, to_local_path
from floe.io.table_folder import open_table_folder
from floe.serde.metadata_names import is_metadata_file, parse_metadata_file_name
from floe.table.operations import ReadOnlyTableOperations, TableOperations

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["latest_metadata_file", "load_table", "location_operations"]

def latest_metadata_file(io: FileIO, table_location: str) -> str | None:
    """The newest ``*.metadata.json`` in ``<table>/metadata`` by version number, then modification time."""
    fs, path = io.resolve(join(table_location, "metadata"))
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    best: tuple[int, int, str] | None = None
    for info in infos:
        name = parse_metadata_file_name(info.base_name)
        if name is None or info.type != pafs.FileType.File:
            continue
        key = (name.version, info.mtime_ns or 0, info.base_name)
        if best is None or key > best:
            best = key
    return None if best is None else join(table_location, "metadata", best[2])


def location_operations(location: str, properties: Mapping[str, str] | None = None) -> TableOperations:
    """The operations of the table at ``location`` (a table folder or a metadata file), without a catalog.

    Hadoop commits for a version-hinted folder, read-only operations otherwise (see the module docstring).
    Reading metadata through these needs none of the table layer (``floe history`` uses them directly).

    Raises:
        NoSuchTableError: no table metadata at ``location``.
    """
    io = FileIO.for_location(location, properties)
    loc = location.rstrip("/")
    if is_metadata_file(loc) or loc.endswith(".json"):
        if not io.exists(loc):
            raise NoSuchTableError(f"Table metadata file does not exist: {loc}")
        return ReadOnlyTableOperations((loc,), io, read_metadata(io, loc), loc)
    hadoop = HadoopTableOperations((loc,), io, loc)
    if hadoop.current_version() is not None:
        return hadoop
    latest = latest_metadata_file(io, loc)
    if latest is not None:
        metadata = read_metadata(io, latest)
        if not is_local(loc) or _same_folder(metadata.location, loc):
            return ReadOnlyTableOperations((loc,), io, metadata, latest)
    if is_local(loc):
        folder = open_table_folder(to_local_path(loc))  # NoSuchTableError when there is no table at all
        return ReadOnlyTableOperations((loc,), folder.io, folder.metadata, str(folder.metadata_file))
    raise NoSuchTableError(f"No Iceberg table at {loc}: no metadata/*.metadata.json files")


def _same_folder(recorded: str, local: str) -> bool:
    """Whether a table location recorded in metadata is this local folder (else the table was copied)."""
    if not is_local(recorded):
        return False
    return comparison_key(os.path.abspath(to_local_path(recorded))) == comparison_key(
        os.path.abspath(to_local_path(local))
    )


def load_table(location: str, properties: Mapping[str, str] | None = None) -> Table:
    """Open the table at ``location`` (a table folder or a metadata file), without a catalog.

    Args:
        location: e.g. ``/dw/iceberg/db/sensordata``, ``s3://bucket/db/t`` or ``.../v3.metadata.json``.
        properties: FileIO properties (``s3.endpoint`` ...).

    Raises:
        NoSuchTableError: no table metadata at ``location``.
    """
    from floe.table.table import Table  # the table layer loads with the first table (see catalog.base)

    ops = location_operations(location, properties)
    metadata, metadata_location = ops.load()
    return Table(ops.identifier, metadata, metadata_location, ops)
