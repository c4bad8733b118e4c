"""The ``identity`` transform: the source value, unmodified (spec "Partition Transforms")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from floe.errors import ValidationError
from floe.spec.transforms._human import human_value
from floe.spec.transforms._lazy import LazyModule
from floe.spec.transforms.base import Transform
from floe.spec.types import GeographyType, GeometryType, IcebergType, PrimitiveType, VariantType

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = LazyModule("pyarrow")

__all__ = ["IdentityTransform"]


class IdentityTransform(Transform):
    """``identity``: partition by the column value itself."""

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, PrimitiveType) and not isinstance(
            source_type, (VariantType, GeometryType, GeographyType)
        )

    def result_type(self, source_type: IcebergType) -> IcebergType:
        if not self.can_transform(source_type):
            raise ValidationError(f"Cannot apply identity to {source_type}")
        return source_type

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        return value

    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        if isinstance(values, pa.ChunkedArray):
            return values.combine_chunks() if values.num_chunks else pa.array([], type=values.type)
        return values

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform, *, source_type: IcebergType | None = None) -> bool:
        # Data sorted by value is sorted by any order-preserving function of the value.
        return other.preserves_order

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return human_value(result_type, value)

    def __str__(self) -> str:
        return "identity"
