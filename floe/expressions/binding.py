"""Binding: resolve column names against a schema and convert literals to the column types.

Follows Iceberg's binding rules: null checks on required columns fold to constants; NaN checks on
non-floating columns fold to constants; literals beyond the column type's range fold the comparison to
AlwaysTrue / AlwaysFalse; set predicates drop impossible values and collapse to = / != for one value.
"""

from __future__ import annotations

import math

from floe.errors import ValidationError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression, not_
from floe.expressions.literals import OutOfRange, convert_literal
from floe.expressions.predicates import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Predicate,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from floe.expressions.terms import BoundReference, Reference
from floe.expressions.visitors import BooleanExpressionVisitor, visit
from floe.spec.schema import Schema
from floe.spec.types import DoubleType, FloatType, NestedField, StringType, StructType

__all__ = ["bind", "bind_reference"]


def _as_schema(schema: Schema | StructType) -> Schema:
    return schema if isinstance(schema, Schema) else Schema(*schema.fields)


def bind_reference(schema: Schema | StructType, name: str, *, case_sensitive: bool = True) -> BoundReference:
    """Resolve a (dotted) column name to a BoundReference.

    Raises:
        ValidationError: no such column, or the column is inside a list or map.
    """
    s = _as_schema(schema)
    found = s.find_field_or_none(name, case_sensitive)
    if found is None:
        cols = ", ".join(s.column_names)
        raise ValidationError(
            f"Cannot bind column {name!r}: not found in schema {s.schema_id} (columns: {cols})"
        )
    path = s.accessor_path(found.field_id)
    parts: list[str] = []
    positions: list[int] = []
    struct: StructType = s.as_struct()
    for i, fid in enumerate(path):
        pos, child = _child(struct, fid)
        if child is None:
            raise ValidationError(
                f"Cannot bind column {name!r}: it is inside a list or map; predicates apply only to "
                "top-level columns and fields of structs"
            )
        parts.append(child.name)
        positions.append(pos)
        if i < len(path) - 1:
            if not isinstance(child.field_type, StructType):
                raise ValidationError(
                    f"Cannot bind column {name!r}: it is inside a list or map ({child.name!r} is "
                    f"{child.field_type}); predicates apply only to top-level columns and fields of structs"
                )
            struct = child.field_type
    return BoundReference(
        field=found, name_parts=tuple(parts), path_ids=tuple(path), positions=tuple(positions)
    )


def _child(struct: StructType, field_id: int) -> tuple[int, NestedField | None]:
    for i, f in enumerate(struct.fields):
        if f.field_id == field_id:
            return i, f
    return -1, None


def _name_of(pred: Predicate) -> str:
    term = pred.term
    return term.name if isinstance(term, (Reference, BoundReference)) else str(term)


def _fold_out_of_range(pred: LiteralPredicate, marker: OutOfRange) -> BooleanExpression:
    # A literal above the column's max: x < v, x <= v, x != v hold for every value; the rest for none.
    true_when_above = (LessThan, LessThanOrEqual, NotEqualTo)
    true_when_below = (GreaterThan, GreaterThanOrEqual, NotEqualTo)
    holds = isinstance(pred, true_when_above if marker.above else true_when_below)
    return AlwaysTrue() if holds else AlwaysFalse()


def _bind_predicate(schema: Schema, pred: Predicate, case_sensitive: bool) -> BooleanExpression:
    name = _name_of(pred)
    ref = bind_reference(schema, name, case_sensitive=case_sensitive)
    ftype = ref.field_type
    if isinstance(pred, UnaryPredicate):
        if isinstance(pred, (IsNull, NotNull)):
            if ref.field.required:
                return AlwaysFalse() if isinstance(pred, IsNull) else AlwaysTrue()
            return type(pred)(ref)
        # Only floating-point columns hold NaN; Iceberg folds NaN checks on others to constants.
        if not isinstance(ftype, (FloatType, DoubleType)):
            return AlwaysFalse() if isinstance(pred, IsNaN) else AlwaysTrue()
        return type(pred)(ref)
    if not ftype.is_primitive:
        raise ValidationError(f"Cannot bind {pred}: column {ref.name!r} has non-primitive type {ftype}")
    if isinstance(pred, LiteralPredicate):
        if isinstance(pred, (StartsWith, NotStartsWith)):
            if not isinstance(ftype, StringType):
                raise ValidationError(
                    f"Cannot bind {pred}: starts with needs a string column, {ref.name!r} is {ftype}"
                )
            if not isinstance(pred.value, str):
                raise ValidationError(f"Cannot bind {pred}: the prefix must be a string, got {pred.value!r}")
        value = convert_literal(pred.value, ftype, column=ref.name)
        if isinstance(value, OutOfRange):
            return _fold_out_of_range(pred, value)
        if isinstance(value, float) and math.isnan(value):
            raise ValidationError(
                f"Cannot bind {pred}: NaN is not a comparison literal; use is_nan / not_nan"
            )
        return type(pred)(ref, value)
    if isinstance(pred, SetPredicate):
        kept: set[object] = set()
        for v in pred.values:
            converted = convert_literal(v, ftype, column=ref.name)
            if isinstance(converted, OutOfRange):
                continue  # no column value equals it: drop from In (never matches) and NotIn (always holds)
            if isinstance(converted, float) and math.isnan(converted):
                raise ValidationError(f"Cannot bind {pred}: NaN is not a set literal; use is_nan / not_nan")
            kept.add(converted)
        if isinstance(pred, In):
            if not kept:
                return AlwaysFalse()
            return EqualTo(ref, next(iter(kept))) if len(kept) == 1 else In(ref, kept)
        if not kept:
            return AlwaysTrue()
        return NotEqualTo(ref, next(iter(kept))) if len(kept) == 1 else NotIn(ref, kept)
    raise TypeError(f"unknown predicate {pred!r}")


class _Binder(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, schema: Schema, case_sensitive: bool) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        return not_(child_result)

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return left_result & right_result

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return left_result | right_result

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        return _bind_predicate(self.schema, predicate, self.case_sensitive)


def bind(
    schema: Schema | StructType, expr: BooleanExpression, case_sensitive: bool = True
) -> BooleanExpression:
    """Bind every predicate of ``expr`` to ``schema`` (a Schema or a partition StructType).

    Already-bound predicates are re-bound by name. Constant sub-expressions are folded.

    Raises:
        ValidationError: unknown column, literal of the wrong type, or an unsupported operation (the
            message names the column, type and value).
    """
    return visit(expr, _Binder(_as_schema(schema), case_sensitive))
