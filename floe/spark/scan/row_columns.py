"""Names of the helper columns the read path adds to rows, and Spark SQL identifier quoting."""

from __future__ import annotations

from floe.scan.tasks import FileScanTask
from floe.spec.manifest import FileFormat

__all__ = ["ROW_FILE_COLUMN", "ROW_ID_STORED", "ROW_POS_COLUMN", "ROW_SEQ_STORED", "ROW_SIZE_COLUMN", "natively_positioned", "quoted"]

# A row's file and 0-based position in it. Inside the read path the file column holds Spark's
# ``_metadata.file_path`` URI; what the read path returns (with_position=True) holds the data file's
# path as its manifest spells it, the identity position deletes use (spec "Position Delete Files").
ROW_FILE_COLUMN = "_floe_file"
ROW_POS_COLUMN = "_floe_pos"
# A row's file size in bytes (``_metadata.file_size``): a long that finds the file's deleted positions
# without hashing its path (floe.spark.scan.position_bitmaps).
ROW_SIZE_COLUMN = "_floe_fsize"
# The v3 row lineage values a data file stores (null where the row inherits them), read by field id.
ROW_ID_STORED = "_floe_row_id"
ROW_SEQ_STORED = "_floe_row_seq"


def quoted(name: str) -> str:
    """A column name as a Spark SQL identifier (backquoted, inner backquotes doubled)."""
    return "`" + name.replace("`", "``") + "`"


def natively_positioned(task: FileScanTask) -> bool:
    """Whether the read path gives this task's rows their file and position (Parquet read by Spark)."""
    return task.data_file.file_format == FileFormat.PARQUET and all(
        e.data_file.file_format in (FileFormat.PARQUET, FileFormat.PUFFIN) for e in task.deletes
    )
