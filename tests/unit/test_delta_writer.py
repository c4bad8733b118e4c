"""The delta writer without Spark: changelog rows in, data + equality + position delete files out, committed
as row deltas and read back with Floe's Arrow reader (which applies deletes by the sequence-number rule)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import floe
from floe.errors import ValidationError
from floe.spec.manifest import FileContent
from floe.table.table import Table
from floe.write.delta_writer import DeltaTaskWriter, change_kinds
from floe.write.locations import LocationProvider

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.string())])


def _table(tmp_path: Path, version: int = 2, **props: str) -> Table:
    cat = floe.load_catalog("d", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"format-version": str(version), **props})
    t.update_schema().set_identifier_fields("id", "dt").commit()
    return t.refresh()


def _apply(t: Table, rows: list[tuple[str, int, str, str]], *, upsert: bool = False) -> list[floe.spec.manifest.DataFile]:
    w = DeltaTaskWriter(
        schema=t.schema(), spec=t.spec(), key_field_ids=tuple(t.schema().identifier_field_ids), upsert=upsert,
        properties=dict(t.properties), locations=LocationProvider.for_table(t.location(), dict(t.properties)),
        io=t.io, format_version=t.format_version, table_name=t.name(),
    )
    ops, ids, dts, vs = zip(*rows, strict=True)
    data = pa.table({"id": pa.array(ids, pa.int64()), "dt": list(dts), "v": list(vs)})
    w.write(data, change_kinds(pa.array(ops), table_name=t.name(), column="op"))
    files = w.close()
    op = t.new_row_delta()
    for f in files:
        if f.content == FileContent.DATA:
            op.add_rows(f)
        else:
            op.add_deletes(f)
    op.commit()
    return files


def _rows(t: Table) -> set[tuple[int, str, str]]:
    got = t.refresh().scan().to_arrow().to_pylist()
    return {(r["id"], r["dt"], r["v"]) for r in got}


@pytest.mark.parametrize("version", [2, 3])
def test_changes_become_equality_and_position_deletes(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    _apply(t, [("+I", 1, "a", "x"), ("+I", 2, "a", "y"), ("+I", 3, "b", "z")])
    files = _apply(t, [("-U", 1, "a", "x"), ("+U", 1, "a", "x2"), ("-D", 2, "a", "y"), ("+I", 4, "b", "n"),
                       ("-D", 4, "b", "n"), ("+I", 5, "b", "m"), ("+I", 5, "b", "m2")])
    assert _rows(t) == {(1, "a", "x2"), (3, "b", "z"), (5, "b", "m2")}
    equality = [f for f in files if f.content == FileContent.EQUALITY_DELETES]
    positions = [f for f in files if f.content == FileContent.POSITION_DELETES]
    assert [f.equality_ids for f in equality] == [(1, 2)]  # keys of earlier commits: 1 and 2, in partition a
    assert equality[0].record_count == 2
    assert sum(f.record_count for f in positions) == 2  # key 4 (inserted, deleted) and the first row of key 5
    assert all("-deletes." in f.file_path for f in equality + positions)
    if version >= 3:
        assert {f.file_format.value.lower() for f in positions} == {"puffin"}
    key_columns = pq.read_schema(t.io.resolve(equality[0].file_path)[1]).names
    assert key_columns == ["id", "dt"]  # equality deletes hold the projected key columns


def test_upsert_replaces_a_key_and_needs_partition_columns_in_the_key(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _apply(t, [("+I", 1, "a", "x")], upsert=True)
    _apply(t, [("+I", 1, "a", "y"), ("+I", 2, "a", "z"), ("-U", 2, "a", "z"), ("+U", 2, "a", "z2")], upsert=True)
    assert _rows(t) == {(1, "a", "y"), (2, "a", "z2")}
    t.update_spec().add_field("v").commit()
    with pytest.raises(ValidationError, match="partition source column\\(s\\) v must be identifier fields"):
        _apply(t.refresh(), [("+I", 1, "a", "q")], upsert=True)


def test_unknown_operations_are_refused_in_one_line() -> None:
    with pytest.raises(ValidationError, match="operation column 'op' holds 'upsert'"):
        change_kinds(pa.array(["+I", "upsert"]), table_name="db.t", column="op")
    with pytest.raises(ValidationError, match="holds NULL"):
        change_kinds(pa.array(["+I", None]), table_name="db.t", column="op")
    codes = change_kinds(pa.array(["insert", "update_preimage", "update_postimage", "delete"]), table_name="t", column="op")
    assert codes.tolist() == [0, 1, 2, 3]


def test_many_small_commits_keep_the_manifest_count_bounded(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"commit.manifest.min-count-to-merge": "5"})
    for i in range(30):
        _apply(t, [("+I", i, "a", "x"), ("-D", i - 1, "a", "x")] if i else [("+I", i, "a", "x")])
    assert len(t.inspect.manifests().to_pylist()) <= 10
    assert _rows(t) == {(29, "a", "x")}
    assert np.array_equal(change_kinds(pa.array([], pa.string()), table_name="t", column="op"), np.zeros(0))
