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


def _holds_uuid(t: pa.DataType) -> bool:
    if isinstance(t, pa.BaseExtensionType):
        return bool(t.extension_name == "arrow.uuid")
    if pa.types.is_struct(t):
        return any(_holds_uuid(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _holds_uuid(t.value_type)
    if pa.types.is_map(t):
        return _holds_uuid(t.key_type) or _holds_uuid(t.item_type)
    return False


def _rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """A (possibly sliced) list or map array's offsets starting at 0, and the child range they cover."""
    raw = arr.offsets.cast(pa.int32())
    start, end = raw[0].as_py(), raw[-1].as_py()
    return pc.subtract(raw, pa.scalar(start, pa.int32())), start, end


def _cast_nested(arr: pa.Array, target: pa.DataType, column: str, table_name: str) -> Any:
    """A struct, list or map whose target holds uuids, cast child by child (Arrow casts no string to uuid)."""
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target) and pa.types.is_struct(arr.type):
        children = []
        fields = arr.flatten()  # children with the parent's nulls applied (values under a null parent are junk)
        for f in target:
            index = arr.type.get_field_index(f.name)
            if index < 0:
                raise ValidationError(f"Cannot write column {column!r} to table {table_name}: field {f.name!r} is missing")
            children.append(_cast(fields[index], f.type, f"{column}.{f.name}", table_name))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_list(target) and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        offsets, start, end = _rebased_offsets(arr)
        values = _cast(arr.values.slice(start, end - start), target.value_type, f"{column}.element", table_name)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(arr.type):
        offsets, start, end = _rebased_offsets(arr)
        keys = _cast(arr.keys.slice(start, end - start), target.key_type, f"{column}.key", table_name)
        items = _cast(arr.items.slice(start, end - start), target.item_type, f"{column}.value", table_name)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    raise ValidationError(f"Cannot write column {column!r} of type {arr.type} to table {table_name} as {target}")


def _cast(arr: pa.Array | pa.ChunkedArray, target: pa.DataType, column: str, table_name: str) -> Any:
    if arr.type == target:
        return arr
    if not isinstance(target, pa.BaseExtensionType) and _holds_uuid(target):
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array([_cast_nested(c, target, column, table_name) for c in arr.chunks], type=target)
        return _cast_nested(arr, target, column, table_name)
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
        One group per distinct tuple, in the order of their first rows; a single group has ``indices=None``.
        A clustered writer needs that order: the partition a batch ends with is the one the next batch
        continues, and must be the one it writes last.
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
    firsts = order[starts]  # the sort is stable: each group's first row in the batch
    out = []
    for k in np.argsort(firsts, kind="stable").tolist():
        rows = order[starts[k]:ends[k]]
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

