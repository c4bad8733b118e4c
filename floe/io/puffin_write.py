"""Write Puffin files (Puffin spec): ``Magic Blob1 ... BlobN Footer``, the footer uncompressed.

The reader is :mod:`floe.io.puffin`; this writes what table statistics need: blobs (optionally
zstd-compressed, named in their metadata as ``compression-codec``) and a JSON footer payload.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import zstandard

from floe.io.puffin import PUFFIN_MAGIC, PuffinBlobMetadata

__all__ = ["PuffinBlob", "encode_puffin"]


@dataclass(frozen=True, slots=True)
class PuffinBlob:
    """A blob to write: its bytes uncompressed and what the footer says about it."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    data: bytes
    compression_codec: str | None = None  # None or "zstd"
    properties: Mapping[str, str] = field(default_factory=dict)


def encode_puffin(
    blobs: Sequence[PuffinBlob], *, properties: Mapping[str, str] | None = None
) -> tuple[bytes, int, list[PuffinBlobMetadata]]:
    """The file's bytes, the footer's size and the blobs' metadata (with offsets and lengths)."""
    out = bytearray(PUFFIN_MAGIC)
    metas: list[PuffinBlobMetadata] = []
    for b in blobs:
        data = zstandard.ZstdCompressor().compress(b.data) if b.compression_codec == "zstd" else b.data
        metas.append(
            PuffinBlobMetadata(
                b.type, b.fields, b.snapshot_id, b.sequence_number, len(out), len(data),
                b.compression_codec, dict(b.properties),
            )
        )
        out += data
    payload = {
        "blobs": [
            {
                "type": m.type,
                "fields": list(m.fields),
                "snapshot-id": m.snapshot_id,
                "sequence-number": m.sequence_number,
                "offset": m.offset,
                "length": m.length,
                **({"compression-codec": m.compression_codec} if m.compression_codec else {}),
                **({"properties": dict(m.properties)} if m.properties else {}),
            }
            for m in metas
        ],
        "properties": dict(properties or {}),
    }
    text = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    footer = PUFFIN_MAGIC + text + struct.pack("<i", len(text)) + b"\x00\x00\x00\x00" + PUFFIN_MAGIC
    out += footer
    return bytes(out), len(footer), metas
