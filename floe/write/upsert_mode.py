"""Upsert tables (``write.upsert.enabled=true``, Flink's upsert mode): every write is a delete plus an insert.

Seed 000 and 003: in upsert mode every inserted row replaces the row of its key (the table's identifier
fields), so a key has one row. What a write commits is one row delta of: data files with the new rows,
equality deletes on the key for keys of earlier commits, and position deletes (deletion vectors on v3) for a
key written twice in the same commit, whose last row wins. Overwrites are refused, as Flink's sink refuses
overwrite in upsert mode. This module holds the rule and the Arrow (no Spark) path; Spark DataFrames take
``floe.spark.streaming.changes.upsert_dataframe``, which runs the same task writer in Spark tasks.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from floe.errors import UnsupportedError, ValidationError
from floe.io.arrow_schema import arrow_to_schema, without_field_ids
from floe.spec import properties as P
from floe.spec.manifest import DataFile, FileContent
from floe.write.commit import apply_schema_changes, deleted_on_failure
from floe.write.delta_writer import DeltaTaskWriter
from floe.write.locations import LocationProvider
from floe.write.schema_check import check_write_schema

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["UPSERT_OPTION", "check_upsert_table", "upsert_requested", "write_upserts_arrow"]

UPSERT_OPTION = "upsert-enabled"  # the write option that turns upsert mode on (or off) for one write


def upsert_requested(table: Table, options: Mapping[str, str] | None = None) -> bool:
    """Whether a write into ``table`` is an upsert: the ``upsert-enabled`` option, else the table property.

    Raises:
        ValidationError: the option or property is not ``true``/``false``.
    """
    if options and UPSERT_OPTION in options:
        return P.property_bool(options, UPSERT_OPTION, False)
    return P.property_bool(table.properties, P.UPSERT_ENABLED, P.UPSERT_ENABLED_DEFAULT)


def check_upsert_table(table: Table, mode: str, *, keys_given: bool = False) -> tuple[int, ...]:
    """The key field ids of an upsert into ``table``; refuses what upsert mode cannot do, naming the rule.

    ``keys_given``: the write names its key columns itself (``equality-field-columns``), so the table needs
    no identifier fields (the ids returned are then the table's, possibly none).

    Raises:
        UnsupportedError: an overwrite (Flink's sink refuses overwrite in upsert mode too).
        ValidationError: format v1 (no delete files) or no identifier fields.
    """
    where = f"Upsert into table {table.name()} ({P.UPSERT_ENABLED} or the {UPSERT_OPTION} write option)"
    if mode != "append":
        raise UnsupportedError(
            f"{where}: an overwrite cannot be an upsert (every write deletes and re-inserts keys); "
            "use INSERT INTO / append, MERGE INTO, or unset the property"
        )
    if table.format_version < 2:
        raise ValidationError(
            f"{where}: the table is format v1, which has no delete files: set 'format-version'='2' to upsert into it"
        )
    ids = table.schema().identifier_field_ids
    if not ids and not keys_given:
        raise ValidationError(
            f"{where}: the table has no identifier fields: declare PRIMARY KEY (...) NOT ENFORCED or run "
            f"ALTER TABLE {table.name()} SET IDENTIFIER FIELDS <columns>"
        )
    return tuple(ids)


def write_upserts_arrow(
    table: Table,
    data: pa.Table | pa.RecordBatch,
    *,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
    merge_schema: bool = False,
) -> Table:
    """Upsert ``data`` (rows in order, the last row of a key wins) into ``table`` as one row delta.

    Raises:
        ValidationError / UnsupportedError: see :func:`check_upsert_table`, or the data does not fit.
    """
    key_ids = check_upsert_table(table, "append")
    merge = merge_schema  # asked for, as in every write (write.spark.accept-any-schema alone does not)
    changes = check_write_schema(
        table.schema(), arrow_to_schema(without_field_ids(data.schema)), table_name=table.name(),
        merge_schema=merge, format_version=table.format_version,
    )
    apply_schema_changes(table, changes)
    start = table.refresh().current_snapshot() if branch is None else table.snapshot_by_name(branch)
    props = dict(table.properties)
    writer = DeltaTaskWriter(
        schema=table.schema(), spec=table.spec(), key_field_ids=key_ids, upsert=True, properties=props,
        locations=LocationProvider.for_table(table.location(), props), io=table.io,
        format_version=table.format_version, table_name=table.name(), operation_id=str(uuid.uuid4()),
    )
    try:
        writer.write(data, np.zeros(data.num_rows, dtype=np.int8))  # every row an insert (+I)
        files: list[DataFile] = writer.close()
    except BaseException:
        writer.abort()
        raise
    if not files:
        return table
    with deleted_on_failure(table.io, files):
        op = table.new_row_delta(branch=branch)
        for f in files:
            if f.content == FileContent.DATA:
                op.add_rows(f)
            else:
                op.add_deletes(f)
        op.validate_from_snapshot(start.snapshot_id if start is not None else None)
        for k, v in (snapshot_properties or {}).items():
            op.set(k, v)
        op.commit()
    return table
