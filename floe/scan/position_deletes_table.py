"""The ``position_deletes`` metadata table: one row per deleted position, from position delete files and
(format v3) deletion vectors of a snapshot (Java's ``PositionDeletesTable``).

Columns: ``file_path`` and ``pos`` (the deleted row), ``row`` (the deleted row's values when the delete
file stores them; Spark's writers never do, so null), ``partition`` (the unified partition type; left
out for an unpartitioned table, as Java drops an empty struct), ``spec_id`` and ``delete_file_path``; v3
tables add ``content_offset`` and ``content_size_in_bytes`` (set for deletion vectors only).
Rows are read on the driver: this is an inspection table, not a data path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from floe.io.arrow_schema import FIELD_ID_KEY, type_to_arrow
from floe.io.puffin import read_deletion_vector
from floe.scan.arrow_read import ReadContext, position_delete_columns, read_data_file
from floe.scan.delete_index import is_deletion_vector
from floe.scan.partition_struct import partition_column, partition_struct_type
from floe.spec.manifest import FileContent, ManifestEntry
from floe.spec.table_metadata import TableMetadata

__all__ = ["POSITION_DELETE_ROW_ID", "position_deletes_table"]

POSITION_DELETE_ROW_ID = 2147483544  # spec "Position Delete Files": the optional ``row`` column


def _schema(md: TableMetadata) -> pa.Schema:
    ptype = partition_struct_type(md)
    fields = [
        pa.field("file_path", pa.string(), False),
        pa.field("pos", pa.int64(), False),
        pa.field("row", type_to_arrow(md.schema().as_struct())),
    ]
    if ptype.fields:
        fields.append(pa.field("partition", partition_column(md, ptype, []).type, False))
    fields += [pa.field("spec_id", pa.int32(), False), pa.field("delete_file_path", pa.string(), False)]
    if md.format_version >= 3:
        fields += [pa.field("content_offset", pa.int64()), pa.field("content_size_in_bytes", pa.int64())]
    return pa.schema(fields)


def _row_column(raw: pa.Table, target: pa.DataType) -> pa.Array | None:
    """The file's ``row`` column in the table's row type, or None when absent or not convertible."""
    for i, f in enumerate(raw.schema):
        fid = (f.metadata or {}).get(FIELD_ID_KEY)
        if (fid is not None and int(fid) == POSITION_DELETE_ROW_ID) or (fid is None and f.name == "row"):
            try:
                return raw.column(i).cast(target).combine_chunks()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None  # the stored row predates the current schema: shown as null
    return None


def _rows_of(ctx: ReadContext, entry: ManifestEntry, row_type: pa.DataType) -> tuple[pa.Array, pa.Array, pa.Array]:
    f = entry.data_file
    if is_deletion_vector(entry):
        positions = read_deletion_vector(ctx.io, ctx.location_of(f.file_path), f)
        n = len(positions)
        paths = pa.array([f.referenced_data_file] * n, pa.string())
        return paths, pa.array(np.asarray(positions, dtype=np.int64), pa.int64()), pa.nulls(n, row_type)
    raw = read_data_file(ctx, f)
    paths, pos = position_delete_columns(raw, location=f.file_path)
    row = _row_column(raw, row_type)
    return (
        paths.combine_chunks(),
        pos.combine_chunks(),
        row if row is not None else pa.nulls(raw.num_rows, row_type),
    )


def position_deletes_table(md: TableMetadata, entries: list[ManifestEntry], ctx: ReadContext) -> pa.Table:
    """Rows of the position delete entries (and deletion vectors) among ``entries`` (pass live ones)."""
    schema = _schema(md)
    row_type = schema.field("row").type
    ptype = partition_struct_type(md)
    parts: list[pa.Table] = []
    for e in entries:
        f = e.data_file
        if f.content != FileContent.POSITION_DELETES:
            continue
        paths, pos, rows = _rows_of(ctx, e, row_type)
        n = len(pos)
        cols: dict[str, pa.Array] = {"file_path": paths, "pos": pos, "row": rows}
        if ptype.fields:
            one = partition_column(md, ptype, [f])
            cols["partition"] = pa.concat_arrays([one] * n) if n else one.slice(0, 0)
        cols["spec_id"] = pa.array([f.spec_id] * n, pa.int32())
        cols["delete_file_path"] = pa.array([f.file_path] * n, pa.string())
        if md.format_version >= 3:
            dv = is_deletion_vector(e)
            cols["content_offset"] = pa.array([f.content_offset if dv else None] * n, pa.int64())
            cols["content_size_in_bytes"] = pa.array([f.content_size_in_bytes if dv else None] * n, pa.int64())
        parts.append(pa.Table.from_arrays([cols[name] for name in schema.names], schema=schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()

