"""Read planned scan tasks into Arrow on the driver (small data, no Spark): deletes, defaults, residuals.

Per task: read the data file, project it by field id onto the read schema (name mapping for files without
ids, identity partition values for columns the file lacks), drop position-deleted rows (the spec's
``file_path``/``pos`` pairs), drop equality-deleted rows (null-safe equality on the delete's columns; the
planner already limited deletes to strictly newer sequence numbers), then apply the residual filter.
Parquet, ORC and Avro data files are supported.
"""

from __future__ import annotations

import io as _io
import json
import logging
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from floe.errors import ReadError, UnsupportedError
from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.expressions.binding import bind
from floe.expressions.to_arrow import to_arrow_expression
from floe.io.arrow_schema import FIELD_ID_KEY, orc_ids_as_field_ids, schema_to_arrow
from floe.io.fileio import FileIO
from floe.io.name_mapping import (
    NameMapping,
    apply_name_mapping,
    mapping_contradicts_schema,
    name_mapping_from_schema,
)
from floe.io.projection import constant_array, project_by_field_id
from floe.io.puffin import read_deletion_vector
from floe.scan.delete_index import is_deletion_vector
from floe.scan.pruning import referenced_field_ids
from floe.scan.tasks import FileScanTask
from floe.spec import properties as P
from floe.spec.manifest import (
    POSITION_DELETE_FILE_PATH_ID,
    POSITION_DELETE_POS_ID,
    DataFile,
    FileContent,
    FileFormat,
)
from floe.spec.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from floe.spec.schema import Schema

if TYPE_CHECKING:
    from floe.scan.table_scan import TableScan

__all__ = [
    "ReadContext",
    "deleted_positions_of",
    "fallback_field_ids",
    "name_mapping_of",
    "orc_schema_with_ids",
    "position_delete_columns",
    "position_delete_fields",
    "read_data_file",
    "read_task_rows",
    "read_task_to_arrow",
    "read_tasks_to_arrow",
    "scan_read_context",
    "with_fallback_ids",
]

_log = logging.getLogger(__name__)
_POSITION_COLUMN = "\x00position"


def name_mapping_of(properties: dict[str, str] | object, schema: Schema) -> NameMapping | None:
    """The table's ``schema.name-mapping.default``, if set and consistent with ``schema``.

    A mapping whose ids contradict the schema's nesting (see ``mapping_contradicts_schema``) is ignored
    with a warning: files are then matched by the schema's names, as for a table without a mapping.
    """
    text = properties.get(P.SCHEMA_NAME_MAPPING_DEFAULT) if isinstance(properties, dict) else None
    if not text:
        return None
    mapping = NameMapping.from_json(text)
    why = mapping_contradicts_schema(mapping, schema)
    if why is not None:
        _log.warning(
            "Ignoring %s: %s; matching file columns by the schema's names", P.SCHEMA_NAME_MAPPING_DEFAULT, why
        )
        return None
    return mapping


class ReadContext:
    """What reading needs besides the task: FileIO, location mapping, schemas and the name mapping."""

    def __init__(
        self,
        *,
        io: FileIO,
        table_schema: Schema,
        projection: Schema,
        name_mapping: NameMapping | None,
        location_of: Callable[[str], str],
        case_sensitive: bool = True,
        table_name: str = "",
    ) -> None:
        self.io = io
        self.table_schema = table_schema
        self.projection = projection
        self.name_mapping = name_mapping
        self.location_of = location_of
        self.case_sensitive = case_sensitive
        self.table_name = table_name
        self._fallback_mapping = name_mapping or name_mapping_from_schema(table_schema)

    def open_bytes(self, path: str) -> bytes:
        with self.io.new_input(self.location_of(path)).open() as fo:
            return fo.read()


