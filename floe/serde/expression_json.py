"""Filter expressions in the REST spec's JSON (``PlanTableScanRequest.filter``, a task's ``residual-filter``).

``true``/``false`` (or the deprecated ``{"type": "true"}``), ``and``/``or`` with ``left``/``right``,
``not`` with ``child``, and predicates ``{"type": "eq", "term": "id", "value": 5}`` (``values`` for
``in``/``not-in``, no value for ``is-null``/``not-null``/``is-nan``/``not-nan``). Terms are column names
(or ``{"type": "reference", "term": name}``); transform terms are refused. Parsed values stay as JSON gave
them; binding converts them to the column's type (a timestamp from its ISO string), as for Floe's own
filters. Written values use the spec's single-value JSON for the bound column's type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from floe.errors import ValidationError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or
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
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from floe.expressions.terms import BoundReference, Reference
from floe.serde.json_types import JSON, default_to_json

__all__ = ["expression_from_json", "expression_to_json"]

_UNARY: dict[str, type[UnaryPredicate]] = {
    "is-null": IsNull, "not-null": NotNull, "is-nan": IsNaN, "not-nan": NotNaN,
}
_LITERAL: dict[str, type[LiteralPredicate]] = {
    "lt": LessThan, "lt-eq": LessThanOrEqual, "gt": GreaterThan, "gt-eq": GreaterThanOrEqual, "eq": EqualTo,
    "not-eq": NotEqualTo, "starts-with": StartsWith, "not-starts-with": NotStartsWith,
}
_SET: dict[str, type[SetPredicate]] = {"in": In, "not-in": NotIn}
_NAMES: dict[type, str] = {cls: name for table in (_UNARY, _LITERAL, _SET) for name, cls in table.items()}
_MAX_DEPTH = 64


def _term(node: Any) -> Reference:
    if isinstance(node, str) and node:
        return Reference(node)
    if isinstance(node, Mapping) and node.get("type") == "reference" and isinstance(node.get("term"), str):
        return Reference(node["term"])
    if isinstance(node, Mapping) and node.get("type") == "transform":
        raise ValidationError("Filter terms with transforms are not supported by floe serve; filter on columns")
    raise ValidationError(f"Invalid filter term {str(node)[:80]}: expected a column name")


def expression_from_json(node: Any, *, depth: int = 0) -> BooleanExpression:
    """An unbound expression from its REST JSON.

    Raises:
        ValidationError: an unknown type, a missing field, a transform term (one line naming it).
    """
    if depth > _MAX_DEPTH:
        raise ValidationError(f"Filter nested deeper than {_MAX_DEPTH} levels")
    if isinstance(node, bool):
        return AlwaysTrue() if node else AlwaysFalse()
    if not isinstance(node, Mapping):
        raise ValidationError(f"Invalid filter {str(node)[:80]}: expected an object or a boolean")
    kind = node.get("type")
    if kind == "true":
        return AlwaysTrue()
    if kind == "false":
        return AlwaysFalse()
    if kind in ("and", "or"):
        left = expression_from_json(node.get("left"), depth=depth + 1)
        right = expression_from_json(node.get("right"), depth=depth + 1)
        return And(left, right) if kind == "and" else Or(left, right)
    if kind == "not":
        return Not(expression_from_json(node.get("child"), depth=depth + 1))
    if isinstance(kind, str) and kind in _UNARY:
        return _UNARY[kind](_term(node.get("term")))
    if isinstance(kind, str) and kind in _LITERAL:
        if "value" not in node or isinstance(node["value"], (Mapping, list)) or node["value"] is None:
            raise ValidationError(f"Invalid {kind} filter: 'value' must be a single value")
        return _LITERAL[kind](_term(node.get("term")), node["value"])
    if isinstance(kind, str) and kind in _SET:
        values = node.get("values")
        if not isinstance(values, list) or any(isinstance(v, (Mapping, list)) or v is None for v in values):
            raise ValidationError(f"Invalid {kind} filter: 'values' must be a list of single values")
        return _SET[kind](_term(node.get("term")), values)
    raise ValidationError(f"Invalid filter: unknown expression type {str(kind)[:40]!r}")


def _value(term: object, value: object) -> JSON:
    if isinstance(term, BoundReference):
        return default_to_json(term.field_type, value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex().upper()
    return value if isinstance(value, (bool, int, float, str)) else str(value)


def expression_to_json(expr: BooleanExpression) -> JSON:
    """The REST JSON of an expression, bound or not (booleans for always true / false)."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, (And, Or)):
        return {"type": "and" if isinstance(expr, And) else "or", "left": expression_to_json(expr.left),
                "right": expression_to_json(expr.right)}
    if isinstance(expr, Not):
        return {"type": "not", "child": expression_to_json(expr.child)}
    term = getattr(expr, "term", None)
    name = term.name if isinstance(term, (Reference, BoundReference)) else str(term)
    kind = _NAMES.get(type(expr))
    if kind is None:
        raise ValidationError(f"Cannot write filter {expr} as REST JSON")
    if isinstance(expr, LiteralPredicate):
        return {"type": kind, "term": name, "value": _value(term, expr.value)}
    if isinstance(expr, SetPredicate):
        return {"type": kind, "term": name, "values": [_value(term, v) for v in expr.values]}
    return {"type": kind, "term": name}
