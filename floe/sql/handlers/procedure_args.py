"""What every ``CALL`` procedure shares: how it is declared, and its argument conversions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.sql.handlers.context import HandlerContext
from floe.sql.identifiers import ResolvedTable
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["NameProcedure", "Procedures", "TableProcedure", "bool_arg", "int_arg", "result_row", "snapshot_id_arg"]


@dataclass(frozen=True, slots=True)
class TableProcedure:
    """A procedure run on the existing table its ``table`` argument names."""

    parameters: tuple[str, ...]
    required: tuple[str, ...]
    run: Callable[[HandlerContext, Table, dict[str, object]], ResultSet]


@dataclass(frozen=True, slots=True)
class NameProcedure:
    """A procedure whose ``table`` argument names a table that need not exist yet (register_table)."""

    parameters: tuple[str, ...]
    required: tuple[str, ...]
    run: Callable[[HandlerContext, ResolvedTable, dict[str, object]], ResultSet]


def snapshot_id_arg(args: dict[str, object], key: str = "snapshot_id") -> int:
    value = args[key]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{key} must be a snapshot id (a long), got {value!r}")
    return value


def int_arg(args: dict[str, object], key: str) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{key} must be an integer, got {value!r}")
    return value


def bool_arg(args: dict[str, object], key: str, default: bool) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise ValidationError(f"{key} must be a boolean, got {value!r}")
    return value


def result_row(columns: list[str], result: object) -> ResultSet:
    return ResultSet(columns=columns, rows=[tuple(getattr(result, c) for c in columns)])


Procedures = dict[str, TableProcedure | NameProcedure]
