"""Types and schemas: type strings, promotion rules, lookups, fresh id assignment."""

from __future__ import annotations

import pytest

from floe.errors import ValidationError
from floe.spec.schema import Schema, assign_fresh_ids
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    decimal_required_bytes,
    is_promotion_allowed,
    parse_primitive,
)


@pytest.mark.parametrize(
    "text",
    [
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "binary",
        "decimal(9, 2)",
        "fixed[16]",
        "unknown",
        "variant",
    ],
)
def test_parse_primitive_spec_string_round_trips(text: str) -> None:
    assert str(parse_primitive(text)) == text


def test_parse_primitive_unknown_name_raises_naming_it() -> None:
    with pytest.raises(ValidationError, match="varchar"):
        parse_primitive("varchar")


def test_decimal_precision_out_of_range_raises() -> None:
    with pytest.raises(ValidationError, match="39"):
        DecimalType(39, 2)


@pytest.mark.parametrize(
    ("source", "target", "allowed"),
    [
        (IntegerType(), LongType(), True),
        (LongType(), IntegerType(), False),
        (FloatType(), DoubleType(), True),
        (DecimalType(9, 2), DecimalType(18, 2), True),
        (DecimalType(9, 2), DecimalType(18, 3), False),
        (DateType(), TimestampType(), False),
        (StringType(), BinaryType(), False),
    ],
)
def test_is_promotion_allowed_v2_matches_spec(source, target, allowed) -> None:  # type: ignore[no-untyped-def]
    assert is_promotion_allowed(source, target, 2) is allowed


def test_is_promotion_allowed_v3_date_to_timestamp() -> None:
    assert is_promotion_allowed(DateType(), TimestampNanoType(), 3)


def test_decimal_required_bytes_matches_spec_table() -> None:
    assert [decimal_required_bytes(p) for p in (1, 2, 3, 9, 10, 18, 19, 38)] == [1, 1, 2, 4, 5, 8, 9, 16]


def _nested_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(
            2, "point", StructType(NestedField(3, "x", DoubleType()), NestedField(4, "y", DoubleType()))
        ),
        NestedField(5, "tags", ListType(6, StringType())),
        NestedField(7, "attrs", MapType(8, StringType(), 9, FixedType(4))),
        schema_id=3,
        identifier_field_ids=[1],
    )


def test_schema_find_field_by_dotted_name_and_id() -> None:
    s = _nested_schema()
    assert s.find_field("point.y").field_id == 4
    assert s.find_field("tags.element").field_id == 6
    assert s.find_field("attrs.value").field_type == FixedType(4)
    assert s.find_field(9).name == "value"
    assert s.find_column_name(3) == "point.x"


def test_schema_find_field_case_insensitive() -> None:
    assert _nested_schema().find_field("POINT.X", case_sensitive=False).field_id == 3


def test_schema_find_field_missing_names_column_and_schema() -> None:
    with pytest.raises(ValidationError, match=r"'nope'.*schema 3"):
        _nested_schema().find_field("nope")


def test_schema_duplicate_ids_rejected() -> None:
    with pytest.raises(ValidationError, match="field id 1"):
        Schema(NestedField(1, "a", LongType()), NestedField(1, "b", LongType()))


def test_schema_select_keeps_parents_and_identifier() -> None:
    s = _nested_schema().select(["id", "point.x"])
    assert [f.name for f in s.fields] == ["id", "point"]
    assert s.find_field("point").field_type == StructType(NestedField(3, "x", DoubleType()))
    assert s.identifier_field_ids == (1,)


def test_assign_fresh_ids_numbers_struct_level_first() -> None:
    fresh = assign_fresh_ids(_nested_schema())
    assert [f.field_id for f in fresh.fields] == [1, 2, 3, 4]
    assert fresh.find_field("point.x").field_id == 5
    assert fresh.find_field("tags.element").field_id == 7
    assert fresh.find_field("attrs.key").field_id == 8
    assert fresh.identifier_field_ids == (1,)
    assert fresh.highest_field_id == 9
