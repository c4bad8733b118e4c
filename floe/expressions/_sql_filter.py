"""The sqlglot half of filter parsing: a filter string -> sqlglot AST -> unbound Floe expression.

Kept apart from :mod:`floe.expressions.parser` so that importing :mod:`floe.expressions` (every commit and
scan path does) does not import sqlglot (~0.5 s); this module loads on the first parsed filter string.
sqlglot (Spark dialect, with double quotes also quoting identifiers) parses the text; this module turns
the AST into Floe predicates and rejects anything else with a ParseError quoting the fragment. Where a
literal belongs (``name = "foo"``, an in-list), a double-quoted token is a string as in Spark SQL, which is
how Iceberg's docs write ``rewrite_data_files(where => ...)``; on the column side it stays an identifier.
"""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import SqlglotError

from floe.errors import ParseError
from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression, and_, not_, or_
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
    StartsWith,
)
from floe.expressions.terms import Reference

__all__ = ["convert_filter"]


class _FilterDialect(Spark):
    """Spark SQL, except that double quotes quote identifiers (as in standard SQL) instead of strings."""

    class Tokenizer(Spark.Tokenizer):
        QUOTES: ClassVar[list[tuple[str, str] | str]] = ["'"]
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = ["`", '"']


_COMPARISONS: dict[type[exp.Expression], type[LiteralPredicate]] = {
    exp.EQ: EqualTo,
    exp.NEQ: NotEqualTo,
    exp.LT: LessThan,
    exp.LTE: LessThanOrEqual,
    exp.GT: GreaterThan,
    exp.GTE: GreaterThanOrEqual,
}
# literal op column  ==  column FLIPPED[op] literal
_FLIPPED: dict[type[LiteralPredicate], type[LiteralPredicate]] = {
    EqualTo: EqualTo,
    NotEqualTo: NotEqualTo,
    LessThan: GreaterThan,
    LessThanOrEqual: GreaterThanOrEqual,
    GreaterThan: LessThan,
    GreaterThanOrEqual: LessThanOrEqual,
}
# predicates whose negation is exactly "not p" on every row (nulls and NaN included), so "not p" can be
# folded into the predicate without changing results
_EXACT_NEGATION = (IsNull, NotNull, IsNaN, NotNaN, EqualTo, NotEqualTo, In, NotIn, StartsWith, NotStartsWith)


