"""File pruning from column metrics (spec "Scan Planning", manifest ``data_file`` metrics).

``InclusiveMetricsEvaluator``: may a data file contain rows matching the filter? (False only when its
record count, null/NaN counts or lower/upper bounds prove no row can.) ``StrictMetricsEvaluator``: do
all rows of the file match? (True only when the metrics prove it; used for metadata-only deletes.)

Missing metrics mean "unknown". Bounds may be truncated (strings, binary): a truncated lower bound is a
prefix of the true minimum and a truncated upper bound is incremented past the true maximum, so both
stay valid bounds; only their exactness is lost. NaN never appears in bounds; a NaN bound written by
old writers is ignored. Evaluation semantics match ``floe.expressions.evaluator``.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable, Mapping
from typing import Any

from floe.errors import UnsupportedError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Or
from floe.expressions.binding import bind
from floe.expressions.predicates import EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual
from floe.expressions.terms import BoundReference
from floe.expressions.visitors import BoundPredicateVisitor, rewrite_not, visit
from floe.serde.single_value import decoder_for, from_bytes
from floe.spec.manifest import DataFile
from floe.spec.schema import Schema
from floe.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

__all__ = ["InclusiveMetricsEvaluator", "StrictMetricsEvaluator"]

_IN_LIMIT = 200
_INTEGRAL = (IntegerType, LongType, DateType)


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


class _Metrics(BoundPredicateVisitor[bool]):
    """Reads one file's metrics per field id; subclasses decide the predicate rules."""

    def __init__(self, f: DataFile) -> None:
        self.file = f
        self.values = f.value_counts or {}
        self.nulls = f.null_value_counts or {}
        self.nans = f.nan_value_counts or {}
        self.lowers = f.lower_bounds or {}
        self.uppers = f.upper_bounds or {}

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child_result: bool) -> bool:
        raise ValueError("metrics evaluation requires an expression without Not")

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    # -- metric helpers -------------------------------------------------------------------------
    def _bound(self, bounds: Mapping[int, bytes], term: BoundReference) -> object | None:
        raw = bounds.get(term.field_id)
        if raw is None:
            return None
        value = from_bytes(term.field_type, raw)
        return None if _is_nan(value) else value

    def lower(self, term: BoundReference) -> object | None:
        return self._bound(self.lowers, term)

    def upper(self, term: BoundReference) -> object | None:
        return self._bound(self.uppers, term)

    def nulls_only(self, term: BoundReference) -> bool:
        fid = term.field_id
        return fid in self.values and fid in self.nulls and self.values[fid] == self.nulls[fid]

    def nans_only(self, term: BoundReference) -> bool:
        fid = term.field_id
        return fid in self.values and fid in self.nans and self.values[fid] == self.nans[fid]

    def no_nulls(self, term: BoundReference) -> bool:
        return term.field.required or self.nulls.get(term.field_id) == 0

    def no_nans(self, term: BoundReference) -> bool:
        if not isinstance(term.field_type, (FloatType, DoubleType)):
            return True
        return self.nans.get(term.field_id) == 0