def _avro_to_arrow(data: bytes) -> pa.Table:
    reader = fastavro.reader(_io.BytesIO(data))
    writer_schema = json.loads(reader.metadata["avro.schema"])
    records = list(reader)
    ids = {f["name"]: f.get("field-id") for f in writer_schema.get("fields", [])}
    table = pa.Table.from_pylist(records) if records else pa.table(
        {name: pa.array([], pa.null()) for name in ids}
    )
    fields = []
    for f in table.schema:
        fid = ids.get(f.name)
        meta = {FIELD_ID_KEY: str(fid).encode()} if fid is not None else None
        fields.append(f.with_metadata(meta) if meta else f)
    return table.cast(pa.schema(fields)) if fields else table


def _row_group_start(rg: pq.RowGroupMetaData) -> int:
    starts: list[int] = []
    for i in range(rg.num_columns):
        c = rg.column(i)
        starts.append(int(c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset))
    return min(starts)


def _read_parquet_range(raw: bytes, start: int, length: int) -> tuple[pa.Table, np.ndarray]:
    """Row groups whose first byte lies in [start, start + length), with each row's position in the file."""
    pf = pq.ParquetFile(pa.BufferReader(raw))
    md = pf.metadata
    groups, positions, first = [], [], 0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        if start <= _row_group_start(rg) < start + length:
            groups.append(i)
            positions.append(np.arange(first, first + rg.num_rows, dtype=np.int64))
        first += rg.num_rows
    table = pf.read_row_groups(groups) if groups else pf.schema_arrow.empty_table()
    return table, (np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64))


def fallback_field_ids(names: list[str], schema: Schema) -> list[int | None]:
    """Field ids for the top-level columns of a file without ids, when the table has no name mapping.

    Columns match the schema by name when every column name is a schema column (files written by
    engines that keep Iceberg's names, e.g. Dremio); otherwise by position, numbering columns 1..n as
    Iceberg Java's fallback ids do (``ParquetSchemaUtil.addFallbackIds``; Hive tables imported by Impala).
    """
    by_name = {f.name: f.field_id for f in schema.fields}
    if names and all(n in by_name for n in names):
        return [by_name[n] for n in names]
    return list(range(1, len(names) + 1))


def with_fallback_ids(table: pa.Table, mapping: NameMapping | None, schema: Schema) -> pa.Table:
    """Attach :func:`fallback_field_ids` to a Parquet table that has no field ids and no name mapping."""
    if mapping is not None or any(f.metadata and FIELD_ID_KEY in f.metadata for f in table.schema):
        return table
    ids = fallback_field_ids(table.column_names, schema)
    fields = [
        f.with_metadata({**(f.metadata or {}), FIELD_ID_KEY: str(i).encode()}) if i is not None else f
        for f, i in zip(table.schema, ids)
    ]
    return table.cast(pa.schema(fields))


def orc_schema_with_ids(orc_schema: pa.Schema, mapping: NameMapping) -> pa.Schema:
    """An ORC file's Arrow schema with field ids: its ``iceberg.id`` type attributes, else ``mapping``.

    ``mapping`` is the table's name mapping, or the current schema's names when it has none (Iceberg Java
    reads ORC files without ids the same way).
    """
    with_ids = orc_ids_as_field_ids(orc_schema)
    return with_ids if with_ids is not None else apply_name_mapping(orc_schema, mapping)


def read_data_file(ctx: ReadContext, data_file: DataFile) -> pa.Table:
    """The raw Arrow table of a data or delete file, field ids attached where the format has them."""
    raw = ctx.open_bytes(data_file.file_path)
    fmt = data_file.file_format
    if fmt == FileFormat.PARQUET:
        table = pq.ParquetFile(pa.BufferReader(raw)).read()  # read_table builds a dataset: 0.3 ms more a file
        return with_fallback_ids(table, ctx.name_mapping, ctx.table_schema) if data_file.content == FileContent.DATA else table
    if fmt == FileFormat.ORC:
        from pyarrow import orc

        table = orc.ORCFile(pa.BufferReader(raw)).read()
        return table.cast(orc_schema_with_ids(table.schema, ctx._fallback_mapping))
    if fmt == FileFormat.AVRO:
        return _avro_to_arrow(raw)
    raise UnsupportedError(f"Table {ctx.table_name}: cannot read {fmt} file {data_file.file_path}")


