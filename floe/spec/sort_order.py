"""Sort orders (spec "Sorting", Appendix C "Sort Orders"): frozen values plus a builder."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from floe.errors import ValidationError
from floe.spec.schema import Schema
from floe.spec.transforms import IdentityTransform, Transform
from floe.spec.types import PrimitiveType

__all__ = [
    "UNSORTED_ORDER_ID",
    "UNSORTED_SORT_ORDER",
    "NullOrder",
    "SortDirection",
    "SortField",
    "SortOrder",
    "SortOrderBuilder",
]

UNSORTED_ORDER_ID = 0


class SortDirection(Enum):
    """Sort direction; the value is the JSON string."""

    ASC = "asc"
    DESC = "desc"

    def __str__(self) -> str:
        return self.value


class NullOrder(Enum):
    """Where nulls sort; the value is the JSON string."""

    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class SortField:
    """One sort key: a transform of source column(s), a direction and a null order.

    ``source_ids`` holds every source of a v3 multi-argument transform; otherwise ``(source_id,)``.
    """

    source_id: int
    transform: Transform = field(default_factory=IdentityTransform)
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST
    source_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.source_ids:
            object.__setattr__(self, "source_ids", (self.source_id,))
        elif self.source_ids[0] != self.source_id:
            raise ValidationError(
                f"Sort field: source_id {self.source_id} is not the first of {self.source_ids}"
            )

    def satisfies(self, other: SortField, schema: Schema | None = None) -> bool:
        """Whether data sorted by this field is also sorted by ``other``."""
        if self == other:
            return True
        if self.source_ids != other.source_ids or self.direction != other.direction:
            return False
        if self.null_order != other.null_order:
            return False
        source_type = schema.find_type(self.source_id) if schema is not None else None
        return self.transform.satisfies_order_of(other.transform, source_type=source_type)

    def __str__(self) -> str:
        return f"{self.transform}({self.source_id}) {self.direction.value} {self.null_order.value}"


@dataclass(frozen=True, slots=True)
class SortOrder:
    """A sort order: an id and sort fields, most significant first. Id 0 is reserved for unsorted."""

    order_id: int
    fields: tuple[SortField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.order_id == UNSORTED_ORDER_ID and self.fields:
            raise ValidationError("Sort order id 0 is reserved for the unsorted order")
        if self.order_id != UNSORTED_ORDER_ID and not self.fields:
            raise ValidationError(f"Unsorted order must have order id 0, got {self.order_id}")

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    @property
    def is_sorted(self) -> bool:
        return bool(self.fields)

    def same_order(self, other: SortOrder) -> bool:
        """Equal fields regardless of the order id (reuse an existing order instead of adding one)."""
        return self.fields == other.fields

    def satisfies(self, other: SortOrder, schema: Schema | None = None) -> bool:
        """Whether data sorted by this order is also sorted by ``other`` (anything satisfies unsorted)."""
        if other.is_unsorted:
            return True
        if len(other.fields) > len(self.fields):
            return False
        return all(
            mine.satisfies(theirs, schema) for mine, theirs in zip(self.fields, other.fields, strict=False)
        )

    def bind(self, schema: Schema) -> SortOrder:
        """Check every field's source columns exist, are primitive and suit the transform; returns ``self``.

        Raises:
            ValidationError: naming the missing or unsuitable column and the order id.
        """
        for f in self.fields:
            for sid in f.source_ids:
                src = schema.find_field_or_none(sid)
                if src is None:
                    raise ValidationError(
                        f"Cannot find source column id {sid} of sort order {self.order_id} "
                        f"in schema {schema.schema_id}"
                    )
                name = schema.find_column_name(sid)
                if not isinstance(src.field_type, PrimitiveType):
                    raise ValidationError(
                        f"Cannot sort by non-primitive column {name!r} of type {src.field_type} "
                        f"(order {self.order_id})"
                    )
                if not f.transform.can_transform(src.field_type):
                    raise ValidationError(
                        f"Invalid transform {f.transform} for sort column {name!r} of type {src.field_type} "
                        f"(order {self.order_id})"
                    )
        return self

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"


UNSORTED_SORT_ORDER = SortOrder(UNSORTED_ORDER_ID, ())


class SortOrderBuilder:
    """Builds a validated ``SortOrder``.

    Example: ``SortOrderBuilder(schema).asc("id").desc("ts", DayTransform()).build()``.
    """

    def __init__(self, schema: Schema, *, order_id: int = 1, case_sensitive: bool = True) -> None:
        self._schema = schema
        self._order_id = order_id
        self._case_sensitive = case_sensitive
        self._fields: list[SortField] = []

    def add(
        self,
        column: str | int,
        transform: Transform | None = None,
        direction: SortDirection = SortDirection.ASC,
        null_order: NullOrder | None = None,
    ) -> SortOrderBuilder:
        """Add a sort key; ``null_order`` defaults to nulls-first for ascending, nulls-last for descending."""
        src = self._schema.find_field(column, self._case_sensitive)
        if null_order is None:
            null_order = NullOrder.NULLS_FIRST if direction is SortDirection.ASC else NullOrder.NULLS_LAST
        self._fields.append(SortField(src.field_id, transform or IdentityTransform(), direction, null_order))
        return self

    def asc(
        self,
        column: str | int,
        transform: Transform | None = None,
        null_order: NullOrder = NullOrder.NULLS_FIRST,
    ) -> SortOrderBuilder:
        return self.add(column, transform, SortDirection.ASC, null_order)

    def desc(
        self,
        column: str | int,
        transform: Transform | None = None,
        null_order: NullOrder = NullOrder.NULLS_LAST,
    ) -> SortOrderBuilder:
        return self.add(column, transform, SortDirection.DESC, null_order)

    def build(self) -> SortOrder:
        """The order (``UNSORTED_SORT_ORDER`` when no fields were added), bound to the schema."""
        if not self._fields:
            return UNSORTED_SORT_ORDER
        return SortOrder(self._order_id, tuple(self._fields)).bind(self._schema)
