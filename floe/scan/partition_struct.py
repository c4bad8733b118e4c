"""The unified partition type of a table and files' partition tuples as Arrow structs of it.

Metadata tables (``files``, ``partitions``, ``position_deletes``) and the ``_partition`` metadata column
show every file's partition in one struct holding every partition field of every spec (Java's
``Partitioning.partitionType``); fields the file's spec lacks are null.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa

from floe.errors import ValidationError
from floe.io.arrow_schema import type_to_arrow
from floe.spec.manifest import DataFile
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import IcebergType, NestedField, StructType, UUIDType

__all__ = ["arrow_value", "partition_arrow_type", "partition_column", "partition_struct_type"]


def partition_struct_type(md: TableMetadata) -> StructType:
    """Every partition field of every spec, by partition field id (Java's ``Partitioning.partitionType``)."""
    seen: dict[int, NestedField] = {}
    for spec in sorted(md.partition_specs, key=lambda s: s.spec_id):
        try:
            ptype = md.partition_type(spec.spec_id)
        except ValidationError:
            continue
        for f in ptype.fields:
            seen.setdefault(f.field_id, NestedField(f.field_id, f.name, f.field_type, False))
    return StructType(*seen.values())


def arrow_value(v: object, t: IcebergType) -> object:
    """A partition or bound value as pyarrow takes it (uuids as their 16 bytes)."""
    if isinstance(t, UUIDType) and isinstance(v, uuid.UUID):
        return v.bytes
    return v


def partition_arrow_type(ptype: StructType) -> pa.StructType:
    """The Arrow struct of a partition type (uuids as 16-byte binary, as Spark shows them)."""
    fields = []
    for f in ptype.fields:
        at = pa.binary(16) if isinstance(f.field_type, UUIDType) else type_to_arrow(f.field_type)
        fields.append(pa.field(f.name, at))
    return pa.struct(fields)


def partition_column(md: TableMetadata, ptype: StructType, files: Sequence[DataFile]) -> pa.Array:
    """Partition tuples coerced into the union struct (fields a spec lacks are null)."""
    specs = md.specs_by_id()
    at = partition_arrow_type(ptype)
    columns = []
    for f in ptype.fields:
        values = []
        for df in files:
            spec = specs.get(df.spec_id)
            v = None
            if spec is not None:
                for pos, pf in enumerate(spec.fields):
                    if pf.field_id == f.field_id and pos < len(df.partition):
                        v = arrow_value(df.partition[pos], f.field_type)
            values.append(v)
        columns.append(pa.array(values, type=at.field(f.name).type))
    if not ptype.fields:
        return pa.array([{}] * len(files), type=pa.struct([]))
    return pa.StructArray.from_arrays(columns, fields=list(at))
