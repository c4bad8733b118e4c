"""Partition types from the schema history: planning after a partition source column was dropped.

Files written under spec 0 (identity on ``p``) keep ``p`` values in their manifests after ``p`` is removed
from the spec (v1: the field becomes void; v2: it is removed) and then dropped from the schema. The
current schema no longer has ``p``, so ``spec0.partition_type(current_schema)`` cannot type that field;
``TableMetadata.partition_type(0)`` finds it in the older schema.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from floe.errors import ValidationError
from floe.expressions import ManifestEvaluator, PartitionEvaluator, ResidualEvaluator
from floe.expressions.base import AlwaysFalse, AlwaysTrue
from floe.expressions.builders import equal_to, greater_than, greater_than_or_equal
from floe.scan.planner import read_manifest_files
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import IntegerType, LongType, NestedField, StringType, StructType, UnknownType
from floe.table.table import Table
from tests.unit._table_testing import data_file, live, make_table


def _dropped_partition_source(tmp_path: Path, version: int) -> Table:
    """A table with files in partitions p=1 and p=2 of spec 0, then p removed from the spec and dropped."""
    t = make_table(tmp_path, version=version)
    t.append([data_file("a", p=1, lower=0, upper=9), data_file("b", p=2, lower=10, upper=19)])
    t.update_spec().remove_field("p").commit()
    t.update_schema().drop_column("p").commit()
    spec = t.spec()
    # v1 keeps the removed field as void (its value is null); v2 drops it from the spec
    c = data_file("c", p=None, lower=20, upper=29, spec_id=spec.spec_id)
    t.append([dataclasses.replace(c, partition=(None,) * len(spec.fields))])
    return t


@pytest.mark.parametrize("version", [1, 2])
def test_partition_type_dropped_source_resolves_from_older_schema(tmp_path: Path, version: int) -> None:
    t = _dropped_partition_source(tmp_path, version)
    md = t.metadata
    assert md.schema().find_field_or_none(3) is None
    with pytest.raises(ValidationError, match="source column id 3"):
        md.specs_by_id()[0].partition_type(md.schema())  # the current schema alone cannot type it
    assert md.partition_type(0) == StructType(NestedField(1000, "p", IntegerType(), required=False))
    expected_current = (
        StructType(NestedField(1000, "p", UnknownType(), required=False)) if version == 1 else StructType()
    )
    assert md.partition_type() == expected_current  # void on a dropped column stays unknown


@pytest.mark.parametrize("version", [1, 2])
def test_evaluators_with_history_partition_type_plan_old_spec(tmp_path: Path, version: int) -> None:
    t = _dropped_partition_source(tmp_path, version)
    md = t.metadata
    schema, spec0 = md.schema(), md.specs_by_id()[0]
    ptype = md.partition_type(0)
    manifests = [m for m in read_manifest_files(t.io, md.current_snapshot()) if m.partition_spec_id == 0]
    assert manifests
    row_filter = greater_than("id", 5)

    assert all(ManifestEvaluator(spec0, schema, row_filter, partition_type=ptype).eval(m) for m in manifests)
    assert PartitionEvaluator(spec0, schema, row_filter, partition_type=ptype).eval((1,))
    residual = ResidualEvaluator(spec0, schema, row_filter, partition_type=ptype).residual_for((1,))
    assert not isinstance(residual, (AlwaysTrue, AlwaysFalse))  # id is not a partition source
    with pytest.raises(ValidationError):
        ManifestEvaluator(spec0, schema, row_filter)  # the old default still needs the source column


def test_evaluators_partition_type_argument_used_for_binding() -> None:
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    spec = PartitionSpecBuilder(schema).identity("s").build()
    ptype = spec.partition_type(schema)
    ev = PartitionEvaluator(spec, schema, equal_to("s", "x"), partition_type=ptype)
    assert ev.eval(("x",))
    assert not ev.eval(("y",))
    res = ResidualEvaluator(spec, schema, equal_to("s", "x"), partition_type=ptype)
    assert isinstance(res.residual_for(("x",)), AlwaysTrue)
    assert isinstance(res.residual_for(("y",)), AlwaysFalse)
    wrong = StructType(NestedField(1000, "other", StringType(), required=False))
    with pytest.raises(ValidationError):
        PartitionEvaluator(spec, schema, equal_to("s", "x"), partition_type=wrong)


@pytest.mark.parametrize("version", [1, 2])
def test_commits_after_dropping_partition_source_rewrite_old_spec_manifests(
    tmp_path: Path, version: int
) -> None:
    t = _dropped_partition_source(tmp_path, version)
    t.new_delete().delete_file("/data/a.parquet").commit()  # rewrites a spec-0 manifest
    assert live(t) == {"b", "c"}
    t.new_delete().delete_from_row_filter(greater_than_or_equal("id", 10)).commit()  # evaluates spec 0
    assert live(t) == set()


def test_partition_type_unknown_spec_raises(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    with pytest.raises(ValidationError, match="no partition spec with id 7"):
        t.metadata.partition_type(7)
