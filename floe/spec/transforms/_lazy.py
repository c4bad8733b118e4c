"""Deferred module imports for numpy and pyarrow.

Every metadata load parses partition transforms, but only the vectorized paths (``apply_arrow``) and a few
value renderings need numpy or pyarrow; importing them eagerly would cost every metadata-only command
(``floe history``) a few hundred milliseconds. A :class:`LazyModule` imports its module on first attribute
access and is then indistinguishable from it for attribute lookups.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """A stand-in for module ``name`` that imports it when an attribute is first read."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r} ({state})>"
