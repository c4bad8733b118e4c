"""Partition transforms (spec "Partition Transforms"): scalar ``apply`` and vectorized ``apply_arrow``."""

from floe.spec.transforms.base import Transform
from floe.spec.transforms.bucket import BucketTransform, hash_value
from floe.spec.transforms.identity import IdentityTransform
from floe.spec.transforms.parse import parse_transform
from floe.spec.transforms.temporal import (
    DayTransform,
    HourTransform,
    MonthTransform,
    TimeTransform,
    YearTransform,
)
from floe.spec.transforms.truncate import TruncateTransform
from floe.spec.transforms.unknown import UnknownTransform
from floe.spec.transforms.void import VoidTransform

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
