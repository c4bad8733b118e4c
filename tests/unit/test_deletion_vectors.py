"""v3 deletion vectors: blob decoding, Puffin reading, which vectors apply, and reading a Java-written table.

Blobs are built by hand from the Puffin spec (BE length, magic, portable 64-bit Roaring bitmap, BE CRC-32);
PyIceberg's Puffin reader cross-checks that the hand-built files are what other readers expect.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from pyroaring import BitMap64

from floe.errors import InvalidMetadataError
from floe.io.fileio import FileIO
from floe.io.puffin import read_deletion_vector, read_footer
from floe.io.table_folder import open_table_folder
from floe.scan.delete_index import DeleteFileIndex
from floe.scan.table_scan import LocatedTable
from floe.scan.tasks import FileScanTask
from floe.serde.deletion_vector import DELETION_VECTOR_MAGIC, decode_deletion_vector
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from floe.spec.partitioning import PartitionSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Positions in three 32-bit buckets (keys 0, 1, 8), with array, bitmap and run containers.
POSITIONS = sorted({0, 1, 5, 70_000, *range(100_000, 110_000, 2), *range(200_000, 260_000), 2**32 + 3, 2**35 + 9})


def _blob(positions: list[int], *, run_optimize: bool = True) -> bytes:
    bitmap = BitMap64(positions)
    if run_optimize:
        bitmap.run_optimize()
    body = DELETION_VECTOR_MAGIC + bitmap.serialize()
    return len(body).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")


def _puffin(blobs: list[tuple[str, bytes]]) -> tuple[bytes, list[tuple[int, int]]]:
    """A Puffin file holding ``(referenced data file, blob)`` pairs, and each blob's (offset, length)."""
    out = bytearray(b"PFA1")
    meta, ranges = [], []
    for path, blob in blobs:
        ranges.append((len(out), len(blob)))
        meta.append({
            "type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1, "sequence-number": -1,
            "offset": len(out), "length": len(blob),
            "properties": {"referenced-data-file": path, "cardinality": str(len(decode_deletion_vector(blob)))},
        })
        out += blob
    payload = json.dumps({"blobs": meta, "properties": {"created-by": "floe tests"}}).encode()
    out += b"PFA1" + payload + len(payload).to_bytes(4, "little") + bytes(4) + b"PFA1"
    return bytes(out), ranges


def _dv(puffin: str, data_path: str, offset: int | None, length: int | None, cardinality: int) -> DataFile:
    return DataFile(FileContent.POSITION_DELETES, puffin, FileFormat.PUFFIN, (), cardinality, 1000,
                    referenced_data_file=data_path, content_offset=offset, content_size_in_bytes=length)


# -- decoding ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("run_optimize", [False, True])
def test_decode_returns_sorted_int64_positions_across_32_bit_keys(run_optimize: bool) -> None:
    got = decode_deletion_vector(_blob(POSITIONS, run_optimize=run_optimize))
    assert got.dtype == np.int64
    assert got.tolist() == POSITIONS


def test_decode_empty_vector() -> None:
    assert decode_deletion_vector(_blob([])).tolist() == []


@pytest.mark.parametrize(
    ("corrupt", "words"),
    [
        (lambda b: b[:-1] + bytes([b[-1] ^ 0xFF]), "CRC-32"),
        (lambda b: b[:4] + b"\x00\x00\x00\x00" + b[8:], "magic 00000000"),
        (lambda b: (len(b) - 7).to_bytes(4, "big") + b[4:], "declares"),
        (lambda b: b[:6], "truncated"),
    ],
    ids=["crc", "magic", "length", "truncated"],
)
def test_decode_rejects_corrupt_blobs_naming_the_source(corrupt: object, words: str) -> None:
    bad = corrupt(_blob([1, 2, 3]))  # type: ignore[operator]
    with pytest.raises(InvalidMetadataError, match=words) as info:
        decode_deletion_vector(bad, source="Puffin file /t/x.puffin at offset 4")
    assert "/t/x.puffin" in str(info.value)


def test_decode_rejects_an_invalid_bitmap_with_a_valid_checksum() -> None:
    body = DELETION_VECTOR_MAGIC + (5).to_bytes(8, "little") + b"\x00\x00"  # 5 buckets announced, none present
    blob = len(body).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")
    with pytest.raises(InvalidMetadataError, match="Roaring"):
        decode_deletion_vector(blob)