def _file_ids(table: pa.Table, mapping: NameMapping | None) -> set[int]:
    from floe.io.projection import file_schema_with_ids

    try:
        schema = file_schema_with_ids(table.schema, name_mapping=mapping)
    except Exception:  # noqa: BLE001 - no ids and no mapping: project_by_field_id raises the real error
        return set()
    out: set[int] = set()
    for f in schema:
        raw = (f.metadata or {}).get(FIELD_ID_KEY)
        if raw is not None:
            out.add(int(raw))
    return out


def _fill_identity_partitions(task: FileScanTask, table: pa.Table, present: set[int], schema: Schema) -> dict[int, pa.Array]:
    """Constant columns for identity-partitioned source columns the file does not contain."""
    out: dict[int, pa.Array] = {}
    spec = task.spec
    if spec is None:
        return out
    for pos, pf in enumerate(spec.fields):
        if str(pf.transform) != "identity" or pf.source_id in present:
            continue
        f = schema.find_field_or_none(pf.source_id)
        if f is None or pos >= len(task.data_file.partition):
            continue
        out[pf.source_id] = constant_array(task.data_file.partition[pos], f.field_type, table.num_rows, column=f.name)
    return out


def position_delete_columns(table: pa.Table, *, location: str) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """``file_path`` (as strings) and ``pos`` (int64) of a position delete file: by reserved id, else by name.

    Raises:
        ReadError: the file has neither the reserved ids nor columns named ``file_path`` and ``pos``.
    """
    path_i, pos_i = position_delete_fields(table.schema, location=location)
    return table.column(path_i).cast(pa.string()), table.column(pos_i).cast(pa.int64())


def position_delete_fields(schema: pa.Schema, *, location: str) -> tuple[int, int]:
    """Indexes of the ``file_path`` and ``pos`` columns of a position delete file's schema: by reserved id,
    else by name.

    Raises:
        ReadError: the file has neither the reserved ids nor columns named ``file_path`` and ``pos``.
    """
    by_id: dict[int, int] = {}
    for i, f in enumerate(schema):
        raw = (f.metadata or {}).get(FIELD_ID_KEY)
        if raw is not None:
            by_id[int(raw)] = i
    names = {n.lower(): i for i, n in enumerate(schema.names)}
    path_i = by_id.get(POSITION_DELETE_FILE_PATH_ID, names.get("file_path"))
    pos_i = by_id.get(POSITION_DELETE_POS_ID, names.get("pos"))
    if path_i is None or pos_i is None:
        raise ReadError(f"Position delete file {location} has no file_path/pos columns ({schema.names})")
    return path_i, pos_i


def deleted_positions_of(ctx: ReadContext, task: FileScanTask) -> np.ndarray | None:
    """Positions deleted from the task's data file: rows of its position delete files whose ``file_path``
    is the data file's path as its manifest spells it (the spec's identity), or its deletion vector."""
    positions: list[np.ndarray] = []
    for e in task.deletes:
        if e.data_file.content != FileContent.POSITION_DELETES:
            continue
        if is_deletion_vector(e):
            # A v3 deletion vector: one blob of a Puffin file, positions of this data file only.
            positions.append(read_deletion_vector(ctx.io, ctx.location_of(e.data_file.file_path), e.data_file))
            continue
        paths, pos = position_delete_columns(read_data_file(ctx, e.data_file), location=e.data_file.file_path)
        mine = pc.equal(paths, pa.scalar(task.data_file.file_path, pa.string()))
        positions.append(pos.filter(pc.fill_null(mine, False)).to_numpy().astype(np.int64))
    if not positions:
        return None
    return np.concatenate(positions)


