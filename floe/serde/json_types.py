"""JSON forms of types, schemas, partition specs, sort orders and default values (spec Appendix C / D).

Pure functions between spec values and JSON-compatible Python values (dicts, lists, str, int). Key order
follows Iceberg Java's parsers so written files diff cleanly against Java's.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from floe.errors import InvalidMetadataError, ValidationError
from floe.spec.partitioning import PartitionField, PartitionSpec
from floe.spec.schema import Schema
from floe.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from floe.spec.transforms import parse_transform
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
    parse_primitive,
)

__all__ = [
    "JSON",
    "default_from_json",
    "default_to_json",
    "field_to_json",
    "get_bool",
    "get_int",
    "get_int_or_none",
    "get_str",
    "get_str_or_none",
    "partition_fields_from_json",
    "partition_spec_from_json",
    "partition_spec_to_json",
    "schema_from_json",
    "schema_to_json",
    "sort_order_from_json",
    "sort_order_to_json",
    "type_from_json",
    "type_to_json",
]

# A JSON-compatible value (what json.loads returns). Kept as Any: JSON is recursive and untyped.
JSON = Any


# -- required/optional field readers with Java-compatible messages --------------------------------
def _get(node: Mapping[str, JSON], key: str, kind: str) -> JSON:
    if not isinstance(node, Mapping):
        raise InvalidMetadataError(f"Cannot parse {kind} from non-object: {node!r}")
    if key not in node or node[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing {kind}: {key}")
    return node[key]


def get_str(node: Mapping[str, JSON], key: str) -> str:
    """The required string ``node[key]`` (``Cannot parse missing string: key``)."""
    value = _get(node, key, "string")
    if not isinstance(value, str):
        raise InvalidMetadataError(f"Cannot parse to a string value: {key}: {value!r}")
    return value


def get_str_or_none(node: Mapping[str, JSON], key: str) -> str | None:
    """The optional string ``node[key]``."""
    return None if node.get(key) is None else get_str(node, key)


def get_int(node: Mapping[str, JSON], key: str) -> int:
    """The required integer ``node[key]`` (``Cannot parse missing int: key``)."""
    value = _get(node, key, "int")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidMetadataError(f"Cannot parse to an integer value: {key}: {value!r}")
    return value


def get_int_or_none(node: Mapping[str, JSON], key: str) -> int | None:
    """The optional integer ``node[key]``."""
    return None if node.get(key) is None else get_int(node, key)


def get_bool(node: Mapping[str, JSON], key: str) -> bool:
    """The required boolean ``node[key]``."""
    value = _get(node, key, "boolean")
    if not isinstance(value, bool):
        raise InvalidMetadataError(f"Cannot parse to a boolean value: {key}: {value!r}")
    return value


# -- types ----------------------------------------------------------------------------------------
def type_to_json(t: IcebergType) -> JSON:
    """The spec JSON of a type: a string for primitives, an object for struct/list/map."""
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    return str(t)


def field_to_json(f: NestedField) -> dict[str, JSON]:
    """The JSON of a struct field (``id, name, required, type, doc, initial-default, write-default``)."""
    out: dict[str, JSON] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.field_type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = default_to_json(f.field_type, f.initial_default)
    if f.write_default is not None:
        out["write-default"] = default_to_json(f.field_type, f.write_default)
    return out


def type_from_json(node: JSON) -> IcebergType:
    """Parse a type from its spec JSON.

    Raises:
        InvalidMetadataError: ``Cannot parse type from json: ...`` for anything that is not a type.
    """
    if isinstance(node, str):
        try:
            return parse_primitive(node)
        except ValidationError as e:
            raise InvalidMetadataError(f"Cannot parse type from json: {node!r}") from e
    if isinstance(node, Mapping):
        kind = node.get("type")
        if kind == "struct":
            return _struct_from_json(node)
        if kind == "list":
            return ListType(
                get_int(node, "element-id"),
                type_from_json(_get(node, "element", "type")),
                get_bool(node, "element-required"),
            )
        if kind == "map":
            return MapType(
                get_int(node, "key-id"),
                type_from_json(_get(node, "key", "type")),
                get_int(node, "value-id"),
                type_from_json(_get(node, "value", "type")),
                get_bool(node, "value-required"),
            )
    raise InvalidMetadataError(f"Cannot parse type from json: {_short(node)}")


def _struct_from_json(node: Mapping[str, JSON]) -> StructType:
    fields_node = _get(node, "fields", "list")
    if not isinstance(fields_node, list):
        raise InvalidMetadataError(f"Cannot parse struct fields from non-array: {_short(fields_node)}")
    fields = []
    for fn in fields_node:
        ftype = type_from_json(_get(fn, "type", "type"))
        init = fn.get("initial-default")
        write = fn.get("write-default")
        fields.append(
            NestedField(
                get_int(fn, "id"),
                get_str(fn, "name"),
                ftype,
                get_bool(fn, "required"),
                get_str_or_none(fn, "doc"),
                None if init is None else default_from_json(ftype, init),
                None if write is None else default_from_json(ftype, write),
            )
        )
    return StructType(*fields)


def _short(node: JSON, limit: int = 200) -> str:
    text = repr(node)
    return text if len(text) <= limit else text[:limit] + "..."


# -- schema ---------------------------------------------------------------------------------------
def schema_to_json(schema: Schema) -> dict[str, JSON]:
    """The JSON of a schema (``type, schema-id, identifier-field-ids, fields``; Java's order)."""
    out: dict[str, JSON] = {"type": "struct", "schema-id": schema.schema_id}
    if schema.identifier_field_ids:
        out["identifier-field-ids"] = list(schema.identifier_field_ids)
    out["fields"] = [field_to_json(f) for f in schema.fields]
    return out


def schema_from_json(node: JSON, *, default_schema_id: int = 0) -> Schema:
    """Parse a schema; a missing ``schema-id`` (v1 legacy ``schema``) becomes ``default_schema_id``.

    Raises:
        InvalidMetadataError: the JSON is not a struct type, or the schema is inconsistent.
    """
    if not isinstance(node, Mapping) or node.get("type") != "struct":
        raise InvalidMetadataError(f"Cannot parse type from json: {_short(node)}")
    struct = _struct_from_json(node)
    schema_id = get_int_or_none(node, "schema-id")
    ids = node.get("identifier-field-ids") or []
    try:
        return Schema(
            *struct.fields,
            schema_id=default_schema_id if schema_id is None else schema_id,
            identifier_field_ids=[int(i) for i in ids],
        )
    except ValidationError as e:
        raise InvalidMetadataError(f"Invalid schema: {e}") from e


# -- partition specs ------------------------------------------------------------------------------
def partition_spec_to_json(spec: PartitionSpec) -> dict[str, JSON]:
    """The JSON of a partition spec (``spec-id, fields``)."""
    return {"spec-id": spec.spec_id, "fields": partition_fields_to_json(spec)}


def partition_fields_to_json(spec: PartitionSpec) -> list[dict[str, JSON]]:
    """The spec's fields (also the v1 legacy ``partition-spec`` array)."""
    out: list[dict[str, JSON]] = []
    for f in spec.fields:
        node: dict[str, JSON] = {"name": f.name, "transform": str(f.transform)}
        if len(f.source_ids) > 1:
            node["source-ids"] = list(f.source_ids)  # v3 multi-argument transform
        else:
            node["source-id"] = f.source_id
        node["field-id"] = f.field_id
        out.append(node)
    return out


def partition_fields_from_json(node: JSON, *, next_field_id: int = 1000) -> tuple[PartitionField, ...]:
    """Parse a partition field array; fields without ``field-id`` (old v1) get ``next_field_id``, +1 each.

    Java assigns 1000, 1001, ... in order to v1 fields written before field ids existed.
    """
    if not isinstance(node, list):
        raise InvalidMetadataError(f"Cannot parse partition spec fields from non-array: {_short(node)}")
    out = []
    for i, fn in enumerate(node):
        source_ids = _source_ids(fn)
        field_id = get_int_or_none(fn, "field-id")
        out.append(
            PartitionField(
                source_id=source_ids[0],
                field_id=next_field_id + i if field_id is None else field_id,
                transform=_transform(get_str(fn, "transform")),
                name=get_str(fn, "name"),
                source_ids=source_ids,
            )
        )
    return tuple(out)


def _source_ids(fn: Mapping[str, JSON]) -> tuple[int, ...]:
    """``source-id``, or v3's ``source-ids`` array for multi-argument transforms."""
    if fn.get("source-id") is not None:
        return (get_int(fn, "source-id"),)
    ids = fn.get("source-ids")
    if isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids):
        return tuple(ids)
    raise InvalidMetadataError("Cannot parse missing int: source-id")


