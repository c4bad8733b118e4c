"""Inclusive and strict projection of row filters onto partition filters (spec "Scan Planning").

Inclusive: every row matching the row filter has a partition tuple matching the projection (used to
prune partitions and manifests). Strict: every row whose partition tuple matches the projection matches
the row filter (used for residuals and metadata-only deletes). A predicate a transform cannot project
becomes AlwaysTrue (inclusive) or AlwaysFalse (strict). Results are unbound expressions over partition
field names, in the partition fields' value representation.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression, and_, or_
from floe.expressions.binding import bind
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
    NotNaN,
    NotNull,
    NotStartsWith,
    Predicate,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from floe.expressions.terms import Reference
from floe.expressions.visitors import BooleanExpressionVisitor, rewrite_not, visit
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.transforms.base import Transform
from floe.spec.transforms.bucket import BucketTransform
from floe.spec.transforms.identity import IdentityTransform
from floe.spec.transforms.temporal import DayTransform, TimeTransform
from floe.spec.transforms.truncate import TruncateTransform
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
)

__all__ = [
    "Projection",
    "bound_inclusive_projection",
    "inclusive_projection",
    "project_predicate",
    "strict_projection",
]

_INT_BOUNDS: dict[type[IcebergType], tuple[int, int]] = {
    IntegerType: (-(2**31), 2**31 - 1),
    LongType: (-(2**63), 2**63 - 1),
}


def _step(source_type: IcebergType, value: object, delta: int) -> object | None:
    """The next (delta=1) or previous (delta=-1) source value, or None past the type's range."""
    if isinstance(value, Decimal) and isinstance(source_type, DecimalType):
        return value + Decimal(delta).scaleb(-source_type.scale)
    if isinstance(value, int) and not isinstance(value, bool):
        bounds = _INT_BOUNDS.get(type(source_type))
        out = value + delta
        if bounds is not None and not bounds[0] <= out <= bounds[1]:
            return None
        return out
    return None


def _fix_time(pred: BooleanExpression | None, *, strict: bool) -> BooleanExpression | None:
    """Widen (inclusive) or narrow (strict) a temporal projection for pre-epoch values.

    Older Iceberg writers rounded pre-epoch timestamps toward zero, so a partition value p < 0 may hold
    rows of unit p - 1 rounded up to p; treating p + 1 like p keeps pruning correct for such files, as
    Iceberg Java's projection does.
    """
    if not isinstance(pred, (LiteralPredicate, SetPredicate)):
        return pred
    term = pred.term
    if isinstance(pred, SetPredicate):
        values = set(pred.values)
        extra = {v + 1 for v in values if isinstance(v, int) and v < 0}
        if not extra or (strict and isinstance(pred, In)) or (not strict and isinstance(pred, NotIn)):
            return pred
        return type(pred)(term, values | extra)
    p = pred.value
    if not isinstance(p, int):
        return pred
    if not strict:
        if isinstance(pred, (LessThan, LessThanOrEqual)) and p < 0:
            return type(pred)(term, p + 1)
        if isinstance(pred, EqualTo) and p < 0:
            return In(term, (p, p + 1))
        return pred
    if isinstance(pred, (GreaterThan, GreaterThanOrEqual)) and p <= 0:
        return type(pred)(term, p + 1)
    if isinstance(pred, NotEqualTo) and p < 0:
        return NotIn(term, (p, p + 1))
    return pred


def _project_unary(pred: UnaryPredicate, transform: Transform, name: str) -> BooleanExpression | None:
    term = Reference(name)
    if isinstance(pred, (IsNull, NotNull)):
        # every transform except void maps null to null and non-null to non-null
        return None if transform.is_void else type(pred)(term)
    if isinstance(pred, (IsNaN, NotNaN)) and isinstance(transform, IdentityTransform):
        return type(pred)(term)
    return None


def _project_set(
    pred: Predicate, apply: Callable[[object], object], term: Reference, *, strict: bool
) -> BooleanExpression | None:
    """A set predicate through a monotone transform: only ``in`` projects inclusively, ``not in`` strictly."""
    if isinstance(pred, In if not strict else NotIn):
        return type(pred)(term, {apply(v) for v in pred.values})
    return None