class _MayMatch(_Metrics):
    def visit_is_null(self, term: BoundReference) -> bool:
        return not self.no_nulls(term)

    def visit_not_null(self, term: BoundReference) -> bool:
        return not self.nulls_only(term)

    def visit_is_nan(self, term: BoundReference) -> bool:
        return self.nans.get(term.field_id) != 0 and not self.nulls_only(term)

    def visit_not_nan(self, term: BoundReference) -> bool:
        return not self.nans_only(term)

    def _compare(self, term: BoundReference, use_lower: bool, ok: Callable[[object], bool]) -> bool:
        if self.nulls_only(term) or self.nans_only(term):
            return False  # comparisons never hold for null or NaN
        bound = self.lower(term) if use_lower else self.upper(term)
        return bound is None or ok(bound)

    def visit_less_than(self, term: BoundReference, value: object) -> bool:
        return self._compare(term, True, lambda lo: lo < value)  # type: ignore[operator]

    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> bool:
        return self._compare(term, True, lambda lo: lo <= value)  # type: ignore[operator]

    def visit_greater_than(self, term: BoundReference, value: object) -> bool:
        return self._compare(term, False, lambda hi: hi > value)  # type: ignore[operator]

    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> bool:
        return self._compare(term, False, lambda hi: hi >= value)  # type: ignore[operator]

    def visit_equal(self, term: BoundReference, value: object) -> bool:
        return self._compare(term, True, lambda lo: lo <= value) and self._compare(  # type: ignore[operator]
            term,
            False,
            lambda hi: hi >= value,  # type: ignore[operator]
        )

    def visit_not_equal(self, term: BoundReference, value: object) -> bool:
        return True

    def visit_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        if self.nulls_only(term) or self.nans_only(term):
            return False
        if len(values) > _IN_LIMIT:
            return True
        lo, hi = self.lower(term), self.upper(term)
        return any((lo is None or v >= lo) and (hi is None or v <= hi) for v in values)  # type: ignore[operator]

    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        return True

    def visit_starts_with(self, term: BoundReference, value: object) -> bool:
        if self.nulls_only(term):
            return False
        assert isinstance(value, str)
        n = len(value)
        lo, hi = self.lower(term), self.upper(term)
        if isinstance(lo, str) and lo[:n] > value:
            return False
        return not (isinstance(hi, str) and hi[:n] < value)

    def visit_not_starts_with(self, term: BoundReference, value: object) -> bool:
        if not self.no_nulls(term):
            return True  # a null row satisfies "not starts with"
        lo, hi = self.lower(term), self.upper(term)
        assert isinstance(value, str)
        # every value lies between two strings with the prefix, so has it
        return not (
            isinstance(lo, str) and isinstance(hi, str) and lo.startswith(value) and hi.startswith(value)
        )


class _MustMatch(_Metrics):
    def visit_is_null(self, term: BoundReference) -> bool:
        return self.nulls_only(term)

    def visit_not_null(self, term: BoundReference) -> bool:
        return self.no_nulls(term)

    def visit_is_nan(self, term: BoundReference) -> bool:
        return self.nans_only(term)

    def visit_not_nan(self, term: BoundReference) -> bool:
        return self.no_nans(term) or self.nulls_only(term)

    def _all(self, term: BoundReference, use_lower: bool, ok: Callable[[object], bool]) -> bool:
        if not (self.no_nulls(term) and self.no_nans(term)):
            return False
        bound = self.lower(term) if use_lower else self.upper(term)
        return bound is not None and ok(bound)

    def visit_less_than(self, term: BoundReference, value: object) -> bool:
        return self._all(term, False, lambda hi: hi < value)  # type: ignore[operator]

    def visit_less_than_or_equal(self, term: BoundReference, value: object) -> bool:
        return self._all(term, False, lambda hi: hi <= value)  # type: ignore[operator]

    def visit_greater_than(self, term: BoundReference, value: object) -> bool:
        return self._all(term, True, lambda lo: lo > value)  # type: ignore[operator]

    def visit_greater_than_or_equal(self, term: BoundReference, value: object) -> bool:
        return self._all(term, True, lambda lo: lo >= value)  # type: ignore[operator]

    def visit_equal(self, term: BoundReference, value: object) -> bool:
        return self._all(term, True, lambda lo: lo == value) and self._all(
            term, False, lambda hi: hi == value
        )

    def _outside(self, term: BoundReference, value: object) -> bool:
        lo, hi = self.lower(term), self.upper(term)
        return (lo is not None and lo > value) or (hi is not None and hi < value)  # type: ignore[operator]

    def visit_not_equal(self, term: BoundReference, value: object) -> bool:
        # null != v and NaN != v both hold, so nulls and NaNs never spoil "not equal"
        return self.nulls_only(term) or self.nans_only(term) or self._outside(term, value)

    def visit_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        if not (self.no_nulls(term) and self.no_nans(term)):
            return False
        lo, hi = self.lower(term), self.upper(term)
        if lo is None or hi is None:
            return False
        if lo == hi:
            return lo in values
        if isinstance(term.field_type, _INTEGRAL) and isinstance(lo, int) and isinstance(hi, int):
            # every integer in [lo, hi] listed -> every value is in the set
            return hi - lo < _IN_LIMIT and all(v in values for v in range(lo, hi + 1))
        return False

    def visit_not_in(self, term: BoundReference, values: frozenset[object]) -> bool:
        if self.nulls_only(term) or self.nans_only(term):
            return True
        return all(self._outside(term, v) for v in values)

    def visit_starts_with(self, term: BoundReference, value: object) -> bool:
        if not self.no_nulls(term):
            return False
        lo, hi = self.lower(term), self.upper(term)
        assert isinstance(value, str)
        return isinstance(lo, str) and isinstance(hi, str) and lo.startswith(value) and hi.startswith(value)

    def visit_not_starts_with(self, term: BoundReference, value: object) -> bool:
        if self.nulls_only(term):
            return True
        lo, hi = self.lower(term), self.upper(term)
        assert isinstance(value, str)
        n = len(value)
        return (isinstance(lo, str) and lo[:n] > value) or (isinstance(hi, str) and hi[:n] < value)


