"""Arrow data on its way into data files: laid out as the table schema, and split by partition.

``conform`` selects the table's columns by name, casts safely to the file types (int -> long, ns -> us
timestamps without loss, fixed(16) -> uuid, large/view strings -> string), fills missing optional columns
with nulls, attaches the field-id metadata and refuses nulls in required columns. ``partition_groups``
computes partition tuples with the vectorized transforms (``Transform.apply_arrow``) and returns, per
distinct tuple, the row indices holding it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import ValidationError
from floe.io.projection import constant_array
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import (
    DateType,
    IcebergType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["PartitionGroup", "conform", "partition_groups", "split_by_partition", "to_floe_value"]

Data: TypeAlias = "pa.Table | pa.RecordBatch"


def _cast(arr: pa.Array | pa.ChunkedArray, target: pa.DataType, column: str, table_name: str) -> Any:
    if arr.type == target:
        return arr
    if isinstance(target, pa.BaseExtensionType) and target.extension_name == "arrow.uuid":
        if isinstance(arr.type, pa.BaseExtensionType):
            return arr
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            arr = _uuid_strings(arr, column, table_name)  # Spark shows uuid columns as strings
        storage = arr.cast(target.storage_type)
        if isinstance(storage, pa.ChunkedArray):
            return pa.chunked_array([pa.ExtensionArray.from_storage(target, c) for c in storage.chunks], type=target)
        return pa.ExtensionArray.from_storage(target, storage)
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(
            f"Cannot write column {column!r} of type {arr.type} to table {table_name} as {target}: {e}"
        ) from e


def _uuid_strings(arr: pa.Array | pa.ChunkedArray, column: str, table_name: str) -> pa.Array:
    out = []
    for v in arr.to_pylist():
        try:
            out.append(None if v is None else uuid.UUID(v).bytes)
        except ValueError:
            raise ValidationError(f"Cannot write {v!r} to uuid column {column!r} of table {table_name}") from None
    return pa.array(out, pa.binary(16))


def conform(data: Data, arrow_schema: pa.Schema, schema: Schema, *, table_name: str) -> pa.Table:
    """``data`` laid out exactly as ``arrow_schema`` (the file schema, with field ids).

    Raises:
        ValidationError: a required column is missing or holds nulls, or a value cannot be cast safely.
    """
    names = set(data.schema.names)
    columns: list[Any] = []
    for target, field in zip(arrow_schema, schema.as_struct().fields, strict=True):
        if target.name not in names:
            if field.write_default is not None:  # v3: an omitted column gets its write-default
                filled = constant_array(field.write_default, field.field_type, data.num_rows, column=target.name)
                columns.append(filled if filled.type == target.type else filled.cast(target.type))
                continue
            if field.required:
                raise ValidationError(f"Cannot write to table {table_name}: required column {target.name!r} is missing")
            columns.append(pa.nulls(data.num_rows, type=target.type))
            continue
        col = data.column(target.name)
        if field.required and col.null_count:
            raise ValidationError(
                f"Cannot write to table {table_name}: required column {target.name!r} has {col.null_count} null value(s)"
            )
        columns.append(_cast(col, target.type, target.name, table_name))
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([pa.RecordBatch.from_arrays(columns, schema=arrow_schema)])
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def to_floe_value(value: pa.Scalar, t: IcebergType) -> Any:
    """One Arrow scalar in Floe's value representation (floe.spec.transforms.base) for type ``t``."""
    if not value.is_valid:
        return None
    if isinstance(t, DateType):
        return value.cast(pa.int32()).as_py()
    if isinstance(t, (TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)):
        return value.cast(pa.int64()).as_py()
    if isinstance(t, UUIDType):
        raw = value.value.as_py() if isinstance(value, pa.ExtensionScalar) else value.as_py()
        return raw if isinstance(raw, uuid.UUID) else uuid.UUID(bytes=bytes(raw))
    return value.as_py()


@dataclass(frozen=True, slots=True)
class PartitionGroup:
    """Rows of one partition: the tuple (Floe values) and the row indices (None = every row)."""

    partition: tuple[Any, ...]
    indices: npt.NDArray[np.int64] | None


def _source_column(data: Data, schema: Schema, source_id: int) -> Any:
    path = schema.accessor_path(source_id)
    top = schema.find_field(path[0])
    arr: Any = data.column(top.name)
    parent_type: IcebergType = top.field_type
    for child_id in path[1:]:
        assert isinstance(parent_type, StructType)
        idx = [f.field_id for f in parent_type.fields].index(child_id)
        arr = pc.struct_field(arr, [idx])
        parent_type = parent_type.fields[idx].field_type
    return arr


def partition_groups(data: Data, spec: PartitionSpec, schema: Schema) -> list[PartitionGroup]:
    """Split rows by partition tuple (vectorized; one sort of the combined key codes).

    Returns:
        One group per distinct tuple (ordered by key code: deterministic for the same input); a single
        group has ``indices=None``.
    """
    if not spec.fields:
        return [PartitionGroup((), None)]
    ptype = spec.partition_type(schema)
    n = data.num_rows
    codes = np.zeros(n, dtype=np.int64)
    dictionaries: list[pa.Array] = []
    for pf in spec.fields:
        source_type = schema.find_type(pf.source_id)
        values = pf.transform.apply_arrow(source_type, _source_column(data, schema, pf.source_id))
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        encoded = pc.dictionary_encode(values, null_encoding="encode")
        dictionary = encoded.dictionary
        idx = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        codes = codes * max(len(dictionary), 1) + idx
        dictionaries.append(dictionary)
    if n == 0:
        return []
    first = codes[0]
    if (codes == first).all():
        return [PartitionGroup(_tuple_at(codes, 0, dictionaries, ptype), None)]
    # Arrow sorts small-range integer keys with a counting sort: far faster than numpy's stable argsort.
    order = pc.sort_indices(pa.array(codes)).to_numpy(zero_copy_only=False)
    sorted_codes = codes[order]
    bounds = np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [n]))
    out = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        rows = order[s:e]
        out.append(PartitionGroup(_tuple_at(codes, int(rows[0]), dictionaries, ptype), rows))
    return out


def split_by_partition(data: pa.Table, spec: PartitionSpec, schema: Schema) -> list[tuple[tuple[Any, ...], pa.Table]]:
    """``data`` split into one table per partition tuple with ONE gather (slices of the reordered rows)."""
    groups = partition_groups(data, spec, schema)
    if len(groups) == 1 and groups[0].indices is None:
        return [(groups[0].partition, data)]
    order = np.concatenate([g.indices for g in groups if g.indices is not None])
    gathered = data.take(pa.array(order))
    out, offset = [], 0
    for g in groups:
        size = 0 if g.indices is None else len(g.indices)
        out.append((g.partition, gathered.slice(offset, size)))
        offset += size
    return out


def _tuple_at(codes: npt.NDArray[np.int64], row: int, dictionaries: list[pa.Array], ptype: StructType) -> tuple[Any, ...]:
    code = int(codes[row])
    idxs: list[int] = []
    for d in reversed(dictionaries):
        size = max(len(d), 1)
        idxs.append(code % size)
        code //= size
    idxs.reverse()
    return tuple(
        to_floe_value(d[i], f.field_type) for d, i, f in zip(dictionaries, idxs, ptype.fields, strict=True)
    )

