"""A schema-compiled Avro binary decoder for manifests (Avro 1.11 spec, "Binary Encoding").

The container framing (header, sync markers) of null- and deflate-coded files, what Iceberg writers
and Floe's own writer produce, is read here: fastavro's block reader parses and validates the whole
writer schema of every file it opens, which for ``floe files`` on 1,000 manifests cost more than decoding
them (and its import ~30 ms). Other codecs (snappy, zstandard, bzip2, xz) go through fastavro. This
module decodes the records of a block. fastavro's generic record reader dispatches on the schema for every value and builds a dict for
every key/value pair of the metrics maps; here each schema node is compiled once into a small closure,
varints take a one-byte fast path, Iceberg's ``logicalType: map`` arrays become dicts directly, and
values come out in Floe's representation (date -> int days, timestamps -> int micros, decimal ->
Decimal, uuid -> UUID). Measured on a 100k-entry manifest this is about twice as fast as fastavro.

A projection (by Iceberg field id) skips record fields without building them or keeps only some keys
of int-keyed maps (floe.serde.avro_skip); records can read as tuples, cheaper than dicts.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Iterator, Mapping
from decimal import Context, Decimal
from typing import Any, BinaryIO

from floe.errors import InvalidMetadataError, UnsupportedError
from floe.serde.avro_skip import (
    INLINE_HELPERS,
    SKIP_PRIMITIVES,
    VARINT_KINDS,
    inline_skip,
    int_bytes_map_keep,
    int_long_map_keep,
    skip_blocks,
    skip_fixed,
    skip_keyed_bytes,
    skip_sequence,
    skip_union,
    skip_varint,
    skip_varint_blocks,
)
from floe.serde.avro_skip import block_count as _block_count
from floe.serde.avro_skip import long_slow as _long_slow
from floe.serde.avro_skip import read_long as _read_long

__all__ = ["Projection", "Reader", "compile_reader", "iter_records", "read_container"]

# A compiled reader: (buffer, position) -> (value, new position).
Reader = Callable[[bytes, int], tuple[Any, int]]

# Record fields to read partially, by Iceberg field id: None skips the field (it reads as None);
# a set of ints keeps only those keys of an int-keyed map (Iceberg's metrics maps).
Projection = Mapping[int, "frozenset[int] | None"]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_DEC_CTX = Context(prec=80)


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


def _long_array(buf: bytes, p: int) -> tuple[list[int], int]:
    """Arrays of int/long (split offsets, equality ids), varints decoded inline."""
    out: list[int] = []
    append = out.append
    while True:
        b = buf[p]
        if b < 0x80 and not b & 1:
            n = b >> 1
            p += 1
        else:
            n, p = _block_count(buf, p)
        if n == 0:
            return out, p
        for _ in range(n):
            b = buf[p]
            if b < 0x80:
                append((b >> 1) ^ -(b & 1))
                p += 1
            else:
                v, p = _long_slow(buf, p)
                append(v)


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
    # One- and two-byte varints inline (counts, lengths, small ids); longer ones call _long_slow.
    return [
        f"{pad}b = buf[p]",
        f"{pad}if b < 0x80:",
        f"{pad}    {target} = (b >> 1) ^ -(b & 1)",
        f"{pad}    p += 1",
        f"{pad}elif buf[p + 1] < 0x80:",
        f"{pad}    b = (b & 0x7F) | (buf[p + 1] << 7)",
        f"{pad}    {target} = (b >> 1) ^ -(b & 1)",
        f"{pad}    p += 2",
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
        f"{pad}elif buf[p + 1] < 0x80:",
        f"{pad}    end = p + 2 + (((b & 0x7F) | (buf[p + 1] << 7)) >> 1)",
        f"{pad}    p += 2",
        f"{pad}else:",
        f"{pad}    n, p = _long_slow(buf, p)",
        f"{pad}    end = p + n",
        f"{pad}{target} = {value}",
        f"{pad}p = end",
    ]


def _inline(fn: Reader, target: str, pad: str) -> list[str] | None:
    skip = inline_skip(fn, target, pad)
    if skip is not None:
        return skip
    if fn is _read_long:
        return _inline_long(target, pad)
    if fn is _read_string:
        return _inline_sized(target, pad, decode=True)
    if fn is _read_bytes:
        return _inline_sized(target, pad, decode=False)
    return None


def _record(fields: list[tuple[str, Reader]], as_tuple: bool = False) -> Reader:
    """A record reader generated as straight-line code: primitive and optional-primitive fields are
    decoded inline, so a record costs one call instead of one (or two) per field. Records read as
    dicts by field name, or (``as_tuple``) as tuples in field order, which are cheaper to build."""
    namespace: dict[str, Any] = {"_long_slow": _long_slow, **INLINE_HELPERS}
    lines = ["def read(buf, p):"] if as_tuple else ["def read(buf, p):", "    out = {}"]
    for i, (name, fn) in enumerate(fields):
        # repr: field names from the file become string literals only
        target = f"v{i}" if as_tuple else f"out[{name!r}]"
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
    if as_tuple:
        lines.append("    return (" + "".join(f"v{i}, " for i in range(len(fields))) + "), p")
    else:
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

    def __init__(self, projection: Projection | None = None, as_tuples: bool = False) -> None:
        self.named: dict[str, Any] = {}
        self.projection: Projection = projection or {}
        self.as_tuples = as_tuples

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
            fields = [(f["name"], self._field(f, namespace)) for f in schema["fields"]]
            return _record(fields, self.as_tuples)
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

    def _field(self, field: dict[str, Any], namespace: str) -> Reader:
        """A record field's reader, honouring the projection for fields with an Iceberg field id."""
        fid = field.get("field-id")
        if fid is None or fid not in self.projection:
            return self.compile(field["type"], namespace)
        keep = self.projection[fid]
        if keep is None:
            return self.skip(field["type"], namespace)
        return self._keyed(field["type"], namespace, keep)

    def _keyed(self, schema: Any, namespace: str, keep: frozenset[int]) -> Reader:
        """An int-keyed metrics map reading only the keys in ``keep`` (other shapes read in full)."""
        if isinstance(schema, list) and len(schema) == 2 and "null" in schema:
            other = schema[1] if schema[0] == "null" else schema[0]
            return _optional(self._keyed(other, namespace, keep), schema[0] == "null")
        if isinstance(schema, dict) and schema.get("type") == "array" and schema.get("logicalType") == "map":
            items = schema["items"]
            if isinstance(items, dict) and items.get("type") == "record" and len(items.get("fields", ())) == 2:
                if "name" in items:
                    self._register(items, namespace)
                key_t, value_t = (f["type"] for f in items["fields"])
                if key_t in ("int", "long") and value_t == "long":
                    return int_long_map_keep(keep)
                if key_t in ("int", "long") and value_t == "bytes":
                    return int_bytes_map_keep(keep)
        return self.compile(schema, namespace)

    def _varints(self, schema: Any, namespace: str) -> int | None:
        """How many varints encode a value of ``schema`` when that is all it is (else None)."""
        if isinstance(schema, str):
            if schema in VARINT_KINDS:
                return 1
            named = self.named.get(schema) or self.named.get(f"{namespace}.{schema}")
            return None if named is None else self._varints(named, namespace)
        if isinstance(schema, dict):
            kind = schema.get("type")
            if kind == "enum":
                return 1
            if kind == "record":
                total = 0
                for f in schema.get("fields", ()):
                    n = self._varints(f["type"], namespace)
                    if n is None:
                        return None
                    total += n
                return total
            if isinstance(kind, str) and kind in VARINT_KINDS:
                return 1
        return None

    def skip(self, schema: Any, namespace: str = "") -> Reader:
        """A reader that walks over a value of ``schema`` without building it (always yields None)."""
        if isinstance(schema, str):
            if schema in SKIP_PRIMITIVES:
                return SKIP_PRIMITIVES[schema]
            named = self.named.get(schema) or self.named.get(f"{namespace}.{schema}")
            if named is None:
                raise InvalidMetadataError(f"Avro schema references unknown type {schema!r}")
            return self.skip(named, namespace)
        if isinstance(schema, list):
            if len(schema) == 2 and "null" in schema:
                other = schema[1] if schema[0] == "null" else schema[0]
                return _optional(self.skip(other, namespace), schema[0] == "null")
            return skip_union([self.skip(b, namespace) for b in schema])
        kind = schema.get("type")
        if "name" in schema and kind in ("record", "error", "fixed", "enum"):
            namespace = self._register(schema, namespace)
        if kind in ("record", "error"):
            return skip_sequence([self.skip(f["type"], namespace) for f in schema["fields"]])
        if kind == "array":
            items = schema["items"]
            if isinstance(items, dict) and items.get("type") == "record" and "name" in items:
                self._register(items, namespace)
            n = self._varints(items, namespace)
            if n:
                return skip_varint_blocks(n)
            if isinstance(items, dict) and items.get("type") == "record" and [
                f["type"] for f in items.get("fields", ())
            ] in (["int", "bytes"], ["long", "bytes"], ["int", "string"], ["long", "string"]):
                return skip_keyed_bytes
            return skip_blocks(self.skip(items, namespace))
        if kind == "map":
            return skip_blocks(skip_sequence([SKIP_PRIMITIVES["bytes"], self.skip(schema["values"], namespace)]))
        if kind == "enum":
            return skip_varint
        if kind == "fixed":
            return skip_fixed(int(schema["size"]))
        if isinstance(kind, (dict, list)):
            return self.skip(kind, namespace)
        if kind in SKIP_PRIMITIVES:
            return SKIP_PRIMITIVES[kind]
        return self.skip(kind, namespace)

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
        item = self.compile(items, namespace)
        return _long_array if item is _read_long else _array(item)


