"""Tests for floe.expressions.parser.parse_filter."""

from __future__ import annotations

from decimal import Decimal

import pytest

from floe.errors import ParseError
from floe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    Not,
    Reference,
    and_,
    bind,
    equal_to,
    greater_than,
    greater_than_or_equal,
    in_,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal_to,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    or_,
    parse_filter,
    starts_with,
)
from floe.expressions.predicates import EqualTo
from floe.spec.schema import Schema
from floe.spec.types import DateType, IntegerType, LongType, NestedField, StructType, TimestampType

CASES: list[tuple[str, BooleanExpression]] = [
    (
        "dt = '2021-12-01' and ts >= '2021-12-01T00:00:00' and id in (1, 2)",
        and_(
            equal_to("dt", "2021-12-01"),
            greater_than_or_equal("ts", "2021-12-01T00:00:00"),
            in_("id", [1, 2]),
        ),
    ),
    ("name is null", is_null("name")),
    ("name IS NOT NULL", not_null("name")),
    ("not (a > 5 or b <= 2.5)", Not(or_(greater_than("a", 5), less_than_or_equal("b", Decimal("2.5"))))),
    ("x != 3", not_equal_to("x", 3)),
    ("x <> 3", not_equal_to("x", 3)),
    ("s like 'abc%'", starts_with("s", "abc")),
    ("s not like 'abc%'", not_starts_with("s", "abc")),
    ("s like 'abc'", equal_to("s", "abc")),
    ("s like 'a\\%b%'", starts_with("s", "a%b")),
    ("x between 1 and 3", and_(greater_than_or_equal("x", 1), less_than_or_equal("x", 3))),
    ("`a b` = 1", equal_to("a b", 1)),
    ('"a b" = 1', equal_to("a b", 1)),
    ("point.x = 1", equal_to("point.x", 1)),
    ("`point`.`x` < 1", less_than("point.x", 1)),
    ("x is nan", is_nan("x")),
    ("x is not nan", not_nan("x")),
    ("isnan(x)", is_nan("x")),
    ("x not in (1, 2)", not_in("x", [1, 2])),
    ("not x in (1, 2)", not_in("x", [1, 2])),
    ("flag = true", equal_to("flag", True)),
    ("flag is false", equal_to("flag", False)),
    ("true", AlwaysTrue()),
    ("false", AlwaysFalse()),
    ("x = -5", equal_to("x", -5)),
    ("x > -2.5", greater_than("x", Decimal("-2.5"))),
    ("x < 1.5e3", less_than("x", Decimal("1.5e3"))),
    ("x <= 1E-2", less_than_or_equal("x", Decimal("0.01"))),
    ("5 < x", greater_than("x", 5)),
    ("'2021-01-01' >= dt", less_than_or_equal("dt", "2021-01-01")),
    ("x = X'0A0b'", equal_to("x", b"\x0a\x0b")),
    ("dt = DATE '2021-01-01'", equal_to("dt", "2021-01-01")),
    ("(a = 1)", equal_to("a", 1)),
    ("s = 'it\\'s'", equal_to("s", "it's")),
    ("s = 'a' 'b'", equal_to("s", "ab")),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_parse_filter_supported_syntax_builds_expression(text: str, expected: BooleanExpression) -> None:
    assert parse_filter(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("s like 'a%b'", "'a%b'"),
        ("s like 'a_'", "'a_'"),
        ("x = null", "null"),
        ("f(x) = 1", "F(x) = 1"),
        ("x = y", "'y'"),
        ("x + 1 > 2", "x + 1 > 2"),
        ("x in (select 1)", "SELECT 1"),
        ("x = 1 and", "x = 1 and"),
        ("", "empty"),
        ("upper(s) like 'A%'", "UPPER(s)"),
    ],
)
def test_parse_filter_unsupported_raises_quoting_fragment(text: str, fragment: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_filter(text)
    assert fragment.lower() in str(info.value).lower()


def test_parse_filter_then_bind_converts_literals() -> None:
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "dt", DateType()),
        NestedField(3, "ts", TimestampType()),
        NestedField(4, "p", StructType(NestedField(5, "x", IntegerType()))),
    )
    bound = bind(schema, parse_filter("dt = '2021-12-01' and p.x = 3e0 and id in (1, 2)"))
    assert str(bound) == "((dt = '2021-12-01' and p.x = 3) and id in (1, 2))"


def test_parse_filter_not_of_comparison_keeps_not() -> None:
    # "not (a > 5)" differs from "a <= 5" for nulls, so the parser keeps the Not node
    parsed = parse_filter("not a > 5")
    assert parsed == Not(greater_than("a", 5))
    assert isinstance(parse_filter("not a = 5"), type(not_equal_to("a", 5)))


def test_parse_filter_nested_deep_struct_path() -> None:
    parsed = parse_filter("a.b.c.d.e = 1")
    assert isinstance(parsed, EqualTo)
    assert parsed.term == Reference("a.b.c.d.e")


def test_parse_filter_sqlglot_imported_only_when_parsing() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "import floe.expressions, floe.table.producers, floe.catalog.sql\n"
        "before = 'sqlglot' in sys.modules\n"
        "floe.expressions.parse_filter('a = 1')\n"
        "print(before, 'sqlglot' in sys.modules)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["False", "True"]
