"""Planning and committing ``rewrite_equality_deletes`` (no Spark: descriptors of files that need not exist).

Which data files each equality delete reaches follows the spec: a strictly lower data sequence number, the
same spec and partition, or any partition for a delete written with an unpartitioned spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _table_testing import data_file, live, make_table

from floe.errors import CommitConflictError, ValidationError
from floe.maintenance.equality_delete_conversion import commit_conversion, plan_equality_conversion
from floe.spec.manifest import FileContent
from floe.table.table import Table


def _eq(name: str, p: int | None, ids: tuple[int, ...] = (1,)) -> object:
    return data_file(name, p=p, content=FileContent.EQUALITY_DELETES, equality_ids=list(ids))


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".parquet")


def _batches(t: Table, **kw: object) -> list[tuple[list[str], dict[str, list[str]]]]:
    """Per batch: its delete files and, per data file, the deletes its task carries."""
    plan = plan_equality_conversion(t, **kw)  # type: ignore[arg-type]
    return [
        (sorted(_name(e.data_file.file_path) for e in b.deletes),
         {_name(task.data_file.file_path): sorted(_name(d.data_file.file_path) for d in task.deletes) for task in b.tasks})
        for b in plan.batches
    ]


def _story(tmp_path: Path) -> Table:
    t = make_table(tmp_path)
    t.new_fast_append().append_file(data_file("a0", p=0)).append_file(data_file("b0", p=1)).commit()  # seq 1
    t.new_row_delta().add_deletes(_eq("eq-a", 0)).commit()  # seq 2
    t.new_fast_append().append_file(data_file("a1", p=0)).commit()  # seq 3: eq-a does not reach it
    t.new_row_delta().add_deletes(_eq("eq-b", 1)).add_deletes(
        data_file("pos-b0", p=1, content=FileContent.POSITION_DELETES, referenced_data_file="/data/b0.parquet")).commit()
    t.new_row_delta().add_deletes(_eq("eq-a2", 0, ids=(1, 2))).commit()  # another key: its own batch
    t.new_row_delta().add_deletes(_eq("eq-dead", 2)).commit()  # a partition without data
    return t


def test_plan_follows_the_spec_rules_per_key_and_partition(tmp_path: Path) -> None:
    t = _story(tmp_path)
    assert _batches(t) == [
        (["eq-a", "eq-b", "eq-dead"], {"a0": ["eq-a"], "b0": ["eq-b", "pos-b0"]}),
        (["eq-a2"], {"a0": ["eq-a2"], "a1": ["eq-a2"]}),
    ]
    # a batch holds whole partitions up to the size limit (a partition larger than it alone)
    small = _batches(t, options={"max-file-group-size-bytes": "1000"})
    assert sorted(d for b in small for d in b[0]) == ["eq-a", "eq-a2", "eq-b", "eq-dead"]
    assert len(small) == 3 and not any({"eq-a", "eq-b"} <= set(b[0]) for b in small)


def test_where_selects_partitions_and_refuses_other_columns(tmp_path: Path) -> None:
    t = _story(tmp_path)
    assert [b[0] for b in _batches(t, where="p = 1")] == [["eq-b"]]
    with pytest.raises(ValidationError, match=r"where may name only partition source columns .* id is not one"):
        plan_equality_conversion(t, where="id = 3")
    for bad in ({"max-file-group-size-bytes": "0"}, {"nope": "1"}):
        with pytest.raises(ValidationError, match="rewrite_equality_deletes of table"):
            plan_equality_conversion(t, options=bad)


def test_global_delete_reaches_every_partition_and_a_where_leaves_it(tmp_path: Path) -> None:
    t = make_table(tmp_path, partitioned=False)
    t.new_fast_append().append_file(data_file("x", p=None)).commit()
    t.new_row_delta().add_deletes(_eq("g", None)).commit()
    t.new_fast_append().append_file(data_file("later", p=None)).commit()
    assert _batches(t) == [(["g"], {"x": ["g"]})]
    with pytest.raises(ValidationError, match="id is not one"):
        _batches(t, where="id = 1")  # an unpartitioned table has no partition to select


def test_commit_removes_the_deletes_and_conflicts_with_older_data_added_meanwhile(tmp_path: Path) -> None:
    t = _story(tmp_path)
    plan = plan_equality_conversion(t)
    first, second = plan.batches
    pos = data_file("conv-a0", p=0, content=FileContent.POSITION_DELETES, referenced_data_file="/data/a0.parquet")
    commit_conversion(t, plan.snapshot_id, first, [pos], [])
    names = live(t)
    assert {"eq-a", "eq-b", "eq-dead"}.isdisjoint(names) and {"conv-a0", "eq-a2", "pos-b0"} <= names
    # a compaction committing a1 again with an older sequence number (2 < eq-a2's): eq-a2 still applies to
    # the new file, and a conversion planned before it would leave its rows undeleted
    t.new_rewrite().rewrite_files(["/data/a1.parquet"], [data_file("a1c", p=0)], data_sequence_number=2).commit()
    with pytest.raises(CommitConflictError, match=r"a1c.* with sequence number 2, to which the equality deletes"):
        commit_conversion(t, plan.snapshot_id, second, [], [])
    assert "eq-a2" in live(t)
    # a named data file removed meanwhile conflicts too
    plan = plan_equality_conversion(t)
    (batch,) = plan.batches
    t.new_delete().delete_file("/data/a0.parquet").commit()
    pos = data_file("conv2", p=0, content=FileContent.POSITION_DELETES, referenced_data_file="/data/a0.parquet")
    with pytest.raises(CommitConflictError, match="a0"):
        commit_conversion(t, plan.snapshot_id, batch, [pos], [])
