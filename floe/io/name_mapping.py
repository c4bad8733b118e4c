"""Name mapping (spec "Column Projection" / table property ``schema.name-mapping.default``).

Files written without Parquet field ids (imported or migrated tables) are read by mapping column names
to field ids. The JSON form is a list of ``{"field-id": N, "names": [...], "fields": [...]}`` objects;
list elements are mapped under the name ``element`` and map keys/values under ``key`` / ``value``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from floe.errors import ValidationError
from floe.io.arrow_schema import FIELD_ID_KEY, field_id_of
from floe.spec.schema import Schema
from floe.spec.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = [
    "MappedField",
    "NameMapping",
    "apply_name_mapping",
    "mapping_contradicts_schema",
    "name_mapping_from_schema",
]


@dataclass(frozen=True, slots=True)
class MappedField:
    """One entry: the names a column may have in data files, its field id (if any) and nested entries."""

    names: tuple[str, ...]
    field_id: int | None = None
    fields: tuple[MappedField, ...] = field(default=())

    def child(self, name: str) -> MappedField | None:
        """The nested entry matching ``name``."""
        return _find(self.fields, name)

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.field_id is not None:
            out["field-id"] = self.field_id
        out["names"] = list(self.names)
        if self.fields:
            out["fields"] = [f.to_json_obj() for f in self.fields]
        return out


def _find(fields: Sequence[MappedField], name: str) -> MappedField | None:
    for f in fields:
        if name in f.names:
            return f
    return None


@dataclass(frozen=True, slots=True)
class NameMapping:
    """A whole mapping: top-level entries."""

    fields: tuple[MappedField, ...]

    def __init__(self, fields: Iterable[MappedField]) -> None:
        object.__setattr__(self, "fields", tuple(fields))

    def find(self, *path: str) -> MappedField | None:
        """The entry at a name path (``find("location", "lat")``), or None."""
        entries: Sequence[MappedField] = self.fields
        found: MappedField | None = None
        for name in path:
            found = _find(entries, name)
            if found is None:
                return None
            entries = found.fields
        return found

    @classmethod
    def from_json(cls, text: str | list[Any]) -> NameMapping:
        """Parse the JSON text (or already-decoded list) of ``schema.name-mapping.default``.

        Raises:
            ValidationError: the JSON is not a valid name mapping.
        """
        try:
            obj = json.loads(text) if isinstance(text, str) else text
        except json.JSONDecodeError as e:
            raise ValidationError(f"Invalid name mapping JSON: {e}") from e
        if not isinstance(obj, list):
            raise ValidationError(f"Name mapping must be a JSON list, got {type(obj).__name__}")
        return cls(_parse_entry(e) for e in obj)

    def to_json(self) -> str:
        return json.dumps([f.to_json_obj() for f in self.fields], separators=(",", ":"))


def _parse_entry(obj: Any) -> MappedField:
    if not isinstance(obj, dict) or "names" not in obj:
        raise ValidationError(f"Name mapping entry needs 'names': {obj!r}")
    names = obj["names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValidationError(f"Name mapping 'names' must be a list of strings: {obj!r}")
    fid = obj.get("field-id")
    if fid is not None and not isinstance(fid, int):
        raise ValidationError(f"Name mapping 'field-id' must be an integer: {obj!r}")
    return MappedField(tuple(names), fid, tuple(_parse_entry(c) for c in obj.get("fields") or ()))


def name_mapping_from_schema(schema: Schema) -> NameMapping:
    """The default mapping of a schema: each field mapped from its current name (what Java creates on import)."""
    return NameMapping(_map_field(f) for f in schema.fields)


def _map_field(f: NestedField) -> MappedField:
    return MappedField((f.name,), f.field_id, _map_children(f.field_type))


def _map_children(t: IcebergType) -> tuple[MappedField, ...]:
    if isinstance(t, (StructType, ListType, MapType)):
        return tuple(_map_field(c) for c in t.children)
    return ()


def mapping_contradicts_schema(mapping: NameMapping, schema: Schema) -> str | None:
    """Why ``mapping`` cannot describe ``schema`` (a mapped id nested under another parent), else None.

    Tables migrated from Hive have been written with a mapping numbered depth-first while the schema's ids
    are breadth-first (Impala's ``iceberg_migrated_complex_test_orc``: ``struct_1_col.int_array_col`` maps
    to id 2, the schema's top-level ``int_bigint_map_col``). Reading through such a mapping pairs file
    columns with unrelated fields, so callers fall back to the schema's own names. Ids the schema does not
    know (dropped columns) and entries without ids are not evidence either way.
    """
    parents: dict[int, int | None] = {}

    def index(fields: Iterable[NestedField], parent: int | None) -> None:
        for f in fields:
            parents[f.field_id] = parent
            index(_children(f.field_type), f.field_id)

    index(schema.fields, None)

    def check(entries: Iterable[MappedField], parent: int | None, path: str) -> str | None:
        for e in entries:
            name = path + (e.names[0] if e.names else "?")
            fid = e.field_id
            if fid is not None and fid in parents and parents[fid] != parent and parent != _UNKNOWN:
                owner = parents[fid]
                where = "at the top level" if owner is None else f"under field id {owner}"
                return f"{name} maps to field id {fid}, which the schema has {where}"
            why = check(e.fields, e.field_id if e.field_id is not None else _UNKNOWN, name + ".")
            if why is not None:
                return why
        return None

    return check(mapping.fields, None, "")


_UNKNOWN: int = -1  # a parent entry without an id: its children cannot be checked


def _children(t: IcebergType) -> tuple[NestedField, ...]:
    return t.children if isinstance(t, (StructType, ListType, MapType)) else ()


def apply_name_mapping(arrow_schema: pa.Schema, mapping: NameMapping) -> pa.Schema:
    """Add field ids from ``mapping`` to an Arrow schema read from a file without ids.

    Fields that already carry an id keep it; unmapped fields stay without an id (readers skip them).
    List elements and map keys/values are matched by position, whatever the writer named them.
    """
    return pa.schema(
        [_apply(f, _find(mapping.fields, f.name)) for f in arrow_schema], metadata=arrow_schema.metadata
    )


def _apply(f: pa.Field, entry: MappedField | None) -> pa.Field:
    if entry is None:
        return f
    md = dict(f.metadata or {})
    if field_id_of(f) is None and entry.field_id is not None:
        md[FIELD_ID_KEY] = str(entry.field_id).encode()
    return pa.field(f.name, _apply_type(f.type, entry), f.nullable, md or None)


def _apply_type(t: pa.DataType, entry: MappedField) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_apply(t.field(i), entry.child(t.field(i).name)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_apply(t.key_field, entry.child("key")), _apply(t.item_field, entry.child("value")))
    if pa.types.is_list(t):
        return pa.list_(_apply(t.value_field, entry.child("element")))
    if pa.types.is_large_list(t):
        return pa.large_list(_apply(t.value_field, entry.child("element")))
    return t
