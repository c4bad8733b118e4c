"""Names of the helper columns the read path adds to rows, and Spark SQL identifier quoting."""

from __future__ import annotations

__all__ = ["ROW_FILE_COLUMN", "ROW_POS_COLUMN", "quoted"]

# A row's file and 0-based position in it. Inside the read path the file column holds Spark's
# ``_metadata.file_path`` URI; what the read path returns (with_position=True) holds the data file's
# path as its manifest spells it, the identity position deletes use (spec "Position Delete Files").
ROW_FILE_COLUMN = "_floe_file"
ROW_POS_COLUMN = "_floe_pos"


def quoted(name: str) -> str:
    """A column name as a Spark SQL identifier (backquoted, inner backquotes doubled)."""
    return "`" + name.replace("`", "``") + "`"
