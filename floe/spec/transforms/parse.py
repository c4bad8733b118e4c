"""Parse the spec's transform strings (``identity``, ``bucket[16]``, ``truncate[4]``, ``day`` ...)."""

from __future__ import annotations

import re

from floe.spec.transforms.base import Transform
from floe.spec.transforms.bucket import BucketTransform
from floe.spec.transforms.identity import IdentityTransform
from floe.spec.transforms.temporal import DayTransform, HourTransform, MonthTransform, YearTransform
from floe.spec.transforms.truncate import TruncateTransform
from floe.spec.transforms.unknown import UnknownTransform
from floe.spec.transforms.void import VoidTransform

__all__ = ["parse_transform"]

_PARAM = re.compile(r"^\s*(bucket|truncate)\s*\[\s*(\d+)\s*\]\s*$", re.IGNORECASE)
_SIMPLE: dict[str, type[Transform]] = {
    "identity": IdentityTransform,
    "year": YearTransform,
    "month": MonthTransform,
    "day": DayTransform,
    "hour": HourTransform,
    "void": VoidTransform,
}
# Older writers spelled the temporal transforms in the plural; Iceberg Java reads both.
_ALIASES = {"years": "year", "months": "month", "days": "day", "hours": "hour"}


def parse_transform(text: str) -> Transform:
    """The transform named by ``text``; unrecognised strings give an ``UnknownTransform`` that keeps them.

    Never raises for well-formed JSON strings: metadata with future transforms must still load.
    """
    key = text.strip().lower()
    key = _ALIASES.get(key, key)
    if key in _SIMPLE:
        return _SIMPLE[key]()
    if m := _PARAM.match(text):
        n = int(m.group(2))
        if 0 < n < (1 << 31):
            return BucketTransform(n) if m.group(1).lower() == "bucket" else TruncateTransform(n)
    return UnknownTransform(text)
