"""A differential reader for tests: the spec's delete rules written out plainly over pyarrow/fastavro reads.

It shares nothing with Floe's read paths but metadata parsing (FolderTable: metadata JSON, manifest lists
and manifests). Columns are matched by field id (Parquet ids, ORC ``iceberg.id``), else the name mapping,
else names/positions. Deletes, per the spec:
- a position delete row applies to the data file whose manifest path equals its ``file_path`` string, when
  the delete's data sequence number is >= the data file's (deletion vectors likewise, by
  ``referenced_data_file``);
- an equality delete applies when its sequence number is > the data file's and it shares the data file's
  partition (spec id and values) or was written with an unpartitioned spec; a row matches when its values
  of exactly the ``equality_ids`` columns equal a delete row's (null equals null), whatever else the
  delete file holds.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import uuid
import zlib
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import orc
from pyroaring import BitMap64

from floe.io.table_folder import FolderTable
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot
from floe.spec.types import DateType, TimestampType, TimestamptzType, UUIDType

__all__ = ["canon", "reference_rows"]

POS_FIELD = {2147483546: "file_path", 2147483545: "pos"}


def _open(ft: FolderTable, f: DataFile) -> pa.Table:
    raw = ft.read_bytes(f.file_path)
    if f.file_format == FileFormat.PARQUET:
        return pq.read_table(pa.BufferReader(raw))
    if f.file_format == FileFormat.ORC:
        return orc.ORCFile(pa.BufferReader(raw)).read()
    records = list(fastavro.reader(io.BytesIO(raw)))
    return pa.Table.from_pylist(records)


def _deletion_vector_positions(ft: FolderTable, f: DataFile) -> set[int]:
    """A v3 deletion vector's blob: BE length, magic D1 D3 39 64, portable 64-bit Roaring bitmap, BE CRC-32."""
    start = f.content_offset or 0
    blob = ft.read_bytes(f.file_path)[start : start + (f.content_size_in_bytes or 0)]
    length = int.from_bytes(blob[:4], "big")
    assert blob[4:8] == bytes.fromhex("d1d33964"), f.file_path
    assert zlib.crc32(blob[4 : 4 + length]) == int.from_bytes(blob[4 + length :], "big"), f.file_path
    return set(BitMap64.deserialize(blob[8 : 4 + length]))


def _ids(ft: FolderTable, f: DataFile, table: pa.Table, schema: Schema) -> list[int | None]:
    """Field id of each top-level column: Parquet ids or ORC ``iceberg.id`` attributes, else the name
    mapping, else names/positions. A mapping that gives a column the id of another top-level column is
    not used (Impala's migrated complex ORC table has one; Impala's published results match by name)."""
    ids = []
    for field in table.schema:
        md = field.metadata or {}
        raw = md.get(b"PARQUET:field_id", md.get(b"iceberg.id"))
        ids.append(int(raw) if raw is not None and int(raw) >= 0 else None)
    if any(i is not None for i in ids):
        return ids
    mapping = ft.metadata.properties.get("schema.name-mapping.default")
    current = ft.metadata.schema()
    nested_only = current.field_ids() - {fld.field_id for fld in current.fields}
    if mapping and not any(e.get("field-id") in nested_only for e in json.loads(mapping)):
        by_name = {n: e.get("field-id") for e in json.loads(mapping) for n in e["names"]}
        return [by_name.get(n) for n in table.column_names]
    by_name = {fld.name: fld.field_id for fld in schema.fields}
    if f.file_format == FileFormat.PARQUET and not all(n in by_name for n in table.column_names):
        return list(range(1, table.num_columns + 1))  # Iceberg Java's positional fallback ids
    if f.file_format == FileFormat.AVRO:
        schema_json = json.loads(fastavro.reader(io.BytesIO(ft.read_bytes(f.file_path))).metadata["avro.schema"])
        return [fld.get("field-id") for fld in schema_json["fields"]]
    return [by_name.get(n) for n in table.column_names]


def _position_columns(table: pa.Table) -> tuple[list[str], list[int]]:
    """A position delete file's paths (as text) and positions: by reserved field id, else by name."""
    by_id = {int(f.metadata[b"PARQUET:field_id"]): f.name for f in table.schema if f.metadata and b"PARQUET:field_id" in f.metadata}
    by_name = {n.lower(): n for n in table.column_names}
    path_col = by_id.get(2147483546, by_name.get("file_path"))
    pos_col = by_id.get(2147483545, by_name.get("pos"))
    paths = [p.decode() if isinstance(p, bytes) else p for p in table.column(path_col).to_pylist()]
    return paths, [int(p) for p in table.column(pos_col).to_pylist()]


