"""Partition transforms (spec "Partition Transforms"): scalar ``apply`` and vectorized ``apply_arrow``."""

from floe.transforms.base import Transform
from floe.transforms.bucket import BucketTransform, hash_value
from floe.transforms.identity import IdentityTransform
from floe.transforms.parse import parse_transform
from floe.transforms.temporal import DayTransform, HourTransform, MonthTransform, TimeTransform, YearTransform
from floe.transforms.truncate import TruncateTransform
from floe.transforms.unknown import UnknownTransform
from floe.transforms.void import VoidTransform

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
