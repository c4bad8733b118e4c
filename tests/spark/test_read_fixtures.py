"""Every Java-written fixture table reads with the right rows through floe.spark.read, at every snapshot.

The oracle is an independent reference reader in this module: plain pyarrow/fastavro file reads, columns
matched by field id (else name mapping, else position), and the spec's delete rules written out directly
(position deletes: same file, delete seq >= data seq; equality deletes: delete seq > data seq, same
partition or a global delete; nulls match nulls). duckdb__generated_spec1_0_001 is also compared with the
rows Spark + Iceberg Java returned (expected_results/). Tables using features Floe does not support must
fail with a clear error naming the feature.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import uuid
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import orc
from pyroaring import BitMap64
from pyspark.sql import SparkSession

import floe.spark
from floe.errors import FloeError, NoSuchFileError, ValidationError
from floe.io.table_folder import FolderTable, open_table_folder
from floe.spark.read import located_folder_table
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot
from floe.spec.types import DateType, TimestampType, TimestamptzType, UUIDType

FIXTURES = Path("/work/shared/fixtures/java-tables")
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text()) if (FIXTURES / "MANIFEST.json").exists() else []

# Out of scope, with the error the read must raise (the message must name the feature).
OUT_OF_SCOPE: dict[str, tuple[type[Exception], str]] = {}
POS_FIELD = {2147483546: "file_path", 2147483545: "pos"}


# -- the reference reader ------------------------------------------------------------------------
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
                paths, pos = dt_.column("file_path").to_pylist(), dt_.column("pos").to_pylist()
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


def _comparable(schema: Schema) -> Schema:
    """The columns both readers can compare: variant values (Spark reads them natively) are left out."""
    keep = [f for f in schema.fields if "variant" not in str(f.field_type)]
    return Schema(*keep, schema_id=schema.schema_id)


def _spark_rows(spark: SparkSession, table: Any, schema: Schema, **options: Any) -> list[tuple[Any, ...]]:
    arrow = floe.spark.read(spark, table, columns=[f.name for f in schema.fields], **options).toArrow()
    return [tuple(canon(r[f.name], f.field_type) for f in schema.fields) for r in arrow.to_pylist()]


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def _folder(entry: dict[str, Any]) -> FolderTable:
    return open_table_folder(FIXTURES / entry["folder"] / entry["table_root"], prefixes=list(entry["ref_prefixes"]))


@pytest.mark.parametrize("entry", MANIFEST, ids=[m["folder"] for m in MANIFEST])
def test_read_fixture_every_snapshot_matches_reference(spark: SparkSession, entry: dict[str, Any]) -> None:
    ft = _folder(entry)
    table = located_folder_table(ft)
    md = ft.metadata
    if entry["folder"] in OUT_OF_SCOPE:
        error, words = OUT_OF_SCOPE[entry["folder"]]
        with pytest.raises(error, match=words):
            floe.spark.read(spark, table).collect()
        return
    current = md.current_snapshot()
    if current is None:
        assert floe.spark.read(spark, table).count() == 0
        return
    checked = 0
    for snap in md.snapshots:
        schema = md.schema() if snap.snapshot_id == current.snapshot_id else (md.schema_by_id(snap.schema_id) if snap.schema_id is not None else md.schema())
        schema = _comparable(schema)
        try:
            expected = reference_rows(ft, snap, schema)
        except (NoSuchFileError, FileNotFoundError):
            continue  # an expired snapshot whose manifests were not kept with the fixture
        options: dict[str, Any] = {} if snap.snapshot_id == current.snapshot_id else {"snapshot_id": snap.snapshot_id}
        got = _spark_rows(spark, table, schema, **options)
        assert len(got) == len(expected), f"{entry['folder']} snapshot {snap.snapshot_id}"
        assert _sorted(got) == _sorted(expected), f"{entry['folder']} snapshot {snap.snapshot_id}"
        checked += 1
    assert checked >= 1


def test_read_fixture_generated_spec_matches_spark_expected_results(spark: SparkSession) -> None:
    base = FIXTURES / "duckdb__generated_spec1_0_001"
    entry = next(m for m in MANIFEST if m["folder"] == "duckdb__generated_spec1_0_001")
    ft = _folder(entry)
    schema = ft.metadata.schema()
    expected_table = pq.read_table(base / "expected_results" / "last" / "data")
    expected = [tuple(canon(r[f.name]) for f in schema.fields) for r in expected_table.to_pylist()]
    got = [tuple(canon(v) for v in row) for row in _spark_rows(spark, located_folder_table(ft), schema)]
    assert int((base / "expected_results" / "last" / "count.csv").read_text().split()[-1]) == len(got)
    assert _sorted(got) == _sorted(expected)


def test_read_fixture_filter_and_columns_match_reference(spark: SparkSession) -> None:
    entry = next(m for m in MANIFEST if m["folder"] == "duckdb__equality_deletes_mytable_partitioned")
    ft = _folder(entry)
    schema = ft.metadata.schema()
    first = schema.fields[0]
    all_rows = reference_rows(ft, ft.metadata.current_snapshot(), schema)  # type: ignore[arg-type]
    value = all_rows[0][0]
    df = floe.spark.read(spark, located_folder_table(ft), filter=f"{first.name} = {value!r}", columns=[first.name])
    assert [r[0] for r in df.collect()] == [v[0] for v in all_rows if v[0] == value]


def test_read_fixture_unknown_snapshot_and_bad_filter_raise(spark: SparkSession) -> None:
    ft = _folder(MANIFEST[0])
    table = located_folder_table(ft)
    with pytest.raises(FloeError, match="999"):
        floe.spark.read(spark, table, snapshot_id=999)
    with pytest.raises(ValidationError, match="no_such_column"):
        floe.spark.read(spark, table, filter="no_such_column = 1")
