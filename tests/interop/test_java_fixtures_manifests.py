"""Every Java-written fixture table: metadata found and parsed, every manifest list and manifest of every
snapshot decoded into typed values, cross-checked against fastavro's generic decoding of the same files."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from floe.errors import NoSuchFileError
from floe.io.table_folder import FolderTable, find_metadata_file, open_table_folder
from floe.serde.single_value import decode_bounds
from floe.spec.manifest import FileFormat, ManifestContent, ManifestEntryStatus, ManifestFile
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

ROOT = Path("/work/shared/fixtures/java-tables")
FIXTURES: list[dict[str, Any]] = json.loads((ROOT / "MANIFEST.json").read_text()) if ROOT.is_dir() else []
pytestmark = pytest.mark.skipif(not FIXTURES, reason="Java fixture tables not present")

_PY_TYPES: dict[type, tuple[type, ...]] = {
    BooleanType: (bool,),
    IntegerType: (int,),
    LongType: (int,),
    DateType: (int,),
    TimeType: (int,),
    TimestampType: (int,),
    TimestamptzType: (int,),
    TimestampNanoType: (int,),
    TimestamptzNanoType: (int,),
    FloatType: (float,),
    DoubleType: (float,),
    DecimalType: (Decimal,),
    StringType: (str,),
    UUIDType: (uuid.UUID,),
    FixedType: (bytes,),
    BinaryType: (bytes,),
}


def _expected_python(t: IcebergType, value: Any) -> bool:
    if value is None:
        return True
    if isinstance(t, UnknownType):
        return False
    types = _PY_TYPES[type(t)]
    return isinstance(value, types) and not (types == (int,) and isinstance(value, bool))


def _open(fixture: dict[str, Any]) -> FolderTable:
    return open_table_folder(ROOT / fixture["folder"], prefixes=fixture["ref_prefixes"])


def _fastavro_value(v: Any) -> Any:
    """fastavro's logical-type objects in Floe's representation, for cross-checking."""
    if isinstance(v, dt.datetime):
        epoch = dt.datetime(1970, 1, 1, tzinfo=v.tzinfo)
        return (v - epoch) // dt.timedelta(microseconds=1)
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    return v


def _live_manifests(table: FolderTable) -> dict[str, ManifestFile]:
    manifests: dict[str, ManifestFile] = {}
    for snapshot in table.metadata.snapshots:
        for m in table.manifest_files(snapshot):
            manifests.setdefault(m.manifest_path, m)
    return manifests


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f["folder"] for f in FIXTURES])
def test_fixture_metadata_found_and_parsed(fixture: dict[str, Any]) -> None:
    table = _open(fixture)
    assert table.metadata_file.relative_to(table.root).as_posix() == fixture["chosen_metadata"]
    assert table.metadata.format_version == fixture["format_version"]
    assert len(table.metadata.snapshots) == fixture["snapshots"]
    assert find_metadata_file(ROOT / fixture["folder"]) == table.metadata_file


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f["folder"] for f in FIXTURES])
def test_fixture_every_manifest_of_every_snapshot_decodes(fixture: dict[str, Any]) -> None:
    table = _open(fixture)
    md = table.metadata
    schema = md.schema()
    counts = {"data": 0, "pos": 0, "eq": 0, "dv": 0}
    for snapshot in md.snapshots:
        for m in table.manifest_files(snapshot):
            assert m.sequence_number is not None
            assert m.sequence_number <= snapshot.sequence_number
            assert m.content in (ManifestContent.DATA, ManifestContent.DELETES)
    for m in _live_manifests(table).values():
        entries = table.manifest_entries(m)
        spec = md.spec_by_id(m.partition_spec_id)
        assert spec is not None
        ptype = spec.partition_type(schema)
        if m.added_files_count is not None:
            assert m.added_files_count == sum(e.status == ManifestEntryStatus.ADDED for e in entries)
            assert m.deleted_files_count == sum(e.status == ManifestEntryStatus.DELETED for e in entries)
        reference = list(fastavro.reader(table.local_path(m.manifest_path).open("rb")))
        assert len(reference) == len(entries)
        for e, ref in zip(entries, reference):
            f, rf = e.data_file, ref["data_file"]
            assert f.file_path == rf["file_path"]
            assert f.record_count == rf["record_count"]
            assert f.spec_id == m.partition_spec_id
            assert e.snapshot_id is not None
            assert e.sequence_number is not None
            assert e.sequence_number <= md.last_sequence_number
            if e.status == ManifestEntryStatus.ADDED:
                assert e.sequence_number == (
                    m.sequence_number if ref.get("sequence_number") is None else ref["sequence_number"]
                )
            assert len(f.partition) == len(ptype.fields)
            ref_part = [_fastavro_value(v) for v in rf["partition"].values()]
            for field, value, raw in zip(ptype.fields, f.partition, ref_part):
                assert _expected_python(field.field_type, value), (field, value)
                if isinstance(value, uuid.UUID):
                    raw = uuid.UUID(bytes=raw) if isinstance(raw, bytes) else raw
                assert value == raw or (isinstance(value, float) and math.isnan(value))
            raw_lower = {kv["key"]: kv["value"] for kv in rf.get("lower_bounds") or []}
            assert (f.lower_bounds or {}) == raw_lower
            lower, upper = decode_bounds(f.lower_bounds, schema), decode_bounds(f.upper_bounds, schema)
            for fid, lo in lower.items():
                ftype = schema.find_type(fid)
                assert _expected_python(ftype, lo), (fid, ftype, lo)
                hi = upper.get(fid)
                if hi is not None and not (isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi))):
                    assert lo <= hi, (f.file_path, fid, lo, hi)
            kind = "dv" if f.file_format == FileFormat.PUFFIN else ("data", "pos", "eq")[int(f.content)]
            counts[kind] += 1
    assert counts == fixture["content_counts"]


def test_fixture_class_b_manifest_without_header_uses_table_metadata() -> None:
    table = _open(next(f for f in FIXTURES if f["folder"] == "impala__iceberg_alltypes_part"))
    (m,) = table.manifest_files()
    (entry,) = table.manifest_entries(m)
    assert entry.data_file.partition == (
        True,
        1,
        11,
        pytest.approx(1.1),
        2.222,
        Decimal("123.321"),
        19045,
        "impala",
    )
    assert decode_bounds(entry.data_file.lower_bounds, table.metadata.schema())[1] == 1


def test_fixture_relative_paths_and_gzip_metadata_without_hint() -> None:
    table = _open(next(f for f in FIXTURES if f["folder"] == "duckdb__lineitem_iceberg_gz_no_hint"))
    assert table.metadata_file.name == "v2.gz.metadata.json"
    entries = table.entries()
    assert entries
    assert all(table.local_path(e.data_file.file_path).is_file() for e in entries)


def test_fixture_table_root_in_sub_folder() -> None:
    table = open_table_folder(ROOT / "duckdb__generated_spec1_0_001")
    assert table.root.name == "pyspark_iceberg_table"
    assert all(table.local_path(e.data_file.file_path).is_file() for e in table.entries())


def test_fixture_missing_previous_metadata_raises_naming_file() -> None:
    # polars committed only v2.metadata.json; its metadata-log still names v1.
    table = _open(next(f for f in FIXTURES if f["folder"] == "polars__iceberg_table"))
    with pytest.raises(NoSuchFileError, match=r"v1\.metadata\.json"):
        table.read_bytes(table.metadata.metadata_log[0].metadata_file)


def test_fixture_missing_metadata_log_file_of_java_table_raises_naming_file() -> None:
    table = _open(next(f for f in FIXTURES if f["folder"] == "impala__iceberg_v3_default_value_avro"))
    first = table.metadata.metadata_log[0].metadata_file
    with pytest.raises(NoSuchFileError, match=first.rsplit("/", 1)[-1]):
        table.read_bytes(first)


def test_fixture_missing_manifest_raises_naming_file(tmp_path: Path) -> None:
    src = ROOT / "dremio__nation"
    dst = tmp_path / "nation"
    shutil.copytree(src, dst)
    (dst / "metadata").chmod(0o755)
    manifest = next((dst / "metadata").glob("*-m0.avro"))
    manifest.unlink()
    table = open_table_folder(dst)
    (m,) = table.manifest_files()
    with pytest.raises(NoSuchFileError, match=manifest.name):
        table.manifest_entries(m)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f["folder"] for f in FIXTURES])
def test_fixture_paths_map_without_ref_prefixes(fixture: dict[str, Any]) -> None:
    # The recorded table location alone must be enough to find every manifest and data file.
    table = open_table_folder(ROOT / fixture["folder"])
    for entry in table.entries():
        assert table.local_path(entry.data_file.file_path).is_file(), entry.data_file.file_path
