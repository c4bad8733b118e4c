"""Floe's own DataFrame building without PySpark's per-call call-site capture.

PySpark 4 records the Python call site of every ``Column`` method and ``functions.col`` call in the JVM
(``spark.python.sql.dataFrameDebugging.enabled``, on by default) so that errors can point at user code:
about eight extra Py4J round trips per call. The frames Floe builds for a scan or a row-level statement
make hundreds of such calls, and their call sites would name Floe's internals, not the user's code. While
Floe builds, the capture is off; the user's own calls (before and after, and in other threads once the
outermost Floe call returns) keep it. PySpark keeps the setting in a private module variable: if a
PySpark release drops it, this does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import utils as _pyspark_error_utils

__all__ = ["without_call_sites"]

_SETTING = "_enable_debugging_cache"
_LOCK = threading.Lock()
_depth = 0
_saved: object = None


@contextmanager
def without_call_sites() -> Iterator[None]:
    """Turn PySpark's call-site capture off for the block (nested and concurrent blocks share one switch)."""
    global _depth, _saved
    if not hasattr(_pyspark_error_utils, _SETTING):
        yield
        return
    with _LOCK:
        if _depth == 0:
            _saved = getattr(_pyspark_error_utils, _SETTING)
            setattr(_pyspark_error_utils, _SETTING, False)
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                setattr(_pyspark_error_utils, _SETTING, _saved)
