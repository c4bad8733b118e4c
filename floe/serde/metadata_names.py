"""Names of table metadata files: the one grammar every reader and writer of them uses.

Two layouts (spec "File System Tables"; Iceberg Java's ``HadoopTableOperations`` and
``BaseMetastoreTableOperations``):

- file-system (Hadoop) tables: ``v<N>.metadata.json``, gzip ``v<N>.gz.metadata.json``; Java releases
  before 0.12 wrote gzip as ``v<N>.metadata.json.gz`` (read, never written);
- metastore catalogs: ``<NNNNN>-<uuid>.metadata.json`` (gzip ``.gz.metadata.json``), the counter one more
  than the previous file's, the uuid keeping concurrent writers apart. Any token of letters, digits and
  dashes is accepted in place of the uuid (other writers and hand-made fixtures use short ones).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

__all__ = [
    "GZIP_METADATA_SUFFIX",
    "METADATA_SUFFIX",
    "METADATA_SUFFIXES",
    "MetadataFileName",
    "hadoop_metadata_file_name",
    "is_metadata_file",
    "metadata_version",
    "parse_metadata_file_name",
    "versioned_metadata_file_name",
]

METADATA_SUFFIX = ".metadata.json"
GZIP_METADATA_SUFFIX = ".gz.metadata.json"
METADATA_SUFFIXES = (METADATA_SUFFIX, GZIP_METADATA_SUFFIX)

_HADOOP = re.compile(r"^v(\d+)(?:(\.gz)\.metadata\.json|\.metadata\.json(\.gz)?)$")
_VERSIONED = re.compile(r"^(\d+)-[0-9A-Za-z-]+(\.gz)?\.metadata\.json$")


@dataclass(frozen=True, slots=True)
class MetadataFileName:
    """What a metadata file's name says."""

    version: int
    hadoop: bool  # v<N> (file-system tables); else <NNNNN>-<uuid> (metastore catalogs)
    gzip: bool
    legacy_gzip: bool  # v<N>.metadata.json.gz, which current writers and Floe's Hadoop tables never use


def parse_metadata_file_name(location: str) -> MetadataFileName | None:
    """The parts of a metadata file name (the last segment of ``location``), or None if it is none."""
    name = location.rsplit("/", 1)[-1]
    m = _HADOOP.match(name)
    if m is not None:
        return MetadataFileName(int(m.group(1)), True, m.group(2) is not None or m.group(3) is not None, m.group(3) is not None)
    m = _VERSIONED.match(name)
    if m is not None:
        return MetadataFileName(int(m.group(1)), False, m.group(2) is not None, False)
    return None


def metadata_version(location: str) -> int | None:
    """The version number in a metadata file name (either layout), or None if it is not one."""
    parsed = parse_metadata_file_name(location)
    return None if parsed is None else parsed.version


def is_metadata_file(location: str) -> bool:
    """Whether ``location`` names a metadata JSON file by its suffix (a table opened at one version)."""
    return location.endswith(METADATA_SUFFIX)


def hadoop_metadata_file_name(version: int, suffix: str = METADATA_SUFFIX) -> str:
    """``v<version><suffix>`` (a file-system table's version file)."""
    return f"v{version}{suffix}"


def versioned_metadata_file_name(version: int, suffix: str = METADATA_SUFFIX, token: uuid.UUID | None = None) -> str:
    """``<NNNNN>-<uuid><suffix>`` with a fresh uuid unless ``token`` is given (a metastore catalog's file)."""
    return f"{version:05d}-{token or uuid.uuid4()}{suffix}"
