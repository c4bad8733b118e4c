"""Format v3 row lineage fields (spec "Row Lineage"): reserved ids and names of the two per-row columns.

A data file may carry them as physical columns; where a value is null (or the column is absent) it is
inherited: ``_row_id`` = the file's ``first_row_id`` + the row's position, ``_last_updated_sequence_number``
= the file's data sequence number. Writers that rewrite rows copy both, so a row keeps its id; a changed row
gets a null sequence number, so it inherits the new commit's.
"""

from __future__ import annotations

from floe.spec.types import LongType, NestedField

__all__ = ["LAST_UPDATED_SEQUENCE_NUMBER", "LINEAGE_FIELDS", "ROW_ID"]

ROW_ID = NestedField(2147483540, "_row_id", LongType(), False, "Implicit row ID that is automatically assigned")
LAST_UPDATED_SEQUENCE_NUMBER = NestedField(
    2147483539,
    "_last_updated_sequence_number",
    LongType(),
    False,
    "Sequence number when the row was last updated",
)
LINEAGE_FIELDS: tuple[NestedField, ...] = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
