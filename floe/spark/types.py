"""Iceberg <-> Spark SQL type mapping: the one place Floe translates types for Spark.

- Field ids travel as StructField metadata ``{"parquet.field.id": N}`` on top-level and struct fields;
  Spark cannot carry ids for list elements or map keys/values (DESIGN.md section 5), so those are
  matched by position when reading.
- ``timestamp`` -> ``TimestampNTZType``; ``timestamptz`` -> ``TimestampType`` (an instant, shown in the
  session time zone). Spark has no nanosecond timestamps: ``timestamp_ns`` columns are refused.
- ``uuid`` shows as ``StringType`` in tables (as Iceberg on Spark does) but data files hold 16 bytes with
  the UUID logical type, which Spark can only read with a ``BinaryType`` read schema (DESIGN.md section
  7): pass ``for_files=True`` to get the schema for reading/writing Parquet files directly.
- ``time`` -> ``TimeType(6)`` (pyspark >= 4.1, needs ``spark.sql.timeType.enabled=true``, which
  ``floe.spark.session`` sets; Spark then writes Parquet TIME(MICROS)).
- ``fixed[n]`` -> ``BinaryType`` (Spark has no fixed-length binary); ``unknown`` -> ``NullType``.
- ``geometry(C)`` -> ``GeometryType(srid)`` and ``geography(C, spherical)`` -> ``GeographyType(srid)``
  (pyspark >= 4.1): Spark names a CRS by SRID (``OGC:CRS84`` is 4326, ``EPSG:n`` / ``srid:n`` is n) and
  writes both as WKB with Parquet's GEOMETRY/GEOGRAPHY logical types, as the spec stores them. A CRS Spark
  has no SRID for, or an edge algorithm other than spherical (Spark's only one), is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import types as T

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
    VariantType,
)

__all__ = [
    "FIELD_ID_METADATA_KEY",
    "from_spark_schema",
    "from_spark_type",
    "spark_field_id",
    "to_spark_ddl",
    "to_spark_schema",
    "to_spark_type",
]

FIELD_ID_METADATA_KEY = "parquet.field.id"

_SPARK_TIME: type | None = getattr(T, "TimeType", None)

_SIMPLE_TO_SPARK: dict[type, T.DataType] = {
    BooleanType: T.BooleanType(),
    IntegerType: T.IntegerType(),
    LongType: T.LongType(),
    FloatType: T.FloatType(),
    DoubleType: T.DoubleType(),
    DateType: T.DateType(),
    TimestampType: T.TimestampNTZType(),
    TimestamptzType: T.TimestampType(),
    StringType: T.StringType(),
    BinaryType: T.BinaryType(),
    UnknownType: T.NullType(),
}


def to_spark_type(t: IcebergType, *, column: str = "", for_files: bool = False) -> T.DataType:
    """The Spark type of an Iceberg type.

    Args:
        t: the Iceberg type.
        column: the column's name, used in error messages.
        for_files: the physical read/write type for Parquet files (uuid -> binary instead of string).

    Raises:
        UnsupportedError: Spark cannot represent the type (the message names the column).
    """
    simple = _SIMPLE_TO_SPARK.get(type(t))
    if simple is not None:
        return simple
    where = f" (column {column!r})" if column else ""
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, FixedType):
        return T.BinaryType()
    if isinstance(t, UUIDType):
        return T.BinaryType() if for_files else T.StringType()
    if isinstance(t, TimeType):
        if _SPARK_TIME is None:
            raise UnsupportedError(f"Iceberg type time{where} needs pyspark >= 4.1 (TimeType)")
        time_type: T.DataType = _SPARK_TIME(6)
        return time_type
    if isinstance(t, (TimestampNanoType, TimestamptzNanoType)):
        raise UnsupportedError(f"Iceberg type {t}{where}: Spark has no nanosecond timestamps")
    if isinstance(t, VariantType) and hasattr(T, "VariantType"):
        return T.VariantType()
    if isinstance(t, (GeometryType, GeographyType)):
        return _spark_geo_type(t, where)
    if isinstance(t, StructType):
        return T.StructType([_to_spark_field(f, column, for_files) for f in t.fields])
    if isinstance(t, ListType):
        return T.ArrayType(
            to_spark_type(t.element_type, column=f"{column}.element", for_files=for_files),
            not t.element_required,
        )
    if isinstance(t, MapType):
        return T.MapType(
            to_spark_type(t.key_type, column=f"{column}.key", for_files=for_files),
            to_spark_type(t.value_type, column=f"{column}.value", for_files=for_files),
            not t.value_required,
        )
    raise UnsupportedError(f"Iceberg type {t}{where} is not supported by Spark")


_GEO_TYPES: tuple[type, type] | None = (
    (T.GeometryType, T.GeographyType) if hasattr(T, "GeometryType") and hasattr(T, "GeographyType") else None
)


def _srid(crs: str) -> int | None:
    """Spark's SRID for an Iceberg CRS string, None when it has none."""
    if crs == "OGC:CRS84":
        return 4326
    kind, _, number = crs.partition(":")
    return int(number) if kind.lower() in ("epsg", "srid") and number.isdigit() else None


