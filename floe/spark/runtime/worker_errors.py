"""Floe's own errors raised inside Spark's Python workers, given back to the caller as themselves.

Spark reports a worker's failure as a ``PythonException`` whose text is the worker's whole traceback; the
line that names the problem (``floe.errors.NoSuchFileError: File does not exist: ...``) is at its end.
"""

from __future__ import annotations

import re

from floe import errors

__all__ = ["floe_error_in"]

_RAISED = re.compile(r"^floe\.errors\.(\w+): (.*)$", re.MULTILINE)


def floe_error_in(failure: BaseException) -> errors.FloeError | None:
    """The Floe error a worker raised behind ``failure`` (its class and message), None for any other."""
    found = _RAISED.findall(str(failure))
    if not found:
        return None
    name, message = found[-1]
    kind = getattr(errors, name, None)
    if not (isinstance(kind, type) and issubclass(kind, errors.FloeError)):
        return None
    try:
        return kind(message)
    except TypeError:  # a class taking other arguments
        return None
