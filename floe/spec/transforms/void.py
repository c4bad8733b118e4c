"""The ``void`` transform: always null (spec "Partition Transforms"; drops a v1 partition field)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from floe.spec.transforms._arrow import as_array
from floe.spec.transforms._lazy import LazyModule
from floe.spec.transforms.base import Transform
from floe.spec.types import IcebergType

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = LazyModule("pyarrow")

__all__ = ["VoidTransform"]


class VoidTransform(Transform):
    """``void``: maps every value to null; the result type is the source type, as in Iceberg Java."""

    def can_transform(self, source_type: IcebergType) -> bool:
        return True

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        return None

    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        arr = as_array(values)
        return pa.nulls(len(arr), type=arr.type)

    @property
    def is_void(self) -> bool:
        return True

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null"

    def __str__(self) -> str:
        return "void"