def partition_spec_from_json(node: JSON) -> PartitionSpec:
    """Parse a partition spec object (``spec-id`` and ``fields`` required)."""
    if not isinstance(node, Mapping):
        raise InvalidMetadataError(f"Cannot parse partition spec from non-object: {_short(node)}")
    return PartitionSpec(get_int(node, "spec-id"), partition_fields_from_json(_get(node, "fields", "list")))


def _transform(text: str) -> Any:
    try:
        return parse_transform(text)
    except ValidationError as e:
        raise InvalidMetadataError(f"Cannot parse transform: {text!r}: {e}") from e


# -- sort orders ----------------------------------------------------------------------------------
def sort_order_to_json(order: SortOrder) -> dict[str, JSON]:
    """The JSON of a sort order (``order-id, fields``; fields as ``transform, source-id, direction, null-order``)."""
    fields: list[dict[str, JSON]] = []
    for f in order.fields:
        node: dict[str, JSON] = {"transform": str(f.transform)}
        if len(f.source_ids) > 1:
            node["source-ids"] = list(f.source_ids)
        else:
            node["source-id"] = f.source_id
        node["direction"] = f.direction.value
        node["null-order"] = f.null_order.value
        fields.append(node)
    return {"order-id": order.order_id, "fields": fields}


def sort_order_from_json(node: JSON) -> SortOrder:
    """Parse a sort order object."""
    if not isinstance(node, Mapping):
        raise InvalidMetadataError(f"Cannot parse sort order from non-object: {_short(node)}")
    fields = []
    for fn in _get(node, "fields", "list"):
        direction = get_str(fn, "direction").lower()
        null_order = get_str(fn, "null-order").lower()
        try:
            d, n = SortDirection(direction), NullOrder(null_order)
        except ValueError as e:
            raise InvalidMetadataError(
                f"Invalid sort field: direction={direction!r} null-order={null_order!r}"
            ) from e
        source_ids = _source_ids(fn)
        fields.append(
            SortField(
                source_id=source_ids[0],
                transform=_transform(get_str(fn, "transform")),
                direction=d,
                null_order=n,
                source_ids=source_ids,
            )
        )
    try:
        return SortOrder(get_int(node, "order-id"), tuple(fields))
    except ValidationError as e:
        raise InvalidMetadataError(f"Invalid sort order: {e}") from e


