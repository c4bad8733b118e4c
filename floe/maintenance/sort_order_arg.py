"""The ``sort_order`` argument of ``rewrite_data_files``: ``'id DESC NULLS LAST, name'`` or ``'zorder(a, b)'``.

Java parses it with Iceberg's SQL extensions (``ExtendedParser.parseSortOrder``): comma-separated terms,
each a column or a transform (``bucket(16, id)``, ``truncate(name, 4)``, ``years(ts)``, ...) with an
optional direction (ASC by default) and null order (NULLS FIRST for ASC, NULLS LAST for DESC, Spark's
defaults), or ``zorder(col, ...)`` terms, which cannot be mixed with the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from floe.errors import ValidationError

__all__ = ["SortTerm", "ZOrder", "parse_sort_order"]

_TERM = re.compile(
    r"^(?P<expr>.+?)(?:\s+(?P<dir>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?$", re.IGNORECASE | re.DOTALL
)
_CALL = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*\((?P<args>.*)\)$", re.DOTALL)
# Transform spellings the extensions accept, by Iceberg transform name.
_TRANSFORMS = {
    "identity": "identity",
    "bucket": "bucket",
    "truncate": "truncate",
    "year": "year", "years": "year",
    "month": "month", "months": "month",
    "day": "day", "days": "day", "date": "day",
    "hour": "hour", "hours": "hour", "date_hour": "hour",
}


@dataclass(frozen=True, slots=True)
class SortTerm:
    """One sort term: ``transform`` is an Iceberg transform string (``identity``, ``bucket[16]``, ...)."""

    column: str
    transform: str
    ascending: bool
    nulls_first: bool


@dataclass(frozen=True, slots=True)
class ZOrder:
    """``zorder(a, b, ...)``: the rows are sorted by the interleaved bits of these columns."""

    columns: tuple[str, ...]


def _split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _identifier(text: str, whole: str) -> str:
    name = text.strip()
    if len(name) >= 2 and name[0] == name[-1] == "`":
        return name[1:-1].replace("``", "`")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        raise ValidationError(f"Cannot parse sort order {whole!r}: {name!r} is not a column")
    return name


def _term(expr: str, whole: str) -> tuple[str, str] | ZOrder:
    call = _CALL.match(expr)
    if call is None:
        return _identifier(expr, whole), "identity"
    name, args = call.group("name").lower(), _split(call.group("args"))
    if name == "zorder":
        return ZOrder(tuple(_identifier(a, whole) for a in args))
    transform = _TRANSFORMS.get(name)
    if transform is None:
        raise ValidationError(f"Cannot parse sort order {whole!r}: unknown transform {call.group('name')!r}")
    if transform in ("bucket", "truncate"):
        if len(args) != 2:
            raise ValidationError(f"Cannot parse sort order {whole!r}: {name} takes a width and a column")
        width, column = (args[0], args[1]) if args[0].isdigit() else (args[1], args[0])
        if not width.isdigit():
            raise ValidationError(f"Cannot parse sort order {whole!r}: {name} width {width!r} is not a number")
        return _identifier(column, whole), f"{transform}[{int(width)}]"
    if len(args) != 1:
        raise ValidationError(f"Cannot parse sort order {whole!r}: {name} takes one column")
    return _identifier(args[0], whole), transform


def parse_sort_order(text: str) -> list[SortTerm] | ZOrder:
    """Parse ``sort_order``: sort terms, or one z-order over the columns of all ``zorder(...)`` terms.

    Raises:
        ValidationError: unparsable text, or z-order terms mixed with other terms (as Java refuses).
    """
    if not text or not text.strip():
        raise ValidationError("Cannot parse an empty sort order")
    terms: list[SortTerm] = []
    zorder: list[str] = []
    for part in _split(text.strip()):
        m = _TERM.match(part)
        if not part or m is None:
            raise ValidationError(f"Cannot parse sort order {text!r}: empty term")
        parsed = _term(m.group("expr").strip(), text)
        if isinstance(parsed, ZOrder):
            zorder.extend(parsed.columns)
            continue
        ascending = (m.group("dir") or "asc").lower() == "asc"
        nulls = m.group("nulls")
        nulls_first = ascending if nulls is None else nulls.lower() == "first"
        terms.append(SortTerm(parsed[0], parsed[1], ascending, nulls_first))
    if zorder and terms:
        raise ValidationError(f"Cannot mix identity sort columns and a Zorder sort expression: {text}")
    return ZOrder(tuple(zorder)) if zorder else terms