# -- Puffin files -------------------------------------------------------------------------------------
def test_puffin_footer_and_ranged_reads_match_pyiceberg(tmp_path: Path) -> None:
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    data, ranges = _puffin([("/d/a.parquet", _blob(POSITIONS)), ("/d/b.parquet", _blob([7, 9]))])
    path = tmp_path / "dv.puffin"
    path.write_bytes(data)
    io = FileIO()
    footer = read_footer(io, str(path))
    assert [(b.type, b.offset, b.length) for b in footer.blobs] == [("deletion-vector-v1", o, n) for o, n in ranges]
    assert footer.blobs[1].properties["referenced-data-file"] == "/d/b.parquet"
    assert footer.properties == {"created-by": "floe tests"}
    (a_off, a_len), _ = ranges
    a = read_deletion_vector(io, str(path), _dv("/x.puffin", "/d/a.parquet", a_off, a_len, len(POSITIONS)))
    # Without content_offset/size (a lax writer) the footer locates the blob by its referenced data file.
    b = read_deletion_vector(io, str(path), _dv("/x.puffin", "/d/b.parquet", None, None, 2))
    vectors = deletion_vectors_from_puffin_file(PuffinFile(data))
    theirs = {v.referenced_data_file: v.to_vector().to_pylist() for v in vectors}
    assert theirs == {"/d/a.parquet": a.tolist(), "/d/b.parquet": b.tolist()}
    assert b.tolist() == [7, 9]


def test_puffin_cardinality_mismatch_and_bad_footer_raise(tmp_path: Path) -> None:
    data, [(off, n)] = _puffin([("/d/a.parquet", _blob([1, 2]))])
    path = tmp_path / "dv.puffin"
    path.write_bytes(data)
    with pytest.raises(InvalidMetadataError, match="record_count=3"):
        read_deletion_vector(FileIO(), str(path), _dv("/x.puffin", "/d/a.parquet", off, n, 3))
    path.write_bytes(data[:-1] + b"X")
    with pytest.raises(InvalidMetadataError, match="does not end with the magic"):
        read_footer(FileIO(), str(path))


# -- which vectors apply ------------------------------------------------------------------------------
def _entry(f: DataFile, seq: int) -> ManifestEntry:
    return ManifestEntry(ManifestEntryStatus.ADDED, 1, seq, seq, f)


def test_delete_index_vector_applies_to_its_file_up_to_its_sequence_and_replaces_position_files() -> None:
    vector = _entry(_dv("/del/v.puffin", "/d/a", 4, 40, 1), 3)
    old_file = _entry(DataFile(FileContent.POSITION_DELETES, "/del/p.parquet", FileFormat.PARQUET, (), 1, 10), 2)
    idx = DeleteFileIndex([vector, old_file], {0: PartitionSpec(0, ())})
    # The vector holds the file's older position deletes too: only the vector is read.
    assert idx.for_data_file(1, 0, (), "/d/a") == (vector,)
    assert idx.for_data_file(3, 0, (), "/d/a") == (vector,)  # same commit: applies
    assert idx.for_data_file(4, 0, (), "/d/a") == ()  # newer data
    assert idx.for_data_file(1, 0, (), "/d/b") == (old_file,)  # another file keeps its position deletes


def test_delete_index_rejects_two_vectors_for_one_data_file() -> None:
    one = _entry(_dv("/del/1.puffin", "/d/a", 4, 40, 1), 2)
    two = _entry(_dv("/del/2.puffin", "/d/a", 4, 40, 1), 3)
    with pytest.raises(InvalidMetadataError, match="t1: data file /d/a has two deletion vectors"):
        DeleteFileIndex([one, two], {0: PartitionSpec(0, ())}, "t1")


def test_task_weight_counts_the_vector_blob_not_its_puffin_file() -> None:
    data = DataFile(FileContent.DATA, "/d/a", FileFormat.PARQUET, (), 10, 5000)
    task = FileScanTask(data, 1, (_entry(_dv("/del/v.puffin", "/d/a", 4, 40, 1), 2),))
    assert task.weight(open_file_cost=1) == 5040


