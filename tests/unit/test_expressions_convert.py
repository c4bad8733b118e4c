"""Tests for converting bound expressions to pyarrow compute expressions and Spark SQL strings."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from floe.errors import UnsupportedError
from floe.expressions import bind, evaluate, parse_filter, rewrite_not, to_arrow_expression, to_spark_sql
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
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "dt", DateType()),
    NestedField(5, "ts", TimestampType()),
    NestedField(6, "tz", TimestamptzType()),
    NestedField(7, "dec", DecimalType(9, 2)),
    NestedField(8, "b", BinaryType()),
    NestedField(9, "u", UUIDType()),
    NestedField(10, "point", StructType(NestedField(11, "x", IntegerType()))),
    NestedField(12, "flag", BooleanType()),
    NestedField(13, "f", FloatType()),
    NestedField(14, "fx", FixedType(2)),
    NestedField(15, "a b", IntegerType()),
    NestedField(16, "t", TimeType()),
    NestedField(17, "tn", TimestampNanoType()),
)


def spark(text: str) -> str:
    return to_spark_sql(bind(SCHEMA, parse_filter(text)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = 5", "`id` = 5L"),
        ("id != 5", "`id` != 5L"),
        ("s != 'a'", "(`s` IS NULL OR `s` != 'a')"),
        ("s = 'it\\'s'", "`s` = 'it\\'s'"),
        ("dt = '2021-12-01'", "`dt` = DATE '2021-12-01'"),
        ("ts >= '2021-12-01T10:00:00.5'", "`ts` >= TIMESTAMP_NTZ '2021-12-01 10:00:00.500000'"),
        ("tz < '2021-12-01T01:00:00+01:00'", "`tz` < TIMESTAMP '2021-12-01 00:00:00+00:00'"),
        ("dec in (1.5, 2)", "`dec` IN (1.50BD, 2.00BD)"),
        ("b = X'0102'", "`b` = X'0102'"),
        ("u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'", "`u` = X'F79C3E09677C4BBDA4793F349CB785E7'"),
        ("point.x < 3", "`point`.`x` < 3"),
        ("`a b` is null", "`a b` IS NULL"),
        ("d > 1.5", "(`d` > CAST('1.5' AS DOUBLE) AND NOT isnan(`d`))"),
        ("d is not nan", "(`d` IS NULL OR NOT isnan(`d`))"),
        ("s like 'a\\%b\\_c%'", "`s` LIKE 'a\\\\%b\\\\_c%'"),
        ("s not like 'ab%'", "(`s` IS NULL OR `s` NOT LIKE 'ab%')"),
        ("flag", "`flag` = true"),
        ("not (id > 3 or s in ('x', 'y'))", "(`id` <= 3L AND (`s` IS NULL OR `s` NOT IN ('x', 'y')))"),
        ("true", "true"),
    ],
)
def test_to_spark_sql_typed_literals_and_quoting(text: str, expected: str) -> None:
    out = spark(text)
    assert out == expected
    sqlglot.parse_one(out, read="spark")  # the text is valid Spark SQL


def test_to_spark_sql_unsupported_types_raise() -> None:
    with pytest.raises(UnsupportedError, match="time"):
        spark("t = '10:00:00'")
    with pytest.raises(UnsupportedError, match="timestamp_ns"):
        spark("tn = '2021-01-01T00:00:00'")


def test_to_arrow_filters_table_like_evaluator() -> None:
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "s": pa.array(["abc", None, "abd", "x"]),
            "d": pa.array([1.0, math.nan, None, 3.0]),
            "dt": pa.array([18962, 18963, None, 0], pa.date32()),
            "dec": pa.array([Decimal("1.50"), None, Decimal("2.00"), Decimal("3.00")], pa.decimal128(9, 2)),
            "point": pa.array([{"x": 1}, {"x": 5}, None, {"x": 2}]),
            "u": pa.array([uuid.UUID(int=1).bytes, None, uuid.UUID(int=2).bytes, None], pa.binary(16)),
        }
    )
    cases = {
        "s like 'ab%'": [1, 3],
        "s not like 'ab%'": [2, 4],
        "s != 'abc'": [2, 3, 4],
        "d > 0.5": [1, 4],
        "d is not nan": [1, 3, 4],
        "not (d < 2)": [4],
        "dt >= '2021-12-01'": [1, 2],
        "dec in (1.5, 3)": [1, 4],
        "point.x < 3": [1, 4],
        "u = '00000000-0000-0000-0000-000000000002'": [3],
        "id not in (1, 2) or s is null": [2, 3, 4],
    }
    for text, ids in cases.items():
        expr = to_arrow_expression(bind(SCHEMA, parse_filter(text)))
        assert table.filter(expr).column("id").to_pylist() == ids, text


# -- Arrow conversion selects exactly the rows the evaluator accepts ----------------------------
small_ints = st.one_of(st.none(), st.integers(-3, 3))
floats = st.one_of(st.none(), st.sampled_from([math.nan, -1.5, 0.0, 1.5, 2.0]))
texts = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "abc", "b", "ba"]))


@st.composite
def filters(draw: st.DrawFn, depth: int = 0) -> str:
    if depth < 2 and draw(st.booleans()):
        op = draw(st.sampled_from(["and", "or"]))
        left, right = draw(filters(depth + 1)), draw(filters(depth + 1))
        wrap = "not " if draw(st.booleans()) else ""
        return f"{wrap}({left} {op} {right})"
    col = draw(st.sampled_from(["point.x", "d", "s"]))
    if col == "s":
        lit = "'" + draw(st.sampled_from(["a", "ab", "b", "c"])) + "'"
        ops = ["=", "!=", "<", ">=", "like", "not like", "in", "not in", "is null", "is not null"]
    else:
        lit = str(draw(st.sampled_from([-1, 0, 1, 2])))
        ops = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]
        if col == "d":
            ops += ["is nan", "is not nan"]
    op = draw(st.sampled_from(ops))
    if op in ("like", "not like"):
        return f"{col} {op} '{lit[1:-1]}%'"
    if op in ("in", "not in"):
        return f"{col} {op} ({lit}, {lit.replace('1', '2')})"
    if op.startswith("is"):
        return f"{col} {op}"
    return f"{col} {op} {lit}"


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(small_ints, floats, texts), min_size=1, max_size=8),
    text=filters(),
)
def test_to_arrow_matches_evaluator_property(
    rows: list[tuple[int | None, float | None, str | None]], text: str
) -> None:
    schema = Schema(
        NestedField(1, "point", StructType(NestedField(2, "x", IntegerType()))),
        NestedField(3, "d", DoubleType()),
        NestedField(4, "s", StringType()),
    )
    bound = bind(schema, parse_filter(text))
    table = pa.table(
        {
            "point": pa.array([{"x": x} for x, _, _ in rows], pa.struct([("x", pa.int32())])),
            "d": pa.array([d for _, d, _ in rows], pa.float64()),
            "s": pa.array([s for _, _, s in rows], pa.string()),
            "row": pa.array(range(len(rows))),
        }
    )
    got = table.filter(to_arrow_expression(bound)).column("row").to_pylist()
    rewritten = rewrite_not(bound)
    want = [i for i, (x, d, s) in enumerate(rows) if evaluate(rewritten, {"point": {"x": x}, "d": d, "s": s})]
    assert got == want, text
