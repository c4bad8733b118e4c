"""The Python API of row-level changes: ``table.delete``, ``table.update``, ``table.merge``, ``table.upsert``.

The work runs on Spark (floe.spark.row_level.dml), which sits above this package: the engine is an explicit
dependency, registered by ``import floe.spark`` through :func:`register_row_level_engine` (no import by
name from here). Without it, the calls say what to import. ``table.upsert`` of a pyarrow Table needs no
engine: it runs in the process (floe.write.arrow_upsert).

``table.merge(source, on=...)`` returns a builder in Spark's clause order: ``when_matched_update(...)``,
``when_matched_update_all()``, ``when_matched_delete()``, ``when_not_matched_insert(...)``,
``when_not_matched_insert_all()``, ``when_not_matched_by_source_update(...)``,
``when_not_matched_by_source_delete()``, then ``execute()``. Conditions and values are Spark SQL over the
aliases (``t`` for the table, ``s`` for the source by default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from floe.errors import UnsupportedError, ValidationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table

__all__ = ["Clause", "MergeBuilder", "RowLevelEngine", "UpsertResult", "register_row_level_engine", "row_level_engine"]


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: ``match`` (matched, not_matched, not_matched_by_source), ``action`` (update, delete,
    insert), an optional extra condition and, for update/insert, target column -> Spark SQL value."""

    match: str
    action: str
    condition: str | None = None
    values: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert changed (PyIceberg's names)."""

    rows_updated: int
    rows_inserted: int


class RowLevelEngine(Protocol):
    """What the Spark side provides (floe.spark.row_level.dml registers one)."""

    def delete(self, table: Table, condition: str | None, *, spark: SparkSession | None) -> bool: ...

    def update(self, table: Table, assignments: Mapping[str, str], condition: str | None, *, spark: SparkSession | None) -> bool: ...

    def merge(self, table: Table, source: DataFrame, on: str, clauses: Sequence[Clause], *, target_alias: str,
              source_alias: str) -> bool: ...

    def upsert(self, table: Table, source: DataFrame, join_cols: Sequence[str], *, update: bool, insert: bool) -> UpsertResult: ...


_ENGINE: list[RowLevelEngine] = []


def register_row_level_engine(engine: RowLevelEngine) -> None:
    """Install the engine behind the row-level API (``import floe.spark`` does)."""
    _ENGINE[:] = [engine]


def row_level_engine() -> RowLevelEngine:
    """The registered engine.

    Raises:
        UnsupportedError: none is registered (the message says what to import).
    """
    if not _ENGINE:
        raise UnsupportedError("Row-level changes (delete, update, merge, upsert) run on Spark: import floe.spark first")
    return _ENGINE[0]


class MergeBuilder:
    """``table.merge(source, on=...)``: add WHEN clauses, then :meth:`execute`."""

    def __init__(self, table: Table, source: DataFrame, on: str | Sequence[str], *, target_alias: str = "t",
                 source_alias: str = "s") -> None:
        self._table = table
        self._source = source
        self._t, self._s = target_alias, source_alias
        if isinstance(on, str):
            self._on = on
        elif on:
            self._on = " AND ".join(f"{target_alias}.`{c}` = {source_alias}.`{c}`" for c in on)
        else:
            raise ValidationError(f"MERGE into table {table.name()}: give an ON condition or join columns")
        self._clauses: list[Clause] = []

    def _source_columns(self) -> list[str]:
        columns = getattr(self._source, "columns", None)
        if columns is None:
            raise ValidationError("MERGE source must be a Spark DataFrame")
        wanted = {str(c).lower() for c in columns}
        return [f.name for f in self._table.schema().fields if f.name.lower() in wanted]

    def _all(self) -> dict[str, str]:
        return {c: f"{self._s}.`{c}`" for c in self._source_columns()}

    def _add(self, match: str, action: str, condition: str | None, values: Mapping[str, str] | None = None) -> Self:
        self._clauses.append(Clause(match, action, condition, dict(values or {})))
        return self

    def when_matched_update(self, values: Mapping[str, str], *, condition: str | None = None) -> Self:
        return self._add("matched", "update", condition, values)

    def when_matched_update_all(self, *, condition: str | None = None) -> Self:
        return self._add("matched", "update", condition, self._all())

    def when_matched_delete(self, *, condition: str | None = None) -> Self:
        return self._add("matched", "delete", condition)

    def when_not_matched_insert(self, values: Mapping[str, str], *, condition: str | None = None) -> Self:
        return self._add("not_matched", "insert", condition, values)

    def when_not_matched_insert_all(self, *, condition: str | None = None) -> Self:
        names = [f.name for f in self._table.schema().fields]
        missing = [n for n in names if n not in self._source_columns()]
        if missing:
            raise ValidationError(f"MERGE into table {self._table.name()}: insert all needs source column {missing[0]!r}")
        return self._add("not_matched", "insert", condition, self._all())

    def when_not_matched_by_source_update(self, values: Mapping[str, str], *, condition: str | None = None) -> Self:
        return self._add("not_matched_by_source", "update", condition, values)

    def when_not_matched_by_source_delete(self, *, condition: str | None = None) -> Self:
        return self._add("not_matched_by_source", "delete", condition)

    def execute(self) -> bool:
        """Run the MERGE as one commit; returns whether anything was committed."""
        return row_level_engine().merge(self._table, self._source, self._on, self._clauses,
                                        target_alias=self._t, source_alias=self._s)
