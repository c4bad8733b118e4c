"""Project Arrow data read from any writer's Parquet file onto an Iceberg schema, by field id.

Spec "Column Projection": columns are matched by field id, never by name, so renames, reorders and
drops are free; a column the file lacks reads as its ``initial-default`` or null; promoted types
(int -> long, float -> double, wider decimals, date -> timestamp) are cast. Files without ids use the
table's name mapping. List elements and map keys/values are matched by position because their ids
cannot always be written (Spark writes none there; DESIGN.md section 5).
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import UnsupportedError, ValidationError
from floe.io.arrow_schema import field_id_of, field_to_arrow, schema_to_arrow, type_to_arrow
from floe.io.name_mapping import NameMapping, apply_name_mapping
from floe.spec.schema import Schema
from floe.spec.types import (
    DecimalType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    UUIDType,
)

__all__ = ["constant_array", "file_schema_with_ids", "project_by_field_id"]

Data = TypeVar("Data", pa.Table, pa.RecordBatch)


def _has_any_id(arrow_schema: pa.Schema) -> bool:
    return any(field_id_of(f) is not None for f in arrow_schema)


def file_schema_with_ids(arrow_schema: pa.Schema, *, name_mapping: NameMapping | None = None) -> pa.Schema:
    """The file's Arrow schema with field ids, from the file itself or else from the name mapping.

    Raises:
        ValidationError: the file has no field ids and no name mapping was given.
    """
    if _has_any_id(arrow_schema):
        return arrow_schema
    if name_mapping is None:
        raise ValidationError(
            "Data file has no Parquet field ids and the table has no name mapping "
            f"(schema.name-mapping.default); file columns: {', '.join(arrow_schema.names)}"
        )
    return apply_name_mapping(arrow_schema, name_mapping)


def project_by_field_id(data: Data, schema: Schema, *, name_mapping: NameMapping | None = None) -> Data:
    """Return ``data`` with exactly ``schema``'s columns, in order, named and typed as the schema says.

    Args:
        data: a table or batch as read from a data file (any column names/order, extra columns allowed).
        schema: the Iceberg schema to produce (pass ``schema.select(...)`` to read fewer columns).
        name_mapping: used when the file carries no field ids.

    Raises:
        ValidationError: a required column is missing and has no initial default, or the file has no
            ids and no mapping, or a column's type in the file cannot become the schema's type.
    """
    source = file_schema_with_ids(data.schema, name_mapping=name_mapping)
    by_id = {fid: i for i, f in enumerate(source) if (fid := field_id_of(f)) is not None}
    n = data.num_rows
    columns: list[pa.Array | pa.ChunkedArray] = []
    for tf in schema.fields:
        idx = by_id.get(tf.field_id)
        if idx is None:
            columns.append(_missing(tf, n, tf.name))
            continue
        col = data.column(idx)
        if isinstance(col, pa.ChunkedArray):
            chunks = [_project(c, source.field(idx), tf, tf.name) for c in col.chunks]
            columns.append(pa.chunked_array(chunks, type=type_to_arrow(tf.field_type)))
        else:
            columns.append(_project(col, source.field(idx), tf, tf.name))
    target = schema_to_arrow(schema)
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(columns, schema=target)
    return pa.Table.from_arrays(columns, schema=target)


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _project(arr: pa.Array, src: pa.Field, tgt: NestedField, path: str) -> pa.Array:
    t = tgt.field_type
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(t, StructType):
        if not pa.types.is_struct(arr.type):
            raise ValidationError(f"Column {path!r}: file type {arr.type} cannot be read as {t}")
        src_type = src.type
        by_id = {
            fid: i for i in range(src_type.num_fields) if (fid := field_id_of(src_type.field(i))) is not None
        }
        children = []
        for cf in t.fields:
            i = by_id.get(cf.field_id)
            child_path = f"{path}.{cf.name}"
            if i is None:
                children.append(_missing(cf, len(arr), child_path))
            else:
                children.append(_project(arr.field(i), src_type.field(i), cf, child_path))
        fields = [field_to_arrow(cf) for cf in t.fields]
        if not fields:  # an empty struct: only validity survives (rare; a Python loop is fine)
            return pa.array([{} if ok else None for ok in arr.is_valid().to_pylist()], pa.struct([]))
        return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(arr))
    if isinstance(t, ListType):
        arr = _as_list(arr, path, t)
        offsets, start, length = _rebased_offsets(arr)
        values = _project(
            arr.values.slice(start, length), arr.type.value_field, t.element_field, f"{path}.element"
        )
        return pa.ListArray.from_arrays(offsets, values, type=type_to_arrow(t), mask=_mask(arr))
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise ValidationError(f"Column {path!r}: file type {arr.type} cannot be read as {t}")
        offsets, start, length = _rebased_offsets(arr)
        keys = _project(arr.keys.slice(start, length), arr.type.key_field, t.key_field, f"{path}.key")
        items = _project(arr.items.slice(start, length), arr.type.item_field, t.value_field, f"{path}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, type=type_to_arrow(t), mask=_mask(arr))
    return _cast_primitive(arr, t, path)


def _rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """Offsets of a (possibly sliced) list/map array starting at 0, and the child range they cover.

    ``.offsets`` of a slice are absolute into the whole child array, and Arrow refuses a validity mask
    together with such sliced offsets, so the child is sliced to the covered range instead.
    """
    offsets = arr.offsets
    if len(offsets) == 0:
        return pa.array([0], pa.int32()), 0, 0
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    rebased = pc.subtract(offsets, pa.scalar(start, offsets.type)).cast(pa.int32())
    return rebased, start, end - start


def _as_list(arr: pa.Array, path: str, t: ListType) -> pa.Array:
    at = arr.type
    if pa.types.is_list(at) or pa.types.is_large_list(at):
        return arr
    if pa.types.is_fixed_size_list(at) or (hasattr(pa.types, "is_list_view") and pa.types.is_list_view(at)):
        return arr.cast(pa.list_(at.value_field))
    raise ValidationError(f"Column {path!r}: file type {at} cannot be read as {t}")


def _cast_primitive(arr: pa.Array, t: IcebergType, path: str) -> pa.Array:
    target = type_to_arrow(t)
    if arr.type == target:
        return arr
    try:
        if isinstance(t, UUIDType) and isinstance(target, pa.BaseExtensionType):
            storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
            if storage.type != target.storage_type:
                storage = storage.cast(target.storage_type)
            return pa.ExtensionArray.from_storage(target, storage)
        if isinstance(arr, pa.ExtensionArray):
            arr = arr.storage
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(f"Column {path!r}: cannot read file type {arr.type} as {t}: {e}") from e


def _missing(f: NestedField, n: int, path: str) -> pa.Array:
    if f.initial_default is not None:
        return constant_array(f.initial_default, f.field_type, n, column=path)
    if f.required:
        raise ValidationError(
            f"Missing required field {path!r} (id {f.field_id}) in data file, and it has no initial default"
        )
    return pa.nulls(n, type_to_arrow(f.field_type))


def constant_array(value: object, t: IcebergType, n: int, *, column: str = "") -> pa.Array:
    """An Arrow array repeating one value (Floe's value representation, see ``floe.spec.transforms.base``).

    Raises:
        UnsupportedError: defaults for nested types are not supported.
    """
    if not isinstance(t, PrimitiveType):
        raise UnsupportedError(f"Column {column!r}: default values for nested type {t} are not supported")
    target = type_to_arrow(t)
    if isinstance(t, UUIDType):
        raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)  # type: ignore[call-overload]
        one = pa.array([raw], pa.binary(16))
        one = pa.ExtensionArray.from_storage(target, one) if isinstance(target, pa.BaseExtensionType) else one
    elif isinstance(t, DecimalType):
        one = pa.array([Decimal(str(value)) if not isinstance(value, Decimal) else value], target)
    elif pa.types.is_date(target):
        one = pa.array([value], pa.int32()).cast(target)
    elif pa.types.is_time(target) or pa.types.is_timestamp(target):
        one = pa.array([value], pa.int64()).cast(target)
    else:
        one = pa.array([value], target)
    return one.take(pa.array(np.zeros(n, dtype=np.int32)))