def compile_reader(schema: Any, *, projection: Projection | None = None, as_tuples: bool = False) -> Reader:
    """Compile an Avro writer schema (parsed JSON) into a record reader.

    Args:
        schema: the writer schema.
        projection: record fields (by ``field-id``) to skip (None: the field reads as None without
            being decoded) or to reduce (a set of map keys to keep, for int-keyed map arrays).
        as_tuples: records read as tuples of field values in schema order instead of dicts by name.

    Raises:
        InvalidMetadataError: the schema references an undefined named type.
        UnsupportedError: the schema uses a construct this decoder does not handle.
    """
    try:
        return _Compiler(projection, as_tuples).compile(schema)
    except (KeyError, TypeError) as exc:
        raise UnsupportedError(f"cannot compile Avro schema: {exc}") from exc


_MAGIC = b"Obj\x01"  # Avro 1.11 spec, "Object Container Files"
_SYNC_SIZE = 16
_FRAMED_HERE = ("null", "deflate")


def read_container(fo: BinaryIO) -> tuple[dict[str, Any], Iterator[tuple[bytes, int]]]:
    """Open an Avro object container file: its header metadata and an iterator of (block bytes, count).

    Block bytes are decompressed. ``fo`` must be seekable when the codec is not null or deflate (fastavro
    then re-reads the file from where it started).

    Raises:
        ValueError: not an Avro container (bad magic), or a bad sync marker or deflate block.
        EOFError: the file ends inside the header or a block.
    """
    start = fo.tell()
    if fo.read(len(_MAGIC)) != _MAGIC:
        raise ValueError("not an Avro object container file (bad magic bytes)")
    raw: dict[str, bytes] = {}
    count = _stream_long(fo)
    while count != 0:
        if count < 0:  # a negative count is followed by the block's size in bytes
            _stream_long(fo)
            count = -count
        for _ in range(count):
            key = _exact(fo, _stream_long(fo)).decode()
            raw[key] = _exact(fo, _stream_long(fo))
        count = _stream_long(fo)
    sync = _exact(fo, _SYNC_SIZE)
    metadata = {k: v.decode() for k, v in raw.items()}
    codec = metadata.get("avro.codec", "null")
    if codec not in _FRAMED_HERE:
        fo.seek(start)
        return _fastavro_container(fo)
    return metadata, _blocks(fo, sync, inflate=codec == "deflate")