def _spark_geo_type(t: GeometryType | GeographyType, where: str) -> T.DataType:
    if _GEO_TYPES is None:
        raise UnsupportedError(f"Iceberg type {t}{where} needs pyspark >= 4.1 (GeometryType, GeographyType)")
    if isinstance(t, GeographyType) and t.algorithm.lower() != "spherical":
        raise UnsupportedError(f"Iceberg type {t}{where}: Spark's geography has spherical edges only")
    srid = _srid(t.crs)
    spark_type = _GEO_TYPES[0] if isinstance(t, GeometryType) else _GEO_TYPES[1]
    try:
        if srid is None:
            raise ValueError(t.crs)
        made: T.DataType = spark_type(srid)
    except Exception:  # noqa: BLE001 - Spark's own check of the SRID (ST_INVALID_SRID_VALUE)
        raise UnsupportedError(f"Iceberg type {t}{where}: Spark has no SRID for CRS {t.crs!r}") from None
    return made


def _iceberg_geo_type(t: T.DataType, where: str) -> IcebergType:
    """The Iceberg type of Spark's GeometryType/GeographyType, by the CRS Spark names for its SRID."""
    text = str(t.jsonValue())  # e.g. geometry(OGC:CRS84), geography(OGC:CRS84, SPHERICAL)
    inner = text[text.index("(") + 1:-1].split(",")
    crs = inner[0].strip()
    if crs.upper().startswith("SRID:"):  # an SRID with no authority name: the spec's srid:N, or any/mixed
        number = crs[5:]
        if not number.isdigit():
            raise UnsupportedError(f"Spark type {t.simpleString()}{where}: a column of any or mixed SRIDs has no Iceberg CRS")
        crs = f"srid:{number}"
    if _GEO_TYPES is not None and isinstance(t, _GEO_TYPES[0]):
        return GeometryType(crs)
    return GeographyType(crs, inner[1].strip().lower() if len(inner) > 1 else "spherical")


def _to_spark_field(f: NestedField, parent: str, for_files: bool) -> T.StructField:
    name = f"{parent}.{f.name}" if parent else f.name
    metadata: dict[str, object] = {FIELD_ID_METADATA_KEY: f.field_id}
    if f.doc:
        metadata["comment"] = f.doc
    return T.StructField(
        f.name, to_spark_type(f.field_type, column=name, for_files=for_files), not f.required, metadata
    )


