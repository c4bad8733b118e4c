"""Positional constructors for the frozen value classes built by the million in scan planning.

``positional_constructor(DataFile)`` returns a callable taking every field positionally that builds the
same instance ``DataFile(...)`` builds, without the frozen dataclass ``__init__`` (which sets each field
through ``object.__setattr__``: ~4 us for a DataFile, seconds at a million files). It is the C
``floe.spec._slots_native.Constructor`` when the extension was built at install, else the class itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

try:
    from floe.spec import _slots_native
except ImportError:  # built at install where a C compiler is present (setup.py)
    _slots_native = None  # type: ignore[assignment]

T = TypeVar("T")


def native_available() -> bool:
    return _slots_native is not None


def positional_constructor(cls: type[T], *, acyclic: bool = False) -> Callable[..., T]:
    """A constructor of ``cls`` (a slotted dataclass without ``__post_init__``) from all its fields in
    declaration order.

    ``acyclic``: the instances are left untracked by the cyclic garbage collector, which is right only when
    nothing reachable from their fields can refer back to them (immutable values of immutable values);
    collections then skip them, which at millions of planned files is seconds.
    """
    names = _slot_fields(cls)
    if _slots_native is None:
        return cls
    return _slots_native.Constructor(cls, names, acyclic)


def _slot_fields(cls: type[Any]) -> tuple[str, ...]:
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__, which a positional constructor would skip")
    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields):
        raise TypeError(f"{cls.__name__} has fields __init__ does not take")
    return tuple(f.name for f in fields)
