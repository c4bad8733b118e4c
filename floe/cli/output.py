"""Presentation of results and errors: aligned tables (rich), JSON, CSV, and one-line red errors."""

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


def _table(result: ResultSet) -> str:
    from rich.box import SIMPLE_HEAD
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for col in result.columns:
        table.add_column(col, overflow="fold")
    for r in result.rows:
        table.add_row(*(Text(text_value(v)) for v in r))  # Text: values are not rich markup ("[a=b]")
    width = int(os.environ.get("COLUMNS", "0") or 0) or (None if sys.stdout.isatty() else 200)
    console = Console(file=io.StringIO(), width=width, force_terminal=sys.stdout.isatty(), highlight=False)
    console.print(table)
    text = console.file.getvalue().rstrip("\n")  # type: ignore[attr-defined]
    n = len(result.rows)
    return f"{text}\n({n} row{'s' if n != 1 else ''})"


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
