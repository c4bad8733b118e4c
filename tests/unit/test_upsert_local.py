"""``table.upsert(pa_table)`` without Spark: checked against a plain Python model of the rows, against
PyIceberg's own upsert on an identical copy, and read back by PyIceberg."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import floe
from floe.catalog.sql import SqlCatalog
from floe.errors import CommitConflictError, ValidationError
from floe.spec.manifest import FileContent
from floe.spec.partitioning import PartitionSpec, PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import DoubleType, ListType, LongType, NestedField, StringType
from floe.table.row_changes import UpsertResult
from floe.table.table import Table
from floe.write import arrow_upsert
from floe.write.delta_writer import DeltaTaskWriter, change_kinds
from floe.write.locations import LocationProvider

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "v", DoubleType()),
    NestedField(4, "s", StringType()),
    identifier_field_ids=(1,),
)
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                   pa.field("v", pa.float64()), pa.field("s", pa.string())])
Row = tuple[Any, ...]  # (id, cat, v, s)
Model = dict[int, Row]


def _catalog(tmp_path: Path) -> SqlCatalog:
    cat = floe.load_catalog("u", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    assert isinstance(cat, SqlCatalog)
    cat.create_namespace_if_not_exists("db")
    return cat


def _spec(layout: str) -> PartitionSpec | None:
    if layout == "identity":
        return PartitionSpecBuilder(SCHEMA).identity("cat").build()
    if layout == "bucket":
        return PartitionSpecBuilder(SCHEMA).bucket("id", 4).build()
    return None


def _table(tmp_path: Path, *, version: int = 2, layout: str = "none", name: str = "db.t",
           schema: Schema = SCHEMA) -> Table:
    return _catalog(tmp_path).create_table(
        name, schema, partition_spec=_spec(layout), properties={"format-version": str(version)}
    )


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW)


def _rows(t: Table) -> Model:
    return {r["id"]: (r["id"], r["cat"], r["v"], r["s"]) for r in t.refresh().scan().to_arrow().to_pylist()}


def _model_upsert(model: Model, rows: list[Row], *, update: bool = True, insert: bool = True) -> UpsertResult:
    """What an upsert on ``id`` does, written plainly."""
    updated = inserted = 0
    for r in rows:
        if r[0] in model:
            if update and model[r[0]] != r:
                model[r[0]] = r
                updated += 1
        elif insert:
            model[r[0]] = r
            inserted += 1
    return UpsertResult(updated, inserted)


def _random_rows(rng: random.Random, ids: list[int]) -> list[Row]:
    return [(i, rng.choice(["a", "b", "c"]), float(rng.randint(0, 3)), rng.choice([None, "x", "y"])) for i in ids]


def _data_files(tmp_path: Path) -> set[str]:
    return {str(p) for p in (tmp_path / "wh").rglob("*.parquet")} | {str(p) for p in (tmp_path / "wh").rglob("*.puffin")}


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("layout", ["none", "identity", "bucket"])
def test_upserts_follow_the_model(tmp_path: Path, version: int, layout: str) -> None:
    rng = random.Random(f"{version}{layout}")
    t = _table(tmp_path, version=version, layout=layout)
    model: Model = {}
    first = _random_rows(rng, list(range(60)))
    t.append(_arrow(first[:30]))
    t.append(_arrow(first[30:]))  # two appends: several files, some untouched by an upsert
    _model_upsert(model, first)
    for round_ in range(4):
        ids = rng.sample(range(90), 25)
        rows = _random_rows(rng, ids)
        before = len(t.snapshots())
        want = _model_upsert(model, rows)
        got = t.upsert(_arrow(rows))
        assert got == want, round_
        assert _rows(t) == model
        assert len(t.snapshots()) == before + (1 if want != UpsertResult(0, 0) else 0)


@pytest.mark.parametrize("version", [2, 3])
def test_upsert_applies_existing_position_and_equality_deletes(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version=version)
    t.update_schema().set_identifier_fields("id").commit()

    def delta(ops: list[tuple[str, Row]]) -> None:
        w = DeltaTaskWriter(
            schema=t.schema(), spec=t.spec(), key_field_ids=(1,), upsert=False, properties=dict(t.properties),
            locations=LocationProvider.for_table(t.location(), dict(t.properties)), io=t.io,
            format_version=t.format_version, table_name=t.name(),
        )
        w.write(_arrow([r for _, r in ops]), change_kinds(pa.array([op for op, _ in ops]), table_name=t.name(), column="op"))
        op = t.new_row_delta()
        for f in w.close():
            if f.content == FileContent.DATA:
                op.add_rows(f)
            else:
                op.add_deletes(f)
        op.commit()

    rows = [(i, "a", float(i), "x") for i in range(10)]
    delta([("+I", r) for r in rows])
    # key 1 deleted by an equality delete (an earlier commit's row); key 11 inserted and deleted in one
    # batch (a position delete, or a deletion vector on v3) next to key 12 in the same new file
    delta([("-D", rows[1]), ("+I", (11, "b", 11.0, None)), ("-D", (11, "b", 11.0, None)), ("+I", (12, "b", 12.0, None))])
    model = {r[0]: r for r in rows if r[0] != 1}
    model[12] = (12, "b", 12.0, None)
    assert _rows(t) == model
    kinds = {f.content for task in t.scan().plan_files() for f in task.delete_files}
    assert kinds == {FileContent.EQUALITY_DELETES, FileContent.POSITION_DELETES}
    source = [(1, "a", 1.5, "y"), (2, "a", 2.0, "x"), (3, "c", 3.0, "x"), (11, "b", 0.0, None), (12, "b", 12.5, None)]
    want = _model_upsert(model, source)
    assert want == UpsertResult(rows_updated=2, rows_inserted=2)  # deleted keys 1 and 11 come back as inserts
    assert t.upsert(_arrow(source)) == want
    assert _rows(t) == model
    live = {task.data_file.file_path for task in t.scan().plan_files()}
    for task in t.scan().plan_files():  # no delete file left naming only a removed data file
        assert all(f.referenced_data_file in (None, *live) for f in task.delete_files)
    if version >= 3:
        dvs = t.inspect.delete_files().column("referenced_data_file").to_pylist()
        assert all(p in live for p in dvs if p is not None)


def test_unchanged_rows_count_as_neither_and_commit_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    rows = [(i, "a", float(i), None) for i in range(5)]
    t.append(_arrow(rows))
    before = (len(t.snapshots()), _data_files(tmp_path))
    assert t.upsert(_arrow(rows[1:3])) == UpsertResult(0, 0)
    assert t.upsert(_arrow([(9, "a", 0.0, None)]), when_not_matched_insert_all=False) == UpsertResult(0, 0)
    assert t.upsert(_arrow([(1, "b", 0.0, None)]), when_matched_update_all=False) == UpsertResult(0, 0)
    assert (len(t.snapshots()), _data_files(tmp_path)) == before
    assert _rows(t) == {r[0]: r for r in rows}


def test_flags_limit_the_upsert_to_updates_or_inserts(tmp_path: Path) -> None:
    t = _table(tmp_path)
    model = {i: (i, "a", float(i), None) for i in range(5)}
    t.append(_arrow(list(model.values())))
    source = [(1, "z", 1.0, None), (7, "z", 7.0, None)]
    assert t.upsert(_arrow(source), when_not_matched_insert_all=False) == _model_upsert(model, source, insert=False)
    assert _rows(t) == model
    assert t.upsert(_arrow(source), when_matched_update_all=False) == _model_upsert(model, source, update=False)
    assert _rows(t) == model
    with pytest.raises(ValidationError, match="neither update nor insert"):
        t.upsert(_arrow(source), when_matched_update_all=False, when_not_matched_insert_all=False)


def test_duplicate_source_keys_are_refused_naming_the_columns(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(_arrow([(1, "a", 1.0, None)]))
    with pytest.raises(ValidationError, match=r"db\.t.*more than one row for a key of \(id\)"):
        t.upsert(_arrow([(2, "a", 1.0, None), (2, "b", 2.0, None)]))
    with pytest.raises(ValidationError, match=r"db\.t.*\(id, cat\)"):
        t.upsert(_arrow([(2, "a", 1.0, None), (2, "a", 2.0, None)]), ["id", "cat"])
    assert len(t.snapshots()) == 1


def test_join_cols_default_to_the_identifier_fields_and_are_required(tmp_path: Path) -> None:
    t = _table(tmp_path)
    assert t.schema().identifier_field_ids == (1,)
    t.append(_arrow([(1, "a", 1.0, None)]))
    assert t.upsert(_arrow([(1, "b", 1.0, None)])) == UpsertResult(1, 0)  # matched on id alone
    # explicit join columns win: (id, cat) = (1, c) is a new key
    assert t.upsert(_arrow([(1, "c", 1.0, None)]), ["id", "cat"]) == UpsertResult(0, 1)
    plain = Schema(*SCHEMA.fields)
    u = _table(tmp_path, name="db.plain", schema=plain)
    with pytest.raises(ValidationError, match=r"db\.plain: no join columns.*identifier fields"):
        u.upsert(_arrow([(1, "a", 1.0, None)]))
    with pytest.raises(ValidationError, match=r"'nope' is not a top-level primitive column \(no such column\)"):
        u.upsert(_arrow([(1, "a", 1.0, None)]), ["nope"])


def test_source_columns_match_by_name_and_cast_like_appends(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(_arrow([(1, "a", 1.0, "keep"), (2, "a", 2.0, "keep")]))
    # reordered, int32 key, no column s: updates keep s, inserts leave it null
    source = pa.table({"v": pa.array([1.0, 9.0, 3.0]), "cat": ["a", "b", "c"], "id": pa.array([1, 2, 3], pa.int32())})
    assert t.upsert(source.to_batches()[0]) == UpsertResult(1, 1)
    assert _rows(t) == {1: (1, "a", 1.0, "keep"), 2: (2, "b", 9.0, "keep"), 3: (3, "c", 3.0, None)}
    with pytest.raises(ValidationError, match="'extra'"):
        t.upsert(source.append_column("extra", pa.array([1, 2, 3])))
    with pytest.raises(ValidationError, match="'v'"):
        t.upsert(source.set_column(0, "v", pa.array(["x", "y", "z"])))


def test_upsert_into_an_empty_table_inserts_everything(tmp_path: Path) -> None:
    t = _table(tmp_path, layout="bucket")
    assert t.upsert(_arrow([(1, "a", 1.0, None), (2, "b", None, "s")])) == UpsertResult(0, 2)
    assert _rows(t) == {1: (1, "a", 1.0, None), 2: (2, "b", None, "s")}
    assert len(t.snapshots()) == 1


def test_nulls_and_nan_compare_equal(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(_arrow([(1, "a", float("nan"), None), (2, None, 2.0, None)]))
    assert t.upsert(_arrow([(1, "a", float("nan"), None), (2, None, 2.0, None)])) == UpsertResult(0, 0)
    assert t.upsert(_arrow([(2, None, 2.0, "now")])) == UpsertResult(1, 0)


@pytest.mark.parametrize("concurrent", ["rewrite", "append"])
def test_a_concurrent_commit_fails_the_upsert_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrent: str
) -> None:
    t = _table(tmp_path)
    t.append(_arrow([(i, "a", float(i), None) for i in range(10)]))
    real_write = arrow_upsert.write_arrow_files
    after_other: dict[str, Any] = {}

    def write_after_a_concurrent_commit(table: Table, data: pa.Table) -> Any:
        if after_other:  # the concurrent upsert's own write
            return real_write(table, data)
        after_other["started"] = True
        other = _catalog(tmp_path).load_table("db.t")
        if concurrent == "rewrite":  # the matched file is replaced under the upsert
            other.upsert(_arrow([(3, "other", 3.0, None)]))
        else:  # a row with a key the upsert inserts
            other.append(_arrow([(20, "other", 0.0, None)]))
        after_other["rows"], after_other["files"] = _rows(other), _data_files(tmp_path)
        return real_write(table, data)

    monkeypatch.setattr(arrow_upsert, "write_arrow_files", write_after_a_concurrent_commit)
    with pytest.raises(CommitConflictError):
        t.upsert(_arrow([(3, "mine", 3.5, None), (20, "mine", 1.0, None)]))
    assert _rows(t) == after_other["rows"]
    assert _data_files(tmp_path) == after_other["files"]  # what the failed upsert wrote is gone


def test_spark_dataframes_still_go_to_the_row_level_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    t = _table(tmp_path)
    calls: list[tuple[Any, ...]] = []

    class Engine:
        def upsert(self, table: Table, source: object, join_cols: list[str], *, update: bool, insert: bool) -> UpsertResult:
            calls.append((source, join_cols, update, insert))
            return UpsertResult(0, 0)

    monkeypatch.setattr("floe.table.table.row_level_engine", Engine)
    frame = object()  # not Arrow: what a Spark DataFrame is to the dispatch
    t.upsert(frame)  # type: ignore[arg-type]
    assert calls == [(frame, ["id"], True, True)]
    with pytest.raises(ValidationError, match="pyarrow Table"):
        arrow_upsert.upsert_arrow(t, frame)  # type: ignore[arg-type]


def test_unsupported_key_type_is_named(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "tags", ListType(3, StringType())))
    t = _table(tmp_path, schema=schema)
    t.append(pa.table({"k": pa.array([1], pa.int64()), "tags": [["a"]]}))
    assert t.upsert(pa.table({"k": pa.array([1], pa.int64()), "tags": [["b"]]}), ["k"]) == UpsertResult(1, 0)
    with pytest.raises(ValidationError, match=r"join column 'tags' is not a top-level primitive column \(list"):
        t.upsert(pa.table({"k": pa.array([1], pa.int64()), "tags": [["c"]]}), ["tags"])


@pytest.mark.parametrize("layout", ["none", "identity"])
def test_pyiceberg_reads_the_result_and_its_own_upsert_agrees(tmp_path: Path, layout: str) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    rng = random.Random(layout)
    base = [r for r in _random_rows(rng, list(range(200))) if r[3] is not None]
    source = _random_rows(rng, rng.sample(range(150, 260), 60))
    source = [r if r[3] is not None else (*r[:3], "z") for r in source]
    floe_t = _table(tmp_path, layout=layout, name="db.f")
    copy = _table(tmp_path, layout=layout, name="db.p")
    for t in (floe_t, copy):
        t.append(_arrow(base[:100]))
        t.append(_arrow(base[100:]))
    model = {r[0]: r for r in base}
    want = _model_upsert(model, source)
    assert floe_t.upsert(_arrow(source)) == want

    py = PySqlCatalog("u", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    theirs = py.load_table("db.p").upsert(_arrow(source), ["id"])
    assert (theirs.rows_updated, theirs.rows_inserted) == (want.rows_updated, want.rows_inserted)

    def py_rows(name: str) -> Model:
        rows = py.load_table(name).scan().to_arrow().to_pylist()
        return {r["id"]: (r["id"], r["cat"], r["v"], r["s"]) for r in rows}

    assert py_rows("db.f") == model
    assert py_rows("db.p") == model
