"""Partition specs, the spec builder, partition paths, and sort orders."""

from __future__ import annotations

import datetime as dt

import pytest

from floe.errors import ValidationError
from floe.spec.partitioning import (
    PARTITION_FIELD_ID_START,
    UNPARTITIONED_SPEC,
    PartitionField,
    PartitionSpec,
    PartitionSpecBuilder,
    default_partition_name,
    url_encode,
)
from floe.spec.schema import Schema
from floe.spec.sort_order import (
    UNSORTED_SORT_ORDER,
    NullOrder,
    SortDirection,
    SortField,
    SortOrder,
    SortOrderBuilder,
)
from floe.spec.types import (
    BinaryType,
    DateType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UnknownType,
)
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestamptzType()),
    NestedField(3, "data", StringType()),
    NestedField(4, "d", DateType()),
    NestedField(5, "score", DoubleType()),
    NestedField(
        6, "loc", StructType(NestedField(7, "city", StringType()), NestedField(8, "zip", IntegerType()))
    ),
    NestedField(9, "tags", ListType(10, StructType(NestedField(11, "k", StringType())))),
    NestedField(12, "payload", BinaryType()),
)


def test_builder_default_names_and_ids_like_java() -> None:
    spec = (
        PartitionSpecBuilder(SCHEMA)
        .identity("data")
        .bucket("id", 16)
        .truncate("payload", 4)
        .year("d")
        .hour("ts")
        .void("score")
        .build()
    )
    assert [(f.name, f.field_id, str(f.transform), f.source_id) for f in spec.fields] == [
        ("data", 1000, "identity", 3),
        ("id_bucket", 1001, "bucket[16]", 1),
        ("payload_trunc", 1002, "truncate[4]", 12),
        ("d_year", 1003, "year", 4),
        ("ts_hour", 1004, "hour", 2),
        ("score_null", 1005, "void", 5),
    ]
    assert spec.spec_id == 0
    assert spec.last_assigned_field_id == 1005


def test_builder_month_and_day_names() -> None:
    spec = PartitionSpecBuilder(SCHEMA).month("ts").build()
    assert spec.fields[0].name == "ts_month"
    spec = PartitionSpecBuilder(SCHEMA).day("d").build()
    assert spec.fields[0].name == "d_day"


def test_builder_ids_continue_from_last_partition_id() -> None:
    spec = PartitionSpecBuilder(SCHEMA, spec_id=3, last_partition_id=1007).day("ts").bucket("id", 4).build()
    assert [f.field_id for f in spec.fields] == [1008, 1009]
    assert spec.spec_id == 3


def test_builder_explicit_names_and_nested_source() -> None:
    spec = PartitionSpecBuilder(SCHEMA).identity("loc.city", "city").bucket("loc.zip", 8).build()
    assert [(f.name, f.source_id) for f in spec.fields] == [("city", 7), ("loc.zip_bucket", 8)]


def test_builder_unknown_column_error_names_it() -> None:
    with pytest.raises(ValidationError, match="nope"):
        PartitionSpecBuilder(SCHEMA).identity("nope")


def test_builder_inapplicable_transform_rejected() -> None:
    with pytest.raises(ValidationError, match=r"bucket\[4\].*score.*double"):
        PartitionSpecBuilder(SCHEMA).bucket("score", 4)
    with pytest.raises(ValidationError, match="hour.*'d'"):
        PartitionSpecBuilder(SCHEMA).hour("d")


def test_builder_non_primitive_and_list_sources_rejected() -> None:
    with pytest.raises(ValidationError, match="loc"):
        PartitionSpecBuilder(SCHEMA).identity("loc")
    with pytest.raises(ValidationError, match="list or map"):
        PartitionSpecBuilder(SCHEMA).identity("tags.element.k")


def test_builder_duplicate_name_rejected() -> None:
    with pytest.raises(ValidationError, match="more than once.*'p'"):
        PartitionSpecBuilder(SCHEMA).bucket("id", 4, "p").truncate("data", 2, "p")


def test_builder_name_clashing_with_other_column_rejected() -> None:
    with pytest.raises(ValidationError, match="'data'"):
        PartitionSpecBuilder(SCHEMA).bucket("id", 4, "data")
    with pytest.raises(ValidationError, match="'data'"):
        PartitionSpecBuilder(SCHEMA).identity("id", "data")


def test_builder_redundant_temporal_rejected() -> None:
    with pytest.raises(ValidationError, match="redundant"):
        PartitionSpecBuilder(SCHEMA).day("ts").hour("ts")
    with pytest.raises(ValidationError, match="redundant"):
        PartitionSpecBuilder(SCHEMA).identity("id").identity("id", "id2")
    # Different bucket counts on one column are allowed, as in Iceberg Java.
    spec = PartitionSpecBuilder(SCHEMA).bucket("id", 4, "a").bucket("id", 8, "b").build()
    assert len(spec.fields) == 2


