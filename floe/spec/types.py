"""Iceberg types (spec section "Schemas and Data Types"): frozen values, no IO.

Primitive types print as the spec's type strings (``decimal(9,2)``, ``fixed[16]``), which is also how
they appear in metadata JSON. Nested types carry field ids on every child, as the spec requires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from floe.errors import ValidationError

__all__ = [
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DefaultValue",
    "DoubleType",
    "FixedType",
    "FloatType",
    "GeographyType",
    "GeometryType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "NestedType",
    "PrimitiveType",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNanoType",
    "TimestampType",
    "TimestamptzNanoType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "VariantType",
    "decimal_required_bytes",
    "is_promotion_allowed",
    "parse_primitive",
]

# A default value as the spec stores it, already decoded from JSON into a Python value.
DefaultValue = object


@dataclass(frozen=True, slots=True)
class IcebergType:
    """Base of every Iceberg type."""

    @property
    def is_primitive(self) -> bool:
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        return isinstance(self, NestedType)


@dataclass(frozen=True, slots=True)
class PrimitiveType(IcebergType):
    """A type with no children."""

    def __str__(self) -> str:
        return _PRIMITIVE_NAMES[type(self)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@dataclass(frozen=True, slots=True, repr=False)
class BooleanType(PrimitiveType):
    pass


@dataclass(frozen=True, slots=True, repr=False)
class IntegerType(PrimitiveType):
    """32-bit signed integer (spec name ``int``)."""


@dataclass(frozen=True, slots=True, repr=False)
class LongType(PrimitiveType):
    """64-bit signed integer."""


@dataclass(frozen=True, slots=True, repr=False)
class FloatType(PrimitiveType):
    """32-bit IEEE 754 float."""


@dataclass(frozen=True, slots=True, repr=False)
class DoubleType(PrimitiveType):
    """64-bit IEEE 754 float."""


@dataclass(frozen=True, slots=True)
class DecimalType(PrimitiveType):
    """Fixed-point decimal; precision must be 38 or less."""

    precision: int
    scale: int

    def __post_init__(self) -> None:
        if not 0 < self.precision <= 38:
            raise ValidationError(f"decimal precision must be in 1..38, got {self.precision}")

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"


@dataclass(frozen=True, slots=True, repr=False)
class DateType(PrimitiveType):
    """Calendar date, days from 1970-01-01."""


@dataclass(frozen=True, slots=True, repr=False)
class TimeType(PrimitiveType):
    """Time of day, microseconds from midnight."""


@dataclass(frozen=True, slots=True, repr=False)
class TimestampType(PrimitiveType):
    """Timestamp without zone, microseconds."""


@dataclass(frozen=True, slots=True, repr=False)
class TimestamptzType(PrimitiveType):
    """Timestamp with zone (stored as UTC), microseconds."""


@dataclass(frozen=True, slots=True, repr=False)
class TimestampNanoType(PrimitiveType):
    """Timestamp without zone, nanoseconds (v3)."""


@dataclass(frozen=True, slots=True, repr=False)
class TimestamptzNanoType(PrimitiveType):
    """Timestamp with zone, nanoseconds (v3)."""


@dataclass(frozen=True, slots=True, repr=False)
class StringType(PrimitiveType):
    """UTF-8 string."""


@dataclass(frozen=True, slots=True, repr=False)
class UUIDType(PrimitiveType):
    """Universally unique identifier, 16 bytes."""


@dataclass(frozen=True, slots=True)
class FixedType(PrimitiveType):
    """Fixed-length byte array."""

    length: int

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


@dataclass(frozen=True, slots=True, repr=False)
class BinaryType(PrimitiveType):
    """Arbitrary-length byte array."""


@dataclass(frozen=True, slots=True, repr=False)
class UnknownType(PrimitiveType):
    """v3 ``unknown``: a column whose values are all null."""


@dataclass(frozen=True, slots=True, repr=False)
class VariantType(PrimitiveType):
    """v3 semi-structured ``variant``; kept so v3 tables parse."""


@dataclass(frozen=True, slots=True)
class GeometryType(PrimitiveType):
    """v3 ``geometry(C)``; kept so v3 tables parse."""

    crs: str = "OGC:CRS84"

    def __str__(self) -> str:
        return "geometry" if self.crs == "OGC:CRS84" else f"geometry({self.crs})"


@dataclass(frozen=True, slots=True)
class GeographyType(PrimitiveType):
    """v3 ``geography(C, A)``; kept so v3 tables parse."""

    crs: str = "OGC:CRS84"
    algorithm: str = "spherical"

    def __str__(self) -> str:
        if self.crs == "OGC:CRS84" and self.algorithm == "spherical":
            return "geography"
        return f"geography({self.crs}, {self.algorithm})"


_PRIMITIVE_NAMES: dict[type, str] = {
    BooleanType: "boolean",
    IntegerType: "int",
    LongType: "long",
    FloatType: "float",
    DoubleType: "double",
    DateType: "date",
    TimeType: "time",
    TimestampType: "timestamp",
    TimestamptzType: "timestamptz",
    TimestampNanoType: "timestamp_ns",
    TimestamptzNanoType: "timestamptz_ns",
    StringType: "string",
    UUIDType: "uuid",
    BinaryType: "binary",
    UnknownType: "unknown",
    VariantType: "variant",
}
_BY_NAME: dict[str, PrimitiveType] = {name: cls() for cls, name in _PRIMITIVE_NAMES.items()}
_DECIMAL = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_FIXED = re.compile(r"^fixed\s*\[\s*(\d+)\s*\]$")
_GEOMETRY = re.compile(r"^geometry\s*(?:\(\s*([^)]*?)\s*\))?$")
_GEOGRAPHY = re.compile(r"^geography\s*(?:\(\s*([^,)]*?)\s*(?:,\s*([^)]*?)\s*)?\))?$")


def parse_primitive(text: str) -> PrimitiveType:
    """Parse a spec type string such as ``long``, ``decimal(9,2)`` or ``fixed[16]``.

    Raises:
        ValidationError: the string names no Iceberg primitive type.
    """
    raw = text.strip()
    key = raw.lower()
    if key in _BY_NAME:
        return _BY_NAME[key]
    if m := _DECIMAL.match(key):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.match(key):
        return FixedType(int(m.group(1)))
    if m := _GEOMETRY.match(raw):
        return GeometryType(m.group(1)) if m.group(1) else GeometryType()
    if m := _GEOGRAPHY.match(raw):
        crs = m.group(1) or "OGC:CRS84"
        return GeographyType(crs, m.group(2) or "spherical")
    raise ValidationError(f"Cannot parse type from json: unknown type {text!r}")


@dataclass(frozen=True, slots=True)
class NestedField:
    """A named, id-carrying child of a struct (also used for schema columns)."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: DefaultValue | None = None
    write_default: DefaultValue | None = None

    @property
    def optional(self) -> bool:
        return not self.required

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        doc = f" ({self.doc})" if self.doc else ""
        return f"{self.field_id}: {self.name}: {req} {self.field_type}{doc}"


