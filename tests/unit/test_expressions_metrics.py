"""Tests for file pruning from column metrics and manifest pruning from partition summaries."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from floe.expressions import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    StrictMetricsEvaluator,
    bind,
    evaluate,
    parse_filter,
    rewrite_not,
)
from floe.serde.single_value import to_bytes
from floe.spec.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
)
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import DoubleType, IntegerType, NestedField, StringType
from floe.transforms import BucketTransform, IdentityTransform, TruncateTransform

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "all_nulls", IntegerType()),
    NestedField(5, "no_stats", IntegerType()),
)


def data_file(
    record_count: int = 50,
    *,
    values: dict[int, int] | None = None,
    nulls: dict[int, int] | None = None,
    nans: dict[int, int] | None = None,
    lower: dict[int, object] | None = None,
    upper: dict[int, object] | None = None,
) -> DataFile:
    def enc(bounds: dict[int, object] | None) -> dict[int, bytes] | None:
        if bounds is None:
            return None
        return {fid: to_bytes(SCHEMA.find_type(fid), v) for fid, v in bounds.items()}

    return DataFile(
        content=FileContent.DATA,
        file_path="file:/tmp/f.parquet",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=record_count,
        file_size_in_bytes=1000,
        value_counts=values,
        null_value_counts=nulls,
        nan_value_counts=nans,
        lower_bounds=enc(lower),
        upper_bounds=enc(upper),
    )


FILE = data_file(
    values={1: 50, 2: 50, 3: 50, 4: 50},
    nulls={1: 0, 2: 10, 3: 0, 4: 50},
    nans={3: 5},
    lower={1: 30, 2: "abc", 3: 1.5},
    upper={1: 79, 2: "abf", 3: 9.5},
)


def may(text: str, f: DataFile = FILE) -> bool:
    return InclusiveMetricsEvaluator(SCHEMA, parse_filter(text)).eval(f)


def must(text: str, f: DataFile = FILE) -> bool:
    return StrictMetricsEvaluator(SCHEMA, parse_filter(text)).eval(f)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 30", False),
        ("id < 31", True),
        ("id <= 29", False),
        ("id <= 30", True),
        ("id > 79", False),
        ("id > 78", True),
        ("id >= 80", False),
        ("id = 29", False),
        ("id = 80", False),
        ("id = 55", True),
        ("id != 30", True),
        ("id in (1, 2, 90)", False),
        ("id in (1, 35)", True),
        ("id not in (30, 31)", True),
        ("all_nulls is null", True),
        ("all_nulls is not null", False),
        ("all_nulls < 5", False),
        ("all_nulls = 5", False),
        ("all_nulls in (5, 6)", False),
        ("all_nulls != 5", True),
        ("id is null", False),
        ("s is null", True),
        ("s like 'ab%'", True),
        ("s like 'abd%'", True),
        ("s like 'abg%'", False),
        ("s like 'aa%'", False),
        ("s not like 'ab%'", True),  # nulls satisfy "not starts with"
        ("no_stats = 5", True),
        ("no_stats is null", True),
        ("d is nan", True),
        ("d > 9.5", False),
        ("d < 1.5", False),
        ("d > 9", True),
        ("not (id < 30)", True),
        ("not (id >= 30)", False),
        ("id < 30 or s = 'abd'", True),
        ("id < 30 and s = 'abd'", False),
    ],
)
def test_inclusive_metrics_evaluator_cases(text: str, expected: bool) -> None:
    assert may(text) is expected


def test_inclusive_metrics_nan_only_and_nan_counts() -> None:
    nan_only = data_file(values={3: 10}, nulls={3: 0}, nans={3: 10})
    assert not may("d > 1", nan_only)
    assert not may("d = 1", nan_only)
    assert not may("d is not nan", nan_only)
    assert may("d is nan", nan_only)
    no_nan = data_file(values={3: 10}, nulls={3: 0}, nans={3: 0}, lower={3: 1.0}, upper={3: 2.0})
    assert not may("d is nan", no_nan)
    assert may("d is not nan", no_nan)


def test_inclusive_metrics_nan_bound_is_ignored() -> None:
    old_writer = data_file(values={3: 10}, lower={3: math.nan}, upper={3: math.nan})
    assert may("d > 100", old_writer)
    assert may("d < -100", old_writer)


def test_inclusive_metrics_empty_file_cannot_match() -> None:
    empty = data_file(0)
    assert not may("id > 0", empty)
    assert InclusiveMetricsEvaluator(SCHEMA, parse_filter("id > 0"), include_empty_files=True).eval(empty)


def test_inclusive_metrics_truncated_string_bounds_stay_valid() -> None:
    # values "abcdef..." ~ "abzzz...": lower truncated to "abc", upper truncated and incremented to "ac"
    f = data_file(values={2: 10}, nulls={2: 0}, lower={2: "abc"}, upper={2: "ac"})
    assert may("s = 'abcdefgh'", f)
    assert may("s > 'abzzzzzz'", f)
    assert may("s >= 'ac'", f)  # the incremented upper bound 'ac' may still equal no value, but cannot prune
    assert not may("s like 'ad%'", f)
    assert may("s like 'ab%'", f)
    assert not may("s not like 'a%'", f)  # every value lies between two strings starting with 'a'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 80", True),
        ("id < 79", False),
        ("id <= 79", True),
        ("id > 29", True),
        ("id > 30", False),
        ("id >= 30", True),
        ("id != 29", True),
        ("id != 30", False),
        ("id not in (1, 2, 80)", True),
        ("id not in (1, 30)", False),
        ("id = 30", False),
        ("id is not null", True),
        ("all_nulls is null", True),
        ("all_nulls != 3", True),
        ("all_nulls not in (3, 4)", True),
        ("all_nulls < 3", False),
        ("s is not null", False),
        ("s < 'b'", False),  # s has nulls, which do not satisfy <
        ("s not like 'b%'", True),
        ("s not like 'ab%'", False),
        ("d < 10", False),  # d has NaN values, which do not satisfy <
        ("no_stats < 10", False),
        ("id < 80 and id > 29", True),
        ("id < 80 and id > 30", False),
        ("id < 50 or id >= 50", False),  # each side alone is not proven
    ],
)
def test_strict_metrics_evaluator_cases(text: str, expected: bool) -> None:
    assert must(text) is expected


def test_strict_metrics_equal_and_in_need_single_value() -> None:
    single = data_file(values={1: 5}, nulls={1: 0}, lower={1: 7}, upper={1: 7})
    assert must("id = 7", single)
    assert not must("id = 8", single)
    assert must("id in (7, 9)", single)
    small_range = data_file(values={1: 5}, nulls={1: 0}, lower={1: 7}, upper={1: 9})
    assert must("id in (7, 8, 9)", small_range)
    assert not must("id in (7, 9)", small_range)


def test_strict_metrics_nan_counts() -> None:
    no_nan = data_file(values={3: 10}, nulls={3: 0}, nans={3: 0}, lower={3: 1.0}, upper={3: 2.0})
    assert must("d < 3", no_nan)
    assert must("d is not nan", no_nan)
    unknown_nan = data_file(values={3: 10}, nulls={3: 0}, lower={3: 1.0}, upper={3: 2.0})
    assert not must("d < 3", unknown_nan)  # NaN counts missing: NaN rows may exist
    nan_only = data_file(values={3: 10}, nulls={3: 0}, nans={3: 10})
    assert must("d is nan", nan_only)
    assert must("d != 1", nan_only)


def test_strict_metrics_empty_file_all_match() -> None:
    assert must("id = 1", data_file(0))


# -- metrics evaluators agree with the row evaluator on real rows -------------------------------
@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=1, max_size=10),
    text=st.tuples(
        st.sampled_from(["<", "<=", ">", ">=", "=", "!=", "in", "not in", "is null", "is not null"]),
        st.integers(-25, 25),
        st.integers(-25, 25),
    ).map(
        lambda t: (
            f"all_nulls {t[0]} ({t[1]}, {t[2]})"
            if "in" in t[0].split()
            else f"all_nulls {t[0]}"
            if "null" in t[0]
            else f"all_nulls {t[0]} {t[1]}"
        )
    ),
)
def test_metrics_evaluators_sound_against_rows_property(values: list[int | None], text: str) -> None:
    present = [v for v in values if v is not None]
    f = data_file(
        len(values),
        values={4: len(values)},
        nulls={4: len(values) - len(present)},
        lower={4: min(present)} if present else None,
        upper={4: max(present)} if present else None,
    )
    expr = parse_filter(text)
    bound = rewrite_not(bind(SCHEMA, expr))
    matches = [evaluate(bound, {"all_nulls": v}) for v in values]
    if any(matches):
        assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(f), f"{text} pruned a file with matching rows"
    if StrictMetricsEvaluator(SCHEMA, expr).eval(f):
        assert all(matches), f"{text} claimed all rows of {values} match"


# -- manifest evaluator --------------------------------------------------------------------------
SPEC = PartitionSpec(
    0,
    (
        PartitionField(1, 1000, IdentityTransform(), "id"),
        PartitionField(2, 1001, TruncateTransform(2), "s_trunc"),
        PartitionField(3, 1002, IdentityTransform(), "d"),
        PartitionField(1, 1003, BucketTransform(16), "id_bucket"),
    ),
)


def manifest(*summaries: PartitionFieldSummary) -> ManifestFile:
    return ManifestFile(
        manifest_path="m.avro",
        manifest_length=1,
        partition_spec_id=0,
        content=ManifestContent.DATA,
        sequence_number=1,
        min_sequence_number=1,
        added_snapshot_id=1,
        added_files_count=1,
        existing_files_count=0,
        deleted_files_count=0,
        added_rows_count=1,
        existing_rows_count=0,
        deleted_rows_count=0,
        partitions=summaries,
    )


def summary(
    t: object, lo: object, hi: object, *, nulls: bool = False, nan: bool | None = False
) -> PartitionFieldSummary:
    return PartitionFieldSummary(
        contains_null=nulls,
        contains_nan=nan,
        lower_bound=None if lo is None else to_bytes(t, lo),  # type: ignore[arg-type]
        upper_bound=None if hi is None else to_bytes(t, hi),  # type: ignore[arg-type]
    )


MANIFEST = manifest(
    summary(IntegerType(), 30, 79),
    summary(StringType(), "ab", "ad", nulls=True),
    summary(DoubleType(), 1.5, 9.5, nan=True),
    summary(IntegerType(), 0, 15),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id < 30", False),
        ("id <= 30", True),
        ("id > 79", False),
        ("id >= 79", True),
        ("id = 25", False),
        ("id = 50", True),
        ("id in (1, 2, 80)", False),
        ("id in (1, 31)", True),
        ("id != 50", True),
        ("id is null", False),
        ("s is null", True),
        ("s = 'abc'", True),
        ("s = 'aec'", False),
        ("s like 'ac%'", True),
        ("s like 'ae%'", False),
        ("s like 'aa%'", False),
        ("s < 'ab'", True),  # truncation: 'a' < 'ab' holds for s, but s_trunc <= 'ab' holds too
        ("s < 'aa'", False),
        ("d is nan", True),
        ("d > 10", False),
        ("d is not nan", True),
        ("not (id >= 30)", False),
        ("id < 30 or d > 2", True),
    ],
)
def test_manifest_evaluator_cases(text: str, expected: bool) -> None:
    assert ManifestEvaluator(SPEC, SCHEMA, parse_filter(text)).eval(MANIFEST) is expected


def test_manifest_evaluator_all_null_and_nan_only_partitions() -> None:
    all_null = manifest(
        summary(IntegerType(), 30, 79),
        summary(StringType(), None, None, nulls=True),
        PartitionFieldSummary(contains_null=False, contains_nan=True),
        summary(IntegerType(), 0, 15),
    )
    ev = lambda text: ManifestEvaluator(SPEC, SCHEMA, parse_filter(text)).eval(all_null)
    assert not ev("s is not null")
    assert not ev("s = 'ab'")
    assert not ev("s like 'a%'")
    assert ev("s not like 'a%'")
    assert not ev("d is not nan")
    assert not ev("d < 5")
    assert ev("d is nan")


def test_manifest_evaluator_no_summaries_may_match() -> None:
    assert ManifestEvaluator(SPEC, SCHEMA, parse_filter("id = 1")).eval(manifest())


# -- the compiled inclusive test answers as the visitor does -------------------------------------
_METRIC_COLUMNS = {1: st.integers(-5, 5), 3: st.one_of(st.floats(-5, 5), st.just(math.nan))}


@st.composite
def _metrics_file(draw: st.DrawFn) -> DataFile:
    count = draw(st.integers(1, 6))

    def counts(most: int) -> dict[int, int] | None:
        return draw(st.one_of(st.none(), st.dictionaries(st.sampled_from([1, 3]), st.integers(0, most), max_size=2)))

    def bounds() -> dict[int, object] | None:
        chosen = draw(st.lists(st.sampled_from([1, 3]), unique=True, max_size=2))
        return {fid: draw(_METRIC_COLUMNS[fid]) for fid in chosen}

    return data_file(count, values=counts(count), nulls=counts(count), nans=counts(count), lower=bounds(), upper=bounds())


_COMPARISON = st.tuples(st.sampled_from(["id", "d"]), st.sampled_from(["<", "<=", ">", ">=", "=", "!=", "in"]),
                        st.integers(-6, 6)).map(lambda t: f"{t[0]} in ({t[2]}, 0)" if t[1] == "in" else f"{t[0]} {t[1]} {t[2]}")


@settings(max_examples=400, deadline=None)
@given(f=_metrics_file(), parts=st.lists(_COMPARISON, min_size=1, max_size=3), joiner=st.sampled_from([" and ", " or "]),
       negate=st.booleans())
def test_compiled_inclusive_metrics_match_the_visitor(f: DataFile, parts: list[str], joiner: str, negate: bool) -> None:
    from floe.expressions.metrics_evaluator import _MayMatch
    from floe.expressions.visitors import visit

    text = joiner.join(parts)
    evaluator = InclusiveMetricsEvaluator(SCHEMA, parse_filter(f"not ({text})" if negate else text))
    assert evaluator.eval(f) == visit(evaluator.expr, _MayMatch(f)), text
