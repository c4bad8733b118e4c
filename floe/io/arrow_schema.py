"""Iceberg schema <-> Arrow schema, with Parquet field ids on every field (spec "Parquet" appendix).

Type choices (Iceberg -> Arrow) and why:
- ``string`` -> ``pa.string()``, ``binary`` -> ``pa.binary()`` (32-bit offsets): Spark's Arrow exchange
  (``mapInArrow``, ``toArrow``, Python data sources) uses these unless ``spark.sql.execution.arrow.
  useLargeVarTypes`` is set (default false), and batches handed to Spark must match its types exactly.
  Readers accept ``large_*`` and ``*_view`` inputs and cast them.
- ``uuid`` -> ``pa.uuid()`` (pyarrow >= 18) so Parquet files carry the UUID logical type the spec
  requires for ``uuid`` columns (``fixed_len_byte_array(16)`` + UUID), which Java Iceberg and PyIceberg
  read natively; older pyarrow falls back to ``fixed_size_binary(16)``. Spark must read such columns
  with a ``binary`` read schema (DESIGN.md section 7); see ``floe.spark.types``.
- ``timestamp``/``timestamptz`` -> ``timestamp("us")`` / ``timestamp("us", tz="UTC")``; ``_ns`` -> ``"ns"``;
  ``time`` -> ``time64("us")``; ``date`` -> ``date32``; ``decimal`` -> ``decimal128``; ``fixed[n]`` ->
  ``fixed_size_binary(n)``; ``unknown`` -> ``null``. ``required`` -> ``nullable=False``.
- Lists and maps use the Parquet names ``element`` / ``key`` / ``value`` and carry field ids too.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from floe.errors import UnsupportedError, ValidationError
from floe.spec.schema import Schema, assign_fresh_ids
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = [
    "DOC_KEY",
    "FIELD_ID_KEY",
    "UUID_ARROW_TYPE",
    "arrow_to_schema",
    "arrow_to_type",
    "field_id_of",
    "field_to_arrow",
    "orc_ids_as_field_ids",
    "schema_to_arrow",
    "type_to_arrow",
    "without_field_ids",
]

FIELD_ID_KEY = b"PARQUET:field_id"
DOC_KEY = b"doc"
# Iceberg's ORC writers keep field ids in ORC type attributes; pyarrow (>= 16) surfaces them as field metadata.
ORC_ID_KEY = b"iceberg.id"

UUID_ARROW_TYPE: pa.DataType = pa.uuid() if hasattr(pa, "uuid") else pa.binary(16)

_SIMPLE: dict[type, Callable[[], pa.DataType]] = {
    BooleanType: pa.bool_,
    IntegerType: pa.int32,
    LongType: pa.int64,
    FloatType: pa.float32,
    DoubleType: pa.float64,
    DateType: pa.date32,
    StringType: pa.string,
    BinaryType: pa.binary,
    UnknownType: pa.null,
}


def field_id_of(field: pa.Field) -> int | None:
    """The Parquet field id stored in an Arrow field's metadata, or None (Spark writes -1 for "none")."""
    md = field.metadata
    if not md or FIELD_ID_KEY not in md:
        return None
    value = int(md[FIELD_ID_KEY])
    return value if value >= 0 else None


def _metadata(field_id: int, doc: str | None) -> dict[bytes, bytes]:
    md = {FIELD_ID_KEY: str(field_id).encode()}
    if doc:
        md[DOC_KEY] = doc.encode()
    return md


