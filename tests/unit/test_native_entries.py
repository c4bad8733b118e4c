"""The C entry builder (floe/serde/_entries_native.c) and slot constructors (floe/spec/_slots_native.c)
against the Python code they stand in for: the same entries for every manifest the fixtures hold (Java,
Spark, PyIceberg, DuckDB, Dremio writers), with and without inherited values; the same refusal of damaged
manifests; and constructors that build the instances the classes build."""

from __future__ import annotations

import dataclasses
import gc
import io
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _exact import exact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floe.errors import InvalidMetadataError
from floe.expressions.base import AlwaysTrue
from floe.scan.tasks import FileScanTask, new_file_scan_task
from floe.serde import manifest_avro
from floe.serde.avro_decoder import read_container, read_records
from floe.serde.manifest_avro import read_manifest
from floe.serde.manifest_writer import ManifestWriter
from floe.spec import fast_new
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    new_data_file,
    new_manifest_entry,
)
from floe.spec.partitioning import UNPARTITIONED_SPEC
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField

needs_native = pytest.mark.skipif(
    manifest_avro._entries_native is None or not fast_new.native_available(),
    reason="the C extensions were not compiled in this install",
)


def test_the_c_builders_are_built_where_a_compiler_is() -> None:
    if shutil.which("cc") or shutil.which("gcc"):
        assert manifest_avro._entries_native is not None and fast_new.native_available()


