"""Parse the filter strings users type (``dt = '2021-12-01' and id in (1, 2)``) into unbound expressions.

The grammar work lives in :mod:`floe.expressions._sql_filter` (sqlglot); it is imported on the first
parse, not with this module, so commit and planning paths that never parse text skip sqlglot's import.
"""

from __future__ import annotations

from floe.errors import ParseError
from floe.expressions.base import BooleanExpression

__all__ = ["parse_filter"]


def parse_filter(text: str) -> BooleanExpression:
    """Parse a filter string into an unbound expression.

    Supports and/or/not, parentheses, = != <> < <= > >=, [not] in (...), between, [not] like 'prefix%',
    is [not] null, is [not] nan, isnan(col), true/false, quoted identifiers (`a b`, "a b"), struct fields
    (point.x), string/number/boolean/hex literals and DATE '...' / TIMESTAMP '...'.

    Raises:
        ParseError: the text is not valid or uses something unsupported (the message quotes it).
    """
    if not text or not text.strip():
        raise ParseError("Cannot parse an empty filter")
    # Imported here on purpose (cost, not a cycle): sqlglot takes ~0.5 s to import.
    from floe.expressions._sql_filter import convert_filter

    return convert_filter(text)
