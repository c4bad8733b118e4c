"""DataFrame operations built on every query, and arrays of strings either way, each in one py4j round trip.

PySpark hands a Python list to the JVM one element per round trip (py4j's list conversion adds them one by
one), so ``df.selectExpr(*exprs)`` or ``df.drop(*names)`` on a classic session costs a call per expression
before Spark sees any. Floe builds its read path on every query (2026-12-07, 2M rows after 15 merge-on-read
MERGEs: about 40 such calls a read, 0.1-0.3 ms each), so the strings cross as one NUL-joined string that the
JVM splits into the ``String[]`` the call takes; a Java array comes back joined the same way (0.2 s for
2,000 paths element by element). No SQL expression or path Floe builds holds a NUL; one that did would take
PySpark's own path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame

from floe.spark.runtime.connect import is_connect
from floe.spark.runtime.java_classes import java_class

__all__ = ["java_strings", "python_strings", "select_exprs"]

_SEPARATOR = "\u0000"


def java_strings(jvm: Any, values: Sequence[str]) -> Any | None:
    """``values`` as a Java ``String[]`` made in one call, None when one holds a NUL (or there are none)."""
    if not values or any(_SEPARATOR in v for v in values):
        return None
    return java_class(jvm, "java.util.regex.Pattern").compile(_SEPARATOR).split(_SEPARATOR.join(values), -1)


def python_strings(jvm: Any, array: Any) -> list[str]:
    """A Java ``String[]`` (say ``inputFiles()``) brought over in one call. Hadoop's join takes the array as
    it is (py4j finds no Java method taking it as ``Object[]``)."""
    if not len(array):
        return []
    return str(java_class(jvm, "org.apache.hadoop.util.StringUtils").join(_SEPARATOR, array)).split(_SEPARATOR)


def select_exprs(df: DataFrame, exprs: Sequence[str]) -> DataFrame:
    """``df.selectExpr(*exprs)``: on a classic session the expressions cross in one call."""
    if is_connect(df.sparkSession):
        return df.selectExpr(*exprs)
    array = java_strings(df.sparkSession._jvm, exprs)
    if array is None:
        return df.selectExpr(*exprs)
    return DataFrame(df._jdf.selectExpr(array), df.sparkSession)
