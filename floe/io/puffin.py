"""Read Puffin files (Puffin spec): the footer's blob metadata, single blobs, and deletion vectors.

File layout: ``Magic Blob1 ... BlobN Footer`` with ``Footer = Magic FooterPayload FooterPayloadSize Flags
Magic``; ``Magic`` is ``PFA1``, ``FooterPayloadSize`` a little-endian signed 4-byte int, ``Flags`` 4 bytes
whose lowest bit of byte 0 marks an LZ4-compressed payload, and the payload UTF-8 JSON (``blobs``,
``properties``). A deletion vector's manifest entry carries its blob's offset and size, so reading one
takes a single ranged read and never touches the footer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from floe.errors import InvalidMetadataError, UnsupportedError
from floe.io.fileio import FileIO
from floe.serde.deletion_vector import DELETION_VECTOR_V1, decode_deletion_vector
from floe.spec.manifest import DataFile

__all__ = [
    "PUFFIN_MAGIC",
    "PuffinBlobMetadata",
    "PuffinFooter",
    "parse_footer",
    "read_blob",
    "read_deletion_vector",
    "read_footer",
]

PUFFIN_MAGIC = b"PFA1"
# FooterPayloadSize (4) + Flags (4) + Magic (4), at the very end of the file.
_FOOTER_TRAILER_SIZE = 12
_FLAG_COMPRESSED = 0x01


@dataclass(frozen=True, slots=True)
class PuffinBlobMetadata:
    """One blob described by the footer (Puffin spec "BlobMetadata")."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PuffinFooter:
    """The footer payload (Puffin spec "FileMetadata") and the footer's total size in bytes."""

    blobs: tuple[PuffinBlobMetadata, ...]
    properties: Mapping[str, str]
    footer_size: int


def _blob(raw: Any, location: str) -> PuffinBlobMetadata:
    try:
        return PuffinBlobMetadata(
            type=str(raw["type"]),
            fields=tuple(int(i) for i in raw["fields"]),
            snapshot_id=int(raw["snapshot-id"]),
            sequence_number=int(raw["sequence-number"]),
            offset=int(raw["offset"]),
            length=int(raw["length"]),
            compression_codec=raw.get("compression-codec"),
            properties=dict(raw.get("properties") or {}),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidMetadataError(f"Puffin file {location}: invalid blob metadata {raw!r}: {e!r}") from e


def parse_footer(tail: bytes, location: str = "") -> PuffinFooter:
    """Parse a Puffin footer from the end of a file (``tail`` must hold at least the whole footer).

    Raises:
        InvalidMetadataError: bad magic, a payload size beyond the file, or an invalid JSON payload.
        UnsupportedError: an LZ4-compressed payload.
    """
    if len(tail) < _FOOTER_TRAILER_SIZE or tail[-4:] != PUFFIN_MAGIC:
        raise InvalidMetadataError(f"Puffin file {location} does not end with the magic {PUFFIN_MAGIC!r}")
    payload_size = int.from_bytes(tail[-12:-8], "little", signed=True)
    flags = tail[-8:-4]
    footer_size = len(PUFFIN_MAGIC) + payload_size + _FOOTER_TRAILER_SIZE
    if payload_size < 0 or footer_size > len(tail):
        raise InvalidMetadataError(
            f"Puffin file {location}: footer payload size {payload_size} "
            f"does not fit the {len(tail)} bytes read"
        )
    start = len(tail) - footer_size
    if tail[start : start + 4] != PUFFIN_MAGIC:
        raise InvalidMetadataError(f"Puffin file {location}: the footer does not start with {PUFFIN_MAGIC!r}")
    if flags[0] & _FLAG_COMPRESSED:
        raise UnsupportedError(f"Puffin file {location}: LZ4-compressed footers are not supported")
    payload = tail[start + 4 : start + 4 + payload_size]
    try:
        doc = json.loads(payload.decode("utf-8"))
        raw_blobs = list(doc["blobs"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise InvalidMetadataError(f"Puffin file {location}: invalid footer payload: {e!r}") from e
    blobs = tuple(_blob(b, location) for b in raw_blobs)
    return PuffinFooter(blobs, dict(doc.get("properties") or {}), footer_size)


def read_footer(io: FileIO, location: str) -> PuffinFooter:
    """The footer of the Puffin file at ``location`` (two ranged reads: trailer, then footer)."""
    with io.new_input(location).open() as f:
        size = f.seek(0, os.SEEK_END)
        if size < len(PUFFIN_MAGIC) + len(PUFFIN_MAGIC) + _FOOTER_TRAILER_SIZE:
            raise InvalidMetadataError(f"Puffin file {location} is too short ({size} bytes)")
        f.seek(size - _FOOTER_TRAILER_SIZE)
        trailer = f.read(_FOOTER_TRAILER_SIZE)
        payload_size = int.from_bytes(trailer[:4], "little", signed=True)
        footer_size = len(PUFFIN_MAGIC) + max(payload_size, 0) + _FOOTER_TRAILER_SIZE
        if footer_size > size - len(PUFFIN_MAGIC):
            raise InvalidMetadataError(
                f"Puffin file {location}: footer payload size {payload_size} exceeds the file"
            )
        f.seek(size - footer_size)
        return parse_footer(bytes(f.read(footer_size)), location)


def read_blob(io: FileIO, location: str, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` of the file at ``location`` (one ranged read)."""
    with io.new_input(location).open() as f:
        f.seek(offset)
        data = bytes(f.read(length))
    if len(data) != length:
        raise InvalidMetadataError(
            f"Puffin file {location}: blob at offset {offset} should be {length} bytes, only {len(data)} read"
        )
    return data


def read_deletion_vector(io: FileIO, location: str, delete_file: DataFile) -> np.ndarray:
    """The positions a deletion vector deletes (ascending int64), read from its Puffin file.

    Args:
        io: reads the Puffin file.
        location: where ``delete_file.file_path`` is readable (relocated tables map paths).
        delete_file: the manifest's delete entry (``content_offset``, ``content_size_in_bytes``,
            ``referenced_data_file``, ``record_count`` = the vector's cardinality).

    Raises:
        InvalidMetadataError: a corrupt blob, or a cardinality different from the entry's record count.
    """
    offset, length = delete_file.content_offset, delete_file.content_size_in_bytes
    if offset is None or length is None:
        # Spec: both are required for deletion vectors; fall back to the footer for lax writers.
        offset, length = _blob_range_from_footer(io, location, delete_file)
    source = f"Puffin file {location} at offset {offset} (for {delete_file.referenced_data_file})"
    positions = decode_deletion_vector(read_blob(io, location, offset, length), source=source)
    if len(positions) != delete_file.record_count:
        raise InvalidMetadataError(
            f"Deletion vector in {source} holds {len(positions)} positions, "
            f"but its manifest entry says record_count={delete_file.record_count}"
        )
    return positions


def _blob_range_from_footer(io: FileIO, location: str, delete_file: DataFile) -> tuple[int, int]:
    target = delete_file.referenced_data_file
    for b in read_footer(io, location).blobs:
        if b.type == DELETION_VECTOR_V1 and b.properties.get("referenced-data-file") == target:
            return b.offset, b.length
    raise InvalidMetadataError(
        f"Puffin file {location} has no {DELETION_VECTOR_V1} blob for data file {target}"
    )