# -- default values (spec Appendix D "JSON single-value serialization") ---------------------------
_EPOCH = datetime(1970, 1, 1)
_EPOCH_DATE = date(1970, 1, 1)
_TIME = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$")
_TS = re.compile(r"^(\d{4,}-\d{2}-\d{2})T(\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:\d{2})?$")


def _frac_units(time_text: str, digits: int) -> int:
    """Units (10^-digits s) since midnight of ``HH:MM[:SS[.fff]]``."""
    m = _TIME.match(time_text)
    if not m:
        raise ValueError(time_text)
    h, mi, s, frac = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), m.group(4) or ""
    if len(frac) > digits and frac[digits:].strip("0"):
        raise ValueError(f"{time_text}: more than {digits} fractional digits")
    scale: int = 10**digits
    return ((h * 60 + mi) * 60 + s) * scale + int((frac + "0" * digits)[:digits])


def _parse_ts(text: str, *, zoned: bool, digits: int) -> int:
    m = _TS.match(text)
    if not m:
        raise ValueError(text)
    offset = m.group(3)
    if zoned != (offset is not None):
        raise ValueError(f"{text}: {'missing' if zoned else 'unexpected'} zone offset")
    days = (date.fromisoformat(m.group(1)) - _EPOCH_DATE).days
    scale: int = 10**digits
    value = days * 86_400 * scale + _frac_units(m.group(2), digits)
    if offset and offset != "Z":
        sign = -1 if offset[0] == "-" else 1
        minutes = int(offset[1:3]) * 60 + int(offset[4:6])
        value -= sign * minutes * 60 * scale
    return value


def _format_ts(value: int, *, zoned: bool, digits: int) -> str:
    seconds, frac = divmod(value, 10**digits)
    dt = _EPOCH + timedelta(seconds=seconds)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:0{digits}d}"
    return text + "+00:00" if zoned else text


def default_from_json(t: IcebergType, node: JSON) -> Any:
    """Decode a JSON default value of type ``t`` into Floe's value representation (floe.spec.transforms.base).

    Structs decode to ``dict[field_id, value]``, lists to tuples, maps to dicts.

    Raises:
        InvalidMetadataError: the JSON value does not fit the type (names both).
    """
    try:
        return _decode(t, node)
    except (ValueError, TypeError, InvalidOperation, KeyError) as e:
        raise InvalidMetadataError(f"Cannot parse default value {_short(node)} as {t}: {e}") from e


