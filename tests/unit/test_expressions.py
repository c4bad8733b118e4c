"""Unit tests for floe.expressions: building, printing, binding, literal conversion, row evaluation."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal

import pytest

from floe.errors import ValidationError
from floe.expressions import (
    ABOVE_MAX,
    BELOW_MIN,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundReference,
    EqualTo,
    Evaluator,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    Or,
    Reference,
    and_,
    bind,
    convert_literal,
    equal_to,
    evaluate,
    greater_than,
    greater_than_or_equal,
    in_,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_,
    not_equal_to,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    or_,
    rewrite_not,
    starts_with,
)
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "data", StringType()),
    NestedField(3, "i", IntegerType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dt", DateType()),
    NestedField(7, "ts", TimestampType()),
    NestedField(8, "tstz", TimestamptzType()),
    NestedField(9, "dec", DecimalType(9, 2)),
    NestedField(
        10, "point", StructType(NestedField(11, "x", IntegerType()), NestedField(12, "y", IntegerType()))
    ),
    NestedField(13, "tags", ListType(14, StringType())),
    NestedField(15, "u", UUIDType()),
    NestedField(16, "b", BinaryType()),
)


# -- construction, printing, equality ----------------------------------------------------------
def test_predicates_equal_values_are_equal_and_hashable() -> None:
    assert equal_to("id", 5) == EqualTo(Reference("id"), 5)
    assert hash(in_("id", [1, 2])) == hash(in_("id", [2, 1]))
    assert {less_than("x", 1), less_than("x", 1)} == {less_than("x", 1)}
    assert equal_to("id", 5) != not_equal_to("id", 5)


def test_predicate_str_readable() -> None:
    assert str(equal_to("data", "a'b")) == "data = 'a''b'"
    assert str(in_("id", [3, 1])) == "id in (1, 3)"
    assert str(is_null("x")) == "x is null"
    assert str(and_(less_than("a", 1), or_(is_nan("f"), not_(starts_with("s", "ab"))))) == (
        "(a < 1 and (f is nan or not s starts with 'ab'))"
    )
    assert repr(not_null("x")) == "NotNull(Reference('x'))"


def test_bound_predicate_str_formats_literals_by_type() -> None:
    bound = bind(SCHEMA, and_(equal_to("dt", "2021-12-01"), less_than("ts", "2021-12-01T10:00:00.5")))
    assert str(bound) == "(dt = '2021-12-01' and ts < '2021-12-01T10:00:00.5')"


def test_and_or_with_constants_simplify() -> None:
    x = equal_to("a", 1)
    assert and_(x, AlwaysTrue()) == x
    assert and_(x, AlwaysFalse()) == AlwaysFalse()
    assert or_(x, AlwaysTrue()) == AlwaysTrue()
    assert or_(AlwaysFalse(), x) == x
    assert not_(not_(x)) == x
    assert not_(AlwaysTrue()) == AlwaysFalse()
    assert and_() == AlwaysTrue()
    assert or_() == AlwaysFalse()
    assert (x & x) == And(x, x)
    assert (x | x) == Or(x, x)
    assert ~x == Not(x)


def test_negate_flips_every_operation() -> None:
    assert less_than("a", 1).negate() == greater_than_or_equal("a", 1)
    assert less_than_or_equal("a", 1).negate() == greater_than("a", 1)
    assert in_("a", [1, 2]).negate() == not_in("a", [1, 2])
    assert is_nan("a").negate() == not_nan("a")
    assert starts_with("a", "x").negate() == not_starts_with("a", "x")
    assert and_(is_null("a"), equal_to("b", 1)).negate() == Or(NotNull(Reference("a")), not_equal_to("b", 1))


def test_rewrite_not_removes_every_not() -> None:
    expr = not_(and_(less_than("a", 1), not_(or_(equal_to("b", 2), not_(is_null("c"))))))
    assert rewrite_not(expr) == or_(
        greater_than_or_equal("a", 1), or_(equal_to("b", 2), NotNull(Reference("c")))
    )


def test_builders_empty_sets_fold() -> None:
    assert in_("a", []) == AlwaysFalse()
    assert not_in("a", []) == AlwaysTrue()


def test_builders_null_literal_raises() -> None:
    with pytest.raises(ValidationError, match="is_null"):
        equal_to("a", None)


# -- binding ----------------------------------------------------------------------------------
def test_bind_unknown_column_names_it() -> None:
    with pytest.raises(ValidationError, match="'nope'.*columns: id, data"):
        bind(SCHEMA, equal_to("nope", 1))


def test_bind_case_insensitive_finds_column() -> None:
    bound = bind(SCHEMA, equal_to("DATA", "x"), case_sensitive=False)
    assert isinstance(bound, EqualTo)
    assert bound.ref.field_id == 2
    with pytest.raises(ValidationError):
        bind(SCHEMA, equal_to("DATA", "x"))


def test_bind_nested_struct_field_accessor() -> None:
    bound = bind(SCHEMA, equal_to("point.y", 3))
    assert isinstance(bound, EqualTo)
    ref = bound.ref
    assert isinstance(ref, BoundReference)
    assert (ref.path_ids, ref.positions, ref.name) == ((10, 12), (9, 1), "point.y")


def test_bind_field_inside_list_raises() -> None:
    with pytest.raises(ValidationError, match="list or map"):
        bind(SCHEMA, equal_to("tags.element", "a"))


def test_bind_comparison_on_struct_raises() -> None:
    with pytest.raises(ValidationError, match="non-primitive"):
        bind(SCHEMA, equal_to("point", 1))


def test_bind_wrong_literal_type_names_column_type_value() -> None:
    with pytest.raises(ValidationError, match=r"'abc'.*'dt'.*date"):
        bind(SCHEMA, equal_to("dt", "abc"))
    with pytest.raises(ValidationError, match=r"'id'.*long"):
        bind(SCHEMA, equal_to("id", "x1"))


def test_bind_required_null_checks_fold() -> None:
    assert bind(SCHEMA, is_null("id")) == AlwaysFalse()
    assert bind(SCHEMA, not_null("id")) == AlwaysTrue()
    assert isinstance(bind(SCHEMA, is_null("data")), IsNull)


def test_bind_nan_check_on_non_float_folds() -> None:
    assert bind(SCHEMA, is_nan("id")) == AlwaysFalse()
    assert bind(SCHEMA, not_nan("id")) == AlwaysTrue()


def test_bind_nan_literal_raises() -> None:
    with pytest.raises(ValidationError, match="is_nan"):
        bind(SCHEMA, equal_to("d", float("nan")))


def test_bind_int_column_long_literal_folds_like_java() -> None:
    big, small = 2**40, -(2**40)
    assert bind(SCHEMA, less_than("i", big)) == AlwaysTrue()
    assert bind(SCHEMA, less_than_or_equal("i", big)) == AlwaysTrue()
    assert bind(SCHEMA, greater_than("i", big)) == AlwaysFalse()
    assert bind(SCHEMA, equal_to("i", big)) == AlwaysFalse()
    assert bind(SCHEMA, not_equal_to("i", big)) == AlwaysTrue()
    assert bind(SCHEMA, greater_than_or_equal("i", small)) == AlwaysTrue()
    assert bind(SCHEMA, less_than("i", small)) == AlwaysFalse()


def test_bind_set_drops_out_of_range_and_collapses() -> None:
    bound = bind(SCHEMA, in_("i", [1, 2**40]))
    assert isinstance(bound, EqualTo)
    assert bound.value == 1
    assert bind(SCHEMA, in_("i", [2**40])) == AlwaysFalse()
    assert bind(SCHEMA, not_in("i", [2**40])) == AlwaysTrue()
    assert isinstance(bind(SCHEMA, not_in("i", [1, 2**40])), NotEqualTo)
    assert isinstance(bind(SCHEMA, in_("i", [1, 2])), In)
    assert isinstance(bind(SCHEMA, not_in("i", [1, 2, 3])), NotIn)


def test_bind_starts_with_non_string_raises() -> None:
    with pytest.raises(ValidationError, match="string column"):
        bind(SCHEMA, starts_with("id", "1"))


def test_bind_twice_is_stable() -> None:
    once = bind(SCHEMA, and_(equal_to("dt", "2021-12-01"), in_("dec", ["1.5", 2])))
    assert bind(SCHEMA, once) == once


def test_bind_decimal_precision_overflow_folds() -> None:
    assert bind(SCHEMA, less_than("dec", Decimal("12345678901.00"))) == AlwaysTrue()


# -- literal conversion -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "itype", "expected"),
    [
        ("2021-12-01", DateType(), 18962),
        (dt.date(1969, 12, 31), DateType(), -1),
        ("2021-12-01T00:00:00", TimestampType(), 18962 * 86_400_000_000),
        ("2021-12-01 00:00:00.000001", TimestampType(), 18962 * 86_400_000_000 + 1),
        ("2021-12-01", TimestampType(), 18962 * 86_400_000_000),
        ("2021-12-01T01:00:00+01:00", TimestamptzType(), 18962 * 86_400_000_000),
        ("2021-12-01T00:00:00Z", TimestamptzType(), 18962 * 86_400_000_000),
        (
            dt.datetime(1970, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-1))),
            TimestamptzType(),
            3_600_000_000,
        ),
        ("1970-01-01T00:00:00.000000001", TimestampNanoType(), 1),
        ("10:15:30.5", TimeType(), 36_930_500_000),
        (5, LongType(), 5),
        (5, DoubleType(), 5.0),
        (5, DecimalType(9, 2), Decimal("5.00")),
        ("1.5", DecimalType(9, 2), Decimal("1.50")),
        (1.25, DecimalType(9, 2), Decimal("1.25")),
        (
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
            UUIDType(),
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        ),
        ("true", BooleanType(), True),
        (b"\x00\x01", FixedType(2), b"\x00\x01"),
        ("12", IntegerType(), 12),
    ],
)
def test_convert_literal_user_values_to_representation(
    value: object, itype: object, expected: object
) -> None:
    assert convert_literal(value, itype, column="c") == expected  # type: ignore[arg-type]


def test_convert_literal_float_rounds_to_float32() -> None:
    out = convert_literal(0.1, FloatType(), column="f")
    assert isinstance(out, float)
    assert out != 0.1
    assert abs(out - 0.1) < 1e-8


@pytest.mark.parametrize(
    ("value", "itype", "marker"),
    [
        (2**31, IntegerType(), ABOVE_MAX),
        (-(2**31) - 1, IntegerType(), BELOW_MIN),
        (2**63, LongType(), ABOVE_MAX),
        (1e39, FloatType(), ABOVE_MAX),
        ("-1000", DecimalType(3, 0), BELOW_MIN),
    ],
)
def test_convert_literal_out_of_range_marker(value: object, itype: object, marker: object) -> None:
    assert convert_literal(value, itype, column="c") is marker  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "itype", "message"),
    [
        ("1.555", DecimalType(9, 2), "more than 2 digits"),
        ("2021-12-01T00:00:00+01:00", TimestampType(), "without time zone"),
        ("2021-13-01", DateType(), "ISO date"),
        ("not-a-uuid", UUIDType(), "UUID"),
        (b"\x00", FixedType(2), "exactly 2 bytes"),
        (5, StringType(), "expected a string"),
        (True, LongType(), "long"),
        ("1970-01-01T00:00:00.0000001", TimestampType(), "microsecond"),
        ("25:00", TimeType(), "time"),
    ],
)
def test_convert_literal_invalid_value_raises_naming_column(
    value: object, itype: object, message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        convert_literal(value, itype, column="col_x")  # type: ignore[arg-type]
    assert "col_x" in str(info.value)
    assert str(itype) in str(info.value)


# -- row evaluator ----------------------------------------------------------------------------
def _row(**kw: object) -> dict[str, object]:
    return kw


def test_evaluate_comparisons_on_tuple_row() -> None:
    row = (7, "abc", 3, 1.5, 2.5, 18962, 0, 0, Decimal("1.50"), (1, 2), None, None, b"\x01")
    ev = Evaluator(SCHEMA, and_(equal_to("id", 7), starts_with("data", "ab"), equal_to("point.y", 2)))
    assert ev.eval(row)
    assert not Evaluator(SCHEMA, greater_than("point.x", 1)).eval(row)
    assert Evaluator(SCHEMA, equal_to("dt", "2021-12-01")).eval(row)
    assert Evaluator(SCHEMA, in_("dec", ["1.5", "2"])).eval(row)


def test_evaluate_mapping_rows_by_name_and_id() -> None:
    ev = Evaluator(SCHEMA, and_(equal_to("data", "x"), less_than("point.x", 5)))
    assert ev.eval({"data": "x", "point": {"x": 1}})
    assert ev.eval({2: "x", 10: {11: 1}})
    assert ev.eval({"data": "x", "point.x": 1})
    assert not ev.eval({"data": "x", "point": None})


def test_evaluate_null_semantics_negations_hold() -> None:
    row = {"data": None, "i": None}
    assert not Evaluator(SCHEMA, less_than("i", 5)).eval(row)
    assert not Evaluator(SCHEMA, equal_to("i", 5)).eval(row)
    assert Evaluator(SCHEMA, not_equal_to("i", 5)).eval(row)
    assert Evaluator(SCHEMA, not_in("i", [1, 2])).eval(row)
    assert Evaluator(SCHEMA, not_starts_with("data", "a")).eval(row)
    assert Evaluator(SCHEMA, is_null("data")).eval(row)
    assert Evaluator(SCHEMA, not_nan("d")).eval(row)


def test_evaluate_nan_semantics() -> None:
    row = {"d": math.nan}
    assert Evaluator(SCHEMA, is_nan("d")).eval(row)
    assert not Evaluator(SCHEMA, not_nan("d")).eval(row)
    for pred in (less_than("d", 1), greater_than("d", 1), equal_to("d", 1), in_("d", [1, 2])):
        assert not Evaluator(SCHEMA, pred).eval(row), pred
    assert Evaluator(SCHEMA, not_equal_to("d", 1)).eval(row)


def test_evaluate_not_and_or() -> None:
    ev = Evaluator(SCHEMA, not_(or_(greater_than("i", 5), equal_to("data", "z"))))
    assert ev.eval({"i": 3, "data": "a"})
    assert not ev.eval({"i": 6, "data": "a"})
    assert not ev.eval({"i": 3, "data": "z"})


def test_evaluate_unbound_expression_raises() -> None:
    with pytest.raises(ValidationError, match="bound"):
        evaluate(equal_to("id", 1), {"id": 1})


def test_evaluate_timestamptz_offsets_compare_in_utc() -> None:
    ev = Evaluator(SCHEMA, greater_than_or_equal("tstz", "2021-12-01T01:00:00+01:00"))
    midnight_utc = convert_literal("2021-12-01T00:00:00", TimestampType(), column="t")
    assert ev.eval({"tstz": midnight_utc})
    assert not ev.eval({"tstz": midnight_utc - 1})
    assert isinstance(ev.expr, GreaterThanOrEqual)
    assert isinstance(
        bind(SCHEMA, less_than("tstz", dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc))), LessThan
    )