def _read_both(data: bytes, manifest_file: ManifestFile | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(entries or the error type) from the C builder and from the generated Python code."""

    def outcome() -> Any:
        manifest_avro._entry_builder_factory.cache_clear()
        try:
            return exact(read_manifest(data, manifest_file=manifest_file))
        except InvalidMetadataError:
            return InvalidMetadataError

    native = outcome()
    with monkeypatch.context() as m:
        m.setattr(manifest_avro, "_entries_native", None)
        python = outcome()
    manifest_avro._entry_builder_factory.cache_clear()
    return native, python


def _manifests(*roots: Path) -> Iterator[tuple[Path, bytes]]:
    for root in roots:
        for path in sorted(root.rglob("*.avro")):
            data = path.read_bytes()
            if b"data_file" in data[:8192]:  # a manifest, not a manifest list
                yield path, data


def _inheriting(sequence_number: int, first_row_id: int | None) -> ManifestFile:
    return ManifestFile(
        "m.avro", 1, 0, ManifestContent.DATA, sequence_number, sequence_number, 77, None, None, None, None, None,
        None, first_row_id=first_row_id,
    )


@needs_native
def test_fixture_manifests_build_the_same_entries(
    java_tables: Path, metadata_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 0
    for path, data in _manifests(java_tables, metadata_fixtures):
        # as written, as a v2 manifest inheriting sequence numbers, as a v3 one inheriting first row ids,
        # and as a v1 one (sequence number 0)
        for mf in (None, _inheriting(5, None), _inheriting(9, 1000), _inheriting(0, None)):
            native, python = _read_both(data, mf, monkeypatch)
            assert native == python, (path, mf)
            if native is not InvalidMetadataError:
                count += len(native)
    assert count > 500


_SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _manifest_bytes(n: int, deleted: int = 2) -> bytes:
    out = io.BytesIO()
    w = ManifestWriter(out, spec=UNPARTITIONED_SPEC, schema=_SCHEMA, format_version=3, snapshot_id=7)
    for i in range(n):
        f = DataFile(FileContent.DATA, f"/t/{i}.parquet", FileFormat.PARQUET, (), 10 + i, 100, {1: 4}, {1: 10},
                     {1: 0}, None, {1: b"\x01" * 8}, {1: b"\x02" * 8}, split_offsets=(4, 50))
        if i == deleted:
            w.delete(f, data_sequence_number=1, file_sequence_number=1)
        else:
            w.add(f)
    w.close()
    return out.getvalue()


@needs_native
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_manifests_are_refused_alike(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    original = _manifest_bytes(6)
    damaged = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    native, python = _read_both(bytes(damaged), _inheriting(3, 10), monkeypatch)
    assert native == python


@needs_native
@pytest.mark.parametrize("builder", ["native", "python"])
@pytest.mark.parametrize(
    "status, data_file",
    [
        (5, None),  # a status code no manifest has
        (-1, None),  # negative: a tuple would take it as the last status
        ("1", None),  # not an int
        (1, "not a record"),
        (1, (0, "/p", "PARQUET")),  # too short
    ],
)
def test_malformed_records_raise_errors_the_reader_reports(
    builder: str, status: Any, data_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema_text = read_container(io.BytesIO(_manifest_bytes(1)))[0]["avro.schema"]
    good = read_records(manifest_avro._compiled(schema_text, None), *next(iter(_blocks(_manifest_bytes(1)))))[0]
    # the writer's manifest_entry order: status, snapshot_id, sequence_number, file_sequence_number, data_file
    record = (status, *good[1:4], good[4] if data_file is None else data_file)
    if builder == "python":
        monkeypatch.setattr(manifest_avro, "_entries_native", None)
    manifest_avro._entry_builder_factory.cache_clear()
    try:
        make = manifest_avro._entry_builder_factory(
            schema_text, manifest_avro.IdentityKey(None), manifest_avro.IdentityKey(None)
        )
        assert make(0, None, None, [None])([good])[0].data_file.file_path == "/t/0.parquet"
        with pytest.raises((IndexError, TypeError, KeyError, ValueError)):
            make(0, None, None, [None])([record])
    finally:
        manifest_avro._entry_builder_factory.cache_clear()


def _blocks(data: bytes) -> Iterator[tuple[bytes, int]]:
    return iter(read_container(io.BytesIO(data))[1])


def test_constructors_build_what_the_classes_build() -> None:
    df_args = (FileContent.POSITION_DELETES, "/t/d.parquet", FileFormat.PARQUET, (1, "a"), 3, 40, {1: 2}, {1: 3},
               {1: 0}, {1: 0}, {1: b"a"}, {1: b"b"}, b"k", (4,), (1,), 0, 2, None, "/t/x.parquet", None, None)
    made, built = new_data_file(*df_args), DataFile(*df_args)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert dataclasses.replace(made, record_count=9).record_count == 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.record_count = 1  # type: ignore[misc]
    entry = new_manifest_entry(ManifestEntryStatus.ADDED, 1, 2, 3, made)
    assert entry == ManifestEntry(ManifestEntryStatus.ADDED, 1, 2, 3, built)
    task = new_file_scan_task(made, 2, (entry,), AlwaysTrue(), 0, -1, None)
    same = FileScanTask(made, 2, (entry,), AlwaysTrue(), 0, -1, None)
    assert [getattr(task, f.name) for f in dataclasses.fields(task)] == [
        getattr(same, f.name) for f in dataclasses.fields(same)
    ]


@needs_native
def test_acyclic_instances_are_left_to_reference_counting() -> None:
    made = new_data_file(FileContent.DATA, "/t/a.parquet", FileFormat.PARQUET, (), 1, 1, None, None, None, None,
                         None, None, None, None, None, None, 0, None, None, None, None)
    assert not gc.is_tracked(made) and not gc.is_tracked(new_manifest_entry(ManifestEntryStatus.ADDED, 1, 1, 1, made))
    assert gc.is_tracked(dataclasses.replace(made))  # built by __init__: tracked as ever
    gc.collect()  # collections walk past untracked instances
    assert made.file_path == "/t/a.parquet"


@needs_native
def test_constructors_refuse_what_they_cannot_build() -> None:
    with pytest.raises(TypeError, match="takes 5 arguments"):
        new_manifest_entry(ManifestEntryStatus.ADDED, 1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        new_manifest_entry(ManifestEntryStatus.ADDED, 1, 2, 3, data_file=None)  # type: ignore[call-arg]

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            raise AssertionError

    for cls in (NoSlots, Checked, int):
        with pytest.raises(TypeError):
            fast_new.positional_constructor(cls)
    from floe.spec import _slots_native

    with pytest.raises(TypeError, match="not a slot"):
        _slots_native.Constructor(DataFile, ("content", "file_key"))
    with pytest.raises(TypeError, match="not a slot"):
        _slots_native.Constructor(DataFile, ("nope",))
