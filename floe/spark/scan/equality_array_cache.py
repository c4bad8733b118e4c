"""Packed equality arrays kept between reads of the same delete files.

Delete files never change once written, so the array packed from a set of them (for one key, against data
files of one oldest sequence number: :mod:`floe.spark.scan.equality_arrays`) is the same for every read that
plans them, and a table fed by changes is read again and again between two commits. Reading the key
columns and packing them costs the driver about 0.25 s per million delete rows, and shipping the words to
Spark about 0.1 s per 10 MB; both are kept here, the words as the session's one-row relation. Entries are
evicted oldest-used first past :data:`MAX_CACHED_BYTES` of words (as Iceberg Java keeps deletes it read in
an executor cache).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pyspark.sql import SparkSession

from floe.spark.scan.driver_rows import note_driver_bytes

__all__ = ["MAX_CACHED_BYTES", "ArrayCache"]

MAX_CACHED_BYTES = 64 * 1024 * 1024

A = TypeVar("A")
R = TypeVar("R")


@dataclass
class _Entry(Generic[A]):
    value: A | None
    size: int
    in_sessions: dict[tuple[int, str], tuple[SparkSession, Any]] = field(default_factory=dict)


class ArrayCache(Generic[A]):
    """Values (packed arrays, or None for deletes that do not fit one) by a key naming their inputs, and
    what each value's words became in each Spark session (a one-row relation, or a JVM helper's filter)."""

    def __init__(self, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, _Entry[A]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_pack(self, key: Hashable, pack: Callable[[], tuple[A | None, int, bool]]) -> A | None:
        """The value cached under ``key``, else ``pack()``'s: (value, its size in bytes, whether it may be
        kept: False when its inputs are not fully named by ``key``)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                return entry.value
        value, size, keep = pack()
        if keep and size <= self.max_bytes:
            with self._lock:
                self._entries[key] = _Entry(value, size)
                self._evict()
        return value

    def in_session(self, key: Hashable, spark: SparkSession, make: Callable[[], R], form: str = "relation") -> R:
        """``make()``'s ``form`` of the value's words in ``spark`` (their one-row relation, or a helper's row
        filter over a broadcast of them), made once per session and form while the value is cached."""
        with self._lock:
            entry = self._entries.get(key)
            kept = entry.in_sessions.get((id(spark), form)) if entry is not None else None
        if kept is not None:
            note_driver_bytes(entry.size if entry is not None else 0)  # a reader of these words holds them too
            made: R = kept[1]
            return made
        made = make()
        if entry is not None:
            with self._lock:  # the session is kept with it: its id names no other session meanwhile
                entry.in_sessions[(id(spark), form)] = (spark, made)
        return made

    def _evict(self) -> None:
        total = sum(e.size for e in self._entries.values())
        while total > self.max_bytes and self._entries:
            _, old = self._entries.popitem(last=False)
            total -= old.size