@dataclass(frozen=True, slots=True)
class NestedType(IcebergType):
    """Base of struct, list and map."""

    @property
    def children(self) -> tuple[NestedField, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class StructType(NestedType):
    """A tuple of named fields."""

    fields: tuple[NestedField, ...] = ()

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "fields", tuple(fields))

    @property
    def children(self) -> tuple[NestedField, ...]:
        return self.fields

    def field(self, field_id: int) -> NestedField | None:
        """The direct child with this id, if any."""
        for f in self.fields:
            if f.field_id == field_id:
                return f
        return None

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """The direct child with this name, if any."""
        if case_sensitive:
            return next((f for f in self.fields if f.name == name), None)
        low = name.lower()
        return next((f for f in self.fields if f.name.lower() == low), None)

    def __str__(self) -> str:
        return "struct<" + ", ".join(f"{f.name}: {f.field_type}" for f in self.fields) + ">"

    def __repr__(self) -> str:
        return f"StructType({', '.join(repr(f) for f in self.fields)})"


@dataclass(frozen=True, slots=True)
class ListType(NestedType):
    """A list whose element carries its own field id."""

    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def children(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class MapType(NestedType):
    """A map whose key and value each carry a field id; keys are always required."""

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def children(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


AnyType = PrimitiveType | StructType | ListType | MapType


def is_promotion_allowed(source: IcebergType, target: IcebergType, format_version: int = 2) -> bool:
    """Whether a column of type ``source`` may be changed to ``target`` (spec "Schema Evolution").

    Allowed: int -> long, float -> double, decimal(P, S) -> decimal(P', S) with P' >= P, and in v3
    date -> timestamp / timestamp_ns.
    """
    if source == target:
        return True
    if isinstance(source, IntegerType):
        return isinstance(target, LongType)
    if isinstance(source, FloatType):
        return isinstance(target, DoubleType)
    if isinstance(source, DecimalType) and isinstance(target, DecimalType):
        return target.scale == source.scale and target.precision >= source.precision
    if isinstance(source, DateType) and format_version >= 3:
        return isinstance(target, (TimestampType, TimestampNanoType))
    if isinstance(source, UnknownType):
        return format_version >= 3
    return False


def decimal_required_bytes(precision: int) -> int:
    """Minimum bytes of a two's-complement integer that holds any unscaled value of ``precision`` digits."""
    if not 0 < precision <= 38:
        raise ValidationError(f"decimal precision must be in 1..38, got {precision}")
    return _DECIMAL_BYTES[precision]


def _bytes_for(precision: int) -> int:
    n = 1
    while (1 << (8 * n - 1)) <= 10**precision - 1:
        n += 1
    return n


_DECIMAL_BYTES: dict[int, int] = {p: _bytes_for(p) for p in range(1, 39)}
