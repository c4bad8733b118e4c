"""Evaluate constant SQL expressions (sqlglot trees) to Python values: CALL arguments, VALUES, PARTITION.

Values: NULL -> None, booleans, integers -> int, decimals -> int/float as Spark reads them (``1.5`` is a
decimal literal in Spark, returned as ``decimal.Decimal``; ``1e3`` and ``1.5D`` as float), strings -> str,
``X'..'`` -> bytes, ``DATE '...'`` -> ``datetime.date``, ``TIMESTAMP '...'`` -> naive ``datetime.datetime``
(the session time zone applies, as in Spark; an explicit offset gives an aware datetime), ``array(...)`` -> list, ``map(...)`` -> dict.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from floe.errors import UnsupportedError, ValidationError

__all__ = ["evaluate", "is_constant"]


def is_constant(node: exp.Expression) -> bool:
    """Whether :func:`evaluate` can compute ``node`` without an engine."""
    try:
        evaluate(node)
    except (UnsupportedError, ValidationError):
        return False
    return True


def evaluate(node: exp.Expression) -> object:
    """The Python value of a constant expression.

    Raises:
        UnsupportedError: the expression is not a constant Floe can evaluate (names the expression).
        ValidationError: a typed literal has an invalid value (``DATE '2021-13-01'``).
    """
    if isinstance(node, exp.Paren):
        return evaluate(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, exp.Neg):
        v = evaluate(node.this)
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return -v
    if isinstance(node, exp.HexString):
        return bytes.fromhex(str(node.this))
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
        return _typed(node)
    if isinstance(node, exp.Array):
        return [evaluate(e) for e in node.expressions]
    if isinstance(node, exp.VarMap):
        keys = evaluate(node.args["keys"])
        values = evaluate(node.args["values"])
        assert isinstance(keys, list) and isinstance(values, list)
        return dict(zip(keys, values))
    if isinstance(node, exp.Map) and isinstance(node.args.get("keys"), exp.Array):
        return dict(zip(evaluate(node.args["keys"]), evaluate(node.args["values"])))  # type: ignore[call-overload]
    raise UnsupportedError(f"Not a constant value: {node.sql(dialect='spark')}")


def _literal(node: exp.Literal) -> object:
    text = str(node.this)
    if node.is_string:
        return text
    low = text.lower()
    try:
        if low.lstrip("-").isdigit():
            return int(text)
        if "e" in low:
            return float(text)
        return Decimal(text)
    except (ValueError, InvalidOperation) as e:
        raise ValidationError(f"Invalid numeric literal {text!r}") from e


_INTEGER_TYPES = (
    exp.DataType.Type.BIGINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.TINYINT,
)


def _typed(node: exp.Cast | exp.TryCast) -> object:
    text = str(node.this.this)
    to = node.to
    kind = to.this if isinstance(to, exp.DataType) else None
    is_string = node.this.is_string
    try:
        if kind == exp.DataType.Type.DATE and is_string:
            return dt.date.fromisoformat(text.strip())
        if is_string and kind in (
            exp.DataType.Type.TIMESTAMP,
            exp.DataType.Type.TIMESTAMPTZ,
            exp.DataType.Type.TIMESTAMPNTZ,
            exp.DataType.Type.TIMESTAMPLTZ,
        ):
            return _timestamp(text)
    except ValueError as e:
        raise ValidationError(f"Invalid {to.sql(dialect='spark')} literal {text!r}") from e
    if kind in (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR):
        return text
    try:  # typed numeric literals: 7L, 1Y, 3S (integers), 1.5D (double), 2BD (decimal)
        if kind in _INTEGER_TYPES:
            return int(text)
        if kind in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT):
            return float(text)
        if kind == exp.DataType.Type.DECIMAL:
            return Decimal(text)
    except (ValueError, InvalidOperation) as e:
        raise ValidationError(f"Invalid {to.sql(dialect='spark')} literal {text!r}") from e
    raise UnsupportedError(f"Not a constant value: {node.sql(dialect='spark')}")


_FRACTION = re.compile(r"\.(\d{1,6})(?=$|[+-]|Z)")


def _timestamp(text: str) -> dt.datetime:
    # Python 3.10's fromisoformat needs exactly 3 or 6 fraction digits; Spark accepts 1 to 6.
    norm = text.strip().replace("T", " ", 1).replace("Z", "+00:00")
    norm = _FRACTION.sub(lambda m: "." + m.group(1).ljust(6, "0"), norm)
    return dt.datetime.fromisoformat(norm)
