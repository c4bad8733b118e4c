"""SparkSession set-up for Floe: a configured local session, or Floe's settings applied to the caller's.

Settings and why (measured facts in DESIGN.md section 5):
- ``spark.sql.parquet.fieldId.write.enabled`` / ``fieldId.read.enabled``: Spark writes Iceberg field ids
  and resolves columns by id, so renames and drops read correctly.
- ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS``: Iceberg timestamps are INT64 micros;
  Spark's default INT96 has neither the right type nor usable statistics.
- ``spark.sql.timeType.enabled``: Spark 4.1+ supports TIME (written as Parquet TIME(MICROS)) only behind
  this flag; Iceberg ``time`` columns need it.
- ``spark.sql.session.timeZone=UTC`` unless given: values of ``timestamptz`` print and collect the same
  everywhere.
- Arrow on, small shuffle partition count for local use, UI off, logs at WARN.
- The driver JVM a session launches maps a class-data archive of Spark's classes kept between programs
  (:mod:`floe.spark.runtime.class_archive`): on 2 cores a session starts in 4.7 s instead of 7.1 s.

Catalogs: a session configured the way Iceberg's Spark integration is configured
(``spark.sql.catalog.<name>=org.apache.iceberg.spark.SparkCatalog``, ``.type``, ``.warehouse``, ``.uri``,
``spark.sql.defaultCatalog``) gets those catalogs from Floe, merged over Floe's own configuration
(:func:`session_config`). Iceberg's class names in ``spark.sql.extensions`` are dropped from sessions Floe
builds (there is no Iceberg jar to load).

Python workers: Spark starts them with ``spark.pyspark.python``, else ``PYSPARK_PYTHON``, else the
``python3`` on PATH, which need not have Floe and pyarrow. Unless the user chose one, :func:`attach` makes
workers run the driver's own interpreter (checked, with one clear line when it cannot be fixed).

Engine integrations (the ``iceberg`` data source, SQL routing) plug in through
:func:`register_session_hook`; every hook runs on each session returned by :func:`session` or
:func:`attach`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyspark
from py4j.protocol import Py4JJavaError
from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql.conf import RuntimeConfig

from floe.config import ICEBERG_SPARK_CATALOG_CLASSES, FloeConfig
from floe.errors import ValidationError
from floe.spark.runtime.class_archive import ClassArchive, plan_archive, release, start_installer
from floe.spark.runtime.connect import is_connect
from floe.spark.runtime.py4j_sockets import send_py4j_without_delay

__all__ = [
    "REQUIRED_SQL_CONF",
    "attach",
    "interpreter_has_floe",
    "note_catalog_conf_change",
    "register_session_hook",
    "session",
    "session_config",
]

# Runtime SQL settings Floe relies on; applied to new and existing sessions alike.
REQUIRED_SQL_CONF: dict[str, str] = {
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.timeType.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}

# Defaults for sessions Floe creates itself; any key in the caller's conf wins.
_LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.adaptive.enabled": "true",
}

_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

_SessionHook = Callable[[SparkSession], None]
_SESSION_HOOKS: list[_SessionHook] = []


def register_session_hook(hook: _SessionHook) -> None:
    """Run ``hook(spark)`` on every session Floe creates or attaches to (idempotent per hook).

    This is the extension point for registering Floe's Spark data source and catalogs; hooks must
    be idempotent because :func:`attach` may be called on the same session more than once.
    """
    if hook not in _SESSION_HOOKS:
        _SESSION_HOOKS.append(hook)


def _on_session(spark: SparkSession) -> None:
    """Run the registered session hooks, in registration order."""
    for hook in _SESSION_HOOKS:
        hook(spark)


def session(conf: Mapping[str, str] | None = None, *, app_name: str = "floe") -> SparkSession:
    """A SparkSession configured for Floe (``local[*]`` unless ``spark.master`` is given; an ``sc://host:port``
    master makes a Spark Connect session to that server).

    If a session is already active in this process, Spark returns it: static settings (master, UI)
    then keep their old values, and Floe's runtime SQL settings are applied to it.

    Args:
        conf: Spark settings; they override Floe's defaults (not the required SQL settings, which
            Floe needs to read and write Iceberg files correctly).
        app_name: the Spark application name.

    Returns:
        The session.
    """
    settings = {**_LOCAL_DEFAULTS, **dict(conf or {}), **REQUIRED_SQL_CONF}
    _drop_iceberg_extensions(settings)
    master = settings.pop("spark.master", "local[*]")
    if master.startswith("sc://"):
        return _remote_session(master, conf or {})
    if master.startswith("local"):
        _quiet_local_startup(settings)
    archive = _class_archive(settings)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except BaseException:
        if archive is not None:
            release(archive)
        raise
    if archive is not None:
        start_installer(archive, SparkContext._gateway)
        if conf and _JAVA_OPTIONS in conf:  # the caller's options, with the archive's added
            conf = {**conf, _JAVA_OPTIONS: settings[_JAVA_OPTIONS]}
    spark.sparkContext.setLogLevel("WARN")
    return attach(spark, conf=conf)


def _class_archive(settings: dict[str, str]) -> ClassArchive | None:
    """Add the class-data archive's options to the driver JVM this call is about to launch, if any
    (:mod:`floe.spark.runtime.class_archive`); None when a JVM is already up or the caller chose how
    classes are shared."""
    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None  # no JVM is launched: the session joins the running one
    options = settings.get(_JAVA_OPTIONS, "")
    if any(flag in options for flag in ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit", "SharedClassListFile")):
        return None
    # Spark's launcher runs from SPARK_HOME, else from the pyspark package (a pip install).
    spark_home = os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)
    archive = plan_archive(settings, spark_home)
    if archive is not None:
        settings[_JAVA_OPTIONS] = f"{options} {archive.options}".strip()
    return archive


def _remote_session(url: str, conf: Mapping[str, str]) -> SparkSession:
    """A Spark Connect session to ``url`` with the caller's and Floe's SQL settings (the server owns the rest:
    its static settings cannot change from a client)."""
    wanted = {k: str(v) for k, v in conf.items() if k not in ("spark.master", "spark.remote")}
    builder = SparkSession.builder.remote(url)
    for key, value in {"spark.sql.session.timeZone": "UTC", **wanted, **REQUIRED_SQL_CONF}.items():
        builder = builder.config(key, value)
    spark: Any = builder.getOrCreate()
    return attach(spark, conf=wanted)


def _quiet_local_startup(settings: dict[str, str]) -> None:
    """Keep a local session's start-up from printing log4j and hostname chatter (users' settings win)."""
    # Without SPARK_LOCAL_IP Spark warns that the hostname resolves to loopback on most laptops and CI.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers default to the `python3` on PATH, which need not be the interpreter (venv) Floe and
    # pyarrow are installed in; the driver's own interpreter always has them.
    if "spark.pyspark.python" not in settings:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if _JAVA_OPTIONS not in settings:
        log_conf = Path(__file__).with_name("log4j2.properties")
        settings[_JAVA_OPTIONS] = f"-Dlog4j2.configurationFile={log_conf.as_uri()}"


def _drop_iceberg_extensions(settings: dict[str, str]) -> None:
    """Remove Iceberg's classes from ``spark.sql.extensions`` (Floe parses Iceberg's SQL itself)."""
    value = settings.get(_EXTENSIONS)
    if value is None:
        return
    kept = [e.strip() for e in value.split(",") if e.strip() and not e.strip().startswith("org.apache.iceberg.")]
    if kept:
        settings[_EXTENSIONS] = ",".join(kept)
    else:
        del settings[_EXTENSIONS]


def attach(spark: SparkSession, *, conf: Mapping[str, str] | None = None) -> SparkSession:
    """Make a session Floe's: required SQL settings (and ``conf``), worker interpreter, hooks (idempotent).

    Settings in ``conf`` are set on the session (catalogs included); a static setting Spark cannot change
    at runtime is refused unless the session already has that value. Catalogs come
    from the session's confs and Floe's configuration (:func:`session_config`), checked here so a
    catalog Floe cannot open fails now, naming its key.

    Returns:
        The same session.

    Raises:
        ValidationError: a static setting with another value than the session's, an Iceberg catalog conf
            Floe cannot honour (names the key), or Spark's Python
            workers would run an interpreter without Floe that Floe cannot replace.
    """
    _watch_runtime_conf()
    wanted = {k: str(v) for k, v in dict(conf or {}).items()}
    _drop_iceberg_extensions(wanted)  # Floe stands in for Iceberg's extensions (see session())
    if is_connect(spark):
        _keep_client_side(spark, wanted)
    for key, value in wanted.items():
        if is_connect(spark) and _SECRET_LOOKING.search(key):
            continue  # a Connect server never hands it back (kept client-side above)
        _set_runtime_conf(spark, key, value)
    for key, value in REQUIRED_SQL_CONF.items():
        if spark.conf.isModifiable(key):
            spark.conf.set(key, value)
    session_config(spark)
    if not is_connect(spark):  # a Connect server's workers are not this process's to choose
        _use_driver_interpreter(spark)
    send_py4j_without_delay(spark)
    _on_session(spark)
    return spark


# Spark's default spark.redaction.regex: a Connect server never returns the confs it matches (getAll omits them).
_SECRET_LOOKING = re.compile(r"(?i)secret|password|token|access[.]?token")


def _keep_client_side(spark: SparkSession, wanted: Mapping[str, str]) -> None:
    """Keep ``attach(conf=...)``'s catalog confs on a Connect session's client object: the server never
    hands back confs whose names look secret (credentials such as ``s3.secret-access-key``)."""
    kept: dict[str, str] = getattr(spark, "_floe_client_confs", {})
    kept = {**kept, **{k: v for k, v in wanted.items() if k.startswith(_CATALOG_PREFIX) or k == _DEFAULT_CATALOG}}
    spark._floe_client_confs = kept  # type: ignore[attr-defined]
    note_catalog_conf_change()


def _set_runtime_conf(spark: SparkSession, key: str, value: str) -> None:
    """Set ``key`` on the session; a static setting that already has ``value`` is left alone."""
    try:
        spark.conf.set(key, value)
    except Exception as e:  # noqa: BLE001 - Spark refuses static (and some deprecated) settings at runtime
        current = spark.conf.get(key, None)
        if current != value:
            raise ValidationError(
                f"Cannot set {key}={value} on a running SparkSession (Spark keeps {current!r}): "
                f"set it when the session is built ({str(e).splitlines()[0][:160]})"
            ) from None


# -- catalogs from the session ---------------------------------------------------------------------
_EXTENSIONS = "spark.sql.extensions"
_CATALOG_PREFIX = "spark.sql.catalog."
_DEFAULT_CATALOG = "spark.sql.defaultCatalog"
# Where Floe keeps the session's default catalog when it names an Iceberg catalog: Spark itself resolves
# functions (upper, explode, date_add ...) in its current catalog, and would try to load Iceberg's class for
# it (CANNOT_LOAD_CATALOG.PLUGIN_CLASS_NOT_FOUND). Spark's own default goes back to its session catalog.
FLOE_DEFAULT_CATALOG = "spark.floe.defaultCatalog"
_SPARK_SESSION_CATALOG = "spark_catalog"


def _session_confs(spark: SparkSession) -> dict[str, str]:
    """Every conf of the session: static ones from the context (read once), runtime ones over them."""
    if is_connect(spark):  # no SparkContext: the server answers with every conf it has set
        kept: dict[str, str] = getattr(spark, "_floe_client_confs", {})
        return {**{str(k): str(v) for k, v in spark.conf.getAll.items()}, **kept}
    sc = spark.sparkContext
    static: dict[str, str] | None = getattr(sc, "_floe_static_confs", None)
    if static is None:
        static = {str(k): str(v) for k, v in sc.getConf().getAll()}
        sc._floe_static_confs = static  # type: ignore[attr-defined]
    return {**static, **{str(k): str(v) for k, v in spark.conf.getAll.items()}}


# Bumped whenever a catalog conf may have changed (RuntimeConfig.set/unset, SET statements seen by Floe):
# reading every conf of a session costs tens of milliseconds over py4j, so session_config re-reads only then.
_CATALOG_CONF_GENERATION = [0]


def note_catalog_conf_change(key: str | None = None) -> None:
    """Tell session_config that ``key`` (None: any key) may have changed."""
    if key is None or key.startswith(_CATALOG_PREFIX) or key == _DEFAULT_CATALOG:
        _CATALOG_CONF_GENERATION[0] += 1


def _watch_runtime_conf() -> None:
    """Wrap RuntimeConfig.set/unset once so catalog conf changes made from Python are noticed."""
    if getattr(RuntimeConfig, "_floe_watched", False):
        return
    original_set, original_unset = RuntimeConfig.set, RuntimeConfig.unset

    def set_(self: RuntimeConfig, key: str, value: object) -> None:
        original_set(self, key, value)  # type: ignore[arg-type]
        if key == _DEFAULT_CATALOG and str(value) != _SPARK_SESSION_CATALOG:
            original_unset(self, FLOE_DEFAULT_CATALOG)  # a new default: Floe takes it over if it is Iceberg's
        note_catalog_conf_change(key)

    def unset(self: RuntimeConfig, key: str) -> None:
        original_unset(self, key)
        note_catalog_conf_change(key)

    RuntimeConfig.set = set_  # type: ignore[method-assign]
    RuntimeConfig.unset = unset  # type: ignore[method-assign]
    RuntimeConfig._floe_watched = True  # type: ignore[attr-defined]


def _iceberg_catalog_names(confs: Mapping[str, str]) -> set[str]:
    return {
        key[len(_CATALOG_PREFIX) :]
        for key, value in confs.items()
        if key.startswith(_CATALOG_PREFIX) and "." not in key[len(_CATALOG_PREFIX) :]
        and value in ICEBERG_SPARK_CATALOG_CLASSES
    }


def iceberg_catalog_confs(confs: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>[.key]`` confs of catalogs whose class is Iceberg's, and the default."""
    iceberg = _iceberg_catalog_names(confs)
    out = {
        key: value
        for key, value in confs.items()
        if key.startswith(_CATALOG_PREFIX) and key[len(_CATALOG_PREFIX) :].split(".", 1)[0] in iceberg
    }
    default = confs.get(_DEFAULT_CATALOG)
    if default in (None, _SPARK_SESSION_CATALOG):
        default = confs.get(FLOE_DEFAULT_CATALOG)
    if default is not None and default in iceberg:
        out[_DEFAULT_CATALOG] = default
    return out


