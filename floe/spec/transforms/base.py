"""The partition transform contract (spec "Partition Transforms").

Value representation used across Floe (partition tuples, bounds, literals), the spec's own:
boolean -> bool; int/long -> int; float/double -> float; decimal -> decimal.Decimal; date -> int days
since 1970-01-01; time -> int microseconds from midnight; timestamp/timestamptz -> int microseconds since
epoch (UTC); timestamp_ns/timestamptz_ns -> int nanoseconds; string -> str; uuid -> uuid.UUID;
fixed/binary -> bytes. Conversions to datetime objects happen only at the user-facing edges.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from floe.spec.types import IcebergType

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Transform"]


class Transform(ABC):
    """A function from a source column's values to partition values. Instances are immutable and hashable."""

    @abstractmethod
    def can_transform(self, source_type: IcebergType) -> bool:
        """Whether this transform applies to ``source_type``."""

    @abstractmethod
    def result_type(self, source_type: IcebergType) -> IcebergType:
        """The partition value's type for a source of ``source_type``."""

    @abstractmethod
    def apply(self, source_type: IcebergType, value: Any) -> Any:
        """Transform one value (None stays None), in Floe's value representation."""

    @abstractmethod
    def apply_arrow(self, source_type: IcebergType, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Transform a whole Arrow column at once (no per-row Python for fixed-width types)."""

    @property
    def preserves_order(self) -> bool:
        """Whether ``a <= b`` implies ``f(a) <= f(b)`` (lets sorted data stay sorted by the result)."""
        return False

    @property
    def is_void(self) -> bool:
        """Whether the transform always produces null (a dropped v1 partition field)."""
        return False

    @property
    def dedup_name(self) -> str:
        """Equal for transforms redundant on one column (every temporal transform gives ``time``)."""
        return str(self)

    def satisfies_order_of(self, other: Transform, *, source_type: IcebergType | None = None) -> bool:
        """Whether data ordered by this transform is also ordered by ``other`` (same source column).

        ``source_type`` lets type-dependent cases answer (``truncate[4]`` satisfies ``truncate[2]`` only for
        strings and binary); without it those cases answer False, which is always safe.
        """
        return self == other

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        """The partition value as Iceberg prints it in paths (``2021-12-01``, ``2021-12``, ``null``)."""
        raise NotImplementedError(f"{self} has no human string")  # overridden by every concrete transform

    @abstractmethod
    def __str__(self) -> str:
        """The spec's transform string: ``identity``, ``bucket[16]``, ``truncate[4]``, ``day``..."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transform) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))