def _project_ordered(
    pred: Predicate, apply: Callable[[object], object], source_type: IcebergType, name: str, *, strict: bool
) -> BooleanExpression | None:
    """Projection through a monotone truncating transform of a numeric or temporal source."""
    term = Reference(name)
    if not isinstance(pred, LiteralPredicate):
        return _project_set(pred, apply, term, strict=strict)
    v = pred.value

    def at(delta: int) -> object | None:
        stepped = _step(source_type, v, delta)
        return None if stepped is None else apply(stepped)

    if not strict:
        if isinstance(pred, LessThan):
            prev = at(-1)
            return None if prev is None else LessThanOrEqual(term, prev)
        if isinstance(pred, LessThanOrEqual):
            return LessThanOrEqual(term, apply(v))
        if isinstance(pred, GreaterThan):
            nxt = at(1)
            return None if nxt is None else GreaterThanOrEqual(term, nxt)
        if isinstance(pred, GreaterThanOrEqual):
            return GreaterThanOrEqual(term, apply(v))
        if isinstance(pred, EqualTo):
            return EqualTo(term, apply(v))
        return None
    if isinstance(pred, LessThan):
        return LessThan(term, apply(v))
    if isinstance(pred, LessThanOrEqual):
        nxt = at(1)
        return None if nxt is None else LessThan(term, nxt)
    if isinstance(pred, GreaterThan):
        return GreaterThan(term, apply(v))
    if isinstance(pred, GreaterThanOrEqual):
        prev = at(-1)
        return None if prev is None else GreaterThan(term, prev)
    if isinstance(pred, NotEqualTo):
        return NotEqualTo(term, apply(v))
    return None


def _project_truncated_text(
    pred: Predicate, apply: Callable[[object], object], width: int, name: str, *, strict: bool
) -> BooleanExpression | None:
    """Projection through truncate[W] of strings (code points) or binary (bytes): a monotone prefix."""
    term = Reference(name)
    if not isinstance(pred, LiteralPredicate):
        return _project_set(pred, apply, term, strict=strict)
    v = pred.value
    if isinstance(pred, StartsWith):
        assert isinstance(v, str)
        if len(v) < width:
            return StartsWith(term, v)
        if strict:
            return StartsWith(term, v) if len(v) == width else None
        return EqualTo(term, v[:width])
    if isinstance(pred, NotStartsWith):
        assert isinstance(v, str)
        if len(v) <= width:
            return NotStartsWith(term, v)
        # x[:W] != v[:W] means x cannot start with v
        return NotEqualTo(term, v[:width]) if strict else None
    tv = apply(v)
    if not strict:
        if isinstance(pred, (LessThan, LessThanOrEqual)):
            return LessThanOrEqual(term, tv)
        if isinstance(pred, (GreaterThan, GreaterThanOrEqual)):
            return GreaterThanOrEqual(term, tv)
        if isinstance(pred, EqualTo):
            return EqualTo(term, tv)
        return None
    if isinstance(pred, (LessThan, LessThanOrEqual)):
        return LessThan(term, tv)
    if isinstance(pred, (GreaterThan, GreaterThanOrEqual)):
        return GreaterThan(term, tv)
    if isinstance(pred, NotEqualTo):
        return NotEqualTo(term, tv)
    return None


def project_predicate(
    pred: Predicate, transform: Transform, source_type: IcebergType, partition_name: str, *, strict: bool
) -> BooleanExpression | None:
    """Project one bound predicate through one partition field's transform.

    Args:
        pred: a bound predicate on the partition field's source column.
        transform: the partition field's transform.
        source_type: the source column's type.
        partition_name: the partition field's name (the projected predicate's term).
        strict: strict instead of inclusive projection.

    Returns:
        An unbound predicate on ``partition_name``, or None when the transform cannot project ``pred``.
    """
    if isinstance(pred, UnaryPredicate):
        return _project_unary(pred, transform, partition_name)
    if isinstance(transform, IdentityTransform):
        if isinstance(pred, LiteralPredicate):
            return type(pred)(Reference(partition_name), pred.value)
        if isinstance(pred, SetPredicate):
            return type(pred)(Reference(partition_name), pred.values)
        return None

    def apply(value: object) -> object:
        return transform.apply(source_type, value)

    term = Reference(partition_name)
    if isinstance(transform, BucketTransform):
        # hashing keeps only equality: = / in project inclusively, != / not in strictly
        if not strict and isinstance(pred, EqualTo):
            return EqualTo(term, apply(pred.value))
        if not strict and isinstance(pred, In):
            return In(term, {apply(v) for v in pred.values})
        if strict and isinstance(pred, NotEqualTo):
            return NotEqualTo(term, apply(pred.value))
        if strict and isinstance(pred, NotIn):
            return NotIn(term, {apply(v) for v in pred.values})
        return None
    if isinstance(transform, TruncateTransform):
        if isinstance(source_type, (StringType, BinaryType)):
            return _project_truncated_text(pred, apply, transform.width, partition_name, strict=strict)
        return _project_ordered(pred, apply, source_type, partition_name, strict=strict)
    if isinstance(transform, TimeTransform):
        projected = _project_ordered(pred, apply, source_type, partition_name, strict=strict)
        if isinstance(transform, DayTransform) and isinstance(source_type, DateType):
            return projected  # day of a date is the date itself: never mis-rounded
        return _fix_time(projected, strict=strict)
    return None  # void, and transforms Floe does not know, project nothing