def test_partition_type_uses_field_ids_names_and_result_types() -> None:
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 16).identity("data").truncate("id", 10).build()
    ptype = spec.partition_type(SCHEMA)
    assert [(f.field_id, f.name, str(f.field_type), f.required) for f in ptype.fields] == [
        (1000, "ts_day", "date", False),
        (1001, "id_bucket", "int", False),
        (1002, "data", "string", False),
        (1003, "id_trunc", "long", False),
    ]


def test_partition_type_dropped_source_void_is_unknown_else_error() -> None:
    spec = PartitionSpec(1, (PartitionField(99, 1000, VoidTransform(), "gone"),))
    assert spec.partition_type(SCHEMA).fields[0].field_type == UnknownType()
    bad = PartitionSpec(1, (PartitionField(99, 1000, IdentityTransform(), "gone"),))
    with pytest.raises(ValidationError, match="99.*'gone'"):
        bad.partition_type(SCHEMA)


def test_partition_path_human_values_and_escaping() -> None:
    spec = PartitionSpecBuilder(SCHEMA).day("ts", "dt").bucket("id", 16, "bucket").identity("data").build()
    day = (dt.date(2021, 12, 1) - dt.date(1970, 1, 1)).days
    assert spec.partition_path([day, 3, "a b/c"], SCHEMA) == "dt=2021-12-01/bucket=3/data=a+b%2Fc"
    assert spec.partition_path([None, None, None], SCHEMA) == "dt=null/bucket=null/data=null"


def test_partition_path_escapes_names_and_binary() -> None:
    spec = PartitionSpecBuilder(SCHEMA).identity("payload", "p q").build()
    assert spec.partition_path([b"\xfb\xff"], SCHEMA) == "p+q=%2B%2F8%3D"  # base64 "+/8="


def test_partition_path_wrong_arity_rejected() -> None:
    spec = PartitionSpecBuilder(SCHEMA).identity("data").build()
    with pytest.raises(ValidationError, match="1 fields"):
        spec.partition_path([], SCHEMA)


def test_url_encode_matches_java_url_encoder() -> None:
    assert url_encode("aZ09.-*_") == "aZ09.-*_"
    assert url_encode("a b") == "a+b"
    assert url_encode("~!'()") == "%7E%21%27%28%29"
    assert url_encode("é") == "%C3%A9"
    assert url_encode("=/+") == "%3D%2F%2B"


def test_partition_hour_paths_and_temporal_human() -> None:
    spec = PartitionSpecBuilder(SCHEMA).year("ts").month("d").build()
    assert spec.partition_path([51, 12 * 51 + 11], SCHEMA) == "ts_year=2021/d_month=2021-12"
    spec = PartitionSpecBuilder(SCHEMA).hour("ts").build()
    assert spec.partition_path([-1], SCHEMA) == "ts_hour=1969-12-31-23"


def test_unpartitioned_spec_and_void_only_spec() -> None:
    assert UNPARTITIONED_SPEC.is_unpartitioned
    assert UNPARTITIONED_SPEC.spec_id == 0
    assert UNPARTITIONED_SPEC.last_assigned_field_id == PARTITION_FIELD_ID_START - 1
    void_only = PartitionSpecBuilder(SCHEMA).void("id").build()
    assert void_only.is_unpartitioned
    assert PartitionSpecBuilder(SCHEMA).identity("id").build().is_partitioned


def test_fields_by_source_id_and_lookup() -> None:
    spec = PartitionSpecBuilder(SCHEMA).bucket("id", 4, "a").identity("data").bucket("id", 8, "b").build()
    assert [f.name for f in spec.fields_by_source_id(1)] == ["a", "b"]
    assert spec.fields_by_source_id(42) == []
    assert spec.field_by_name("data") is spec.fields[1]
    assert spec.field_by_id(1002) is spec.fields[2]


def test_compatible_with_ignores_ids_but_not_names_or_transforms() -> None:
    a = PartitionSpecBuilder(SCHEMA).day("ts").build()
    b = PartitionSpecBuilder(SCHEMA, spec_id=5, last_partition_id=1010).day("ts").build()
    c = PartitionSpecBuilder(SCHEMA).day("ts", "other").build()
    d = PartitionSpecBuilder(SCHEMA).hour("ts", "ts_day").build()
    assert a.compatible_with(b)
    assert not a.compatible_with(c)
    assert not a.compatible_with(d)
    assert not a.compatible_with(UNPARTITIONED_SPEC)


