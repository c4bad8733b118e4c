"""Floe's own JVM helpers: Java source shipped in the package, compiled at run time by Janino (the compiler
Spark itself uses for generated code, so a Java runtime is still all a user needs) and added to the session
as a jar, which Spark hands to every executor as it does a user's ``ADD JAR``.

Why: some per-row work has no Spark expression that does it without a cost of its own. A position-delete
bitmap reached the rows by a broadcast join of a one-row relation: every read ran a job to collect it, and
the adaptive planner planned again around that stage (40-60 ms a read on local[2]). A helper reads the words
from a Spark broadcast variable made once per table state instead (:mod:`floe.spark.scan.position_bitmaps`).

Classic sessions only (a Spark Connect client has no JVM of its own); where compiling or loading fails the
caller keeps its Spark-expression path, and the reason is logged once.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from floe.spark.runtime.connect import is_connect
from floe.spark.runtime.java_classes import java_class

__all__ = ["helper_method"]

_LOG = logging.getLogger(__name__)
_PACKAGE = "floe.spark.jvm"
_SOURCES = ("UndeletedPositions",)

_lock = threading.Lock()
_jar: Path | None = None
_failed: str | None = None
_methods: dict[tuple[str, str, str], Any] = {}  # (application id, class, method) -> java.lang.reflect.Method
_added_to: set[str] = set()  # application ids whose session has the jar


def _compiled_jar(spark: SparkSession) -> Path:
    """The helpers compiled by the session's Janino into a jar of this process (made once)."""
    global _jar
    if _jar is not None:
        return _jar
    jvm: Any = spark._jvm
    compiler = java_class(jvm, "org.codehaus.janino.SimpleCompiler")()
    compiler.setParentClassLoader(java_class(jvm, "java.lang.Thread").currentThread().getContextClassLoader())
    for name in _SOURCES:
        compiler.cook((resources.files("floe.spark.runtime") / "java" / f"{name}.java").read_text("utf-8"))
    classes = compiler.getBytecodes()
    folder = Path(tempfile.mkdtemp(prefix="floe-jvm-"))
    atexit.register(shutil.rmtree, folder, True)
    jar = folder / "floe-jvm-helpers.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for class_name in classes.keySet():
            archive.writestr(str(class_name).replace(".", "/") + ".class", bytes(classes.get(class_name)))
    _jar = jar
    return jar


def helper_method(spark: SparkSession, class_name: str, method: str, parameter_types: tuple[str, ...]) -> Any | None:
    """The static ``method`` of helper ``class_name`` (its simple name) as a ``java.lang.reflect.Method``
    of the session's JVM, the jar added to the session first; None on Spark Connect or when the helpers
    cannot be compiled or loaded here (the reason logged once)."""
    global _failed
    if is_connect(spark) or _failed is not None:
        return None
    key = (spark.sparkContext.applicationId, class_name, method)
    with _lock:
        found = _methods.get(key)
        if found is not None:
            return found
        try:
            jsession = spark._jsparkSession
            if key[0] not in _added_to:
                jsession.sessionState().resourceLoader().addJar(str(_compiled_jar(spark)))
                _added_to.add(key[0])
            # Loaded through the session's jar loader, whichever thread asks (py4j would look the name
            # up in the calling thread's context loader, which ADD JAR set for one thread only).
            cls = jsession.sharedState().jarClassLoader().loadClass(f"{_PACKAGE}.{class_name}")
            jvm: Any = spark._jvm
            gateway: Any = spark.sparkContext._gateway
            java_lang_class = java_class(jvm, "java.lang.Class")
            types = gateway.new_array(java_lang_class, len(parameter_types))
            for i, name in enumerate(parameter_types):
                types[i] = java_lang_class.forName(name)
            found = cls.getMethod(method, types)
        except Exception as e:  # noqa: BLE001 - any failure leaves the caller on its Spark-expression path
            _failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            _LOG.warning("Floe's JVM helpers are unavailable (%s); reads use Spark expressions instead", _failed)
            return None
        _methods[key] = found
        return found
