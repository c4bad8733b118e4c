"""The C manifest decoder (floe/serde/_avro_native.c) against the Python readers built from the same plans:
the same values for every manifest and manifest list the fixtures hold (Java, Spark, PyIceberg, DuckDB,
Dremio writers), with and without projections; never a crash on damaged bytes; and its prefilter drops only
files the full metrics test drops too."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _exact import exact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floe.expressions import builders as b
from floe.expressions.base import BooleanExpression, and_, not_, or_
from floe.expressions.metrics_evaluator import InclusiveMetricsEvaluator
from floe.serde import avro_decoder
from floe.serde.avro_decoder import compile_reader, native_available, read_container, read_records
from floe.serde.manifest_avro import read_manifest
from floe.serde.manifest_writer import ManifestWriter
from floe.serde.single_value import to_bytes
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import UNPARTITIONED_SPEC
from floe.spec.schema import Schema
from floe.spec.types import DateType, IntegerType, LongType, NestedField, StringType

needs_native = pytest.mark.skipif(not native_available(), reason="the C decoder was not compiled in this install")

# The metrics maps of data_file (spec "Manifests"): the projections planning uses.
_STATS_IDS = (108, 109, 110, 137, 125, 128)


def test_the_c_decoder_is_built_where_a_compiler_is() -> None:
    # setup.py marks the extension optional: an install without a compiler goes on without it, one with a
    # compiler must not silently fall back to the slower decoder.
    if shutil.which("cc") or shutil.which("gcc"):
        assert native_available()


def _avro_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from sorted(root.rglob("*.avro"))


def _decode_both(data: bytes, projection: Any, as_tuples: bool) -> tuple[list[Any], list[Any]]:
    metadata, blocks = read_container(io.BytesIO(data))
    schema = json.loads(metadata["avro.schema"])
    native = compile_reader(schema, projection=projection, as_tuples=as_tuples)
    python = compile_reader(schema, projection=projection, as_tuples=as_tuples, native=False)
    got_native: list[Any] = []
    got_python: list[Any] = []
    for block, count in blocks:
        got_native += read_records(native, block, count)
        got_python += read_records(python, block, count)
    return got_native, got_python


@needs_native
def test_fixture_files_decode_the_same(java_tables: Path, metadata_fixtures: Path) -> None:
    files = list(_avro_files(java_tables, metadata_fixtures))
    assert len(files) > 100
    projections: list[Any] = [
        None,
        {fid: None for fid in _STATS_IDS},  # planning without metrics: the maps skipped
        {fid: frozenset({1, 2}) for fid in _STATS_IDS},  # planning a filter on columns 1 and 2
    ]
    decoded = 0
    for path in files:
        data = path.read_bytes()
        try:
            read_container(io.BytesIO(data))
        except (ValueError, EOFError):
            continue  # the fixtures' damaged files: not Avro containers at all
        for projection in projections:
            for as_tuples in (False, True):
                native, python = _decode_both(data, projection, as_tuples)
                assert exact(native) == exact(python), (path, projection)
                decoded += len(native)
    assert decoded > 1000


def _sample_manifest() -> bytes:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
    spec = UNPARTITIONED_SPEC
    out = io.BytesIO()
    w = ManifestWriter(out, spec=spec, schema=schema, format_version=2, snapshot_id=1, compression="null")
    for i in range(20):
        w.add(
            DataFile(
                FileContent.DATA, f"/t/data/{i}-é.parquet", FileFormat.PARQUET, (), 10 + i, 1000 + i,
                {1: 8, 2: 9}, {1: 10 + i, 2: 10 + i}, {1: 0, 2: i % 3}, None,
                {1: to_bytes(LongType(), i), 2: b"a"}, {1: to_bytes(LongType(), i + 5), 2: b"z" * i},
                split_offsets=(4, 100 + i),
            )
        )
    w.close()
    return out.getvalue()


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_blocks_raise_value_error_or_decode(data: st.DataObject) -> None:
    """Flipped, cut or inserted bytes: the C decoder raises ValueError (the manifest reader names the file) or
    decodes some records; it never reads outside the block. Damaged data need not decode as the Python
    readers decode it: where a block's byte size and its items disagree, one jumps by the size, one walks."""
    raw = _sample_manifest()
    metadata, blocks = read_container(io.BytesIO(raw))
    block, count = next(blocks)
    schema = json.loads(metadata["avro.schema"])
    damaged = bytearray(block)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            damaged[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del damaged[at:]
            if not damaged:
                damaged.append(0)
        else:
            damaged.insert(at, data.draw(st.integers(0, 255)))
    projection = data.draw(st.sampled_from([None, {fid: None for fid in _STATS_IDS}, {125: frozenset({1})}]))
    native = compile_reader(schema, projection=projection, as_tuples=True)
    try:
        got = read_records(native, bytes(damaged), count)
    except ValueError:
        return  # UnicodeDecodeError is a ValueError too
    assert len(got) == count and all(isinstance(r, tuple) for r in got)


# -- the prefilter ------------------------------------------------------------------------------------
_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "n", IntegerType()),
    NestedField(3, "d", DateType()),
    NestedField(4, "s", StringType()),
)
_INT_COLUMNS = {"id": LongType(), "n": IntegerType(), "d": DateType()}


