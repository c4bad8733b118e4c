"""The CALL statements findings suggest, as text Spark SQL (Floe's SQL, Iceberg on Spark) runs as written.

``where`` filters name partition source columns, built only for identity partitions with plain values
(strings without quotes or backslashes, integers, booleans, dates, NULL) and at most ``MAX_WHERE_PARTITIONS``
partitions; otherwise the statement covers the whole table, which rewrites no more files than the
procedure's own selection rules pick (small files, files with deletes).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence

from floe.spec.table_metadata import TableMetadata
from floe.spec.types import BooleanType, DateType, IntegerType, LongType, StringType

__all__ = [
    "MAX_WHERE_PARTITIONS",
    "call",
    "sql_string",
    "timestamp_literal",
    "where_for_partitions",
]

MAX_WHERE_PARTITIONS = 20
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def sql_string(text: str) -> str:
    """A single-quoted Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _name(column: str) -> str:
    return ".".join(p if _PLAIN_NAME.fullmatch(p) else "`" + p.replace("`", "``") + "`" for p in column.split("."))


def timestamp_literal(ms: int) -> str:
    """``TIMESTAMP '2026-11-28 05:00:00.123+00:00'``: UTC with its offset, whatever the session's time zone."""
    when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return f"TIMESTAMP '{when.strftime('%Y-%m-%d %H:%M:%S')}.{ms % 1000:03d}+00:00'"


def _literal(value: object, field_type: object) -> str | None:
    """The SQL literal of a partition value, or None when this builder does not spell it."""
    if isinstance(field_type, StringType) and isinstance(value, str):
        return None if ("'" in value or "\\" in value or '"' in value) else f"'{value}'"
    if isinstance(field_type, (IntegerType, LongType)) and isinstance(value, int):
        return str(value)
    if isinstance(field_type, BooleanType) and isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(field_type, DateType) and isinstance(value, int):
        return f"DATE '{(dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat()}'"
    return None


def _partition_condition(metadata: TableMetadata, spec_id: int, values: tuple[object, ...]) -> str | None:
    spec = metadata.spec_by_id(spec_id)
    schema = metadata.schema()
    if spec is None or not spec.fields:
        return None
    terms = []
    for pf, value in zip(spec.fields, values):
        if str(pf.transform) != "identity":
            return None
        column = schema.find_column_name(pf.source_id)
        source = schema.find_field_or_none(pf.source_id)
        if column is None or source is None:
            return None
        if value is None:
            terms.append(f"{_name(column)} IS NULL")
            continue
        literal = _literal(value, source.field_type)
        if literal is None:
            return None
        terms.append(f"{_name(column)} = {literal}")
    return " AND ".join(terms)


def where_for_partitions(metadata: TableMetadata, partitions: Sequence[tuple[int, tuple[object, ...]]]) -> str | None:
    """A filter selecting exactly these partitions of the current spec, or None (whole table)."""
    if not partitions or len(partitions) > MAX_WHERE_PARTITIONS:
        return None
    if any(spec_id != metadata.default_spec_id for spec_id, _ in partitions):
        return None
    conditions = []
    for spec_id, values in partitions:
        condition = _partition_condition(metadata, spec_id, values)
        if condition is None:
            return None
        conditions.append(condition)
    if len(conditions) == 1:
        return conditions[0]
    return " OR ".join(f"({c})" if " AND " in c else c for c in conditions)


def call(
    catalog: str,
    procedure: str,
    table: str,
    *,
    where: str | None = None,
    options: Mapping[str, str] | None = None,
    extra: Sequence[tuple[str, str]] = (),
) -> str:
    """``CALL <catalog>.system.<procedure>(table => '...', ...)`` with named arguments."""
    args = [f"table => {sql_string(table)}"]
    if where:
        args.append(f'where => "{where}"')
    args.extend(f"{name} => {value}" for name, value in extra)
    if options:
        pairs = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items())
        args.append(f"options => map({pairs})")
    prefix = f"{catalog}.system" if catalog else "system"
    return f"CALL {prefix}.{procedure}({', '.join(args)})"
