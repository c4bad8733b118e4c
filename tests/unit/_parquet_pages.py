"""Count the data pages of a Parquet column chunk by walking its page headers (Thrift compact protocol): neither
pyarrow nor DuckDB lists pages, and the page row limit is only visible there."""

from __future__ import annotations

import pyarrow.parquet as pq


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _skip(buf: bytes, i: int, kind: int) -> int:
    if kind in (1, 2):
        return i
    if kind == 3:
        return i + 1
    if kind in (4, 5, 6):
        return _varint(buf, i)[1]
    if kind == 7:
        return i + 8
    if kind == 8:
        n, i = _varint(buf, i)
        return i + n
    if kind in (9, 10):
        head = buf[i]
        i += 1
        n, elem = head >> 4, head & 0x0F
        if n == 15:
            n, i = _varint(buf, i)
        for _ in range(n):
            i = _skip(buf, i, elem)
        return i
    if kind == 12:
        return _struct(buf, i)[1]
    raise ValueError(kind)


def _struct(buf: bytes, i: int) -> tuple[dict[int, int], int]:
    """The i32 fields of the struct at ``i`` (the page type, sizes) and the offset after it."""
    fields: dict[int, int] = {}
    last = 0
    while True:
        head = buf[i]
        i += 1
        if head == 0:
            return fields, i
        delta, kind = head >> 4, head & 0x0F
        if delta:
            fid = last + delta
        else:
            raw, i = _varint(buf, i)
            fid = (raw >> 1) ^ -(raw & 1)
        last = fid
        if kind == 5:
            raw, i = _varint(buf, i)
            fields[fid] = (raw >> 1) ^ -(raw & 1)
        else:
            i = _skip(buf, i, kind)


def data_pages(path: str, column: int, row_group: int = 0) -> int:
    """The number of data pages (v1 or v2) of column chunk ``column`` of ``row_group``."""
    meta = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    start = meta.dictionary_page_offset if meta.has_dictionary_page else meta.data_page_offset
    with open(path, "rb") as f:
        f.seek(start)
        buf = f.read(meta.total_compressed_size)
    i = pages = 0
    while i < len(buf):
        header, i = _struct(buf, i)
        pages += header.get(1) in (0, 3)  # DATA_PAGE, DATA_PAGE_V2
        i += header[3]  # compressed_page_size
    return pages