def _decode(t: IcebergType, node: JSON) -> Any:
    if node is None:
        return None
    if isinstance(t, BooleanType):
        if not isinstance(node, bool):
            raise TypeError("expected a boolean")
        return node
    if isinstance(t, (IntegerType, LongType)):
        if isinstance(node, bool) or not isinstance(node, int):
            raise TypeError("expected an integer")
        return node
    if isinstance(t, (FloatType, DoubleType)):
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            raise TypeError("expected a number")
        return float(node)
    if isinstance(t, DecimalType):
        value = Decimal(str(node))
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int) or -exponent != t.scale:
            raise ValueError(f"scale must be {t.scale}")
        return value
    if isinstance(t, (StringType,)):
        if not isinstance(node, str):
            raise TypeError("expected a string")
        return node
    if isinstance(t, UUIDType):
        return uuid.UUID(str(node))
    if isinstance(t, DateType):
        return (date.fromisoformat(str(node)) - _EPOCH_DATE).days
    if isinstance(t, TimeType):
        return _frac_units(str(node), 6)
    if isinstance(t, TimestampType):
        return _parse_ts(str(node), zoned=False, digits=6)
    if isinstance(t, TimestamptzType):
        return _parse_ts(str(node), zoned=True, digits=6)
    if isinstance(t, TimestampNanoType):
        return _parse_ts(str(node), zoned=False, digits=9)
    if isinstance(t, TimestamptzNanoType):
        return _parse_ts(str(node), zoned=True, digits=9)
    if isinstance(t, FixedType):
        raw = bytes.fromhex(str(node))
        if len(raw) != t.length:
            raise ValueError(f"expected {t.length} bytes, got {len(raw)}")
        return raw
    if isinstance(t, BinaryType):
        return bytes.fromhex(str(node))
    if isinstance(t, StructType):
        if not isinstance(node, Mapping):
            raise TypeError("expected an object keyed by field id")
        by_id = {f.field_id: f for f in t.fields}
        return {int(k): _decode(by_id[int(k)].field_type, v) for k, v in node.items()}
    if isinstance(t, ListType):
        if not isinstance(node, list):
            raise TypeError("expected an array")
        return tuple(_decode(t.element_type, v) for v in node)
    if isinstance(t, MapType):
        keys, values = node["keys"], node["values"]
        if len(keys) != len(values):
            raise ValueError("keys and values differ in length")
        return {_decode(t.key_type, k): _decode(t.value_type, v) for k, v in zip(keys, values)}
    if isinstance(t, PrimitiveType):
        return node  # variant / geometry / unknown: no defaults defined by the spec; keep as read
    raise TypeError(f"unsupported type {t}")


def default_to_json(t: IcebergType, value: Any) -> JSON:
    """Encode a value of type ``t`` in the spec's JSON single-value form (inverse of default_from_json)."""
    if value is None:
        return None
    if isinstance(t, (BooleanType, IntegerType, LongType, StringType)):
        return value
    if isinstance(t, (FloatType, DoubleType)):
        return float(value)
    if isinstance(t, DecimalType):
        return str(Decimal(value).quantize(Decimal(1).scaleb(-t.scale)))
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(t, DateType):
        return (_EPOCH_DATE + timedelta(days=int(value))).isoformat()
    if isinstance(t, TimeType):
        seconds, micros = divmod(int(value), 1_000_000)
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{micros:06d}"
    if isinstance(t, TimestampType):
        return _format_ts(int(value), zoned=False, digits=6)
    if isinstance(t, TimestamptzType):
        return _format_ts(int(value), zoned=True, digits=6)
    if isinstance(t, TimestampNanoType):
        return _format_ts(int(value), zoned=False, digits=9)
    if isinstance(t, TimestamptzNanoType):
        return _format_ts(int(value), zoned=True, digits=9)
    if isinstance(t, (FixedType, BinaryType)):
        return bytes(value).hex().upper()
    if isinstance(t, StructType):
        by_id = {f.field_id: f for f in t.fields}
        return {str(k): default_to_json(by_id[k].field_type, v) for k, v in value.items()}
    if isinstance(t, ListType):
        return [default_to_json(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        items = list(value.items()) if isinstance(value, Mapping) else list(value)
        return {
            "keys": [default_to_json(t.key_type, k) for k, _ in items],
            "values": [default_to_json(t.value_type, v) for _, v in items],
        }
    return value
