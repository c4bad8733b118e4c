"""Metadata files on storage: names, reading, writing, the metadata log and cleanup after commits.

Names follow Iceberg (floe.serde.metadata_names): metastore-style catalogs (SQL) write
``NNNNN-<uuid>.metadata.json`` (the counter is the previous file's plus one; the uuid keeps concurrent
writers apart), the Hadoop catalog writes ``v<N>.metadata.json``. ``write.metadata.compression-codec=gzip``
adds ``.gz`` before ``.metadata.json``.
"""

from __future__ import annotations

from floe.catalog.resolved_locations import inside_folder
from floe.errors import InvalidMetadataError
from floe.io.fileio import FileIO
from floe.io.locations import join
from floe.serde.metadata_json import (
    metadata_file_extension,
    table_metadata_from_bytes,
    table_metadata_to_bytes,
)
from floe.serde.metadata_names import GZIP_METADATA_SUFFIX, metadata_version, versioned_metadata_file_name
from floe.spec.properties import (
    METADATA_COMPRESSION,
    METADATA_COMPRESSION_DEFAULT,
    METADATA_DELETE_AFTER_COMMIT_ENABLED,
    METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT,
    property_bool,
)
from floe.spec.table_metadata import TableMetadata
from floe.table.paths import metadata_dir

__all__ = [
    "delete_removed_metadata_files",
    "metadata_suffix",
    "next_metadata_location",
    "parse_version",
    "read_metadata",
    "write_metadata",
]

def metadata_suffix(metadata: TableMetadata) -> str:
    """``.metadata.json`` or ``.gz.metadata.json`` depending on ``write.metadata.compression-codec``."""
    return metadata_file_extension(
        metadata.properties.get(METADATA_COMPRESSION, METADATA_COMPRESSION_DEFAULT)
    )


def parse_version(location: str | None) -> int:
    """The version counter in a metadata file name (``00012-<uuid>...`` or ``v12...``), -1 if none."""
    version = None if location is None else metadata_version(location)
    return -1 if version is None else version


def next_metadata_location(new: TableMetadata, base_location: str | None) -> str:
    """A fresh ``NNNNN-<uuid>.metadata.json`` location one version after ``base_location``."""
    version = parse_version(base_location) + 1
    return join(metadata_dir(new), versioned_metadata_file_name(version, metadata_suffix(new)))


def read_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse a metadata file (compression recognised by magic bytes).

    Raises:
        NoSuchFileError: the file does not exist.
        InvalidMetadataError: the file is not valid table metadata (names the file).
    """
    data = io.new_input(location).read_bytes()
    try:
        return table_metadata_from_bytes(data)
    except InvalidMetadataError as e:
        raise InvalidMetadataError(f"Invalid table metadata in {location}: {e}") from e


def write_metadata(io: FileIO, metadata: TableMetadata, location: str, *, exclusive: bool = True) -> None:
    """Write a metadata file.

    Args:
        exclusive: fail if the file exists, atomically (the Hadoop commit point). Names with a fresh uuid
            cannot collide and skip it: the catalog swap, not the file, is their commit point, and a file
            is referenced only after it was completely written.

    Raises:
        FileAlreadyExistsError: ``exclusive`` and a file already exists at ``location``.
    """
    codec = "gzip" if location.endswith(GZIP_METADATA_SUFFIX) else "none"
    io.new_output(location).write_bytes(
        table_metadata_to_bytes(metadata, codec=codec), overwrite=not exclusive
    )


def delete_removed_metadata_files(io: FileIO, base: TableMetadata | None, new: TableMetadata) -> list[str]:
    """After a successful commit, delete metadata files that fell out of the log, if the table asks for it.

    Only runs with ``write.metadata.delete-after-commit.enabled=true``, and deletes only files inside the
    table's metadata folder (before or after the commit; symlinks resolved): a log entry is a string anyone
    who wrote the metadata chose, and must not make a commit delete another table's files. Failures are
    ignored: a file left behind is an orphan, never a correctness problem.

    Returns:
        The locations that were deleted.
    """
    if base is None or not property_bool(
        new.properties, METADATA_DELETE_AFTER_COMMIT_ENABLED, METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT
    ):
        return []
    kept = {e.metadata_file for e in new.metadata_log}
    folders = [inside_folder(metadata_dir(m)) for m in (base, new)]
    removed = [
        e.metadata_file
        for e in base.metadata_log
        if e.metadata_file not in kept and any(inside(e.metadata_file) for inside in folders)
    ]
    if removed:
        failures = io.delete_many(removed)
        return [r for r in removed if r not in failures]
    return []