class _Projector(BooleanExpressionVisitor[BooleanExpression]):
    def __init__(self, schema: Schema, spec: PartitionSpec, strict: bool) -> None:
        self.schema = schema
        self.strict = strict
        self.by_source: dict[int, list[PartitionField]] = {}
        for f in spec.fields:
            if len(f.source_ids) == 1:  # multi-argument (v3) transforms project nothing
                self.by_source.setdefault(f.source_id, []).append(f)

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        raise ValueError("projection requires an expression without Not (apply rewrite_not first)")

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> BooleanExpression:
        ref = predicate.ref
        results: list[BooleanExpression] = []
        for field in self.by_source.get(ref.field_id, ()):
            projected = project_predicate(
                predicate, field.transform, ref.field_type, field.name, strict=self.strict
            )
            if projected is not None:
                results.append(projected)
        # Inclusive: each partition field's projection must hold, so all of them do (and).
        # Strict: any one that holds guarantees the row predicate (or).
        if self.strict:
            return or_(*results) if results else AlwaysFalse()
        return and_(*results) if results else AlwaysTrue()


class Projection:
    """Projects row filters of one schema onto one partition spec."""

    __slots__ = ("case_sensitive", "schema", "spec")

    def __init__(self, schema: Schema, spec: PartitionSpec, *, case_sensitive: bool = True) -> None:
        self.schema = schema
        self.spec = spec
        self.case_sensitive = case_sensitive

    def _prepare(self, expr: BooleanExpression) -> BooleanExpression:
        return rewrite_not(bind(self.schema, expr, self.case_sensitive))

    def inclusive(self, expr: BooleanExpression) -> BooleanExpression:
        """A partition filter matched by the partition of every row matching ``expr``."""
        return visit(self._prepare(expr), _Projector(self.schema, self.spec, strict=False))

    def strict(self, expr: BooleanExpression) -> BooleanExpression:
        """A partition filter whose matching partitions hold only rows matching ``expr``."""
        return visit(self._prepare(expr), _Projector(self.schema, self.spec, strict=True))


def inclusive_projection(
    schema: Schema, spec: PartitionSpec, expr: BooleanExpression, *, case_sensitive: bool = True
) -> BooleanExpression:
    """Inclusive projection of the row filter ``expr`` onto ``spec`` (unbound, over partition names).

    Raises:
        ValidationError: ``expr`` does not bind to ``schema``.
    """
    return Projection(schema, spec, case_sensitive=case_sensitive).inclusive(expr)


def bound_inclusive_projection(
    schema: Schema,
    spec: PartitionSpec,
    expr: BooleanExpression,
    *,
    case_sensitive: bool = True,
    partition_type: StructType | None = None,
) -> BooleanExpression:
    """Inclusive projection of ``expr`` onto ``spec``, bound to the partition type.

    Args:
        schema: the schema ``expr`` binds to.
        spec: the partition spec to project onto.
        expr: the row filter.
        case_sensitive: match column names case-sensitively.
        partition_type: ``spec``'s partition type; default ``spec.partition_type(schema)``.

    Raises:
        ValidationError: ``expr`` does not bind to ``schema``.
    """
    projected = inclusive_projection(schema, spec, expr, case_sensitive=case_sensitive)
    ptype = spec.partition_type(schema) if partition_type is None else partition_type
    return bind(ptype, projected, True)


def strict_projection(
    schema: Schema, spec: PartitionSpec, expr: BooleanExpression, *, case_sensitive: bool = True
) -> BooleanExpression:
    """Strict projection of the row filter ``expr`` onto ``spec`` (unbound, over partition names).

    Raises:
        ValidationError: ``expr`` does not bind to ``schema``.
    """
    return Projection(schema, spec, case_sensitive=case_sensitive).strict(expr)
