"""Values compared exactly: floats as their bits (NaN == NaN), dataclasses as tuples of their fields."""

from __future__ import annotations

import dataclasses
import math
import struct
from typing import Any


def exact(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, *(exact(getattr(v, f.name)) for f in dataclasses.fields(v)))
    if isinstance(v, float):
        return ("float", struct.pack("<d", v)) if not math.isnan(v) else ("nan",)
    if isinstance(v, dict):
        return {k: exact(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(exact(x) for x in v)
    return v