# A data file's pruning test, compiled once per filter (planning runs it per manifest entry: a million
# entries for a big table, where a visitor object and its dispatch per entry cost more than the metrics).
_FileTest = Callable[[DataFile], bool]


def _compiled_may_match(expr: BooleanExpression) -> _FileTest:
    """``expr`` (bound, without Not) as _MayMatch evaluates it: comparisons, And and Or as closures over
    the field id, bound decoder and literal; other predicates through the visitor."""
    if isinstance(expr, AlwaysTrue):
        return lambda f: True
    if isinstance(expr, AlwaysFalse):
        return lambda f: False
    if isinstance(expr, And):
        left, right = _compiled_may_match(expr.left), _compiled_may_match(expr.right)
        return lambda f: left(f) and right(f)
    if isinstance(expr, Or):
        left, right = _compiled_may_match(expr.left), _compiled_may_match(expr.right)
        return lambda f: left(f) or right(f)
    term = getattr(expr, "term", None)
    kinds = (LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual, EqualTo)
    if not isinstance(expr, kinds) or not isinstance(term, BoundReference):
        return lambda f: visit(expr, _MayMatch(f))
    return _comparison(expr, term)


def _comparison(
    expr: LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual | EqualTo, term: BoundReference
) -> _FileTest:
    """One comparison's test: False when the file's values are all null or all NaN, or a bound proves no
    value compares (NaN bounds ignored, as _MayMatch.lower/upper)."""
    fid, ftype, value = term.field_id, term.field_type, expr.value
    try:
        decode = decoder_for(ftype)
    except UnsupportedError:  # no single-value form: the visitor decides as before
        return lambda f: visit(expr, _MayMatch(f))
    floating = isinstance(ftype, (FloatType, DoubleType))

    def bound(raw: bytes | None) -> object | None:
        if raw is None:
            return None
        try:
            v = decode(raw)
        except (struct.error, UnicodeDecodeError, ValueError):
            v = from_bytes(ftype, raw)  # raises the one-line error naming the type and bytes
        return None if floating and _is_nan(v) else v

    # (bound, literal) -> may a value compare: the lower bound for < and <=, the upper for > and >=, both for =
    lower_ok: Callable[[Any, Any], bool] | None = None
    upper_ok: Callable[[Any, Any], bool] | None = None
    if isinstance(expr, LessThan):
        lower_ok = operator.lt
    elif isinstance(expr, LessThanOrEqual):
        lower_ok = operator.le
    elif isinstance(expr, GreaterThan):
        upper_ok = operator.gt
    elif isinstance(expr, GreaterThanOrEqual):
        upper_ok = operator.ge
    else:
        lower_ok, upper_ok = operator.le, operator.ge

    def test(f: DataFile) -> bool:
        values = f.value_counts
        if values and fid in values:
            count = values[fid]
            nulls, nans = f.null_value_counts, f.nan_value_counts
            if (nulls and nulls.get(fid) == count) or (nans and nans.get(fid) == count):
                return False  # comparisons never hold for null or NaN
        if lower_ok is not None and f.lower_bounds:
            lo = bound(f.lower_bounds.get(fid))
            if lo is not None and not lower_ok(lo, value):
                return False
        if upper_ok is not None and f.upper_bounds:
            hi = bound(f.upper_bounds.get(fid))
            if hi is not None and not upper_ok(hi, value):
                return False
        return True

    return test