def _take_over_default_catalog(spark: SparkSession, confs: Mapping[str, str]) -> None:
    """A ``spark.sql.defaultCatalog`` naming an Iceberg catalog is kept by Floe, and Spark's goes back to its
    session catalog, so that Spark's own resolution (functions, temporary views) keeps working."""
    default = confs.get(_DEFAULT_CATALOG)
    if default is None or default == _SPARK_SESSION_CATALOG or default not in _iceberg_catalog_names(confs):
        return
    spark.conf.set(FLOE_DEFAULT_CATALOG, default)
    spark.conf.set(_DEFAULT_CATALOG, _SPARK_SESSION_CATALOG)


def session_default_catalog(spark: SparkSession) -> str | None:
    """The Iceberg catalog the session's ``spark.sql.defaultCatalog`` named (kept by Floe), else None."""
    session_config(spark)
    confs: Mapping[str, str] = getattr(spark, "_floe_catalog_confs", {})
    return confs.get(_DEFAULT_CATALOG)


def session_config(spark: SparkSession) -> FloeConfig:
    """Floe's configuration with the session's Iceberg catalogs over it.

    Cached on the session; re-read after a catalog conf changes from Python (``spark.conf.set``, ``SET``
    through ``spark.sql``). Changes made from the JVM side are not seen.

    Raises:
        ValidationError: a catalog conf Floe cannot honour (the message names the key).
    """
    _watch_runtime_conf()
    generation = _CATALOG_CONF_GENERATION[0]
    cached = getattr(spark, "_floe_config", None)
    if cached is not None and cached[0] == generation:
        return cached[1]  # type: ignore[no-any-return]
    _take_over_default_catalog(spark, _session_confs(spark))
    generation = _CATALOG_CONF_GENERATION[0]  # the take-over may have set confs
    confs = iceberg_catalog_confs(_session_confs(spark))
    spark._floe_catalog_confs = confs  # type: ignore[attr-defined]
    key = tuple(sorted(confs.items()))
    config = cached[1] if cached is not None and cached[2] == key else FloeConfig.load(confs)
    spark._floe_config = (generation, config, key)  # type: ignore[attr-defined]
    return config


