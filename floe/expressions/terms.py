"""Terms a predicate applies to: an unbound column Reference and a BoundReference to a schema field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from floe.spec.types import IcebergType, NestedField

__all__ = ["BoundReference", "Reference", "Row", "Term"]

# A row given to evaluators: a tuple in field order (nested structs as tuples), or a mapping keyed by
# field id or by field name (nested structs as mappings or tuples).
Row = Sequence[object] | Mapping[object, object]


@dataclass(frozen=True, slots=True)
class Reference:
    """An unbound reference to a column by (dotted) name, e.g. ``Reference("point.x")``."""

    name: str

    @property
    def is_bound(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Reference({self.name!r})"


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A reference resolved against a schema.

    Attributes:
        field: the schema field (its id, type and nullability).
        name_parts: the field's name at each nesting level, from the top-level column down.
        path_ids: field ids from the top-level column down to ``field`` (inclusive).
        positions: index of each step of ``path_ids`` in its parent struct, to read tuple rows.
    """

    field: NestedField
    name_parts: tuple[str, ...]
    path_ids: tuple[int, ...]
    positions: tuple[int, ...]

    @property
    def is_bound(self) -> bool:
        return True

    @property
    def name(self) -> str:
        """The full dotted name, e.g. ``point.x``."""
        return ".".join(self.name_parts)

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def field_type(self) -> IcebergType:
        return self.field.field_type

    def get(self, row: Row) -> object:
        """Read this field's value from ``row`` (None when a parent struct is null).

        Tuple-like rows are read by position; mappings by field id, then by name at each level (a mapping
        may also be keyed by the full dotted name).
        """
        if isinstance(row, Mapping) and len(self.path_ids) > 1 and self.name in row:
            return row[self.name]
        current: object = row
        for fid, pos, part in zip(self.path_ids, self.positions, self.name_parts):
            if current is None:
                return None
            if isinstance(current, Mapping):
                current = current[fid] if fid in current else current.get(part)
            else:
                current = current[pos]  # type: ignore[index]
        return current

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"BoundReference({self.name!r}, id={self.field.field_id}, type={self.field.field_type})"


Term = Reference | BoundReference
