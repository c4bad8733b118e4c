"""JVM classes looked up by their full name in one py4j round trip.

py4j resolves ``jvm.org.apache.spark.X`` a segment at a time: each segment is a round trip in which the
JVM tries the name as a class in every package the gateway imports, failing with a ClassNotFoundException
each time. Measured on a 2-core machine (2026-11-27): about 0.9 ms a segment, so a six-segment name cost
about 5 ms per use, against 0.1-0.2 ms for ``getattr(jvm, "org.apache.spark.X")``, which asks for the
class at once (PySpark's own ``functions`` look their class up that way).
"""

from __future__ import annotations

from typing import Any

__all__ = ["java_class"]


def java_class(jvm: Any, name: str) -> Any:
    """The py4j class (or Scala object's class) of the JVM named ``name`` in full, e.g.
    ``"java.util.ArrayList"``; calling it constructs, its attributes are the static members."""
    return getattr(jvm, name)
