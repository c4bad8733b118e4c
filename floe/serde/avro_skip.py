"""Avro binary varints and skipping values without building them (Avro 1.11 spec, "Binary Encoding").

Scan planning reads manifests with most column metrics projected away; the skipped maps are walked
here. A run of varints (the keys and counts of the metrics maps, split offsets) is skipped by one
regular-expression match, which runs in C: a varint is any number of bytes with the high bit set followed
by one without. Used by floe.serde.avro_decoder, which also inlines the two hot skips into generated code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "INLINE_HELPERS",
    "SKIP_PRIMITIVES",
    "VARINT_KINDS",
    "Skipper",
    "block_count",
    "inline_skip",
    "int_bytes_map_keep",
    "int_long_map_keep",
    "long_slow",
    "read_long",
    "skip_blocks",
    "skip_fixed",
    "skip_keyed_bytes",
    "skip_sequence",
    "skip_union",
    "skip_varint",
    "skip_varint_blocks",
]

# (buffer, position) -> (None, position after the value).
Skipper = Callable[[bytes, int], tuple[None, int]]
Reader = Callable[[bytes, int], tuple[object, int]]


def long_slow(buf: bytes, p: int) -> tuple[int, int]:
    """A multi-byte zig-zag varint starting at ``p`` (two- and three-byte forms unrolled)."""
    n = buf[p] & 0x7F
    b = buf[p + 1]
    if b < 0x80:
        n |= b << 7
        return (n >> 1) ^ -(n & 1), p + 2
    n |= (b & 0x7F) << 7
    b = buf[p + 2]
    if b < 0x80:
        n |= b << 14
        return (n >> 1) ^ -(n & 1), p + 3
    n |= (b & 0x7F) << 14
    shift = 21
    p += 3
    while True:
        b = buf[p]
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), p
        shift += 7


def read_long(buf: bytes, p: int) -> tuple[int, int]:
    """A zig-zag varint (Avro int or long) at ``p`` and the position after it."""
    b = buf[p]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), p + 1
    return long_slow(buf, p)


def block_count(buf: bytes, p: int) -> tuple[int, int]:
    """An array/map block's item count; negative counts are followed by the block's byte size."""
    n, p = read_long(buf, p)
    if n < 0:
        _, p = read_long(buf, p)
        n = -n
    return n, p


# -- skipping ------------------------------------------------------------------------------------------
# Skipped values are walked, never built. A run of varints (the keys and counts of the metrics maps,
# split offsets) is skipped by one regular-expression match, which runs in C: a varint is any number of
# bytes with the high bit set followed by one without.
_VARINT_RUNS: dict[int, Callable[[bytes, int], re.Match[bytes] | None]] = {}
_VARINT = b"[\\x80-\\xff]*[\\x00-\\x7f]"
# A (varint key, bytes value) item whose value is shorter than 64 bytes (a one-byte length): the common
# shape of bounds maps. Lengths 1..16 come first: the alternation is tried in order.
_SHORT_SIZED = b"(?:" + b"|".join(
    re.escape(bytes([2 * n])) + (b".{%d}" % n if n else b"") for n in [*range(1, 17), 0, *range(17, 64)]
) + b")"
_KEYED_BYTES_RUNS: dict[int, Callable[[bytes, int], re.Match[bytes] | None]] = {}


def _varint_run(count: int) -> Callable[[bytes, int], re.Match[bytes] | None]:
    match = _VARINT_RUNS.get(count)
    if match is None:
        # Written out rather than as a counted group: measured ~40% faster in CPython's regex engine.
        pattern = _VARINT * count if count <= 256 else b"(?:%s){%d}" % (_VARINT, count)
        match = re.compile(pattern).match
        if len(_VARINT_RUNS) < 4096:
            _VARINT_RUNS[count] = match
    return match


def _keyed_bytes_run(count: int) -> Callable[[bytes, int], re.Match[bytes] | None]:
    match = _KEYED_BYTES_RUNS.get(count)
    if match is None:
        match = re.compile((_VARINT + _SHORT_SIZED) * count, re.DOTALL).match
        if len(_KEYED_BYTES_RUNS) < 256:
            _KEYED_BYTES_RUNS[count] = match
    return match


def _skip_keyed_bytes_items(buf: bytes, p: int, count: int) -> int:
    """The position after ``count`` (varint key, bytes value) items starting at ``p``."""
    if count <= 64:
        m = _keyed_bytes_run(count)(buf, p)
        if m is not None:
            return m.end()
    for _ in range(count):  # long values (or truncated data): walk item by item
        while buf[p] >= 0x80:
            p += 1
        b = buf[p + 1]
        if b < 0x80:
            p += 2 + (b >> 1)
        else:
            size, p = long_slow(buf, p + 1)
            p += size
    return p


def _skip_null(buf: bytes, p: int) -> tuple[None, int]:
    return None, p


def skip_varint(buf: bytes, p: int) -> tuple[None, int]:
    """Skip one int/long/enum index."""
    while buf[p] >= 0x80:
        p += 1
    return None, p + 1


def _skip_sized(buf: bytes, p: int) -> tuple[None, int]:
    b = buf[p]
    if b < 0x80:
        return None, p + 1 + (b >> 1)
    n, p = long_slow(buf, p)
    return None, p + n


def skip_fixed(size: int) -> Reader:
    def skip(buf: bytes, p: int) -> tuple[None, int]:
        return None, p + size

    return skip


def _skip_varints(buf: bytes, p: int, count: int) -> int:
    """The position after ``count`` varints starting at ``p``."""
    m = (_VARINT_RUNS.get(count) or _varint_run(count))(buf, p)
    if m is None:
        raise IndexError(f"truncated Avro data at byte {p}")
    return m.end()


def _skip_block_slow(buf: bytes, p: int, per_item: int) -> int:
    """Skip one block (multi-byte or negative count) of an array of ``per_item``-varint items."""
    n, p = read_long(buf, p)
    if n < 0:
        size, p = read_long(buf, p)
        return p + size
    return _skip_varints(buf, p, n * per_item)


def skip_varint_blocks(per_item: int) -> Reader:
    """Skip an array or map whose items are ``per_item`` varints each (ints, longs, enums, booleans)."""

    def skip(buf: bytes, p: int) -> tuple[None, int]:
        while True:
            n, p = read_long(buf, p)
            if n == 0:
                return None, p
            if n < 0:  # the block carries its byte size: jump over it
                size, p = read_long(buf, p)
                p += size
                continue
            p = _skip_varints(buf, p, n * per_item)

    skip.skip_varints = per_item  # type: ignore[attr-defined]  # lets records inline it
    return skip


def skip_keyed_bytes(buf: bytes, p: int) -> tuple[None, int]:
    """Skip an array of (varint key, bytes value) records: the bounds maps."""
    while True:
        b = buf[p]
        if b < 0x80 and not b & 1:
            n = b >> 1
            p += 1
        else:
            n, p = block_count(buf, p)  # negative counts carry a byte size, but items are walked anyway
        if n == 0:
            return None, p
        p = _skip_keyed_bytes_items(buf, p, n)


def skip_blocks(item: Reader) -> Reader:
    """Skip an array (or a map, with ``item`` skipping key and value) item by item."""

    def skip(buf: bytes, p: int) -> tuple[None, int]:
        while True:
            n, p = read_long(buf, p)
            if n == 0:
                return None, p
            if n < 0:
                size, p = read_long(buf, p)
                p += size
                continue
            for _ in range(n):
                _, p = item(buf, p)

    return skip


def skip_sequence(parts: list[Reader]) -> Reader:
    def skip(buf: bytes, p: int) -> tuple[None, int]:
        for part in parts:
            _, p = part(buf, p)
        return None, p

    return skip


def skip_union(branches: list[Reader]) -> Reader:
    def skip(buf: bytes, p: int) -> tuple[object, int]:
        index, p = read_long(buf, p)
        return branches[index](buf, p)

    return skip


SKIP_PRIMITIVES: dict[str, Reader] = {
    "null": _skip_null,
    "boolean": skip_fixed(1),
    "int": skip_varint,
    "long": skip_varint,
    "float": skip_fixed(4),
    "double": skip_fixed(8),
    "bytes": _skip_sized,
    "string": _skip_sized,
}
# How many varints a value of these types is (booleans are one byte below 0x80, so they count too).
VARINT_KINDS = frozenset({"boolean", "int", "long"})


def int_long_map_keep(keep: frozenset[int]) -> Reader:
    """A metrics count map reduced to the keys in ``keep`` (other values are skipped, not decoded)."""

    def read(buf: bytes, p: int) -> tuple[dict[int, int], int]:
        out: dict[int, int] = {}
        while True:
            n, p = block_count(buf, p)
            if n == 0:
                return out, p
            for _ in range(n):
                b = buf[p]
                if b < 0x80:
                    k = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    k, p = long_slow(buf, p)
                if k in keep:
                    out[k], p = read_long(buf, p)
                else:
                    while buf[p] >= 0x80:
                        p += 1
                    p += 1

    return read


def int_bytes_map_keep(keep: frozenset[int]) -> Reader:
    """A bounds map reduced to the keys in ``keep``."""

    def read(buf: bytes, p: int) -> tuple[dict[int, bytes], int]:
        out: dict[int, bytes] = {}
        while True:
            n, p = block_count(buf, p)
            if n == 0:
                return out, p
            for _ in range(n):
                b = buf[p]
                if b < 0x80:
                    k = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    k, p = long_slow(buf, p)
                b = buf[p]
                if b < 0x80:
                    end = p + 1 + (b >> 1)
                    p += 1
                else:
                    size, p = long_slow(buf, p)
                    end = p + size
                if k in keep:
                    out[k] = buf[p:end]
                p = end

    return read


def _inline_skip_varint_blocks(per_item: int, target: str, pad: str) -> list[str]:
    return [
        f"{pad}while True:",
        f"{pad}    b = buf[p]",
        f"{pad}    if b == 0:",
        f"{pad}        p += 1",
        f"{pad}        break",
        f"{pad}    if b < 0x80 and not b & 1:",
        f"{pad}        p = _skip_varints(buf, p + 1, (b >> 1) * {int(per_item)})",
        f"{pad}    else:",
        f"{pad}        p = _skip_block_slow(buf, p, {int(per_item)})",
        f"{pad}{target} = None",
    ]


def _inline_skip_keyed_bytes(target: str, pad: str) -> list[str]:
    return [
        f"{pad}while True:",
        f"{pad}    b = buf[p]",
        f"{pad}    if b == 0:",
        f"{pad}        p += 1",
        f"{pad}        break",
        f"{pad}    if b < 0x80 and not b & 1:",
        f"{pad}        n = b >> 1",
        f"{pad}        p += 1",
        f"{pad}    else:",
        f"{pad}        n, p = block_count(buf, p)",
        f"{pad}    p = _skip_keyed_bytes_items(buf, p, n)",
        f"{pad}{target} = None",
    ]


def inline_skip(fn: Reader, target: str, pad: str) -> list[str] | None:
    """Source lines skipping what ``fn`` skips (setting ``target`` to None), for generated record
    readers; None when ``fn`` has no inline form. The lines use the names in INLINE_HELPERS."""
    per_item = getattr(fn, "skip_varints", None)
    if per_item is not None:
        return _inline_skip_varint_blocks(per_item, target, pad)
    if fn is skip_keyed_bytes:
        return _inline_skip_keyed_bytes(target, pad)
    return None


INLINE_HELPERS: dict[str, object] = {
    "block_count": block_count,
    "_skip_varints": _skip_varints,
    "_skip_block_slow": _skip_block_slow,
    "_skip_keyed_bytes_items": _skip_keyed_bytes_items,
}
