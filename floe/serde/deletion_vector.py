"""Decode a ``deletion-vector-v1`` blob (Puffin spec "Blob types") into the deleted row positions.

Blob layout: a 4-byte big-endian length of magic + vector, the magic ``D1 D3 39 64``, the vector, and a
big-endian CRC-32 of magic + vector (big-endian fields for compatibility with Delta Lake's vectors). The
vector is a 64-bit Roaring bitmap in the "portable" serialization (8-byte little-endian count, then per
bucket a 4-byte little-endian key and a standard 32-bit Roaring bitmap): exactly the format
``pyroaring.BitMap64`` reads, so the framing is all that is parsed here.
"""

from __future__ import annotations

import zlib

import numpy as np
from pyroaring import BitMap64

from floe.errors import InvalidMetadataError

__all__ = ["DELETION_VECTOR_MAGIC", "DELETION_VECTOR_V1", "decode_deletion_vector", "encode_deletion_vector"]

DELETION_VECTOR_V1 = "deletion-vector-v1"
DELETION_VECTOR_MAGIC = bytes((0xD1, 0xD3, 0x39, 0x64))
_LENGTH_SIZE = 4
_CRC_SIZE = 4
# Positions are non-negative longs: the vector's most significant bit must be 0 (spec).
_MAX_POSITION = (1 << 63) - 1


def decode_deletion_vector(blob: bytes | memoryview, *, source: str = "") -> np.ndarray:
    """The deleted positions of one ``deletion-vector-v1`` blob, ascending, as an int64 array.

    Args:
        blob: the blob's bytes (``content_size_in_bytes`` bytes from ``content_offset``).
        source: where the blob came from (Puffin file and offset), for error messages.

    Raises:
        InvalidMetadataError: a wrong length, magic or checksum, or an unreadable bitmap.
    """
    where = f" in {source}" if source else ""
    data = memoryview(blob)
    if len(data) < _LENGTH_SIZE + len(DELETION_VECTOR_MAGIC) + _CRC_SIZE:
        raise InvalidMetadataError(f"Deletion vector{where} is truncated: {len(data)} bytes")
    length = int.from_bytes(data[:_LENGTH_SIZE], "big")
    if length != len(data) - _LENGTH_SIZE - _CRC_SIZE:
        raise InvalidMetadataError(
            f"Deletion vector{where} declares {length} bytes of magic and vector, "
            f"but the blob holds {len(data) - _LENGTH_SIZE - _CRC_SIZE}"
        )
    body = data[_LENGTH_SIZE : _LENGTH_SIZE + length]
    magic = bytes(body[: len(DELETION_VECTOR_MAGIC)])
    if magic != DELETION_VECTOR_MAGIC:
        raise InvalidMetadataError(
            f"Deletion vector{where} has magic {magic.hex()}, expected {DELETION_VECTOR_MAGIC.hex()}"
        )
    expected_crc = int.from_bytes(data[_LENGTH_SIZE + length :], "big")
    actual_crc = zlib.crc32(body)
    if actual_crc != expected_crc:
        raise InvalidMetadataError(
            f"Deletion vector{where} fails its CRC-32 check: "
            f"stored {expected_crc:08x}, computed {actual_crc:08x}"
        )
    try:
        bitmap = BitMap64.deserialize(bytes(body[len(DELETION_VECTOR_MAGIC) :]))
    except (ValueError, IndexError) as e:
        raise InvalidMetadataError(f"Deletion vector{where} holds an invalid Roaring bitmap: {e}") from e
    positions = np.frombuffer(bitmap.to_array(), dtype=np.uint64)
    if len(positions) and int(positions[-1]) > _MAX_POSITION:
        raise InvalidMetadataError(
            f"Deletion vector{where} holds position {int(positions[-1])}, above 2^63 - 1"
        )
    return positions.astype(np.int64)


def encode_deletion_vector(positions: np.ndarray) -> bytes:
    """A ``deletion-vector-v1`` blob of the deleted row ``positions`` (non-negative, any order).

    Raises:
        ValueError: a negative position.
    """
    if positions.size and int(positions.min()) < 0:
        raise ValueError("Deletion vector positions must be non-negative")
    vector = BitMap64(positions.astype(np.uint64)).serialize()
    body = DELETION_VECTOR_MAGIC + vector
    return len(body).to_bytes(_LENGTH_SIZE, "big") + body + zlib.crc32(body).to_bytes(_CRC_SIZE, "big")