def _blocks(fo: BinaryIO, sync: bytes, *, inflate: bool) -> Iterator[tuple[bytes, int]]:
    while first := fo.read(1):  # end of file between blocks: done
        count = _stream_long(fo, first)
        data = _exact(fo, _stream_long(fo))
        if fo.read(_SYNC_SIZE) != sync:
            raise ValueError("Avro block does not end with the file's sync marker")
        if inflate:
            try:
                data = zlib.decompress(data, -15)  # raw deflate, no zlib header (Avro spec)
            except zlib.error as exc:
                raise ValueError(f"corrupt deflate block: {exc}") from exc
        yield data, count


def _stream_long(fo: BinaryIO, first: bytes = b"") -> int:
    """A zig-zag varint read from the stream (``first``: its first byte, already read)."""
    n = shift = 0
    byte = first or fo.read(1)
    while True:
        if not byte:
            raise EOFError("Avro file ends inside a number")
        b = byte[0]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1)
        shift += 7
        byte = fo.read(1)


def _exact(fo: BinaryIO, size: int) -> bytes:
    if size < 0:
        raise ValueError(f"negative Avro length {size}")
    data = fo.read(size)
    if len(data) != size:
        raise EOFError(f"Avro file ends {size - len(data)} bytes early")
    return bytes(data)


def _fastavro_container(fo: BinaryIO) -> tuple[dict[str, Any], Iterator[tuple[bytes, int]]]:
    import fastavro  # imported on use: only codecs other than null and deflate need it

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
