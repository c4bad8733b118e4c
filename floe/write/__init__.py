"""Writing data to tables: the task writer (Arrow -> Parquet data files) and the ``Table`` write seam.

``floe.table.Table.append`` / ``overwrite`` hand data that is not DataFile descriptors to :func:`append` /
:func:`overwrite` here: pyarrow Tables are written in this process (floe.write.arrow_write); Spark
DataFrames go to floe.spark.write.dataframe_write (imported only then, so Arrow-only use never loads pyspark).
``Table.upsert`` hands pyarrow data to :func:`upsert` (floe.write.arrow_upsert, no Spark). Every write
into a table in upsert mode (``write.upsert.enabled``) is routed to floe.write.upsert_mode first.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from floe.errors import UnsupportedError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.write.arrow_upsert import upsert_arrow
from floe.write.arrow_write import write_arrow, write_arrow_files
from floe.write.commit import WriteMode, commit_files
from floe.write.locations import LocationProvider, data_file_name
from floe.write.schema_check import SchemaChanges, check_write_schema
from floe.write.task_writer import TaskWriter
from floe.write.upsert_mode import UPSERT_OPTION, check_upsert_table, upsert_requested, write_upserts_arrow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from typing_extensions import TypeIs  # typing.TypeIs from Python 3.13; only read by type checkers here

    from floe.table.table import RowData, Table

__all__ = [
    "LocationProvider",
    "SchemaChanges",
    "TaskWriter",
    "WriteMode",
    "append",
    "check_write_schema",
    "commit_files",
    "data_file_name",
    "dynamic_partition_overwrite",
    "overwrite",
    "upsert",
    "upsert_arrow",
    "write",
    "write_arrow",
    "write_arrow_files",
]


# The options a pyarrow write honours (lower case); the rest are a Spark write's, refused rather than dropped.
_ARROW_OPTIONS = {"mergeschema", "merge-schema", UPSERT_OPTION.lower()}


def _is_spark_dataframe(data: RowData) -> TypeIs[DataFrame]:
    return type(data).__module__.startswith("pyspark.") and hasattr(data, "sparkSession")


def write(
    table: Table,
    data: RowData,
    *,
    mode: WriteMode = "append",
    overwrite_filter: BooleanExpression | str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
    options: Mapping[str, str] | None = None,
) -> Table:
    """Write a pyarrow Table/RecordBatch or a Spark DataFrame to ``table`` as one snapshot.

    Raises:
        ValidationError: the data does not fit the table schema, or is of an unsupported kind.
    """
    opts = dict(options or {})
    if upsert_requested(table, opts):
        check_upsert_table(table, mode)
        if _is_spark_dataframe(data):
            changes = importlib.import_module("floe.spark.streaming.changes")
            changes.upsert_dataframe(table, data, snapshot_properties=snapshot_properties, branch=branch, options=opts)
            return table
        if not isinstance(data, (pa.Table, pa.RecordBatch)):
            raise ValidationError(f"Cannot write {type(data).__name__} to table {table.name()}: expected a pyarrow Table")
        scheduled = next((k for k in opts if k.lower() == "rewrite-equality-deletes.commit-count"), None)
        if scheduled is not None:
            # the conversion runs on Spark; the table property's count is picked up by the next Spark writer
            raise ValidationError(
                f"Upsert into table {table.name()}: write option {scheduled} needs a Spark DataFrame (the conversion "
                "runs on Spark); this write is a pyarrow table"
            )
        merge = opts.get("mergeSchema", opts.get("merge-schema"))
        return write_upserts_arrow(
            table, data, snapshot_properties=snapshot_properties, branch=branch,
            merge_schema=merge is not None and str(merge).lower() == "true",
        )
    if _is_spark_dataframe(data):
        spark_write = importlib.import_module("floe.spark.write.dataframe_write")  # pyspark only when a DataFrame is written
        return spark_write.write_dataframe(  # type: ignore[no-any-return]
            table, data, mode=mode, overwrite_filter=overwrite_filter,
            snapshot_properties=snapshot_properties, branch=branch, options=opts,
        )
    ignored = sorted(k for k in opts if k.lower() not in _ARROW_OPTIONS)
    if ignored:
        raise UnsupportedError(
            f"Writing a pyarrow table to table {table.name()}: write option {ignored[0]!r} is a Spark write's "
            "(write a Spark DataFrame for it); a pyarrow write takes mergeSchema"
        )
    merge = opts.get("mergeSchema", opts.get("merge-schema"))
    return write_arrow(
        table, data, mode=mode, overwrite_filter=overwrite_filter, snapshot_properties=snapshot_properties,
        branch=branch, merge_schema=merge is not None and str(merge).lower() == "true",
    )


def append(
    table: Table, data: RowData, *, snapshot_properties: Mapping[str, str] | None = None, branch: str | None = None
) -> Table:
    """Append rows (the ``Table.append`` seam)."""
    return write(table, data, mode="append", snapshot_properties=snapshot_properties, branch=branch)


def overwrite(
    table: Table,
    data: RowData,
    *,
    overwrite_filter: BooleanExpression | str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
) -> Table:
    """Replace rows matching ``overwrite_filter`` (all rows when None) by ``data`` (the ``Table.overwrite`` seam)."""
    return write(
        table, data, mode="overwrite", overwrite_filter=overwrite_filter,
        snapshot_properties=snapshot_properties, branch=branch,
    )


def dynamic_partition_overwrite(
    table: Table, data: RowData, *, snapshot_properties: Mapping[str, str] | None = None, branch: str | None = None
) -> Table:
    """Replace every partition ``data`` has rows in by those rows."""
    return write(table, data, mode="dynamic", snapshot_properties=snapshot_properties, branch=branch)


# The Table.upsert seam: pyarrow data only (Table.upsert hands Spark DataFrames to the row-level engine).
upsert = upsert_arrow
