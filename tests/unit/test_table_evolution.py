"""Schema evolution, partition evolution, sort order replacement, properties and metadata-file retention."""

from __future__ import annotations

import os

import pytest
from _table_testing import data_file, make_table, sql_catalog

from floe.errors import ValidationError
from floe.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
)
from floe.transforms import BucketTransform, IdentityTransform, TruncateTransform


def test_add_drop_rename_columns_keeps_ids(tmp_path) -> None:
    t = make_table(tmp_path, partitioned=False)
    with t.update_schema() as u:
        u.add_column(
            "point", StructType(NestedField(-1, "x", DoubleType()), NestedField(-2, "y", DoubleType()))
        )
        u.add_column("tags", ListType(-3, StringType()))
        u.rename_column("data", "payload")
    s = t.schema()
    assert s.column_names == ["id", "payload", "p", "point", "tags"]
    assert s.find_field("payload").field_id == 2
    assert [s.find_field(n).field_id for n in ("point", "point.x", "point.y", "tags", "tags.element")] == [
        4,
        5,
        6,
        7,
        8,
    ]
    assert t.metadata.last_column_id == 8
    assert s.schema_id == 1
    with t.update_schema() as u:
        u.add_column(("point", "z"), DoubleType())
        u.drop_column("p")
    s = t.schema()
    assert "p" not in s.column_names
    assert s.find_field("point.z").field_id == 9


def test_type_promotion_and_optionality(tmp_path) -> None:
    t = make_table(tmp_path, partitioned=False)
    with t.update_schema() as u:
        u.add_column("f", FloatType())
        u.add_column("d", DecimalType(9, 2))
    with t.update_schema() as u:
        u.update_column("p", IntegerType())  # unchanged type is a no-op
        u.update_column("p", LongType())
        u.update_column("f", DoubleType())
        u.update_column("d", DecimalType(18, 2))
        u.make_column_optional("id")
    s = t.schema()
    assert str(s.find_type("p")) == "long"
    assert str(s.find_type("f")) == "double"
    assert str(s.find_type("d")) == "decimal(18, 2)"
    assert not s.find_field("id").required
    with pytest.raises(ValidationError, match="Cannot change column"):
        t.update_schema().update_column("data", LongType()).commit()
    with pytest.raises(ValidationError, match="required"):
        t.update_schema().update_column("data", required=True).commit()
    t.update_schema(allow_incompatible_changes=True).update_column("data", required=True).commit()
    assert t.schema().find_field("data").required


def test_move_columns_and_identifier_fields(tmp_path) -> None:
    t = make_table(tmp_path, partitioned=False)
    t.update_schema().move_first("p").commit()
    assert t.schema().column_names == ["p", "id", "data"]
    t.update_schema().move_after("p", "data").commit()
    assert t.schema().column_names == ["id", "data", "p"]
    t.update_schema().move_before("data", "id").commit()
    assert t.schema().column_names == ["data", "id", "p"]
    t.update_schema().set_identifier_fields("id").commit()
    assert t.schema().identifier_field_names == ["id"]
    with pytest.raises(ValidationError, match="identifier"):
        t.update_schema().drop_column("id").commit()
    with pytest.raises(ValidationError, match="required primitive"):
        t.update_schema().set_identifier_fields("data").commit()


def test_schema_changes_reject_conflicts_and_unknown_columns(tmp_path) -> None:
    t = make_table(tmp_path)
    with pytest.raises(ValidationError, match="already exists"):
        t.update_schema().add_column("data", StringType()).commit()
    with pytest.raises(ValidationError, match="Cannot find column"):
        t.update_schema().rename_column("nope", "x").commit()
    with pytest.raises(ValidationError, match="partition spec"):
        t.update_schema().drop_column("p").commit()
    with pytest.raises(ValidationError, match="required"):
        t.update_schema().add_column("r", LongType(), required=True).commit()


def test_schema_update_replays_on_concurrent_schema_change(tmp_path) -> None:
    t = make_table(tmp_path)
    stale = sql_catalog(tmp_path).load_table("db.t")
    t.update_schema().add_column("a", LongType()).commit()
    stale.update_schema().add_column("b", LongType()).commit()
    s = stale.schema()
    assert s.column_names[-2:] == ["a", "b"]
    assert s.find_field("b").field_id == 5


def test_reverting_schema_reuses_old_schema_id(tmp_path) -> None:
    t = make_table(tmp_path, partitioned=False)
    t.update_schema().add_column("a", LongType()).commit()
    t.update_schema().drop_column("a").commit()
    assert t.metadata.current_schema_id in (0, 2)
    assert t.schema().column_names == ["id", "data", "p"]


@pytest.mark.parametrize("version", [1, 2])
def test_partition_evolution_add_remove_rename(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    t.append([data_file("old", p=1)])
    with t.update_spec() as u:
        u.add_field("id", BucketTransform(16))
        u.add_field("data", TruncateTransform(4), "data_prefix")
    spec = t.spec()
    assert [f.name for f in spec.fields] == ["p", "id_bucket_16", "data_prefix"]
    assert spec.spec_id == 1
    assert [f.field_id for f in spec.fields] == [1000, 1001, 1002]
    t.update_spec().remove_field("p").rename_field("data_prefix", "dp").commit()
    names = [(f.name, str(f.transform)) for f in t.spec().fields]
    if version == 1:
        assert names == [("p", "void"), ("id_bucket_16", "bucket[16]"), ("dp", "truncate[4]")]
    else:
        assert names == [("id_bucket_16", "bucket[16]"), ("dp", "truncate[4]")]
    assert t.specs()[0].fields[0].name == "p"  # old data keeps its spec
    with pytest.raises(ValidationError):
        t.update_spec().add_field("id", "bucket[16]").commit()
    with pytest.raises(ValidationError):
        t.update_spec().add_field("nope", IdentityTransform()).commit()


def test_replace_sort_order(tmp_path) -> None:
    t = make_table(tmp_path)
    t.replace_sort_order().asc("id").desc("data").commit()
    order = t.sort_order()
    assert order.order_id == 1
    assert [str(f.direction) for f in order.fields] == ["asc", "desc"]
    t.replace_sort_order().commit()
    assert t.sort_order().is_unsorted


def test_properties_set_and_remove(tmp_path) -> None:
    t = make_table(tmp_path)
    t.set_properties({"a": "1"}, b="2")
    assert t.properties["a"] == "1"
    assert t.properties["b"] == "2"
    t.remove_properties("a", "missing")
    assert "a" not in t.properties
    assert sql_catalog(tmp_path).load_table("db.t").properties["b"] == "2"


def test_previous_versions_max_and_delete_after_commit(tmp_path) -> None:
    t = make_table(
        tmp_path,
        **{"write.metadata.previous-versions-max": "2", "write.metadata.delete-after-commit.enabled": "true"},
    )
    first = t.metadata_location
    for n in "abcd":
        t.append([data_file(n)])
    assert len(t.metadata.metadata_log) == 2
    kept = {e.metadata_file for e in t.metadata.metadata_log} | {t.metadata_location}
    on_disk = {
        os.path.join(t.location(), "metadata", f)
        for f in os.listdir(os.path.join(t.location(), "metadata"))
        if f.endswith(".metadata.json")
    }
    assert on_disk == kept
    assert first not in on_disk


def test_previous_versions_kept_without_delete_after_commit(tmp_path) -> None:
    t = make_table(tmp_path, **{"write.metadata.previous-versions-max": "1"})
    first = t.metadata_location
    for n in "ab":
        t.append([data_file(n)])
    assert len(t.metadata.metadata_log) == 1
    assert os.path.exists(first)
