"""The result of one SQL statement: column names and rows of Python values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyarrow is imported only when a result is built from Arrow
    import pyarrow as pa

__all__ = ["ResultSet"]


@dataclass(frozen=True, slots=True)
class ResultSet:
    """Rows returned by a statement; statements without output return an empty result.

    ``message`` is an optional status line for the user (``Created table db.t``).
    """

    columns: list[str]
    rows: list[tuple[object, ...]] = field(default_factory=list)
    message: str | None = None

    @classmethod
    def empty(cls, message: str | None = None) -> ResultSet:
        """A result with no columns (DDL, USE, SET k=v)."""
        return cls(columns=[], rows=[], message=message)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> ResultSet:
        """A result holding an Arrow table's rows as Python values."""
        names = list(table.column_names)
        cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return cls(columns=names, rows=list(zip(*cols)) if cols else [])

    def __len__(self) -> int:
        return len(self.rows)

    def to_dicts(self) -> list[dict[str, object]]:
        """Rows as dicts keyed by column name."""
        return [dict(zip(self.columns, r)) for r in self.rows]

    def column(self, name: str) -> list[object]:
        """All values of one column.

        Raises:
            KeyError: no such column (names the column and the available ones).
        """
        try:
            i = self.columns.index(name)
        except ValueError:
            raise KeyError(f"No column {name!r} in result (columns: {', '.join(self.columns)})") from None
        return [r[i] for r in self.rows]