# The part of the inclusive test the C manifest decoder runs on raw entries (floe/serde/_avro_native.c):
# comparisons of columns whose single-value form is a little-endian integer of this many bytes.
_PREFILTER_WIDTHS: dict[type, int] = {
    IntegerType: 4, DateType: 4, LongType: 8, TimeType: 8, TimestampType: 8, TimestamptzType: 8,
    TimestampNanoType: 8, TimestamptzNanoType: 8,
}
_PREFILTER_OPS: dict[type, str] = {
    LessThan: "lt", LessThanOrEqual: "le", GreaterThan: "gt", GreaterThanOrEqual: "ge", EqualTo: "eq",
}
_TRUE_SPEC = ("true",)


def _prefilter(expr: BooleanExpression) -> tuple[Any, ...]:
    """``expr`` (bound, without Not) as a prefilter spec: ("and"|"or", a, b), ("cmp", field id, op, literal,
    width), or ("true",) for what the C test cannot decide (it then keeps the file; the full test decides)."""
    if isinstance(expr, (And, Or)):
        left, right = _prefilter(expr.left), _prefilter(expr.right)
        if isinstance(expr, Or):
            return _TRUE_SPEC if _TRUE_SPEC in (left, right) else ("or", left, right)
        if left == _TRUE_SPEC or right == _TRUE_SPEC:
            return right if left == _TRUE_SPEC else left
        return ("and", left, right)
    op = _PREFILTER_OPS.get(type(expr))
    term = getattr(expr, "term", None)
    if op is None or not isinstance(term, BoundReference):
        return _TRUE_SPEC
    width = _PREFILTER_WIDTHS.get(type(term.field_type))
    value = getattr(expr, "value", None)
    if width is None or type(value) is not int or not -(1 << 63) <= value < (1 << 63):
        return _TRUE_SPEC
    return ("cmp", term.field_id, op, value, width)


class InclusiveMetricsEvaluator:
    """May a data file contain rows matching a row filter?"""

    __slots__ = ("_may_match", "expr", "include_empty_files", "prefilter")

    def __init__(
        self,
        schema: Schema,
        row_filter: BooleanExpression,
        *,
        case_sensitive: bool = True,
        include_empty_files: bool = False,
    ) -> None:
        """Bind ``row_filter`` to ``schema``.

        Raises:
            ValidationError: the filter does not bind.
        """
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))
        self.include_empty_files = include_empty_files
        self._may_match = _compiled_may_match(self.expr)
        # What the manifest decoder can test before building entries (None: nothing): a file it drops is one
        # eval() drops too; eval() still runs on every file it keeps.
        spec = _prefilter(self.expr)
        self.prefilter: tuple[Any, ...] | None = None if spec == _TRUE_SPEC else spec

    def eval(self, data_file: DataFile) -> bool:
        """False only when the metrics prove no row of ``data_file`` matches."""
        if data_file.record_count == 0:
            return self.include_empty_files
        if data_file.record_count < 0:
            return True  # unknown row count (some v1 writers)
        return self._may_match(data_file)


class StrictMetricsEvaluator:
    """Do all rows of a data file match a row filter?"""

    __slots__ = ("expr",)

    def __init__(self, schema: Schema, row_filter: BooleanExpression, *, case_sensitive: bool = True) -> None:
        """Bind ``row_filter`` to ``schema``.

        Raises:
            ValidationError: the filter does not bind.
        """
        self.expr = rewrite_not(bind(schema, row_filter, case_sensitive))

    def eval(self, data_file: DataFile) -> bool:
        """True only when the metrics prove every row of ``data_file`` matches."""
        if data_file.record_count <= 0:
            return data_file.record_count == 0
        return visit(self.expr, _MustMatch(data_file))
