"""A transform this version of Floe does not know: kept verbatim so metadata round-trips (spec Appendix C)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from floe.errors import UnsupportedError
from floe.spec.transforms.base import Transform
from floe.spec.types import IcebergType, StringType

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["UnknownTransform"]


class UnknownTransform(Transform):
    """An unrecognised transform string. Readers ignore such partition fields; writing with one fails."""

    def __init__(self, text: str) -> None:
        self._text = text

    @property
    def text(self) -> str:
        return self._text

    def can_transform(self, source_type: IcebergType) -> bool:
        # Binding must succeed so tables using the transform stay readable (v3 requires it).
        return True

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return StringType()

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        raise UnsupportedError(f"Cannot apply unknown partition transform {self._text!r}")

    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        raise UnsupportedError(f"Cannot apply unknown partition transform {self._text!r}")

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else str(value)

    def __str__(self) -> str:
        return self._text