# -- Python workers -----------------------------------------------------------------------------------
def interpreter_has_floe(python: str) -> bool:
    """Whether ``python`` can import floe and pyarrow (what Spark's Python workers need)."""
    try:
        probe = subprocess.run([python, "-c", "import floe, pyarrow"], capture_output=True, timeout=60, check=False)
    except OSError:
        return False
    return probe.returncode == 0


def _use_driver_interpreter(spark: SparkSession) -> None:
    """Make Python workers run an interpreter that has Floe (before data sources register).

    The interpreter Spark will use is checked once: kept when it can import Floe and pyarrow (on a
    cluster, where it may exist only on the executors, e.g. inside a packed environment shipped with
    ``spark.archives``, a one-task job asks an executor); on a local master replaced by the driver's own
    when it is Spark's default rather than the user's choice; otherwise refused with one line saying
    what to set.
    """
    sc = spark.sparkContext
    current = sc.pythonExec
    if current == sys.executable or getattr(sc, "_floe_python_checked", None) == current:
        return
    local = (sc.master or "").startswith("local")
    if interpreter_has_floe(current) or (not local and _executors_import_floe(spark)):
        sc._floe_python_checked = current  # type: ignore[attr-defined]
        return
    chosen = current in (sc.getConf().get("spark.pyspark.python"), os.environ.get("PYSPARK_PYTHON"))
    if chosen or not local:
        raise ValidationError(
            f"Spark's Python workers would run {current!r}, which cannot import floe and pyarrow: set "
            "spark.pyspark.python (or PYSPARK_PYTHON) to an interpreter that has them on every node, or "
            "ship one: a venv-pack archive in spark.archives (README, Workers without Floe)"
        )
    sc.pythonExec = sys.executable
    sc._floe_python_checked = sys.executable  # type: ignore[attr-defined]


def _executors_import_floe(spark: SparkSession) -> bool:
    """Whether an executor's Python worker imports floe and pyarrow (one task; False if it cannot start)."""

    def probe(_: Iterable[int]) -> Iterator[bool]:  # nested: pickled by value, so no floe import to load it
        try:
            import pyarrow  # noqa: F401

            import floe  # noqa: F401
        except ImportError:
            yield False
        else:
            yield True

    try:
        return all(spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect())
    except Py4JJavaError:  # the interpreter does not exist or crashed there
        return False
