"""Partition transforms, public name: re-exports ``floe.spec.transforms`` (transforms are spec values;
Floe's own modules import them from there, and ``floe.spec`` never imports this package)."""

from floe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TimeTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    hash_value,
    parse_transform,
)

__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "TimeTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "YearTransform",
    "hash_value",
    "parse_transform",
]