class _NaN:
    """One key for every NaN: equality deletes match NaN to NaN (as Iceberg Java and Spark's joins do),
    while two float('nan') objects never compare equal in a Python set."""

    def __repr__(self) -> str:
        return "NaN"


_NAN_KEY = _NaN()


def _key(value: object) -> object:
    return _NAN_KEY if isinstance(value, float) and math.isnan(value) else value


def _equality_keep_mask(ctx: ReadContext, task: FileScanTask, data: pa.Table, full: Schema) -> np.ndarray | None:
    keep: np.ndarray | None = None
    for e in task.deletes:
        df = e.data_file
        if df.content != FileContent.EQUALITY_DELETES:
            continue
        ids = list(df.equality_ids or ())
        if not ids:
            raise UnsupportedError(f"Table {ctx.table_name}: equality delete file {df.file_path} has no equality_ids")
        eq_schema = Schema(*[full.find_field(i) for i in ids])
        deleted = project_by_field_id(read_data_file(ctx, df), eq_schema, name_mapping=ctx.name_mapping)
        # Null-safe equality (spec: a null in a delete row matches a null in a data row); NaN matches NaN.
        keys = {tuple(map(_key, row)) for row in zip(*(deleted.column(i).to_pylist() for i in range(len(ids))))}
        cols = [data.column(full.find_column_name(i) or "").to_pylist() for i in ids]
        mask = np.fromiter((tuple(map(_key, row)) not in keys for row in zip(*cols)), dtype=bool, count=data.num_rows)
        keep = mask if keep is None else keep & mask
    return keep


def _read_schema(ctx: ReadContext, residual: BooleanExpression, task: FileScanTask) -> Schema:
    """The projection plus residual and equality-delete columns (dropped again at the end)."""
    want = {f.field_id for f in ctx.projection.fields}
    extra: set[int] = set()
    for e in task.deletes:
        extra.update(e.data_file.equality_ids or ())
    if not isinstance(residual, AlwaysTrue):
        bound = bind(ctx.table_schema, residual, ctx.case_sensitive)
        extra.update(referenced_field_ids(bound))
    top = []
    for f in ctx.table_schema.fields:
        if f.field_id in want:
            top.append(next(p for p in ctx.projection.fields if p.field_id == f.field_id))
        elif f.field_id in extra or any(i in extra for i in _child_ids(ctx.table_schema, f.field_id)):
            top.append(f)
    # fields outside the table schema (v3 row lineage under reserved ids) are read by id like any other
    top += [p for p in ctx.projection.fields if ctx.table_schema.find_field_or_none(p.field_id) is None]
    return Schema(*top, schema_id=ctx.table_schema.schema_id)


def _child_ids(schema: Schema, top_id: int) -> list[int]:
    return [i for i in schema.field_ids() if schema.accessor_path(i)[0] == top_id]


def read_task_to_arrow(ctx: ReadContext, task: FileScanTask) -> pa.Table:
    """The rows of one task, deletes and residual applied, with the projection's columns."""
    return read_task_rows(ctx, task)[0]


