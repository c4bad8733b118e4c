"""Iceberg's metadata columns ``_file``, ``_pos``, ``_spec_id`` and ``_partition`` on a table read.

Iceberg on Spark lets a query select these hidden columns (``SELECT id, _file, _pos FROM t``): the data
file's path as its manifest spells it (string), the row's 0-based position in it (long), the file's
partition spec id (int) and its partition tuple in the table's unified partition type (a struct; null for
an unpartitioned table). They are added only when asked for: positions need Spark's
``_metadata.row_index`` and a per-file join (floe.spark.scan.scan_frames ``with_position``).
"""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.scan.partition_struct import partition_column, partition_struct_type
from floe.scan.tasks import FileScanTask
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_POS_COLUMN, quoted
from floe.spec.table_metadata import TableMetadata

__all__ = ["FILE_COLUMN", "METADATA_COLUMNS", "PARTITION_COLUMN", "POS_COLUMN", "SPEC_ID_COLUMN", "add_metadata_columns"]

FILE_COLUMN = "_file"
POS_COLUMN = "_pos"
SPEC_ID_COLUMN = "_spec_id"
PARTITION_COLUMN = "_partition"
METADATA_COLUMNS: tuple[str, ...] = (FILE_COLUMN, POS_COLUMN, SPEC_ID_COLUMN, PARTITION_COLUMN)

# Internal names of the per-file frame's columns: no table column can clash with them.
_KEY, _SPEC, _PART = "_floe_mc_file", "_floe_mc_spec", "_floe_mc_part"


def _per_file(spark: SparkSession, md: TableMetadata, tasks: list[FileScanTask]) -> DataFrame:
    """One row per data file: its manifest path, spec id and unified partition struct."""
    files = list({t.data_file.file_path: t.data_file for t in tasks}.values())
    ptype = partition_struct_type(md)
    cols: dict[str, pa.Array] = {
        _KEY: pa.array([f.file_path for f in files], pa.string()),
        _SPEC: pa.array([f.spec_id for f in files], pa.int32()),
    }
    if ptype.fields:
        cols[_PART] = partition_column(md, ptype, files)
    return spark.createDataFrame(pa.table(cols))


def add_metadata_columns(
    spark: SparkSession,
    md: TableMetadata,
    tasks: list[FileScanTask],
    df: DataFrame,
    columns: list[str],
    names: Collection[str],
) -> DataFrame:
    """``df`` (read with positions: ROW_FILE_COLUMN, ROW_POS_COLUMN last) with ``columns`` kept and the
    metadata columns ``names`` appended in METADATA_COLUMNS order."""
    wanted = [n for n in METADATA_COLUMNS if n in names]
    out = [F.col(quoted(c)) for c in columns]
    if SPEC_ID_COLUMN in wanted or PARTITION_COLUMN in wanted:
        df = df.join(F.broadcast(_per_file(spark, md, tasks)), F.col(ROW_FILE_COLUMN) == F.col(_KEY), "left")
    for n in wanted:
        if n == FILE_COLUMN:
            out.append(F.col(ROW_FILE_COLUMN).alias(FILE_COLUMN))
        elif n == POS_COLUMN:
            out.append(F.col(ROW_POS_COLUMN).cast(T.LongType()).alias(POS_COLUMN))
        elif n == SPEC_ID_COLUMN:
            out.append(F.col(_SPEC).alias(SPEC_ID_COLUMN))
        elif partition_struct_type(md).fields:
            out.append(F.col(_PART).alias(PARTITION_COLUMN))
        else:  # Java drops an empty partition struct's fields: the column reads as null
            out.append(F.lit(None).cast(T.StructType([])).alias(PARTITION_COLUMN))
    return df.select(*out)
