"""Presentation of results and errors: aligned plain-text tables, JSON, CSV, and one-line red errors."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import io
import json
import os
import sys
import uuid
from decimal import Decimal
from typing import TextIO

from floe.sql.result import ResultSet

__all__ = ["FORMATS", "json_value", "print_error", "print_note", "print_result", "render", "text_value"]

FORMATS = ("table", "json", "csv")


def json_value(value: object) -> object:
    """A JSON-compatible form of a result value (timestamps ISO-8601, decimals as strings, bytes base64)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def text_value(value: object) -> str:
    """How a value prints in a table or CSV cell (Spark's style: NULL, true/false, maps as {k -> v})."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, dt.datetime):
        spec = (
            "seconds" if not value.microsecond else "milliseconds" if not value.microsecond % 1000 else "auto"
        )
        return value.isoformat(sep=" ", timespec=spec)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{text_value(k)} -> {text_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(text_value(v) for v in value) + "]"
    return str(value)


def render(result: ResultSet, fmt: str) -> str:
    """The result as text in ``fmt`` (``table``, ``json`` or ``csv``)."""
    if fmt == "json":
        rows = [{k: json_value(v) for k, v in zip(result.columns, r)} for r in result.rows]
        return json.dumps(rows, ensure_ascii=False)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(result.columns)
        for r in result.rows:
            w.writerow(["" if v is None else text_value(v) for v in r])
        return buf.getvalue().rstrip("\n")
    if fmt == "table":
        return _table(result)
    raise ValueError(f"Unknown output format {fmt!r} (expected one of {', '.join(FORMATS)})")


_GAP = "   "  # between columns, as rich's SIMPLE_HEAD box without edges
_RULE = "\u2500"
_MIN_FOLD = 8  # a column folded to fit the width keeps at least this many cells (or its header's width)


def _cells(text: str) -> int:
    """Display width of one line (wide East Asian characters take two cells)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # only for non-ASCII text

    return cell_len(text)


def _wrap(line: str, width: int) -> list[str]:
    """Greedy word wrap of an ASCII line at spaces; words longer than ``width`` are cut.

    Hand-written rather than ``textwrap``: a 1,000-snapshot listing wraps thousands of cells, and this
    simple loop takes a third of the time.
    """
    out: list[str] = []
    current = ""
    for word in line.split(" "):
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width:
            current = candidate
            continue
        if current:
            out.append(current)
        while len(word) > width:
            out.append(word[:width])
            word = word[width:]
        current = word
    out.append(current)
    return out


def _fold(text: str, width: int) -> list[str]:
    """A cell's lines, each wrapped at spaces to at most ``width`` cells (longer words are cut)."""
    out: list[str] = []
    for line in text.split("\n"):
        if _cells(line) <= width:
            out.append(line)
        elif line.isascii():
            out.extend(_wrap(line, width))
        else:
            from rich.cells import chop_cells

            out.extend(chop_cells(line, width))
    return out


def _fit(natural: list[int], floors: list[int], available: int) -> list[int]:
    """Column widths that fit ``available`` cells: the widest columns give way first, down to their floors."""
    widths = list(natural)
    while True:
        excess = sum(widths) + len(_GAP) * (len(widths) - 1) - available
        shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
        if excess <= 0 or not shrinkable:
            return widths
        widest = max(widths[i] for i in shrinkable)
        at_max = [i for i in shrinkable if widths[i] == widest]
        runner_up = max((widths[i] for i in shrinkable if widths[i] < widest), default=0)
        step = max(1, min(widest - runner_up, -(-excess // len(at_max))))
        for i in at_max:
            widths[i] = max(floors[i], widths[i] - step)


def _available_width() -> int:
    columns = int(os.environ.get("COLUMNS", "0") or 0)
    if columns:
        return columns
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return 200


def _table(result: ResultSet) -> str:
    """Aligned plain text: a header, a rule, one line per row (wide cells fold to fit the terminal).

    Written out rather than rendered with rich: rich's layout engine costs about a millisecond per row,
    a second for a 1,000-snapshot ``floe history``, while this is linear string work.
    """
    header = [str(c) for c in result.columns]
    rows = [[text_value(v) for v in r] for r in result.rows]
    natural = [max((_cells(line) for line in h.split("\n")), default=0) for h in header]
    for r in rows:
        for i, cell in enumerate(r):
            w = max(_cells(line) for line in cell.split("\n")) if "\n" in cell else _cells(cell)
            natural[i] = max(natural[i], w)
    floors = [min(n, max(_MIN_FOLD, _cells(h))) for n, h in zip(natural, header)]
    widths = _fit(natural, floors, _available_width())
    bold = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    lines = [_GAP.join(_pad(h, w) for h, w in zip(header, widths)).rstrip()]
    if bold:
        lines[0] = f"\033[1m{lines[0]}\033[0m"
    lines.append(_RULE * (sum(widths) + len(_GAP) * (len(widths) - 1)))
    for r in rows:
        if all(_cells(c) <= w and "\n" not in c for c, w in zip(r, widths)):  # the common, one-line case
            lines.append(_GAP.join(_pad(c, w) for c, w in zip(r, widths)).rstrip())
            continue
        folded = [_fold(c, w) for c, w in zip(r, widths)]
        for k in range(max(len(f) for f in folded)):
            parts = (_pad(f[k] if k < len(f) else "", w) for f, w in zip(folded, widths))
            lines.append(_GAP.join(parts).rstrip())
    n = len(result.rows)
    lines.append(f"({n} row{'s' if n != 1 else ''})")
    return "\n".join(lines)


def _pad(text: str, width: int) -> str:
    return text.ljust(width) if text.isascii() else text + " " * (width - _cells(text))


def print_result(result: ResultSet, fmt: str, *, out: TextIO | None = None) -> None:
    """Print a statement's result; statements without columns print only their message (table format)."""
    out = out or sys.stdout
    if not result.columns:
        if result.message and fmt == "table":
            print_note(result.message)
        return
    out.write(render(result, fmt) + "\n")
    out.flush()


def _color(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def print_error(message: str, *, err: TextIO | None = None) -> None:
    """One red line on stderr (plain when stderr is not a terminal)."""
    err = err or sys.stderr
    line = " ".join(message.split()) or "unknown error"
    text = f"error: {line}"
    err.write(f"\033[31m{text}\033[0m\n" if _color(err) else text + "\n")
    err.flush()


def print_note(message: str, *, err: TextIO | None = None) -> None:
    """A dim status line on stderr."""
    err = err or sys.stderr
    err.write(f"\033[2m{message}\033[0m\n" if _color(err) else message + "\n")
    err.flush()