# -- a table written by Iceberg Java (Spark, Iceberg 1.10) --------------------------------------------
def test_java_table_with_deletion_vectors_reads_on_the_driver(java_tables: Path) -> None:
    folder = open_table_folder(
        java_tables / "impala__iceberg_v3_deletion_vectors",
        prefixes=["hdfs://localhost:20500/test-warehouse/iceberg_v3_deletion_vectors"],
    )
    table = LocatedTable(
        metadata=folder.metadata, io=FileIO(), location_of=lambda p: str(folder.local_path(p)), table_name="dv"
    )
    first, second = folder.metadata.snapshots
    # Five one-row files; the delete commit's two vectors each drop row 0 of one file (ids 2 and 4).
    def ids(snapshot_id: int) -> list[int]:
        return sorted(r["i"] for r in table.scan().use_snapshot(snapshot_id).to_arrow().to_pylist())

    assert ids(first.snapshot_id) == [1, 2, 3, 4, 5]
    assert ids(second.snapshot_id) == [1, 3, 5]
    tasks = list(table.scan().plan_files())
    with_vectors = [t for t in tasks if t.deletes]
    assert len(tasks) == 5
    assert len(with_vectors) == 2
    assert all(t.deletes[0].data_file.referenced_data_file == t.file_path for t in with_vectors)


# -- vectors and position delete files in one scan (Spark and driver paths) ----------------------------
def test_vectors_and_position_files_in_one_scan_spark_and_driver(spark: SparkSession, tmp_path: Path) -> None:
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    import floe.spark
    from floe.catalog.hadoop import HadoopCatalog
    from floe.io.arrow_schema import schema_to_arrow
    from floe.spec.schema import Schema
    from floe.spec.types import LongType, NestedField

    wh = tmp_path / "ware house+x"  # Spark reports a space and a '+' URL-encoded in _metadata.file_path
    wh.mkdir()
    cat = HadoopCatalog("test", warehouse=str(wh))
    cat.create_namespace("db")
    # v2 first: position delete files are never added to a v3 table (spec), only kept from before the upgrade
    t = cat.create_table("db.t", Schema(NestedField(1, "id", LongType())), properties={"format-version": "2"})
    os.makedirs(os.path.join(t.location(), "data"))

    def parquet(name: str, table: pa.Table, content: FileContent = FileContent.DATA) -> DataFile:
        path = os.path.join(t.location(), "data", name)
        pq.write_table(table, path)
        return DataFile(content, path, FileFormat.PARQUET, (), table.num_rows, os.path.getsize(path))

    a = parquet("a.parquet", pa.table({"id": [1, 2, 3, 4]}, schema=schema_to_arrow(t.schema())))
    b = parquet("b.parquet", pa.table({"id": [5, 6, 7]}, schema=schema_to_arrow(t.schema())))
    t.new_fast_append().append_file(a).append_file(b).commit()
    pos_schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    old = parquet("pos.parquet", pa.table({"file_path": [a.file_path, b.file_path], "pos": [0, 0]}, schema=pos_schema),
                  FileContent.POSITION_DELETES)
    cat.load_table("db.t").new_row_delta().add_deletes(old).commit()
    cat.load_table("db.t").set_properties({"format-version": "3"})
    # The vector for a.parquet omits position 0 on purpose: a vector replaces the file's position deletes
    # (spec), so id 1 comes back; b.parquet keeps its position delete file (id 5 stays deleted).
    data, [(offset, length)] = _puffin([(a.file_path, _blob([1, 3]))])
    puffin = os.path.join(t.location(), "data", "dv.puffin")
    Path(puffin).write_bytes(data)
    dv = DataFile(FileContent.POSITION_DELETES, puffin, FileFormat.PUFFIN, (), 2, len(data),
                  referenced_data_file=a.file_path, content_offset=offset, content_size_in_bytes=length)
    cat.load_table("db.t").new_row_delta().add_deletes(dv).commit()
    t = cat.load_table("db.t")
    expected = [1, 3, 6, 7]
    assert sorted(r["id"] for r in floe.spark.read(spark, t).collect()) == expected
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == expected
    via_source = spark.read.format("iceberg").load(t.metadata_location).collect()
    assert sorted(r["id"] for r in via_source) == expected
    assert sorted(r["id"] for r in floe.spark.read(spark, t, filter="id > 2").collect()) == [3, 6, 7]
