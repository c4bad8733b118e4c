"""Iceberg's metadata columns ``_file``, ``_pos``, ``_spec_id``, ``_partition`` and (v3 row lineage)
``_row_id``, ``_last_updated_sequence_number`` on a table read.

Iceberg on Spark lets a query select these hidden columns (``SELECT id, _file, _pos FROM t``): the data
file's path as its manifest spells it (string), the row's 0-based position in it (long), the file's
partition spec id (int) and its partition tuple in the table's unified partition type (a struct; null for
an unpartitioned table). They are added only when asked for: positions need Spark's
``_metadata.row_index`` and a per-file join (floe.spark.scan.scan_frames ``with_position``). Row lineage
values are the file's own where it stores them, else inherited (spec "Row Lineage"): the file's
``first_row_id`` + position, and its data sequence number; null for tables without row lineage (v1/v2).
"""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.scan.partition_struct import partition_column, partition_struct_type
from floe.scan.tasks import FileScanTask
from floe.spark.scan.row_columns import ROW_FILE_COLUMN, ROW_ID_STORED, ROW_POS_COLUMN, ROW_SEQ_STORED, quoted
from floe.spec.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from floe.spec.table_metadata import TableMetadata

__all__ = [
    "FILE_COLUMN",
    "LAST_UPDATED_COLUMN",
    "LINEAGE_COLUMNS",
    "METADATA_COLUMNS",
    "PARTITION_COLUMN",
    "POS_COLUMN",
    "ROW_ID_COLUMN",
    "SPEC_ID_COLUMN",
    "add_metadata_columns",
    "resolve_lineage",
]

FILE_COLUMN = "_file"
POS_COLUMN = "_pos"
SPEC_ID_COLUMN = "_spec_id"
PARTITION_COLUMN = "_partition"
ROW_ID_COLUMN = ROW_ID.name
LAST_UPDATED_COLUMN = LAST_UPDATED_SEQUENCE_NUMBER.name
LINEAGE_COLUMNS: tuple[str, ...] = (ROW_ID_COLUMN, LAST_UPDATED_COLUMN)
METADATA_COLUMNS: tuple[str, ...] = (FILE_COLUMN, POS_COLUMN, SPEC_ID_COLUMN, PARTITION_COLUMN, *LINEAGE_COLUMNS)

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
    """``df`` (read with positions: ROW_FILE_COLUMN, ROW_POS_COLUMN, then with lineage ROW_ID_STORED and
    ROW_SEQ_STORED) with ``columns`` kept and the metadata columns ``names`` appended in METADATA_COLUMNS
    order."""
    wanted = [n for n in METADATA_COLUMNS if n in names]
    out = [F.col(quoted(c)) for c in columns]
    if SPEC_ID_COLUMN in wanted or PARTITION_COLUMN in wanted:
        df = df.join(F.broadcast(_per_file(spark, md, tasks)), F.col(ROW_FILE_COLUMN) == F.col(_KEY), "left")
    for n in wanted:
        if n == ROW_ID_COLUMN:
            out.append(F.col(ROW_ID_STORED).alias(n))
        elif n == LAST_UPDATED_COLUMN:
            out.append(F.col(ROW_SEQ_STORED).alias(n))
        elif n == FILE_COLUMN:
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


def resolve_lineage(md: TableMetadata, tasks: list[FileScanTask], df: DataFrame) -> DataFrame:
    """``df`` (read with positions and the stored lineage values ROW_ID_STORED, ROW_SEQ_STORED) with those
    two columns resolved: the stored value where not null, else inherited from the row's file (its
    ``first_row_id`` + position, its data sequence number). v1/v2 rows have no lineage: both read null."""
    if md.format_version < 3 or not tasks:
        return df.withColumns({ROW_ID_STORED: F.lit(None).cast(T.LongType()), ROW_SEQ_STORED: F.lit(None).cast(T.LongType())})
    # Literal maps keyed by file, not a join: the read stays one relation (a copy-on-write rewrite then
    # needs no shuffle to keep each file's rows together, see floe.spark.row_level.commits).
    per_file = {t.data_file.file_path: (t.data_file.first_row_id, t.data_sequence_number) for t in tasks}
    first = F.create_map(*(x for p, v in per_file.items() for x in (F.lit(p), F.lit(v[0]).cast(T.LongType()))))
    seq = F.create_map(*(x for p, v in per_file.items() for x in (F.lit(p), F.lit(v[1]).cast(T.LongType()))))
    resolved = {
        ROW_ID_STORED: F.coalesce(
            F.col(ROW_ID_STORED), first[F.col(ROW_FILE_COLUMN)] + F.col(ROW_POS_COLUMN).cast(T.LongType())
        ),
        ROW_SEQ_STORED: F.coalesce(F.col(ROW_SEQ_STORED), seq[F.col(ROW_FILE_COLUMN)]),
    }
    return df.withColumns(resolved)
