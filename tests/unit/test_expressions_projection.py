"""Inclusive/strict projection per transform and operator, plus property tests of projection soundness
and residual correctness."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    PartitionEvaluator,
    ResidualEvaluator,
    and_,
    bind,
    equal_to,
    evaluate,
    greater_than,
    greater_than_or_equal,
    in_,
    inclusive_projection,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal_to,
    not_in,
    not_null,
    not_starts_with,
    or_,
    parse_filter,
    rewrite_not,
    starts_with,
    strict_projection,
)
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import (
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)

SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "l", LongType()),
    NestedField(3, "d", DateType()),
    NestedField(4, "ts", TimestampType()),
    NestedField(5, "s", StringType()),
    NestedField(6, "dec", DecimalType(9, 2)),
)
COLUMNS = {"i": 1, "l": 2, "d": 3, "ts": 4, "s": 5, "dec": 6}


def spec_of(*fields: tuple[str, Transform]) -> PartitionSpec:
    return PartitionSpec(
        0,
        tuple(
            PartitionField(COLUMNS[col], 1000 + n, transform, f"p{n}")
            for n, (col, transform) in enumerate(fields)
        ),
    )


def project(spec: PartitionSpec, text: str) -> tuple[str, str]:
    expr = parse_filter(text)
    return str(inclusive_projection(SCHEMA, spec, expr)), str(strict_projection(SCHEMA, spec, expr))


# -- hand-computed cases ------------------------------------------------------------------------
DAY_TS = [
    ("ts < '2021-12-01T00:00:00'", "p0 <= 18961", "p0 < 18962"),
    ("ts < '2021-12-01T10:00:00'", "p0 <= 18962", "p0 < 18962"),
    ("ts <= '2021-12-01T10:00:00'", "p0 <= 18962", "p0 < 18962"),
    ("ts <= '2021-12-01T23:59:59.999999'", "p0 <= 18962", "p0 < 18963"),
    ("ts > '2021-12-01T10:00:00'", "p0 >= 18962", "p0 > 18962"),
    ("ts > '2021-12-01T23:59:59.999999'", "p0 >= 18963", "p0 > 18962"),
    ("ts >= '2021-12-01T00:00:00'", "p0 >= 18962", "p0 > 18961"),
    ("ts = '2021-12-01T10:00:00'", "p0 = 18962", "false"),
    ("ts != '2021-12-01T10:00:00'", "true", "p0 != 18962"),
    ("ts in ('2021-12-01T10:00:00', '2021-12-03T00:00:00')", "p0 in (18962, 18964)", "false"),
    ("ts not in ('2021-12-01T10:00:00', '2021-12-03T00:00:00')", "true", "p0 not in (18962, 18964)"),
    ("ts is null", "p0 is null", "p0 is null"),
    ("ts is not null", "p0 is not null", "p0 is not null"),
    # pre-epoch: partitions written by old writers may be one unit high, so widen/narrow by one
    ("ts = '1969-12-31T12:00:00'", "p0 in (-1, 0)", "false"),
    ("ts < '1969-12-31T12:00:00'", "p0 <= 0", "p0 < -1"),
    ("ts > '1969-12-31T12:00:00'", "p0 >= -1", "p0 > 0"),
    ("ts != '1969-12-31T12:00:00'", "true", "p0 not in (-1, 0)"),
]


@pytest.mark.parametrize(("text", "inclusive", "strict"), DAY_TS, ids=[c[0] for c in DAY_TS])
def test_projection_day_of_timestamp_per_operator(text: str, inclusive: str, strict: str) -> None:
    spec = spec_of(("ts", DayTransform()))
    # the day transform's result type is date, so bound literals print as dates; compare unbound text
    assert project(spec, text) == (inclusive, strict)


OTHER = [
    (("d", YearTransform()), "d < '2021-01-01'", "p0 <= 50", "p0 < 51"),
    (("d", YearTransform()), "d >= '2021-01-01'", "p0 >= 51", "p0 > 50"),
    (("d", MonthTransform()), "d = '2021-12-15'", "p0 = 623", "false"),
    (("d", MonthTransform()), "d <= '2021-12-31'", "p0 <= 623", "p0 < 624"),
    (("d", DayTransform()), "d = '1969-12-31'", "p0 = -1", "false"),
    (("ts", HourTransform()), "ts = '1970-01-01T05:30:00'", "p0 = 5", "false"),
    (("ts", HourTransform()), "ts >= '1970-01-01T05:00:00'", "p0 >= 5", "p0 > 4"),
    (("i", BucketTransform(16)), "i = 34", "p0 = 3", "false"),
    (("i", BucketTransform(16)), "i != 34", "true", "p0 != 3"),
    (("i", BucketTransform(16)), "i in (34, 34)", "p0 = 3", "false"),
    (("i", BucketTransform(16)), "i < 34", "true", "false"),
    (("i", BucketTransform(16)), "i is null", "p0 is null", "p0 is null"),
    (("i", TruncateTransform(10)), "i < 5", "p0 <= 0", "p0 < 0"),
    (("i", TruncateTransform(10)), "i < 10", "p0 <= 0", "p0 < 10"),
    (("i", TruncateTransform(10)), "i <= 9", "p0 <= 0", "p0 < 10"),
    (("i", TruncateTransform(10)), "i > 9", "p0 >= 10", "p0 > 0"),
    (("i", TruncateTransform(10)), "i >= 10", "p0 >= 10", "p0 > 0"),
    (("i", TruncateTransform(10)), "i = -1", "p0 = -10", "false"),
    (("i", TruncateTransform(10)), "i != -1", "true", "p0 != -10"),
    (("dec", TruncateTransform(50)), "dec < 10.65", "p0 <= 10.50", "p0 < 10.50"),
    (("dec", TruncateTransform(50)), "dec >= 10.50", "p0 >= 10.50", "p0 > 10.00"),
    (("s", TruncateTransform(3)), "s < 'abcd'", "p0 <= 'abc'", "p0 < 'abc'"),
    (("s", TruncateTransform(3)), "s >= 'abcd'", "p0 >= 'abc'", "p0 > 'abc'"),
    (("s", TruncateTransform(3)), "s = 'abcd'", "p0 = 'abc'", "false"),
    (("s", TruncateTransform(3)), "s like 'ab%'", "p0 starts with 'ab'", "p0 starts with 'ab'"),
    (("s", TruncateTransform(3)), "s like 'abc%'", "p0 = 'abc'", "p0 starts with 'abc'"),
    (("s", TruncateTransform(3)), "s like 'abcd%'", "p0 = 'abc'", "false"),
    (("s", TruncateTransform(3)), "s not like 'ab%'", "p0 not starts with 'ab'", "p0 not starts with 'ab'"),
    (("s", TruncateTransform(3)), "s not like 'abcd%'", "true", "p0 != 'abc'"),
    (("s", IdentityTransform()), "s like 'abcd%'", "p0 starts with 'abcd'", "p0 starts with 'abcd'"),
    (("l", IdentityTransform()), "l not in (1, 2)", "p0 not in (1, 2)", "p0 not in (1, 2)"),
    (("l", VoidTransform()), "l = 1", "true", "false"),
    (("l", VoidTransform()), "l is null", "true", "false"),
]


@pytest.mark.parametrize(
    ("field", "text", "inclusive", "strict"), OTHER, ids=[f"{c[0][1]}:{c[1]}" for c in OTHER]
)
def test_projection_per_transform_per_operator(
    field: tuple[str, Transform], text: str, inclusive: str, strict: str
) -> None:
    assert project(spec_of(field), text) == (inclusive, strict)


def test_projection_two_fields_same_source_inclusive_and_strict_or() -> None:
    spec = spec_of(("l", BucketTransform(16)), ("l", IdentityTransform()))
    assert project(spec, "l = 34") == ("(p0 = 3 and p1 = 34)", "p1 = 34")
    assert project(spec, "l != 34") == ("p1 != 34", "(p0 != 3 or p1 != 34)")


def test_projection_and_or_not_structure() -> None:
    spec = spec_of(("i", IdentityTransform()), ("ts", DayTransform()))
    inc, strict = project(spec, "not (i = 1 or ts >= '2021-12-01T10:00:00') and l = 5")
    assert inc == "(p0 != 1 and p1 <= 18962)"
    assert strict == "false"  # l is not partitioned: the strict projection of its predicate is false


def test_projection_unknown_column_raises_naming_it() -> None:
    with pytest.raises(Exception, match="nope"):
        inclusive_projection(SCHEMA, spec_of(("i", IdentityTransform())), equal_to("nope", 1))


# -- residuals and partition evaluation ---------------------------------------------------------
def test_residual_partition_decides_predicates() -> None:
    spec = spec_of(("ts", DayTransform()))
    expr = parse_filter("ts >= '2021-12-01T10:00:00' and i = 3")
    residuals = ResidualEvaluator(spec, SCHEMA, expr)
    assert str(residuals.residual_for((18963,))) == "i = 3"
    assert residuals.residual_for((18961,)) == AlwaysFalse()
    assert str(residuals.residual_for((18962,))) == "(ts >= '2021-12-01T10:00:00' and i = 3)"


def test_residual_unpartitioned_returns_whole_filter() -> None:
    residuals = ResidualEvaluator(PartitionSpec(0), SCHEMA, parse_filter("i = 3"))
    assert str(residuals.residual_for(())) == "i = 3"
    assert (
        ResidualEvaluator(spec_of(("i", IdentityTransform())), SCHEMA, parse_filter("i = 3")).residual_for(
            (3,)
        )
        == AlwaysTrue()
    )


def test_partition_evaluator_prunes_partitions() -> None:
    spec = spec_of(("s", TruncateTransform(2)), ("i", BucketTransform(16)))
    ev = PartitionEvaluator(spec, SCHEMA, parse_filter("s like 'abc%' and i = 34"))
    assert ev.eval(("ab", 3))
    assert not ev.eval(("ab", 4))
    assert not ev.eval(("ac", 3))
    assert ev.eval({1000: "ab", 1001: 3})


# -- property tests -------------------------------------------------------------------------------
TS_DAY = 86_400_000_000
ints = st.integers(-300, 300)
longs = st.one_of(ints, st.integers(-(2**40), 2**40))
dates = st.integers(-800, 800)
timestamps = st.one_of(
    st.integers(-3 * TS_DAY, 3 * TS_DAY),
    st.integers(-72, 72).map(lambda h: h * 3_600_000_000),
    st.tuples(st.integers(-800, 800), st.sampled_from([-1, 0, 1])).map(lambda t: t[0] * TS_DAY + t[1]),
)
strings = st.text(alphabet="ab\u00e9\U0001f600", max_size=5)
decimals = st.integers(-500, 500).map(lambda u: Decimal(u).scaleb(-2))

DOMAINS: dict[str, st.SearchStrategy[object]] = {
    "i": ints,
    "l": longs,
    "d": dates,
    "ts": timestamps,
    "s": strings,
    "dec": decimals,
}
TRANSFORMS: dict[str, list[Transform]] = {
    "i": [
        IdentityTransform(),
        BucketTransform(4),
        TruncateTransform(10),
        TruncateTransform(1),
        VoidTransform(),
    ],
    "l": [IdentityTransform(), BucketTransform(3), TruncateTransform(7), VoidTransform()],
    "d": [IdentityTransform(), BucketTransform(5), YearTransform(), MonthTransform(), DayTransform()],
    "ts": [YearTransform(), MonthTransform(), DayTransform(), HourTransform(), BucketTransform(8)],
    "s": [
        IdentityTransform(),
        TruncateTransform(1),
        TruncateTransform(2),
        BucketTransform(4),
        VoidTransform(),
    ],
    "dec": [IdentityTransform(), TruncateTransform(50), TruncateTransform(3), BucketTransform(4)],
}
CASES_PT = [(col, t) for col, ts in TRANSFORMS.items() for t in ts]

COMPARISONS = [less_than, less_than_or_equal, greater_than, greater_than_or_equal, equal_to, not_equal_to]
HOUR = 3_600_000_000


def near(col: str, anchor: object) -> st.SearchStrategy[object]:
    """Values close to a literal, so rows land on both sides of every partition boundary it implies."""
    if col in ("i", "l"):
        return st.integers(-12, 12).map(lambda d: anchor + d)  # type: ignore[operator]
    if col == "d":
        return st.integers(-40, 40).map(lambda d: anchor + d)  # type: ignore[operator]
    if col == "ts":
        steps = st.sampled_from(
            [0, 1, -1, HOUR, -HOUR, TS_DAY, -TS_DAY, HOUR - 1, 1 - HOUR, TS_DAY - 1, 1 - TS_DAY]
        )
        return st.one_of(steps, st.integers(-2 * TS_DAY, 2 * TS_DAY)).map(lambda d: anchor + d)  # type: ignore[operator]
    if col == "dec":
        return st.integers(-60, 60).map(lambda d: anchor + Decimal(d).scaleb(-2))  # type: ignore[operator]
    assert isinstance(anchor, str)
    return st.tuples(st.integers(0, len(anchor)), st.text(alphabet="ab\u00e9", max_size=2)).map(
        lambda t: anchor[: t[0]] + t[1]
    )


@st.composite
def predicates(draw: st.DrawFn, col: str, anchors: list[object] | None = None) -> BooleanExpression:
    domain = DOMAINS[col]
    seen: list[object] = [] if anchors is None else anchors

    def lit() -> object:
        value = draw(domain if not seen or draw(st.booleans()) else near(col, draw(st.sampled_from(seen))))
        seen.append(value)
        return value

    kind = draw(st.integers(0, 5 if col == "s" else 4))
    if kind == 0:
        return draw(st.sampled_from([is_null, not_null]))(col)
    if kind in (1, 2):
        return draw(st.sampled_from(COMPARISONS))(col, lit())
    if kind == 3:
        return draw(st.sampled_from([in_, not_in]))(col, [lit() for _ in range(draw(st.integers(1, 4)))])
    if kind == 4:
        left = draw(st.sampled_from(COMPARISONS))(col, lit())
        right = draw(st.sampled_from(COMPARISONS))(col, lit())
        return draw(st.sampled_from([and_, or_]))(left, right)
    prefix = draw(st.text(alphabet="ab\u00e9", max_size=3))
    seen.append(prefix)
    return draw(st.sampled_from([starts_with, not_starts_with]))(col, prefix)


@st.composite
def rows_near(draw: st.DrawFn, col: str, anchors: list[object]) -> list[object]:
    out: list[object] = []
    for _ in range(draw(st.integers(1, 10))):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            out.append(None)
        elif choice == 1 or not anchors:
            out.append(draw(DOMAINS[col]))
        else:
            out.append(draw(near(col, draw(st.sampled_from(anchors)))))
    return out


def _row(col: str, value: object) -> dict[str, object]:
    return {col: value}


@pytest.mark.parametrize(("col", "transform"), CASES_PT, ids=[f"{c}-{t}" for c, t in CASES_PT])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_projection_soundness_property(col: str, transform: Transform, data: st.DataObject) -> None:
    anchors: list[object] = []
    pred = data.draw(predicates(col, anchors))
    values = data.draw(rows_near(col, anchors))
    spec = spec_of((col, transform))
    part_type = spec.partition_type(SCHEMA)
    bound = rewrite_not(bind(SCHEMA, pred))
    inclusive = bind(part_type, inclusive_projection(SCHEMA, spec, pred))
    strict = bind(part_type, strict_projection(SCHEMA, spec, pred))
    residuals = ResidualEvaluator(spec, SCHEMA, pred)
    source_type: IcebergType = SCHEMA.find_type(col)
    for v in values:
        row = _row(col, v)
        partition = (transform.apply(source_type, v),)
        matches = evaluate(bound, row)
        if matches:
            assert evaluate(inclusive, partition), (
                f"{pred} matches {v!r} but inclusive {inclusive} rejects {partition}"
            )
        if evaluate(strict, partition):
            assert matches, f"strict {strict} accepts {partition} but {pred} rejects {v!r}"
        residual = residuals.residual_for(partition)
        assert evaluate(residual, row) == matches, f"residual {residual} of {pred} wrong for {v!r}"


@settings(max_examples=150, deadline=None)
@given(
    pred=st.one_of(predicates("ts"), predicates("s"), predicates("i")).flatmap(
        lambda a: st.one_of(predicates("ts"), predicates("s"), predicates("i")).map(lambda b: (a, b))
    ),
    rows=st.lists(
        st.tuples(st.one_of(st.none(), timestamps), st.one_of(st.none(), strings), ints), max_size=6
    ),
    combine=st.sampled_from([and_, or_]),
)
def test_projection_soundness_multi_column_property(
    pred: tuple[BooleanExpression, BooleanExpression], rows: list[tuple[object, object, int]], combine: object
) -> None:
    expr = combine(*pred)  # type: ignore[operator]
    spec = spec_of(
        ("ts", DayTransform()),
        ("s", TruncateTransform(1)),
        ("i", BucketTransform(3)),
        ("ts", HourTransform()),
    )
    part_type = spec.partition_type(SCHEMA)
    bound = rewrite_not(bind(SCHEMA, expr))
    inclusive = bind(part_type, inclusive_projection(SCHEMA, spec, expr))
    strict = bind(part_type, strict_projection(SCHEMA, spec, expr))
    residuals = ResidualEvaluator(spec, SCHEMA, expr)
    for ts, s, i in rows:
        row = {"ts": ts, "s": s, "i": i}
        partition = tuple(
            f.transform.apply(SCHEMA.find_type(f.source_id), row[SCHEMA.find_column_name(f.source_id)])
            for f in spec.fields
        )  # type: ignore[index]
        matches = evaluate(bound, row)
        if matches:
            assert evaluate(inclusive, partition)
        if evaluate(strict, partition):
            assert matches
        assert evaluate(residuals.residual_for(partition), row) == matches