@st.composite
def _data_files(draw: st.DrawFn) -> DataFile:
    rows = draw(st.sampled_from([-1, 0, 1, 5, 100]))
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for fid, (name, t) in enumerate(_INT_COLUMNS.items(), start=1):
        if draw(st.booleans()):
            values[fid] = max(rows, 0)
        if draw(st.booleans()):
            nulls[fid] = draw(st.sampled_from([0, max(rows, 0), 1]))
        lo = draw(st.integers(-50, 50))
        hi = lo + draw(st.integers(0, 30))
        if draw(st.integers(0, 3)):
            lower[fid] = to_bytes(t, lo)
        elif isinstance(t, LongType) and draw(st.booleans()):
            lower[fid] = lo.to_bytes(4, "little", signed=True)  # written while the column was an int
        if draw(st.integers(0, 3)):
            upper[fid] = to_bytes(t, hi)
    lower[4], upper[4] = b"a", b"q"
    return DataFile(
        FileContent.DATA, f"/t/{draw(st.uuids())}.parquet", FileFormat.PARQUET, (), rows, 100,
        None, values or None, nulls or None, None, lower or None, upper or None,
    )


def _comparison(draw: st.DrawFn) -> BooleanExpression:
    name = draw(st.sampled_from([*_INT_COLUMNS, "s"]))
    if name == "s":
        return draw(st.sampled_from([b.equal_to("s", "c"), b.less_than("s", "b"), b.is_null("s")]))
    value = draw(st.integers(-60, 90))
    make = draw(
        st.sampled_from([b.less_than, b.less_than_or_equal, b.greater_than, b.greater_than_or_equal, b.equal_to])
    )
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from([b.is_null(name), b.not_null(name), b.in_(name, [value, value + 3])]))
    return make(name, value)


@st.composite
def _filters(draw: st.DrawFn, depth: int = 0) -> BooleanExpression:
    kind = draw(st.sampled_from(["cmp", "cmp", "and", "or", "not"] if depth < 3 else ["cmp"]))
    if kind == "cmp":
        return _comparison(draw)
    if kind == "not":
        return not_(draw(_filters(depth + 1)))
    left, right = draw(_filters(depth + 1)), draw(_filters(depth + 1))
    return and_(left, right) if kind == "and" else or_(left, right)


def _manifest_of(files: list[DataFile], deleted: set[int]) -> bytes:
    out = io.BytesIO()
    w = ManifestWriter(out, spec=UNPARTITIONED_SPEC, schema=_SCHEMA, format_version=2, snapshot_id=7)
    for i, f in enumerate(files):
        if i in deleted:
            w.delete(f, data_sequence_number=1, file_sequence_number=1)
        else:
            w.add(f)
    w.close()
    return out.getvalue()