def type_to_arrow(t: IcebergType) -> pa.DataType:
    """The Arrow type for an Iceberg type (nested children carry their field ids).

    Raises:
        UnsupportedError: variant has no Arrow mapping in Floe yet.
    """
    simple = _SIMPLE.get(type(t))
    if simple is not None:
        return simple()
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, UUIDType):
        return UUID_ARROW_TYPE
    if isinstance(t, TimeType):
        return pa.time64("us")
    if isinstance(t, TimestampType):
        return pa.timestamp("us")
    if isinstance(t, TimestamptzType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(t, TimestampNanoType):
        return pa.timestamp("ns")
    if isinstance(t, TimestamptzNanoType):
        return pa.timestamp("ns", tz="UTC")
    if isinstance(t, (GeometryType, GeographyType)):
        return pa.binary()  # the spec's WKB (the Arrow writer refuses them: see floe.write.task_writer)
    if isinstance(t, StructType):
        return pa.struct([field_to_arrow(f) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(field_to_arrow(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(field_to_arrow(t.key_field), field_to_arrow(t.value_field))
    raise UnsupportedError(f"Iceberg type {t} has no Arrow mapping")


def field_to_arrow(f: NestedField) -> pa.Field:
    """An Arrow field with the field id (and doc) in its metadata; required -> not nullable."""
    return pa.field(
        f.name, type_to_arrow(f.field_type), nullable=not f.required, metadata=_metadata(f.field_id, f.doc)
    )


def schema_to_arrow(schema: Schema | StructType) -> pa.Schema:
    """The Arrow schema of an Iceberg schema, with ``PARQUET:field_id`` on every field at every depth."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    return pa.schema([field_to_arrow(f) for f in struct.fields])


# -- Arrow -> Iceberg ------------------------------------------------------------------------------
def arrow_to_type(
    t: pa.DataType, *, column: str = "", next_id: Callable[[], int] | None = None
) -> IcebergType:
    """The Iceberg type for an Arrow type. Nested children take ids from their metadata or ``next_id``.

    Raises:
        UnsupportedError: the Arrow type has no Iceberg equivalent (the message names ``column``).
        ValidationError: a nested child has no field id and no ``next_id`` was given.
    """
    where = f" (column {column!r})" if column else ""
    if pa.types.is_dictionary(t):
        return arrow_to_type(t.value_type, column=column, next_id=next_id)
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return UUIDType()
        return arrow_to_type(t.storage_type, column=column, next_id=next_id)
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return IntegerType()
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return LongType()
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedError(f"Arrow {t}{where}: Iceberg decimals hold at most 38 digits")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_date(t):
        return DateType()
    if pa.types.is_time(t):
        if t.unit == "ns":
            raise UnsupportedError(f"Arrow {t}{where}: Iceberg time has microsecond precision")
        return TimeType()
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            return TimestamptzNanoType() if t.tz else TimestampNanoType()
        return TimestamptzType() if t.tz else TimestampType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return BinaryType()
    if pa.types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if pa.types.is_null(t):
        return UnknownType()
    if pa.types.is_struct(t):
        return StructType(*(_arrow_field(t.field(i), column, next_id) for i in range(t.num_fields)))
    if pa.types.is_map(t):
        k = _arrow_field(t.key_field, column, next_id)
        v = _arrow_field(t.item_field, column, next_id)
        return MapType(k.field_id, k.field_type, v.field_id, v.field_type, v.required)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or _is_list_view(t):
        e = _arrow_field(t.value_field, column, next_id)
        return ListType(e.field_id, e.field_type, e.required)
    raise UnsupportedError(f"Arrow type {t}{where} has no Iceberg equivalent")


def _is_list_view(t: pa.DataType) -> bool:
    check = getattr(pa.types, "is_list_view", None)
    check_large = getattr(pa.types, "is_large_list_view", None)
    return bool((check and check(t)) or (check_large and check_large(t)))


def _arrow_field(f: pa.Field, parent: str, next_id: Callable[[], int] | None) -> NestedField:
    name = f"{parent}.{f.name}" if parent else f.name
    fid = field_id_of(f)
    if fid is None:
        if next_id is None:
            raise ValidationError(f"Arrow field {name!r} has no {FIELD_ID_KEY.decode()} metadata")
        fid = next_id()
    doc = f.metadata.get(DOC_KEY).decode() if f.metadata and DOC_KEY in f.metadata else None
    return NestedField(fid, f.name, arrow_to_type(f.type, column=name, next_id=next_id), not f.nullable, doc)


def orc_ids_as_field_ids(arrow_schema: pa.Schema) -> pa.Schema | None:
    """An ORC file's Arrow schema with its ``iceberg.id`` attributes as ``PARQUET:field_id``, or None.

    None when the file has no ids at the top level (written by Hive or another engine before migration):
    such files are matched by name mapping.
    """
    if not any(f.metadata and ORC_ID_KEY in f.metadata for f in arrow_schema):
        return None
    return pa.schema([_orc_field(f) for f in arrow_schema], metadata=arrow_schema.metadata)


def _orc_field(f: pa.Field) -> pa.Field:
    md = dict(f.metadata or {})
    if ORC_ID_KEY in md:
        md[FIELD_ID_KEY] = md[ORC_ID_KEY]
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_orc_field(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_map(t):
        t = pa.map_(_orc_field(t.key_field), _orc_field(t.item_field), keys_sorted=t.keys_sorted)
    elif pa.types.is_large_list(t):
        t = pa.large_list(_orc_field(t.value_field))
    elif pa.types.is_list(t):
        t = pa.list_(_orc_field(t.value_field))
    return pa.field(f.name, t, nullable=f.nullable, metadata=md or None)


def without_field_ids(arrow_schema: pa.Schema) -> pa.Schema:
    """The same Arrow schema with ``PARQUET:field_id`` removed at every depth (for matching by name)."""
    return pa.schema([_strip_field(f) for f in arrow_schema], metadata=arrow_schema.metadata)


def _strip_field(f: pa.Field) -> pa.Field:
    md = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY}
    return pa.field(f.name, _strip_type(f.type), nullable=f.nullable, metadata=md or None)


def _strip_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_strip_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_strip_field(t.key_field), _strip_field(t.item_field), keys_sorted=t.keys_sorted)
    if pa.types.is_large_list(t):
        return pa.large_list(_strip_field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_strip_field(t.value_field), t.list_size)
    if pa.types.is_list(t):
        return pa.list_(_strip_field(t.value_field))
    return t


def arrow_to_schema(arrow_schema: pa.Schema, *, schema_id: int = 0) -> Schema:
    """The Iceberg schema of an Arrow schema.

    When every field carries ``PARQUET:field_id`` the ids are kept; when none does, fresh ids are
    assigned as Iceberg does for a new table (``assign_fresh_ids``).

    Raises:
        ValidationError: only some fields carry ids.
        UnsupportedError: a column's type has no Iceberg equivalent.
    """
    ids = [_has_ids(f) for f in arrow_schema]
    flat = [x for group in ids for x in group]
    if flat and all(flat):
        return Schema(*(_arrow_field(f, "", None) for f in arrow_schema), schema_id=schema_id)
    if any(flat):
        missing = [f.name for f, group in zip(arrow_schema, ids) if not all(group)]
        raise ValidationError(
            f"Arrow schema has field ids on some fields only; missing under: {', '.join(missing)}"
        )
    counter = iter(range(1, 1 << 31))
    provisional = Schema(*(_arrow_field(f, "", lambda: next(counter)) for f in arrow_schema))
    return assign_fresh_ids(provisional, schema_id=schema_id)


def _has_ids(f: pa.Field) -> list[bool]:
    out = [field_id_of(f) is not None]
    t = f.type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            out += _has_ids(t.field(i))
    elif pa.types.is_map(t):
        out += _has_ids(t.key_field) + _has_ids(t.item_field)
    elif (
        pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or _is_list_view(t)
    ):
        out += _has_ids(t.value_field)
    return out
