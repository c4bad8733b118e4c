"""Iceberg schemas: a struct of fields with ids, plus lookups by id and by (dotted) name. No IO."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from floe.errors import ValidationError
from floe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

__all__ = [
    "INITIAL_SCHEMA_ID",
    "Schema",
    "assign_fresh_ids",
    "nested_field_ids",
    "walk_fields",
]

INITIAL_SCHEMA_ID = 0


def walk_fields(struct: StructType, prefix: str = "") -> Iterator[tuple[str, NestedField]]:
    """Yield (dotted name, field) for every field at any depth, parents before children.

    List elements are named ``<list>.element``; map keys and values ``<map>.key`` / ``<map>.value``,
    as Iceberg Java's name index does.
    """
    for f in struct.fields:
        name = f"{prefix}{f.name}"
        yield name, f
        yield from _walk_type(f.field_type, name + ".")


def _walk_type(t: IcebergType, prefix: str) -> Iterator[tuple[str, NestedField]]:
    if isinstance(t, StructType):
        yield from walk_fields(t, prefix)
    elif isinstance(t, ListType):
        ef = t.element_field
        yield prefix + "element", ef
        yield from _walk_type(ef.field_type, prefix + "element.")
    elif isinstance(t, MapType):
        kf, vf = t.key_field, t.value_field
        yield prefix + "key", kf
        yield from _walk_type(kf.field_type, prefix + "key.")
        yield prefix + "value", vf
        yield from _walk_type(vf.field_type, prefix + "value.")


@dataclass(frozen=True, slots=False)
class Schema:
    """A table schema: top-level fields, a schema id and the identifier (row key) field ids."""

    fields: tuple[NestedField, ...]
    schema_id: int = INITIAL_SCHEMA_ID
    identifier_field_ids: tuple[int, ...] = field(default=())

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = INITIAL_SCHEMA_ID,
        identifier_field_ids: Iterable[int] = (),
    ) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "identifier_field_ids", tuple(identifier_field_ids))
        self._validate()

    def _validate(self) -> None:
        seen: dict[int, str] = {}
        for name, f in walk_fields(self.as_struct()):
            if f.field_id in seen:
                raise ValidationError(
                    f"Schema {self.schema_id}: field id {f.field_id} used by both {seen[f.field_id]!r} and {name!r}"
                )
            seen[f.field_id] = name
        for fid in self.identifier_field_ids:
            if fid not in seen:
                raise ValidationError(
                    f"Schema {self.schema_id}: identifier field id {fid} is not in the schema"
                )

    # -- views -------------------------------------------------------------------------------
    def as_struct(self) -> StructType:
        return StructType(*self.fields)

    @cached_property
    def _by_id(self) -> dict[int, NestedField]:
        return {f.field_id: f for _, f in walk_fields(self.as_struct())}

    @cached_property
    def _name_by_id(self) -> dict[int, str]:
        return {f.field_id: n for n, f in walk_fields(self.as_struct())}

    @cached_property
    def _by_name(self) -> dict[str, int]:
        return {n: f.field_id for n, f in walk_fields(self.as_struct())}

    @cached_property
    def _by_lower_name(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n, fid in self._by_name.items():
            out.setdefault(n.lower(), fid)
        return out

    @cached_property
    def _parent_of(self) -> dict[int, int]:
        parents: dict[int, int] = {}

        def visit(t: IcebergType, parent: int | None) -> None:
            children = t.children if isinstance(t, (StructType, ListType, MapType)) else ()
            for c in children:
                if parent is not None:
                    parents[c.field_id] = parent
                visit(c.field_type, c.field_id)

        visit(self.as_struct(), None)
        return parents

    @property
    def column_names(self) -> list[str]:
        """Top-level column names in order."""
        return [f.name for f in self.fields]

    @property
    def highest_field_id(self) -> int:
        return max(self._by_id, default=0)

    @property
    def identifier_field_names(self) -> list[str]:
        return [self._name_by_id[i] for i in self.identifier_field_ids]

    def field_ids(self) -> set[int]:
        return set(self._by_id)

    # -- lookups -----------------------------------------------------------------------------
    def find_field(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField:
        """The field with this id or dotted name.

        Raises:
            ValidationError: no such field (the message names it and the schema).
        """
        if isinstance(name_or_id, int):
            f = self._by_id.get(name_or_id)
            if f is None:
                raise ValidationError(f"Cannot find field with id {name_or_id} in schema {self.schema_id}")
            return f
        fid = self._by_name.get(name_or_id) if case_sensitive else self._by_lower_name.get(name_or_id.lower())
        if fid is None:
            raise ValidationError(
                f"Cannot find field {name_or_id!r} in schema {self.schema_id} (columns: {', '.join(self.column_names)})"
            )
        return self._by_id[fid]

    def find_type(self, name_or_id: str | int, case_sensitive: bool = True) -> IcebergType:
        return self.find_field(name_or_id, case_sensitive).field_type

    def find_field_or_none(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField | None:
        if isinstance(name_or_id, int):
            return self._by_id.get(name_or_id)
        fid = self._by_name.get(name_or_id) if case_sensitive else self._by_lower_name.get(name_or_id.lower())
        return None if fid is None else self._by_id[fid]

    def find_column_name(self, field_id: int) -> str | None:
        """The dotted name of a field id, or None."""
        return self._name_by_id.get(field_id)

    def parent_id(self, field_id: int) -> int | None:
        return self._parent_of.get(field_id)

    def accessor_path(self, field_id: int) -> list[int]:
        """Field ids from the top-level column down to ``field_id`` (inclusive)."""
        path = [field_id]
        while (p := self._parent_of.get(path[-1])) is not None:
            path.append(p)
        return list(reversed(path))

    def select(self, names: Iterable[str], case_sensitive: bool = True) -> Schema:
        """A schema keeping only the named columns (dotted names select nested fields with their parents)."""
        wanted: set[int] = set()
        for n in names:
            fid = self.find_field(n, case_sensitive).field_id
            wanted.update(self.accessor_path(fid))
            # selecting a struct selects all of its children
            wanted.update(nested_field_ids(self._by_id[fid].field_type))
        return Schema(
            *_prune_struct(self.as_struct(), wanted).fields,
            schema_id=self.schema_id,
            identifier_field_ids=[i for i in self.identifier_field_ids if i in wanted],
        )

    def with_schema_id(self, schema_id: int) -> Schema:
        return Schema(*self.fields, schema_id=schema_id, identifier_field_ids=self.identifier_field_ids)

    def same_structure(self, other: Schema) -> bool:
        """Equal ignoring the schema id (used to reuse an existing schema on a schema change)."""
        return self.fields == other.fields and self.identifier_field_ids == other.identifier_field_ids

    def __str__(self) -> str:
        lines = [f"table {{  # schema {self.schema_id}"]
        lines += [f"  {f}" for f in self.fields]
        return "\n".join(lines + ["}"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return (
            self.schema_id == other.schema_id
            and self.fields == other.fields
            and self.identifier_field_ids == other.identifier_field_ids
        )

    def __hash__(self) -> int:
        return hash((self.schema_id, self.fields, self.identifier_field_ids))


def nested_field_ids(t: IcebergType) -> set[int]:
    """Ids of every field nested in ``t`` (struct fields, list elements, map keys and values), at any depth."""
    out: set[int] = set()
    if isinstance(t, (StructType, ListType, MapType)):
        for c in t.children:
            out.add(c.field_id)
            out |= nested_field_ids(c.field_type)
    return out


def _prune_struct(struct: StructType, keep: set[int]) -> StructType:
    kept = []
    for f in struct.fields:
        if f.field_id not in keep:
            continue
        t = f.field_type
        if isinstance(t, StructType):
            t = _prune_struct(t, keep)
        kept.append(NestedField(f.field_id, f.name, t, f.required, f.doc, f.initial_default, f.write_default))
    return StructType(*kept)


def assign_fresh_ids(
    schema: Schema, next_id: Callable[[], int] | None = None, schema_id: int = INITIAL_SCHEMA_ID
) -> Schema:
    """Renumber every field id, as Iceberg does for a new table's schema.

    Each struct's direct fields are numbered first, then their children (Java's TypeUtil.assignFreshIds
    order), so ``id, data, point{x, y}`` becomes 1, 2, 3, 4, 5. Identifier fields follow their renumbering.
    """
    counter = iter(range(1, 1 << 31))
    nxt = next_id or (lambda: next(counter))
    mapping: dict[int, int] = {}

    def fresh(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            ids = [nxt() for _ in t.fields]
            for f, new in zip(t.fields, ids):
                mapping[f.field_id] = new
            return StructType(
                *(
                    NestedField(
                        new,
                        f.name,
                        fresh(f.field_type),
                        f.required,
                        f.doc,
                        f.initial_default,
                        f.write_default,
                    )
                    for f, new in zip(t.fields, ids)
                )
            )
        if isinstance(t, ListType):
            eid = nxt()
            mapping[t.element_id] = eid
            return ListType(eid, fresh(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = nxt(), nxt()
            mapping[t.key_id], mapping[t.value_id] = kid, vid
            return MapType(kid, fresh(t.key_type), vid, fresh(t.value_type), t.value_required)
        return t

    struct = fresh(schema.as_struct())
    assert isinstance(struct, StructType)
    return Schema(
        *struct.fields,
        schema_id=schema_id,
        identifier_field_ids=[mapping[i] for i in schema.identifier_field_ids],
    )