def _kept(data: bytes, evaluator: InclusiveMetricsEvaluator, prefilter: bool) -> tuple[list[str], int]:
    dropped: list[int] = []
    entries = read_manifest(
        data, stats_columns=frozenset({1, 2, 3, 4}), prefilter=evaluator.prefilter if prefilter else None,
        dropped=dropped.append,
    )
    kept = [e.data_file.file_path for e in entries if e.status.value == 2 or evaluator.eval(e.data_file)]
    return kept, sum(dropped)


@needs_native
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_data_files(), min_size=1, max_size=12), _filters(), st.sets(st.integers(0, 11), max_size=3))
def test_prefilter_drops_only_what_the_metrics_test_drops(
    files: list[DataFile], row_filter: BooleanExpression, deleted: set[int]
) -> None:
    evaluator = InclusiveMetricsEvaluator(_SCHEMA, row_filter)
    data = _manifest_of(files, deleted)
    with_prefilter, dropped = _kept(data, evaluator, prefilter=True)
    without, none_dropped = _kept(data, evaluator, prefilter=False)
    assert with_prefilter == without
    assert none_dropped == 0
    live = len(files) - len(deleted & set(range(len(files))))
    assert dropped <= live


@needs_native
def test_prefilter_drops_before_building() -> None:
    files = [
        DataFile(
            FileContent.DATA, f"/t/{i}.parquet", FileFormat.PARQUET, (), 10, 100, None, {1: 10}, {1: 0}, None,
            {1: to_bytes(LongType(), i * 10)}, {1: to_bytes(LongType(), i * 10 + 9)},
        )
        for i in range(10)
    ]
    data = _manifest_of(files, set())
    evaluator = InclusiveMetricsEvaluator(_SCHEMA, or_(b.equal_to("id", 35), b.greater_than_or_equal("id", 90)))
    assert evaluator.prefilter == ("or", ("cmp", 1, "eq", 35, 8), ("cmp", 1, "ge", 90, 8))
    kept, dropped = _kept(data, evaluator, prefilter=True)
    assert kept == ["/t/3.parquet", "/t/9.parquet"] and dropped == 8


def test_prefilter_is_left_to_python_for_what_c_cannot_test() -> None:
    assert InclusiveMetricsEvaluator(_SCHEMA, b.equal_to("s", "x")).prefilter is None
    assert InclusiveMetricsEvaluator(_SCHEMA, or_(b.equal_to("id", 1), b.is_null("n"))).prefilter is None
    assert InclusiveMetricsEvaluator(_SCHEMA, and_(b.equal_to("id", 1), b.is_null("n"))).prefilter == (
        "cmp", 1, "eq", 1, 8,
    )
    assert InclusiveMetricsEvaluator(_SCHEMA, not_(b.less_than("n", 3))).prefilter == ("cmp", 2, "ge", 3, 4)


def test_without_the_c_decoder_nothing_is_prefiltered(monkeypatch: pytest.MonkeyPatch) -> None:
    from floe.serde import manifest_avro

    monkeypatch.setattr(avro_decoder, "_native", None)
    manifest_avro._compiled.cache_clear()
    try:
        files = [
            DataFile(
                FileContent.DATA, f"/t/{i}.parquet", FileFormat.PARQUET, (), 10, 100, None, {1: 10}, {1: 0}, None,
                {1: to_bytes(LongType(), i)}, {1: to_bytes(LongType(), i)},
            )
            for i in range(3)
        ]
        evaluator = InclusiveMetricsEvaluator(_SCHEMA, b.equal_to("id", 1))
        kept, dropped = _kept(_manifest_of(files, set()), evaluator, prefilter=True)
        assert kept == ["/t/1.parquet"] and dropped == 0
    finally:
        manifest_avro._compiled.cache_clear()