def _applies(d: ManifestEntry, data: ManifestEntry, ft: FolderTable) -> bool:
    df, dd = data.data_file, d.data_file
    data_seq, del_seq = data.sequence_number or 0, d.sequence_number or 0
    if dd.content == FileContent.POSITION_DELETES:
        if dd.referenced_data_file is not None:
            return dd.referenced_data_file == df.file_path and data_seq <= del_seq
        return data_seq <= del_seq and dd.spec_id == df.spec_id and dd.partition == df.partition
    spec = ft.metadata.spec_by_id(dd.spec_id)
    global_delete = spec is None or all(str(f.transform) == "void" for f in spec.fields)
    same_partition = dd.spec_id == df.spec_id and dd.partition == df.partition
    return data_seq < del_seq and (global_delete or same_partition)


def _column(table: pa.Table, ids: list[int | None], field_id: int) -> list[Any] | None:
    return table.column(ids.index(field_id)).to_pylist() if field_id in ids else None


def reference_rows(ft: FolderTable, snapshot: Snapshot, schema: Schema) -> list[tuple[Any, ...]]:
    entries = [e for e in ft.entries(snapshot) if e.status != ManifestEntryStatus.DELETED]
    data = [e for e in entries if e.data_file.content == FileContent.DATA]
    deletes = [e for e in entries if e.data_file.content != FileContent.DATA]
    out: list[tuple[Any, ...]] = []
    for e in data:
        f = e.data_file
        table = _open(ft, f)
        ids = _ids(ft, f, table, schema)
        spec = ft.metadata.spec_by_id(f.spec_id)
        deleted: set[int] = set()
        eq_keys: list[tuple[tuple[int, ...], set[tuple[Any, ...]]]] = []
        for d in deletes:
            if not _applies(d, e, ft):
                continue
            if d.data_file.file_format == FileFormat.PUFFIN:
                deleted |= _deletion_vector_positions(ft, d.data_file)
                continue
            dt_ = _open(ft, d.data_file)
            if d.data_file.content == FileContent.POSITION_DELETES:
                paths, pos = _position_columns(dt_)
                deleted |= {p for path, p in zip(paths, pos) if path == f.file_path}
            else:
                eq_ids = tuple(d.data_file.equality_ids or ())
                d_ids = _ids(ft, d.data_file, dt_, schema)
                cols = [_column(dt_, d_ids, i) for i in eq_ids]
                eq_keys.append((eq_ids, set(zip(*cols))))  # type: ignore[arg-type]
        values: dict[int, list[Any]] = {}
        for fld in schema.fields:
            col = _column(table, ids, fld.field_id)
            if col is None:
                fill = fld.initial_default
                for pos_, pf in enumerate(spec.fields if spec is not None else ()):
                    if pf.source_id == fld.field_id and str(pf.transform) == "identity":
                        fill = f.partition[pos_]
                col = [fill] * table.num_rows
            values[fld.field_id] = col
        for i in range(table.num_rows):
            if i in deleted:
                continue
            if any(tuple(values[k][i] if k in values else _column(table, ids, k)[i] for k in key_ids) in keys  # type: ignore[index]
                   for key_ids, keys in eq_keys):
                continue
            out.append(tuple(canon(values[fld.field_id][i], fld.field_type) for fld in schema.fields))
    return out


# -- value canonicalisation (both sides) -----------------------------------------------------------
def canon(v: Any, t: Any = None) -> Any:
    """A comparable, hashable form: timestamps as UTC micros, dates as days, UUIDs as text."""
    if v is None:
        return None
    if isinstance(t, UUIDType) and isinstance(v, (bytes, bytearray)):
        return str(uuid.UUID(bytes=bytes(v)))
    # Partition values arrive in Floe's representation (floe.transforms.base): days and micros as ints.
    if isinstance(t, DateType) and isinstance(v, int):
        return ("date", v)
    if isinstance(t, (TimestampType, TimestamptzType)) and isinstance(v, int):
        return ("ts", v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return ("ts", (v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1))
    if isinstance(v, dt.date):
        return ("date", (v - dt.date(1970, 1, 1)).days)
    if isinstance(v, dt.time):
        return ("time", v.isoformat())
    if isinstance(v, Decimal):
        return ("dec", str(v.normalize()))
    if isinstance(v, float):
        return "nan" if math.isnan(v) else round(v, 6)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, dict):
        return tuple(sorted((k, canon(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return tuple(sorted((canon(k), canon(x)) for k, x in v))  # a map as (key, value) pairs
        return tuple(canon(x) for x in v)
    return v