def read_task_rows(ctx: ReadContext, task: FileScanTask) -> tuple[pa.Table, np.ndarray]:
    """The rows of one task as :func:`read_task_to_arrow` gives them, and each row's position in its file.

    Positions are counted before any delete or filter, as the spec's position deletes count them (row-level
    operations delete by them).
    """
    residual = task.residual
    read_schema = _read_schema(ctx, residual, task)
    positions: np.ndarray | None = None  # None: every row of the file, in order
    if task.is_whole_file:
        raw = read_data_file(ctx, task.data_file)
    elif task.data_file.file_format == FileFormat.PARQUET:
        raw, positions = _read_parquet_range(ctx.open_bytes(task.data_file.file_path), task.start, task.length)
        raw = with_fallback_ids(raw, ctx.name_mapping, ctx.table_schema)
    else:
        raise UnsupportedError(
            f"Table {ctx.table_name}: cannot read a byte range of {task.data_file.file_format} file {task.data_file.file_path}"
        )
    whole = positions is None
    if positions is None:
        positions = np.arange(raw.num_rows, dtype=np.int64)
    present = _file_ids(raw, ctx.name_mapping if task.data_file.file_format != FileFormat.ORC else None)
    if task.data_file.file_format == FileFormat.ORC:
        present = _file_ids(raw, None)
    table = project_by_field_id(raw, read_schema, name_mapping=ctx.name_mapping)
    fills = _fill_identity_partitions(task, table, present, read_schema)
    for fid, arr in fills.items():
        idx = next((i for i, f in enumerate(read_schema.fields) if f.field_id == fid), None)
        if idx is not None:
            table = table.set_column(idx, table.schema.field(idx), arr)
    keep = np.ones(table.num_rows, dtype=bool)
    deleted = deleted_positions_of(ctx, task)
    if deleted is not None and len(deleted):
        if whole:
            keep[deleted[(deleted >= 0) & (deleted < table.num_rows)]] = False
        else:
            keep &= ~np.isin(positions, deleted)
    eq_keep = _equality_keep_mask(ctx, task, table, ctx.table_schema)
    if eq_keep is not None:
        keep &= eq_keep
    if not keep.all():
        table = table.filter(pa.array(keep))
        positions = positions[keep]
    if not isinstance(residual, AlwaysTrue):
        # The positions ride along as a column (a name no schema column has) through the filter.
        table = table.append_column(_POSITION_COLUMN, pa.array(positions, pa.int64()))
        table = table.filter(to_arrow_expression(bind(read_schema, residual, ctx.case_sensitive)))
        positions = table.column(_POSITION_COLUMN).to_numpy()
    table = _inherit_lineage(table, task, positions, ctx.projection)
    return table.select([f.name for f in ctx.projection.fields]), positions


def _inherit_lineage(table: pa.Table, task: FileScanTask, positions: np.ndarray, projection: Schema) -> pa.Table:
    """Row lineage values a file leaves null (or does not store) inherited as the spec says: ``_row_id`` =
    the file's ``first_row_id`` + the row's position, ``_last_updated_sequence_number`` = the file's data
    sequence number (as the Spark read path does; ``_row_id`` stays null for a file without a
    ``first_row_id``)."""
    first = task.data_file.first_row_id
    inherited = {
        ROW_ID.field_id: None if first is None else pa.array(positions + first, pa.int64()),
        LAST_UPDATED_SEQUENCE_NUMBER.field_id: pa.array(np.full(len(positions), task.data_sequence_number, np.int64)),
    }
    for f in projection.fields:
        if f.field_id not in inherited or f.name not in table.column_names:
            continue
        values = inherited[f.field_id]
        if values is not None:
            i = table.column_names.index(f.name)
            table = table.set_column(i, table.schema.field(i), pc.coalesce(table.column(i), values))
    return table


def scan_read_context(scan: TableScan) -> ReadContext:
    """What reading ``scan``'s tasks needs: its schema and projection, the table's name mapping, locations."""
    schema = scan.table_schema()
    return ReadContext(
        io=scan.io,
        table_schema=schema,
        projection=scan.projection(),
        name_mapping=name_mapping_of(dict(scan.metadata.properties), schema),
        location_of=scan.location_of,
        case_sensitive=scan.case_sensitive,
        table_name=scan.table_name,
    )


def read_tasks_to_arrow(scan: TableScan, tasks: Iterable[FileScanTask]) -> pa.Table:
    """Read every task of ``scan`` into one Arrow table with the scan's projected schema."""
    ctx = scan_read_context(scan)
    target = schema_to_arrow(ctx.projection)
    parts = [read_task_to_arrow(ctx, t).cast(target) for t in tasks]
    if not parts:
        return target.empty_table()
    return pa.concat_tables(parts)