def _plan(t: Any, row_filter: str | None) -> tuple[list[str], dict[str, int]]:
    scan = t.scan(row_filter) if row_filter else t.scan()
    planner = scan._planner()
    snapshot = t.current_snapshot()
    paths = sorted(task.data_file.file_path for task in planner.plan(snapshot))
    return paths, planner.metrics


@needs_native
def test_plans_the_same_files_and_counts_with_and_without_the_c_decoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    from _table_testing import make_table

    from floe.serde import manifest_avro

    t = make_table(tmp_path, partitioned=True, version=2)
    for i in range(12):
        ids = pa.array(range(i * 10, i * 10 + 10), pa.int64())
        t.append(pa.table({"id": ids, "data": [f"d{i}"] * 10, "p": pa.array([i % 3] * 10, pa.int32())}))
    t.new_delete().delete_from_row_filter("id < 20").commit()  # deleted entries stay in the manifests
    t = t.refresh()
    filters = [None, "id = 35", "id >= 100 or p = 1", "id < 20 and data = 'd1'", "id > 1000", "p = 2 and id <= 50"]
    native = {f: _plan(t, f) for f in filters}
    monkeypatch.setattr(avro_decoder, "_native", None)
    manifest_avro._compiled.cache_clear()
    try:
        python = {f: _plan(t, f) for f in filters}
    finally:
        manifest_avro._compiled.cache_clear()
    assert native == python
    assert native["id = 35"][1]["skipped_data_files"] > 0


@needs_native
def test_counts_that_cannot_fit_are_refused() -> None:
    # A block count is the file's word; the bytes left bound it, and items of no bytes (nulls) are capped,
    # so a hostile manifest cannot make the decoder loop or allocate without end.
    nulls = compile_reader({"type": "array", "items": "null"})
    huge = bytes([0xFE, 0xFF, 0xFF, 0xFF, 0x0F])  # zig-zag 2**31 - 1 items
    with pytest.raises(ValueError, match="cannot fit"):
        nulls(huge + b"\x00", 0)
    longs = compile_reader({"type": "array", "items": "long"})
    with pytest.raises(ValueError, match="cannot fit"):
        longs(huge + b"\x02\x04\x00", 0)
    record = compile_reader({"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]})
    with pytest.raises(ValueError, match="cannot hold"):
        read_records(record, b"\x02\x04", 10**12)
    assert read_records(record, b"\x02\x04", 2) == [{"a": 1}, {"a": 2}]


needs_inflate = pytest.mark.skipif(avro_decoder._inflate_native is None, reason="built without zlib's headers")


def _inflated_both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """inflate_container's blocks (or "refused") from the C framing and from the Python one (a file damaged
    in two places may be refused for either: the Python framing decodes the header's text first)."""

    def outcome() -> Any:
        try:
            return avro_decoder.inflate_container(data).blocks
        except (ValueError, EOFError):
            return "refused"

    native = outcome()
    with monkeypatch.context() as m:
        m.setattr(avro_decoder, "_inflate_native", None)
        python = outcome()
    return native, python


@needs_inflate
def test_fixture_containers_inflate_the_same(
    java_tables: Path, metadata_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = 0
    for path in _avro_files(java_tables, metadata_fixtures):
        native, python = _inflated_both(path.read_bytes(), monkeypatch)
        assert native == python, path
        blocks += len(native) if isinstance(native, tuple) else 0
    assert blocks > 100


@needs_inflate
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_containers_inflate_alike(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.BytesIO()
    w = ManifestWriter(out, spec=UNPARTITIONED_SPEC, schema=_SCHEMA, format_version=2, snapshot_id=7)
    for i in range(3):
        w.add(DataFile(FileContent.DATA, f"/t/{i}.parquet", FileFormat.PARQUET, (), 10, 100))
    w.close()
    damaged = bytearray(out.getvalue())
    if data.draw(st.booleans()):
        del damaged[data.draw(st.integers(len(damaged) // 2, len(damaged) - 1)):]  # truncated
    for _ in range(data.draw(st.integers(0, 3))):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    native, python = _inflated_both(bytes(damaged), monkeypatch)
    assert native == python
