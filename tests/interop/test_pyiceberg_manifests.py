"""Manifests and manifest lists are interchangeable with PyIceberg 0.12 (a second, independent codec)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pyiceberg = pytest.importorskip("pyiceberg")

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile as PyDataFile,
)
from pyiceberg.manifest import (
    DataFileContent,
)
from pyiceberg.manifest import (
    FileFormat as PyFileFormat,
)
from pyiceberg.manifest import (
    ManifestEntry as PyManifestEntry,
)
from pyiceberg.manifest import (
    ManifestEntryStatus as PyStatus,
)
from pyiceberg.manifest import (
    read_manifest_list as py_read_manifest_list,
)
from pyiceberg.manifest import (
    write_manifest as py_write_manifest,
)
from pyiceberg.manifest import (
    write_manifest_list as py_write_manifest_list,
)
from pyiceberg.partitioning import PartitionField as PyPartitionField
from pyiceberg.partitioning import PartitionSpec as PyPartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.transforms import BucketTransform as PyBucket
from pyiceberg.transforms import IdentityTransform as PyIdentity
from pyiceberg.typedef import Record
from pyiceberg.types import DateType as PyDate
from pyiceberg.types import DecimalType as PyDecimal
from pyiceberg.types import LongType as PyLong
from pyiceberg.types import NestedField as PyField
from pyiceberg.types import StringType as PyString

from floe.serde.manifest_avro import (
    ManifestWriter,
    read_manifest,
    read_manifest_list,
    write_manifest_list,
)
from floe.serde.single_value import decode_bounds, to_bytes
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestEntryStatus,
)
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import DateType, DecimalType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType()),
    NestedField(3, "d", DateType()),
    NestedField(4, "price", DecimalType(9, 2)),
)
SPEC = (
    PartitionSpecBuilder(SCHEMA).identity("category").identity("d").bucket("id", 8).identity("price").build()
)
PY_SCHEMA = PySchema(
    PyField(1, "id", PyLong(), required=True),
    PyField(2, "category", PyString(), required=False),
    PyField(3, "d", PyDate(), required=False),
    PyField(4, "price", PyDecimal(9, 2), required=False),
)
PY_SPEC = PyPartitionSpec(
    PyPartitionField(2, 1000, PyIdentity(), "category"),
    PyPartitionField(3, 1001, PyIdentity(), "d"),
    PyPartitionField(1, 1002, PyBucket(8), "id_bucket"),
    PyPartitionField(4, 1003, PyIdentity(), "price"),
    spec_id=0,
)
PARTITIONS: list[tuple[Any, ...]] = [
    ("books", 19000, 3, Decimal("9.99")),
    (None, None, 0, None),
    ("art", -5, 7, Decimal("-120.50")),
]


def _floe_file(i: int, partition: tuple[Any, ...]) -> DataFile:
    return DataFile(
        content=FileContent.DATA,
        file_path=f"file:///warehouse/t/data/f{i}.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=10 * (i + 1),
        file_size_in_bytes=1000 + i,
        column_sizes={1: 11, 2: 22},
        value_counts={1: 10 * (i + 1), 2: 10 * (i + 1)},
        null_value_counts={1: 0, 2: i},
        nan_value_counts={},
        lower_bounds={1: to_bytes(LongType(), i), 2: b"a"},
        upper_bounds={1: to_bytes(LongType(), 100 + i), 2: b"zz"},
        split_offsets=(4,),
        sort_order_id=0,
    )


@pytest.mark.parametrize("format_version", [1, 2])
def test_floe_written_manifest_and_list_read_by_pyiceberg(tmp_path: Path, format_version: int) -> None:
    manifest_path = str(tmp_path / "m0.avro")
    files = [_floe_file(i, p) for i, p in enumerate(PARTITIONS)]
    with open(manifest_path, "wb") as out:
        writer = ManifestWriter(
            out,
            spec=SPEC,
            schema=SCHEMA,
            format_version=format_version,
            snapshot_id=42,
            manifest_path=manifest_path,
        )
        for f in files:
            writer.add(f)
        mf = writer.close()
    list_path = str(tmp_path / "snap-42.avro")
    with open(list_path, "wb") as out:
        write_manifest_list(
            out,
            [mf],
            format_version=format_version,
            snapshot_id=42,
            parent_snapshot_id=None,
            sequence_number=1,
        )

    io = PyArrowFileIO()
    (py_mf,) = list(py_read_manifest_list(io.new_input(list_path)))
    assert py_mf.manifest_path == manifest_path
    assert py_mf.manifest_length == mf.manifest_length
    assert py_mf.added_files_count == 3
    assert py_mf.added_rows_count == 60
    assert py_mf.added_snapshot_id == 42
    if format_version == 2:
        assert py_mf.sequence_number == 1
    assert py_mf.partitions is not None
    assert len(py_mf.partitions) == 4
    assert [(s.contains_null, s.lower_bound, s.upper_bound) for s in py_mf.partitions] == [
        (s.contains_null, s.lower_bound, s.upper_bound) for s in mf.partitions or ()
    ]

    entries = py_mf.fetch_manifest_entry(io, discard_deleted=False)
    assert len(entries) == 3
    for py_entry, f in zip(entries, files):
        assert py_entry.status == PyStatus.ADDED
        assert py_entry.snapshot_id == 42
        d = py_entry.data_file
        assert d.file_path == f.file_path
        assert d.file_format == PyFileFormat.PARQUET
        assert d.record_count == f.record_count
        assert d.file_size_in_bytes == f.file_size_in_bytes
        assert tuple(d.partition[i] for i in range(len(d.partition))) == f.partition
        assert d.column_sizes == f.column_sizes
        assert d.value_counts == f.value_counts
        assert d.null_value_counts == f.null_value_counts
        assert d.lower_bounds == f.lower_bounds
        assert d.upper_bounds == f.upper_bounds
        assert list(d.split_offsets or []) == list(f.split_offsets or [])
        if format_version == 2:
            assert py_entry.sequence_number == 1


def test_pyiceberg_written_manifest_and_list_read_by_floe(tmp_path: Path) -> None:
    io = PyArrowFileIO()
    manifest_path = str(tmp_path / "py-m0.avro")
    py_files = []
    for i, partition in enumerate(PARTITIONS):
        py_files.append(
            PyDataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f"s3://b/t/data/p{i}.parquet",
                file_format=PyFileFormat.PARQUET,
                partition=Record(*partition),
                record_count=5 + i,
                file_size_in_bytes=500 + i,
                column_sizes={1: 7},
                value_counts={1: 5 + i},
                null_value_counts={1: 0},
                nan_value_counts={},
                lower_bounds={1: to_bytes(LongType(), -i)},
                upper_bounds={1: to_bytes(LongType(), i)},
                split_offsets=[4],
                sort_order_id=0,
            )
        )
    with py_write_manifest(
        format_version=2,
        spec=PY_SPEC,
        schema=PY_SCHEMA,
        output_file=io.new_output(manifest_path),
        snapshot_id=99,
        avro_compression="deflate",
    ) as writer:
        for f in py_files:
            writer.add(PyManifestEntry.from_args(status=PyStatus.ADDED, snapshot_id=99, data_file=f))
    py_mf = writer.to_manifest_file()
    list_path = str(tmp_path / "py-snap.avro")
    with py_write_manifest_list(
        format_version=2,
        output_file=io.new_output(list_path),
        snapshot_id=99,
        parent_snapshot_id=None,
        sequence_number=6,
        avro_compression="deflate",
    ) as list_writer:
        list_writer.add_manifests([py_mf])

    with open(list_path, "rb") as fh:
        (mf,) = read_manifest_list(fh)
    assert mf.manifest_path == manifest_path
    assert (mf.sequence_number, mf.min_sequence_number, mf.added_snapshot_id) == (6, 6, 99)
    assert (mf.added_files_count, mf.added_rows_count) == (3, 18)
    assert mf.partitions is not None
    assert mf.partitions[0].contains_null

    with open(manifest_path, "rb") as fh:
        entries = read_manifest(fh, manifest_file=mf, partition_spec=SPEC, schema=SCHEMA)
    assert len(entries) == 3
    for e, py_f, partition in zip(entries, py_files, PARTITIONS):
        assert e.status == ManifestEntryStatus.ADDED
        assert (e.snapshot_id, e.sequence_number, e.file_sequence_number) == (99, 6, 6)
        f = e.data_file
        assert f.file_path == py_f.file_path
        assert f.partition == partition
        assert f.record_count == py_f.record_count
        assert f.column_sizes == {1: 7}
        assert f.lower_bounds == py_f.lower_bounds
        assert decode_bounds(f.lower_bounds, SCHEMA) == {1: -(py_f.record_count - 5)}
        assert f.split_offsets == (4,)