class _Converter:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: exp.Expression, why: str) -> ParseError:
        fragment = node.sql(dialect=_FilterDialect)
        return ParseError(f"Cannot parse filter {self.text!r}: {why}: {fragment!r}")

    # -- terms and literals ----------------------------------------------------------------------
    def column(self, node: exp.Expression) -> Reference | None:
        if isinstance(node, exp.Column):
            return Reference(".".join(p.name for p in node.parts))
        if isinstance(node, exp.Dot):
            parts: list[str] = []
            for part in node.flatten():
                if not isinstance(part, (exp.Identifier, exp.Column)):
                    return None
                parts.extend(p.name for p in part.parts) if isinstance(part, exp.Column) else parts.append(
                    part.name
                )
            return Reference(".".join(parts))
        return None

    def double_quoted(self, node: exp.Expression) -> str | None:
        """The text of a ``"..."`` token the tokenizer read as a column, else None (Spark: a string)."""
        if not isinstance(node, exp.Column) or len(node.parts) != 1:
            return None
        ident = node.this
        start = ident.meta.get("start") if isinstance(ident, exp.Identifier) and ident.quoted else None
        if isinstance(start, int) and 0 <= start < len(self.text) and self.text[start] == '"':
            return str(ident.name)
        return None

    def literal(self, node: exp.Expression) -> object:
        quoted = self.double_quoted(node)
        if quoted is not None:
            return quoted
        if isinstance(node, exp.Paren):
            return self.literal(node.this)
        if isinstance(node, exp.Neg):
            inner = self.literal(node.this)
            if isinstance(inner, (int, Decimal)) and not isinstance(inner, bool):
                return -inner
            raise self.fail(node, "only numbers can be negated")
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            text = node.this
            try:
                return int(text) if text.lstrip("+-").isdigit() else Decimal(text)
            except ArithmeticError:
                raise self.fail(node, "not a number") from None
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.HexString):
            try:
                return bytes.fromhex(node.this if len(node.this) % 2 == 0 else "0" + node.this)
            except ValueError:
                raise self.fail(node, "invalid hex literal") from None
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
            # DATE '...' / TIMESTAMP '...': the column type decides the conversion
            return node.this.this
        if isinstance(node, exp.Cast) and isinstance(node.this, (exp.Literal, exp.Neg, exp.Paren)):
            # CAST(5 AS BIGINT), as Spark's analyzer writes literals: the column type decides again
            return self.literal(node.this)
        if isinstance(node, exp.Concat) and all(
            isinstance(e, exp.Literal) and e.is_string for e in node.expressions
        ):
            # adjacent string literals concatenate in Spark SQL ('a' 'b' is 'ab')
            return "".join(e.this for e in node.expressions)
        if isinstance(node, exp.Null):
            raise self.fail(node, "null is not a comparison literal; use 'is null' / 'is not null'")
        raise self.fail(node, "expected a literal value")

    # -- predicates ------------------------------------------------------------------------------
    def convert(self, node: exp.Expression) -> BooleanExpression:
        if isinstance(node, exp.Paren):
            return self.convert(node.this)
        if isinstance(node, exp.And):
            return and_(self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.Or):
            return or_(self.convert(node.this), self.convert(node.expression))
        if isinstance(node, exp.Not):
            child = self.convert(node.this)
            return child.negate() if isinstance(child, _EXACT_NEGATION) else not_(child)
        if isinstance(node, exp.Boolean):
            return AlwaysTrue() if node.this else AlwaysFalse()
        if type(node) in _COMPARISONS:
            return self.comparison(node, _COMPARISONS[type(node)])
        if isinstance(node, exp.Is):
            return self.is_(node)
        if isinstance(node, exp.In):
            return self.in_(node)
        if isinstance(node, exp.Between):
            term = self.require_column(node.this, node)
            low, high = self.literal(node.args["low"]), self.literal(node.args["high"])
            return and_(GreaterThanOrEqual(term, low), LessThanOrEqual(term, high))
        if isinstance(node, exp.Like):
            return self.like(node)
        if isinstance(node, exp.IsNan):
            return IsNaN(self.require_column(node.this, node))
        col = self.column(node)
        if col is not None:
            return EqualTo(col, True)  # a bare boolean column
        raise self.fail(node, "unsupported expression")

    def require_column(self, node: exp.Expression, parent: exp.Expression) -> Reference:
        col = self.column(node)
        if col is None:
            raise self.fail(parent, "expected a column on one side")
        return col

    def comparison(self, node: exp.Expression, op: type[LiteralPredicate]) -> BooleanExpression:
        left, right = node.this, node.expression
        if self.double_quoted(left) is not None and self.double_quoted(right) is None and self.column(right):
            left, right, op = right, left, _FLIPPED[op]  # "foo" = name: the string is on the left
        col = self.column(left)
        if col is not None:
            return op(col, self.literal(right))
        col = self.column(right)
        if col is not None:
            return _FLIPPED[op](col, self.literal(left))
        raise self.fail(node, "a comparison needs a column and a literal")

    def is_(self, node: exp.Is) -> BooleanExpression:
        term = self.require_column(node.this, node)
        target = node.expression
        if isinstance(target, exp.Null):
            return IsNull(term)
        if isinstance(target, exp.Column) and not target.this.quoted and target.name.lower() == "nan":
            return IsNaN(term)
        if isinstance(target, exp.Boolean):
            return EqualTo(term, bool(target.this))
        raise self.fail(node, "expected 'is null', 'is nan', 'is true' or 'is false'")

    def in_(self, node: exp.In) -> BooleanExpression:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise self.fail(node, "subqueries are not supported")
        term = self.require_column(node.this, node)
        values = [self.literal(v) for v in node.expressions]
        if not values:
            raise self.fail(node, "empty in list")
        return In(term, values)

    def like(self, node: exp.Like) -> BooleanExpression:
        term = self.require_column(node.this, node)
        if node.args.get("escape") is not None:
            raise self.fail(node, "LIKE ... ESCAPE is not supported")
        pattern = self.literal(node.expression)
        if not isinstance(pattern, str):
            raise self.fail(node, "LIKE needs a string pattern")
        prefix, kind = _like_prefix(pattern)
        if kind == "other":
            raise ParseError(
                f"Cannot parse filter {self.text!r}: LIKE pattern {pattern!r} is not supported; only exact "
                "matches and prefixes ('abc%') are"
            )
        negated = bool(node.args.get("negate"))
        if kind == "exact":
            return NotEqualTo(term, prefix) if negated else EqualTo(term, prefix)
        return NotStartsWith(term, prefix) if negated else StartsWith(term, prefix)


def _like_prefix(pattern: str) -> tuple[str, str]:
    """Split a LIKE pattern into (literal text, kind): kind is exact, prefix or other."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        if c == "_":
            return "", "other"
        if c == "%":
            return ("".join(out), "prefix") if set(pattern[i:]) == {"%"} else ("", "other")
        out.append(c)
        i += 1
    return "".join(out), "exact"


def convert_filter(text: str) -> BooleanExpression:
    """Parse non-blank ``text`` with sqlglot and convert the tree (see ``parse_filter``).

    Raises:
        ParseError: the text is not valid or uses something unsupported (the message quotes it).
    """
    try:
        tree = sqlglot.parse_one(text, read=_FilterDialect)
    except SqlglotError as e:
        first = str(e).splitlines()[0]
        raise ParseError(f"Cannot parse filter {text!r}: {first}") from None
    if not isinstance(tree, exp.Expression):
        raise ParseError(f"Cannot parse filter {text!r}: not an expression")
    return _Converter(text).convert(tree)