def test_bind_checks_sources_and_transforms() -> None:
    ok = PartitionSpecBuilder(SCHEMA).day("ts").build()
    assert ok.bind(SCHEMA) is ok
    missing = PartitionSpec(0, (PartitionField(77, 1000, IdentityTransform(), "x"),))
    with pytest.raises(ValidationError, match="77.*'x'"):
        missing.bind(SCHEMA)
    wrong = PartitionSpec(0, (PartitionField(5, 1000, BucketTransform(2), "score_bucket"),))
    with pytest.raises(ValidationError, match="score"):
        wrong.bind(SCHEMA)


def test_partition_field_source_ids_default_and_frozen() -> None:
    f = PartitionField(1, 1000, IdentityTransform(), "id")
    assert f.source_ids == (1,)
    multi = PartitionField(1, 1000, parse_transform("zorder"), "z", source_ids=(1, 3))
    assert multi.source_ids == (1, 3)
    with pytest.raises(ValidationError):
        PartitionField(1, 1000, IdentityTransform(), "id", source_ids=(3, 1))
    with pytest.raises(AttributeError):
        f.name = "other"  # type: ignore[misc]


def test_partition_spec_equality_and_hash() -> None:
    a = PartitionSpecBuilder(SCHEMA).bucket("id", 16).build()
    b = PartitionSpec(0, (PartitionField(1, 1000, BucketTransform(16), "id_bucket"),))
    assert a == b
    assert hash(a) == hash(b)


def test_default_partition_name_evolution_style() -> None:
    assert default_partition_name("id", BucketTransform(16), for_evolution=True) == "id_bucket_16"
    assert default_partition_name("s", TruncateTransform(4), for_evolution=True) == "s_trunc_4"
    assert default_partition_name("ts", DayTransform(), for_evolution=True) == "ts_day"


# --- sort orders ----------------------------------------------------------------------------------
def test_sort_enums_json_values() -> None:
    assert SortDirection("asc") is SortDirection.ASC
    assert SortDirection.DESC.value == "desc"
    assert NullOrder("nulls-first") is NullOrder.NULLS_FIRST
    assert NullOrder.NULLS_LAST.value == "nulls-last"


def test_unsorted_order() -> None:
    assert UNSORTED_SORT_ORDER.order_id == 0
    assert UNSORTED_SORT_ORDER.is_unsorted
    assert SortOrderBuilder(SCHEMA).build() is UNSORTED_SORT_ORDER


def test_sort_order_ids_reserved() -> None:
    with pytest.raises(ValidationError, match="reserved"):
        SortOrder(0, (SortField(1),))
    with pytest.raises(ValidationError, match="order id 0"):
        SortOrder(2, ())


def test_sort_order_builder_defaults_null_order_by_direction() -> None:
    order = SortOrderBuilder(SCHEMA).asc("id").desc("ts", DayTransform()).build()
    assert order.order_id == 1
    assert order.fields == (
        SortField(1, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
        SortField(2, DayTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),
    )
    assert str(order) == "[identity(1) asc nulls-first, day(2) desc nulls-last]"


def test_sort_order_bind_rejects_bad_transform_and_missing_column() -> None:
    with pytest.raises(ValidationError, match="score"):
        SortOrderBuilder(SCHEMA).asc("score", BucketTransform(4)).build()
    with pytest.raises(ValidationError, match="42"):
        SortOrder(1, (SortField(42),)).bind(SCHEMA)
    with pytest.raises(ValidationError, match="loc"):
        SortOrder(1, (SortField(6),)).bind(SCHEMA)


def test_sort_order_satisfies() -> None:
    by_hour = SortOrder(1, (SortField(2, HourTransform()), SortField(1)))
    by_day = SortOrder(2, (SortField(2, DayTransform()),))
    by_month_desc = SortOrder(3, (SortField(2, MonthTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),))
    assert by_hour.satisfies(by_day)
    assert by_hour.satisfies(UNSORTED_SORT_ORDER)
    assert not by_day.satisfies(by_hour)
    assert not by_hour.satisfies(by_month_desc)
    by_year = SortOrder(4, (SortField(2, YearTransform()),))
    assert by_day.satisfies(by_year)
    trunc4 = SortOrder(5, (SortField(3, TruncateTransform(4)),))
    trunc2 = SortOrder(6, (SortField(3, TruncateTransform(2)),))
    assert trunc4.satisfies(trunc2, SCHEMA)
    assert not trunc2.satisfies(trunc4, SCHEMA)
    assert by_day.same_order(SortOrder(9, (SortField(2, DayTransform()),)))