def to_spark_schema(schema: Schema | StructType, *, for_files: bool = False) -> T.StructType:
    """A Spark schema with ``parquet.field.id`` metadata on every top-level and struct field."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    return T.StructType([_to_spark_field(f, "", for_files) for f in struct.fields])


def spark_field_id(f: T.StructField) -> int | None:
    """The ``parquet.field.id`` of a Spark field, if it has one."""
    value = (f.metadata or {}).get(FIELD_ID_METADATA_KEY)
    return int(value) if value is not None else None


# -- Spark -> Iceberg ----------------------------------------------------------------------------
def from_spark_type(
    t: T.DataType, *, column: str = "", next_id: Callable[[], int] | None = None
) -> IcebergType:
    """The Iceberg type of a Spark type; nested children get ids from metadata or ``next_id``.

    Raises:
        UnsupportedError: the Spark type has no Iceberg equivalent (intervals, calendar, ...).
    """
    ids = next_id or _IdSource().next
    where = f" (column {column!r})" if column else ""
    if isinstance(t, T.BooleanType):
        return BooleanType()
    if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType)):
        return IntegerType()
    if isinstance(t, T.LongType):
        return LongType()
    if isinstance(t, T.FloatType):
        return FloatType()
    if isinstance(t, T.DoubleType):
        return DoubleType()
    if isinstance(t, T.DecimalType):
        return DecimalType(t.precision, t.scale)
    if isinstance(t, T.DateType):
        return DateType()
    if isinstance(t, T.TimestampNTZType):
        return TimestampType()
    if isinstance(t, T.TimestampType):
        return TimestamptzType()
    if _SPARK_TIME is not None and isinstance(t, _SPARK_TIME):
        return TimeType()
    if isinstance(t, (T.StringType, T.CharType, T.VarcharType)):
        return StringType()
    if isinstance(t, T.BinaryType):
        return BinaryType()
    if isinstance(t, T.NullType):
        return UnknownType()
    if _GEO_TYPES is not None and isinstance(t, _GEO_TYPES):
        return _iceberg_geo_type(t, where)
    if hasattr(T, "VariantType") and isinstance(t, T.VariantType):
        # Spark's Parquet writer stores it as the spec's unshredded variant group (metadata, value binaries)
        return VariantType()
    if isinstance(t, T.StructType):
        return StructType(*(_from_spark_field(f, column, ids) for f in t.fields))
    if isinstance(t, T.ArrayType):
        eid = ids()
        return ListType(
            eid, from_spark_type(t.elementType, column=f"{column}.element", next_id=ids), not t.containsNull
        )
    if isinstance(t, T.MapType):
        kid, vid = ids(), ids()
        return MapType(
            kid,
            from_spark_type(t.keyType, column=f"{column}.key", next_id=ids),
            vid,
            from_spark_type(t.valueType, column=f"{column}.value", next_id=ids),
            not t.valueContainsNull,
        )
    raise UnsupportedError(f"Spark type {t.simpleString()}{where} has no Iceberg equivalent")


class _IdSource:
    """Hands out provisional ids above any id found in Spark metadata (renumbered afterwards if needed)."""

    def __init__(self, start: int = 1 << 24) -> None:
        self._next = start

    def next(self) -> int:
        self._next += 1
        return self._next


def _from_spark_field(f: T.StructField, parent: str, ids: Callable[[], int]) -> NestedField:
    name = f"{parent}.{f.name}" if parent else f.name
    fid = spark_field_id(f)
    doc = (f.metadata or {}).get("comment")
    return NestedField(
        fid if fid is not None else ids(),
        f.name,
        from_spark_type(f.dataType, column=name, next_id=ids),
        not f.nullable,
        doc if isinstance(doc, str) else None,
    )


def from_spark_schema(struct: T.StructType, *, keep_ids: bool = False, schema_id: int = 0) -> Schema:
    """The Iceberg schema of a Spark schema (for CREATE TABLE and write checks).

    Args:
        struct: the Spark schema.
        keep_ids: keep ``parquet.field.id`` metadata as field ids (every top-level and struct field must
            have one; list/map children get ids above the highest). Otherwise ids are assigned fresh, as
            for a new table.
        schema_id: the resulting schema id.

    Raises:
        ValidationError: ``keep_ids`` and a field lacks an id.
        UnsupportedError: a column's type has no Iceberg equivalent.
    """
    if keep_ids:
        missing = [f.name for f in _all_struct_fields(struct) if spark_field_id(f) is None]
        if missing:
            raise ValidationError(
                f"Spark fields without {FIELD_ID_METADATA_KEY} metadata: {', '.join(missing)}"
            )
        top = max((spark_field_id(f) or 0 for f in _all_struct_fields(struct)), default=0)
        ids = _IdSource(top).next
        return Schema(*(_from_spark_field(f, "", ids) for f in struct.fields), schema_id=schema_id)
    ids = _IdSource().next
    stripped = T.StructType([_strip_ids(f) for f in struct.fields])
    provisional = Schema(*(_from_spark_field(f, "", ids) for f in stripped.fields))
    return assign_fresh_ids(provisional, schema_id=schema_id)


def _all_struct_fields(struct: T.StructType) -> list[T.StructField]:
    out: list[T.StructField] = []
    for f in struct.fields:
        out.append(f)
        out += _nested_struct_fields(f.dataType)
    return out


def _nested_struct_fields(t: T.DataType) -> list[T.StructField]:
    if isinstance(t, T.StructType):
        return _all_struct_fields(t)
    if isinstance(t, T.ArrayType):
        return _nested_struct_fields(t.elementType)
    if isinstance(t, T.MapType):
        return _nested_struct_fields(t.keyType) + _nested_struct_fields(t.valueType)
    return []


def _strip_ids(f: T.StructField) -> T.StructField:
    md = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_METADATA_KEY}
    return T.StructField(f.name, _strip_type(f.dataType), f.nullable, md)


def _strip_type(t: T.DataType) -> T.DataType:
    if isinstance(t, T.StructType):
        return T.StructType([_strip_ids(f) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_strip_type(t.elementType), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(_strip_type(t.keyType), _strip_type(t.valueType), t.valueContainsNull)
    return t


# -- DDL -----------------------------------------------------------------------------------------
def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _ddl_type(t: IcebergType, column: str) -> str:
    if isinstance(t, StructType):
        return "STRUCT<" + ", ".join(_ddl_field(f, column, nested=True) for f in t.fields) + ">"
    if isinstance(t, ListType):
        return f"ARRAY<{_ddl_type(t.element_type, column + '.element')}>"
    if isinstance(t, MapType):
        return f"MAP<{_ddl_type(t.key_type, column + '.key')}, {_ddl_type(t.value_type, column + '.value')}>"
    return to_spark_type(t, column=column).simpleString().upper()


def _ddl_field(f: NestedField, parent: str, *, nested: bool) -> str:
    name = f"{parent}.{f.name}" if parent else f.name
    sep = ": " if nested else " "
    out = f"{_quote(f.name)}{sep}{_ddl_type(f.field_type, name)}"
    if f.required:
        out += " NOT NULL"
    if f.doc:
        out += " COMMENT " + json.dumps(f.doc)  # a double-quoted, escaped SQL string literal
    return out


def to_spark_ddl(schema: Schema | StructType) -> str:
    """The column list of a Spark ``CREATE TABLE`` (``` `id` BIGINT NOT NULL, `data` STRING```)."""
    struct = schema.as_struct() if isinstance(schema, Schema) else schema
    return ", ".join(_ddl_field(f, "", nested=False) for f in struct.fields)
