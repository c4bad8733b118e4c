"""A schema-compiled Avro binary decoder for manifests (Avro 1.11 spec, "Binary Encoding").

fastavro parses the container (header, codecs, sync markers); this module decodes the records of a
block. fastavro's generic record reader dispatches on the schema for every value and builds a dict for
every key/value pair of the metrics maps; here each schema node is compiled once into a small closure,
varints take a one-byte fast path, Iceberg's ``logicalType: map`` arrays become dicts directly, and
values come out in Floe's representation (date -> int days, timestamps -> int micros, decimal ->
Decimal, uuid -> UUID). Measured on a 100k-entry manifest this is about twice as fast as fastavro.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
from decimal import Context, Decimal
from typing import Any, BinaryIO

import fastavro

from floe.errors import InvalidMetadataError, UnsupportedError

__all__ = ["Reader", "compile_reader", "iter_records", "read_container"]

# A compiled reader: (buffer, position) -> (value, new position).
Reader = Callable[[bytes, int], tuple[Any, int]]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_DEC_CTX = Context(prec=80)


def _long_slow(buf: bytes, p: int) -> tuple[int, int]:
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


def _read_long(buf: bytes, p: int) -> tuple[int, int]:
    b = buf[p]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), p + 1
    return _long_slow(buf, p)


def _read_null(buf: bytes, p: int) -> tuple[None, int]:
    return None, p


def _read_bool(buf: bytes, p: int) -> tuple[bool, int]:
    return buf[p] != 0, p + 1


def _read_float(buf: bytes, p: int) -> tuple[float, int]:
    return _F32.unpack_from(buf, p)[0], p + 4


def _read_double(buf: bytes, p: int) -> tuple[float, int]:
    return _F64.unpack_from(buf, p)[0], p + 8


def _read_bytes(buf: bytes, p: int) -> tuple[bytes, int]:
    b = buf[p]
    if b < 0x80:
        n = b >> 1
        p += 1
    else:
        n, p = _long_slow(buf, p)
    end = p + n
    return buf[p:end], end


def _read_string(buf: bytes, p: int) -> tuple[str, int]:
    b = buf[p]
    if b < 0x80:
        n = b >> 1
        p += 1
    else:
        n, p = _long_slow(buf, p)
    end = p + n
    return buf[p:end].decode("utf-8"), end


_PRIMITIVES: dict[str, Reader] = {
    "null": _read_null,
    "boolean": _read_bool,
    "int": _read_long,
    "long": _read_long,
    "float": _read_float,
    "double": _read_double,
    "bytes": _read_bytes,
    "string": _read_string,
}


def _block_count(buf: bytes, p: int) -> tuple[int, int]:
    """An array/map block's item count; negative counts are followed by the block's byte size."""
    n, p = _read_long(buf, p)
    if n < 0:
        _, p = _read_long(buf, p)
        n = -n
    return n, p


def _fixed(size: int) -> Reader:
    def read(buf: bytes, p: int) -> tuple[bytes, int]:
        end = p + size
        return buf[p:end], end

    return read


def _decimal(inner: Reader, scale: int) -> Reader:
    def read(buf: bytes, p: int) -> tuple[Decimal, int]:
        raw, p = inner(buf, p)
        return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale, _DEC_CTX), p

    return read


def _uuid(inner: Reader) -> Reader:
    def read(buf: bytes, p: int) -> tuple[uuid.UUID, int]:
        raw, p = inner(buf, p)
        return (uuid.UUID(raw) if isinstance(raw, str) else uuid.UUID(bytes=raw)), p

    return read


def _optional(inner: Reader, null_first: bool) -> Reader:
    # Union index 0 encodes as byte 0x00 and index 1 as 0x02 (zig-zag varint).
    if null_first:

        def read(buf: bytes, p: int) -> tuple[Any, int]:
            if buf[p] == 0:
                return None, p + 1
            return inner(buf, p + 1)

    else:

        def read(buf: bytes, p: int) -> tuple[Any, int]:
            if buf[p] == 0:
                return inner(buf, p + 1)
            return None, p + 1

    read.optional_of = inner  # type: ignore[attr-defined]  # lets records inline it
    read.null_first = null_first  # type: ignore[attr-defined]
    return read


def _union(branches: list[Reader]) -> Reader:
    def read(buf: bytes, p: int) -> tuple[Any, int]:
        index, p = _read_long(buf, p)
        return branches[index](buf, p)

    return read


def _int_long_map(buf: bytes, p: int) -> tuple[dict[int, int], int]:
    """The hot path: metrics maps (column id -> count) stored as arrays of k/v records.

    Varints of up to four bytes (counts below 2**27) are decoded inline: this loop runs ten times per
    column per manifest entry, and a function call per value would dominate.
    """
    out: dict[int, int] = {}
    while True:
        n = buf[p]
        if n < 0x80 and not n & 1:
            n >>= 1
            p += 1
        else:
            n, p = _block_count(buf, p)
        if n == 0:
            return out, p
        for _ in range(n):
            b = buf[p]
            if b < 0x80:
                k = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                k, p = _long_slow(buf, p)
            b = buf[p]
            if b < 0x80:
                out[k] = (b >> 1) ^ -(b & 1)
                p += 1
                continue
            b1 = buf[p + 1]
            if b1 < 0x80:
                v = (b & 0x7F) | (b1 << 7)
                p += 2
            else:
                b2 = buf[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)
                    p += 3
                else:
                    b3 = buf[p + 3]
                    if b3 >= 0x80:
                        out[k], p = _long_slow(buf, p)
                        continue
                    v = (b & 0x7F) | ((b1 & 0x7F) << 7) | ((b2 & 0x7F) << 14) | (b3 << 21)
                    p += 4
            out[k] = (v >> 1) ^ -(v & 1)


def _int_bytes_map(buf: bytes, p: int) -> tuple[dict[int, bytes], int]:
    """Bounds maps (column id -> single-value bytes)."""
    out: dict[int, bytes] = {}
    while True:
        n = buf[p]
        if n < 0x80 and not n & 1:
            n >>= 1
            p += 1
        else:
            n, p = _block_count(buf, p)
        if n == 0:
            return out, p
        for _ in range(n):
            b = buf[p]
            if b < 0x80:
                k = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                k, p = _long_slow(buf, p)
            b = buf[p]
            if b < 0x80:
                size = b >> 1
                p += 1
            else:
                size, p = _long_slow(buf, p)
            end = p + size
            out[k] = buf[p:end]
            p = end


def _kv_array(key: Reader, value: Reader) -> Reader:
    def read(buf: bytes, p: int) -> tuple[dict[Any, Any], int]:
        out: dict[Any, Any] = {}
        while True:
            n, p = _block_count(buf, p)
            if n == 0:
                return out, p
            for _ in range(n):
                k, p = key(buf, p)
                out[k], p = value(buf, p)

    return read


def _array(item: Reader) -> Reader:
    def read(buf: bytes, p: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        append = out.append
        while True:
            n, p = _block_count(buf, p)
            if n == 0:
                return out, p
            for _ in range(n):
                v, p = item(buf, p)
                append(v)

    return read


def _map(value: Reader) -> Reader:
    return _kv_array(_read_string, value)


def _inline_long(target: str, pad: str) -> list[str]:
    return [
        f"{pad}b = buf[p]",
        f"{pad}if b < 0x80:",
        f"{pad}    {target} = (b >> 1) ^ -(b & 1)",
        f"{pad}    p += 1",
        f"{pad}else:",
        f"{pad}    {target}, p = _long_slow(buf, p)",
    ]


def _inline_sized(target: str, pad: str, decode: bool) -> list[str]:
    value = 'buf[p:end].decode("utf-8")' if decode else "buf[p:end]"
    return [
        f"{pad}b = buf[p]",
        f"{pad}if b < 0x80:",
        f"{pad}    end = p + 1 + (b >> 1)",
        f"{pad}    p += 1",
        f"{pad}else:",
        f"{pad}    n, p = _long_slow(buf, p)",
        f"{pad}    end = p + n",
        f"{pad}{target} = {value}",
        f"{pad}p = end",
    ]


def _inline(fn: Reader, target: str, pad: str) -> list[str] | None:
    if fn is _read_long:
        return _inline_long(target, pad)
    if fn is _read_string:
        return _inline_sized(target, pad, decode=True)
    if fn is _read_bytes:
        return _inline_sized(target, pad, decode=False)
    return None


def _record(fields: list[tuple[str, Reader]]) -> Reader:
    """A record reader generated as straight-line code: primitive and optional-primitive fields are
    decoded inline, so a record costs one call instead of one (or two) per field."""
    namespace: dict[str, Any] = {"_long_slow": _long_slow}
    lines = ["def read(buf, p):", "    out = {}"]
    for i, (name, fn) in enumerate(fields):
        target = f"out[{name!r}]"  # repr: field names from the file become string literals only
        code = _inline(fn, target, "    ")
        inner = getattr(fn, "optional_of", None)
        inner_code = _inline(inner, target, "        ") if inner is not None else None
        if code is not None:
            lines += code
        elif inner_code is not None and getattr(fn, "null_first", False):
            lines += [
                "    if buf[p] == 0:",
                f"        {target} = None",
                "        p += 1",
                "    else:",
                "        p += 1",
            ]
            lines += inner_code
        elif inner is not None and getattr(fn, "null_first", False):
            namespace[f"f{i}"] = inner
            lines += [
                "    if buf[p] == 0:",
                f"        {target} = None",
                "        p += 1",
                "    else:",
                f"        {target}, p = f{i}(buf, p + 1)",
            ]
        else:
            namespace[f"f{i}"] = fn
            lines.append(f"    {target}, p = f{i}(buf, p)")
    lines.append("    return out, p")
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from fixed templates only
    reader: Reader = namespace["read"]
    return reader


def _enum(symbols: list[str]) -> Reader:
    def read(buf: bytes, p: int) -> tuple[str, int]:
        i, p = _read_long(buf, p)
        return symbols[i], p

    return read


class _Compiler:
    """Compiles a writer schema (JSON form) into nested readers, resolving named types."""

    def __init__(self) -> None:
        self.named: dict[str, Any] = {}

    def compile(self, schema: Any, namespace: str = "") -> Reader:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema]
            named = self.named.get(schema) or self.named.get(f"{namespace}.{schema}")
            if named is None:
                raise InvalidMetadataError(f"Avro schema references unknown type {schema!r}")
            return self.compile(named, namespace)
        if isinstance(schema, list):
            return self._union(schema, namespace)
        kind = schema.get("type")
        if "name" in schema and kind in ("record", "error", "fixed", "enum"):
            namespace = self._register(schema, namespace)
        logical = schema.get("logicalType")
        if kind == "record" or kind == "error":
            fields = [(f["name"], self.compile(f["type"], namespace)) for f in schema["fields"]]
            return _record(fields)
        if kind == "array":
            return self._array(schema, namespace)
        if kind == "map":
            return _map(self.compile(schema["values"], namespace))
        if kind == "enum":
            return _enum(list(schema["symbols"]))
        if kind == "fixed":
            base = _fixed(int(schema["size"]))
        elif isinstance(kind, (dict, list)) or kind not in _PRIMITIVES:
            return self.compile(kind, namespace)
        else:
            base = _PRIMITIVES[kind]
        # date/time/timestamp logical types keep their int form: that is Floe's representation.
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return _decimal(base, int(schema.get("scale", 0)))
        if logical == "uuid" and kind in ("string", "fixed"):
            return _uuid(base)
        return base

    def _register(self, schema: dict[str, Any], namespace: str) -> str:
        name = schema["name"]
        ns = schema.get("namespace", namespace) or ""
        if "." in name:
            ns = name.rsplit(".", 1)[0]
        self.named[name] = schema
        self.named[name.rsplit(".", 1)[-1]] = schema
        if ns and "." not in name:
            self.named[f"{ns}.{name}"] = schema
        return ns

    def _union(self, branches: list[Any], namespace: str) -> Reader:
        if len(branches) == 2 and "null" in branches:
            other = branches[1] if branches[0] == "null" else branches[0]
            return _optional(self.compile(other, namespace), branches[0] == "null")
        return _union([self.compile(b, namespace) for b in branches])

    def _array(self, schema: dict[str, Any], namespace: str) -> Reader:
        items = schema["items"]
        if isinstance(items, dict) and items.get("type") == "record" and "name" in items:
            self._register(items, namespace)
        if (
            schema.get("logicalType") == "map"
            and isinstance(items, dict)
            and items.get("type") == "record"
            and len(items.get("fields", ())) == 2
        ):
            key_t, value_t = (f["type"] for f in items["fields"])
            if key_t in ("int", "long") and value_t == "long":
                return _int_long_map
            if key_t in ("int", "long") and value_t == "bytes":
                return _int_bytes_map
            return _kv_array(self.compile(key_t, namespace), self.compile(value_t, namespace))
        return _array(self.compile(items, namespace))


def compile_reader(schema: Any) -> Reader:
    """Compile an Avro writer schema (parsed JSON) into a record reader.

    Raises:
        InvalidMetadataError: the schema references an undefined named type.
        UnsupportedError: the schema uses a construct this decoder does not handle.
    """
    try:
        return _Compiler().compile(schema)
    except (KeyError, TypeError) as exc:
        raise UnsupportedError(f"cannot compile Avro schema: {exc}") from exc


def read_container(fo: BinaryIO) -> tuple[dict[str, Any], Iterator[tuple[bytes, int]]]:
    """Open an Avro object container file: its header metadata and an iterator of (block bytes, count).

    fastavro handles the header, codecs (null, deflate, snappy, zstandard ...) and sync markers.
    """
    blocks = fastavro.block_reader(fo)
    metadata = {k: v.decode() if isinstance(v, bytes) else v for k, v in blocks.metadata.items()}

    def gen() -> Iterator[tuple[bytes, int]]:
        for block in blocks:
            yield block.bytes_.getvalue(), block.num_records  # type: ignore[attr-defined]  # not in stubs

    return metadata, gen()


def iter_records(reader: Reader, data: bytes, count: int) -> Iterator[Any]:
    """Decode ``count`` consecutive records of one block."""
    p = 0
    for _ in range(count):
        value, p = reader(data, p)
        yield value
