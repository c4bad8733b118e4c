"""Floe configuration: catalogs, the default catalog and Spark settings, from four layers.

Precedence, highest first (each layer overrides the ones below it key by key):

1. ``--conf KEY=VALUE`` overrides (``FloeConfig.load(conf_overrides)``);
2. environment variables: ``FLOE_CATALOG__<NAME>__<KEY>=value`` (name and key lower-cased; in the key
   ``__`` becomes ``.`` and ``_`` becomes ``-``, so ``FLOE_CATALOG__PROD__JDBC__USER`` is ``jdbc.user``),
   ``FLOE_DEFAULT_CATALOG=name``;
3. a TOML file, the first of ``$FLOE_HOME/floe.toml``, ``~/.floe/floe.toml``, ``./floe.toml``::

       default_catalog = "prod"
       [catalog.prod]
       type = "hadoop"
       warehouse = "/data/warehouse"
       [spark]
       "spark.sql.shuffle.partitions" = "8"      # spark.* keys, may include spark.sql.catalog.*

4. the embedded catalog ``floe``: a SQLite catalog at ``$FLOE_HOME/catalog.db`` with warehouse
   ``$FLOE_HOME/warehouse`` (``FLOE_HOME`` defaults to ``./.floe``). Defining a catalog named ``floe``
   replaces it; it is the default catalog unless another is named.

Spark-style keys (in ``--conf``, the file's ``[spark]`` table, or ``SET`` in SQL) are read as Iceberg's
Spark integration defines them::

    spark.sql.catalog.hadoop_catalog = org.apache.iceberg.spark.SparkCatalog   (or SparkSessionCatalog)
    spark.sql.catalog.hadoop_catalog.type = hadoop                            (hadoop|jdbc|rest|sql|hive)
    spark.sql.catalog.hadoop_catalog.warehouse = /dw/iceberg
    spark.sql.defaultCatalog = hadoop_catalog

and Hive's ``iceberg.catalog.<name>.<key>`` the same way. A catalog whose class is not an Iceberg
Spark catalog stays a Spark setting. ``type=jdbc`` becomes Floe's ``sql`` catalog with the JDBC URL
turned into a SQLAlchemy URL (``jdbc:postgresql://h:5432/db`` -> ``postgresql+psycopg2://h:5432/db``,
``jdbc:mysql://`` -> ``mysql+pymysql://``, ``jdbc:sqlite:/p`` -> ``sqlite:////p``), with ``jdbc.user``/
``jdbc.password`` (or ``user``/``password`` URL parameters) folded into the URL.

``spark_conf`` holds every other ``spark.*`` key, except ones that would break a plain Spark session
started by Floe: catalog keys, ``spark.sql.defaultCatalog`` and Iceberg's session extensions.

This module is the only configuration reader: :func:`floe.load_catalog` resolves catalog names through
:func:`resolve_catalog_properties` (layers 2-4 plus its keyword arguments on top), the CLI and SQL shell
through :meth:`FloeConfig.load`. Without ``type``, a catalog's kind is inferred: a database ``uri``
(``jdbc:``, ``sqlite``, ``postgresql`` ...) means ``sql``, an ``http(s)`` uri ``rest``, and a bare
``warehouse`` ``hadoop``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from floe.errors import NotFoundError, ValidationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "EMBEDDED_CATALOG",
    "ICEBERG_SPARK_CATALOG_CLASSES",
    "FloeConfig",
    "floe_home",
    "jdbc_to_sqlalchemy",
    "normalize_catalog_properties",
    "resolve_catalog_properties",
]

EMBEDDED_CATALOG = "floe"
ICEBERG_SPARK_CATALOG_CLASSES = frozenset(
    {"org.apache.iceberg.spark.SparkCatalog", "org.apache.iceberg.spark.SparkSessionCatalog"}
)
_SPARK_CATALOG_PREFIX = "spark.sql.catalog."
_HIVE_CATALOG_PREFIX = "iceberg.catalog."
_DEFAULT_CATALOG_KEY = "spark.sql.defaultCatalog"
_CLASS_KEY = "__class__"
# URI schemes (before any "+driver") that name a database SQLAlchemy can reach: a ``sql`` catalog.
_SQL_SCHEMES = frozenset({"sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql"})


def floe_home(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """``$FLOE_HOME``, else ``./.floe`` in the working directory (absolute)."""
    env = os.environ if environ is None else environ
    base = cwd or Path.cwd()
    home = env.get("FLOE_HOME")
    path = Path(home).expanduser() if home else base / ".floe"
    return path if path.is_absolute() else (base / path)


def jdbc_to_sqlalchemy(url: str, *, user: str | None = None, password: str | None = None) -> str:
    """A SQLAlchemy URL for a JDBC URL (PostgreSQL, MySQL/MariaDB, SQLite).

    Raises:
        ValidationError: not a JDBC URL of a supported database (names the URL).
    """
    if not url.startswith("jdbc:"):
        raise ValidationError(f"Not a JDBC URL: {url!r}")
    rest = url.removeprefix("jdbc:")
    if rest.startswith("sqlite:"):
        # jdbc:sqlite://path is not a host form; treat what follows as the path
        path = rest.removeprefix("sqlite:").removeprefix("//")
        return "sqlite://" if path in ("", ":memory:") else f"sqlite:///{path}"
    drivers = {"postgresql": "postgresql+psycopg2", "mysql": "mysql+pymysql", "mariadb": "mysql+pymysql"}
    scheme, sep, _ = rest.partition("://")
    if not sep or scheme not in drivers:
        raise ValidationError(
            f"Unsupported JDBC URL {url!r}: expected jdbc:postgresql://, jdbc:mysql:// or jdbc:sqlite:"
        )
    parts = urlsplit(rest)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    user = user or params.pop("user", None)
    password = password or params.pop("password", None)
    if scheme != "postgresql":
        # MySQL Connector/J options (useSSL, serverTimezone ...) mean nothing to PyMySQL; keep charset only.
        params = {k: v for k, v in params.items() if k == "charset"}
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if user:
        auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
        netloc = f"{auth}@{netloc}"
    query = f"?{urlencode(params)}" if params else ""
    return f"{drivers[scheme]}://{netloc}{parts.path}{query}"


def normalize_catalog_properties(name: str, props: Mapping[str, str]) -> dict[str, str]:
    """Map Iceberg/Spark catalog properties to Floe's: ``type=jdbc`` -> ``type=sql`` + SQLAlchemy uri.

    Raises:
        ValidationError: no type can be inferred, or the JDBC URL is not supported.
    """
    out = {k: v for k, v in props.items() if k != _CLASS_KEY and k not in _IGNORED_CATALOG_KEYS}
    impl = out.pop("catalog-impl", None)
    if impl is not None:
        mapped = _CATALOG_IMPLS.get(impl)
        if mapped is None or out.get("type", mapped).lower() not in (mapped, "jdbc" if mapped == "sql" else mapped):
            raise ValidationError(
                f"Catalog {name!r}: {name}.catalog-impl={impl} is not supported "
                f"(Floe implements {', '.join(sorted(_CATALOG_IMPLS))}; or set {name}.type)"
            )
        out.setdefault("type", mapped)
    io_impl = out.pop("io-impl", None)
    if io_impl is not None and io_impl not in _FILE_IOS:
        raise ValidationError(
            f"Catalog {name!r}: {name}.io-impl={io_impl} is not supported (Floe's FileIO covers "
            f"{', '.join(sorted(_FILE_IOS))})"
        )
    kind = out.get("type", "").lower()
    uri = out.get("uri", "")
    if not kind:
        kind = _infer_type(uri, has_warehouse="warehouse" in out)
    if kind in ("jdbc", "sql") and uri.startswith("jdbc:"):
        user = out.pop("jdbc.user", None) or out.pop("user", None)
        password = out.pop("jdbc.password", None) or out.pop("password", None)
        out["uri"] = jdbc_to_sqlalchemy(uri, user=user, password=password)
    if kind == "jdbc":
        kind = "sql"
    if kind:
        out["type"] = kind
    if not out.get("type"):
        raise ValidationError(f"Catalog {name!r} has no type (set {name}.type to hadoop, sql, jdbc or rest)")
    return out


# Iceberg catalog classes Floe implements, by the type it calls them.
_CATALOG_IMPLS = {
    "org.apache.iceberg.jdbc.JdbcCatalog": "sql",
    "org.apache.iceberg.hadoop.HadoopCatalog": "hadoop",
    "org.apache.iceberg.rest.RESTCatalog": "rest",
}
# FileIO classes whose job Floe's own FileIO (pyarrow.fs: local, HDFS, S3) does.
_FILE_IOS = frozenset({
    "org.apache.iceberg.hadoop.HadoopFileIO",
    "org.apache.iceberg.io.ResolvingFileIO",
    "org.apache.iceberg.aws.s3.S3FileIO",
})
# Iceberg's Spark catalog caching: Floe reads metadata fresh on every load, so there is nothing to cache.
_IGNORED_CATALOG_KEYS = frozenset({"cache-enabled", "cache.expiration-interval-ms", "cache.case-sensitive"})


def _infer_type(uri: str, *, has_warehouse: bool) -> str:
    """The catalog type a ``uri`` (or a bare warehouse) implies, or "" when nothing does."""
    if uri.startswith("jdbc:"):
        return "sql"
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower() if ":" in uri else ""
    if scheme in _SQL_SCHEMES:
        return "sql"
    if scheme in ("http", "https"):
        return "rest"
    if has_warehouse and not uri:
        return "hadoop"  # Iceberg's default for a catalog with only a warehouse
    return ""


@dataclass
class _Layer:
    catalogs: dict[str, dict[str, str]] = field(default_factory=dict)
    spark_conf: dict[str, str] = field(default_factory=dict)
    default_catalog: str | None = None

    def put_catalog(self, name: str, key: str, value: str) -> None:
        self.catalogs.setdefault(name, {})[key] = value

    def add_spark_key(self, key: str, value: str) -> None:
        """Route one ``spark.*`` / ``iceberg.catalog.*`` key to catalogs, the default, or Spark."""
        if key == _DEFAULT_CATALOG_KEY:
            self.default_catalog = value
        elif key.startswith((_SPARK_CATALOG_PREFIX, _HIVE_CATALOG_PREFIX)):
            prefix = _SPARK_CATALOG_PREFIX if key.startswith(_SPARK_CATALOG_PREFIX) else _HIVE_CATALOG_PREFIX
            name, _, sub = key[len(prefix) :].partition(".")
            if not name:
                raise ValidationError(f"Configuration key {key!r} names no catalog")
            self.put_catalog(name, sub or _CLASS_KEY, value)
        elif key == "spark.sql.extensions":
            kept = [
                e.strip()
                for e in value.split(",")
                if e.strip() and not e.strip().startswith("org.apache.iceberg.")
            ]
            if kept:
                self.spark_conf[key] = ",".join(kept)
        elif key.startswith("spark."):
            self.spark_conf[key] = value
        else:
            raise ValidationError(
                f"Unknown configuration key {key!r}: expected spark.*, spark.sql.catalog.<name>.* or iceberg.catalog.<name>.*"
            )


def _str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _flatten(prefix: str, table: Mapping[str, object], out: dict[str, str]) -> None:
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, Mapping):
            _flatten(key, v, out)
        else:
            out[key] = _str(v)


def _file_layer(path: Path) -> _Layer:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ValidationError(f"Invalid config file {path}: {e}") from None
    layer = _Layer()
    for name, props in (data.get("catalog") or data.get("catalogs") or {}).items():
        if not isinstance(props, Mapping):
            raise ValidationError(f"Config file {path}: [catalog.{name}] must be a table")
        flat: dict[str, str] = {}
        _flatten("", props, flat)
        for k, v in flat.items():
            layer.put_catalog(name, k, v)
    spark = data.get("spark") or {}
    if not isinstance(spark, Mapping):
        raise ValidationError(f"Config file {path}: [spark] must be a table")
    flat_spark: dict[str, str] = {}
    _flatten("", spark, flat_spark)
    for k, v in flat_spark.items():
        layer.add_spark_key(k if k.startswith("spark.") else f"spark.{k}", v)
    default = data.get("default_catalog", data.get("default-catalog"))
    if default is not None:
        layer.default_catalog = str(default)
    return layer


def _env_layer(environ: Mapping[str, str]) -> _Layer:
    layer = _Layer()
    for var, value in environ.items():
        if var == "FLOE_DEFAULT_CATALOG":
            layer.default_catalog = value
        elif var.startswith("FLOE_CATALOG__"):
            name, sep, key = var[len("FLOE_CATALOG__") :].partition("__")
            if not sep or not name or not key:
                raise ValidationError(
                    f"Environment variable {var} must look like FLOE_CATALOG__<NAME>__<KEY>"
                )
            layer.put_catalog(name.lower(), key.lower().replace("__", ".").replace("_", "-"), value)
    return layer


def _find_file(environ: Mapping[str, str], home: Path, cwd: Path) -> Path | None:
    user_home = environ.get("HOME")
    candidates = [home / "floe.toml"]
    if user_home:
        candidates.append(Path(user_home) / ".floe" / "floe.toml")
    candidates.append(cwd / "floe.toml")
    return next((p for p in candidates if p.is_file()), None)


def _is_iceberg_catalog(props: Mapping[str, str]) -> bool:
    cls = props.get(_CLASS_KEY)
    if cls is not None:
        return cls in ICEBERG_SPARK_CATALOG_CLASSES
    return True  # type/warehouse keys without a class line: the seeds' "catalog-name" example


@dataclass
class _Merged:
    """Layers merged key by key, before normalization (catalogs still hold raw keys and class lines)."""

    catalogs: dict[str, dict[str, str]]
    spark_conf: dict[str, str]
    default_catalog: str
    home: Path
    config_file: Path | None
    user_defined_embedded: bool


def _merge(extra: _Layer | None = None, *, environ: Mapping[str, str] | None, cwd: Path | None) -> _Merged:
    """Merge embedded < file < environment < ``extra`` (``--conf`` overrides)."""
    env = os.environ if environ is None else environ
    base = cwd or Path.cwd()
    home = floe_home(env, base)
    config_file = _find_file(env, home, base)
    embedded = _Layer(
        catalogs={
            EMBEDDED_CATALOG: {
                "type": "sql",
                "uri": f"sqlite:///{home / 'catalog.db'}",
                "warehouse": str(home / "warehouse"),
            }
        },
        default_catalog=EMBEDDED_CATALOG,
    )
    layers = [embedded, _file_layer(config_file) if config_file else _Layer(), _env_layer(env)]
    if extra is not None:
        layers.append(extra)
    merged = _Merged({}, {}, EMBEDDED_CATALOG, home, config_file, user_defined_embedded=False)
    for i, layer in enumerate(layers):
        for name, props in layer.catalogs.items():
            if i > 0 and name == EMBEDDED_CATALOG and not merged.user_defined_embedded:
                merged.catalogs[name] = {}  # a user-defined `floe` catalog replaces the embedded one
                merged.user_defined_embedded = True
            merged.catalogs.setdefault(name, {}).update(props)
        merged.spark_conf.update(layer.spark_conf)
        if layer.default_catalog:
            merged.default_catalog = layer.default_catalog
    return merged


def resolve_catalog_properties(
    name: str | None = None,
    properties: Mapping[str, str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[str, dict[str, str]]:
    """The name and normalized properties of one catalog: configuration < ``properties``.

    Only this catalog is normalized, so an incomplete definition of another catalog does not get in
    the way. Explicit ``properties`` for the embedded catalog ``floe`` replace it (as a file would).

    Args:
        name: the catalog; ``None`` means the configured default catalog.
        properties: explicit properties, winning key by key over the configuration.
        environ: environment to read (default ``os.environ``).
        cwd: working directory for ``./.floe`` and ``./floe.toml`` (default the process's).

    Returns:
        ``(name, properties)`` ready for the catalog constructor (``type`` always set).

    Raises:
        ValidationError: the catalog is not configured and no properties say what it is, it is a
            non-Iceberg Spark catalog, or its properties are malformed.
    """
    merged = _merge(environ=environ, cwd=cwd)
    chosen = merged.default_catalog if name is None else name
    key = chosen if chosen in merged.catalogs or chosen.lower() not in merged.catalogs else chosen.lower()
    raw = dict(merged.catalogs.get(key, {}))
    if properties:
        if key == EMBEDDED_CATALOG and not merged.user_defined_embedded:
            raw = {}  # explicit properties define `floe`; the embedded SQLite defaults do not leak in
        raw.update({k: str(v) for k, v in properties.items()})
    if not raw:
        raise ValidationError(
            f"Catalog {chosen!r} is not configured (configured: {', '.join(sorted(merged.catalogs))}). "
            f"Pass type=/uri=/warehouse= keyword arguments, set FLOE_CATALOG__{chosen.upper()}__TYPE=..., "
            f"or add a [catalog.{chosen}] table to floe.toml"
        )
    if not _is_iceberg_catalog(raw):
        raise ValidationError(
            f"Catalog {chosen!r} is a Spark catalog of class {raw[_CLASS_KEY]!r}, not an Iceberg catalog"
        )
    return chosen, normalize_catalog_properties(chosen, raw)


@dataclass(frozen=True, slots=True)
class FloeConfig:
    """Resolved configuration: catalog properties by name, the default catalog, Spark settings, home."""

    catalogs: dict[str, dict[str, str]]
    default_catalog: str
    spark_conf: dict[str, str]
    home: Path
    config_file: Path | None = None

    @classmethod
    def load(
        cls,
        conf_overrides: Mapping[str, str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> FloeConfig:
        """Merge the four layers (see the module docstring).

        Args:
            conf_overrides: ``--conf`` pairs (highest precedence).
            environ: environment to read (default ``os.environ``).
            cwd: working directory for ``./.floe`` and ``./floe.toml`` (default the process's).

        Raises:
            ValidationError: a malformed key, file, JDBC URL, or a default catalog that is not defined.
        """
        overrides = _Layer()
        for k, v in (conf_overrides or {}).items():
            overrides.add_spark_key(k, v)
        merged = _merge(overrides, environ=environ, cwd=cwd)
        spark_conf = merged.spark_conf
        catalogs: dict[str, dict[str, str]] = {}
        for name, props in merged.catalogs.items():
            if _is_iceberg_catalog(props):
                catalogs[name] = normalize_catalog_properties(name, props)
            else:  # a non-Iceberg Spark catalog: hand it to Spark untouched
                for k, v in props.items():
                    spark_conf[_SPARK_CATALOG_PREFIX + name + ("" if k == _CLASS_KEY else "." + k)] = v
        default = merged.default_catalog
        if default not in catalogs:
            raise ValidationError(
                f"Default catalog {default!r} is not configured (catalogs: {', '.join(sorted(catalogs))})"
            )
        return cls(
            catalogs=catalogs,
            default_catalog=default,
            spark_conf=spark_conf,
            home=merged.home,
            config_file=merged.config_file,
        )

    def catalog_properties(self, name: str) -> dict[str, str]:
        """Properties of one catalog.

        Raises:
            NotFoundError: no catalog of that name (lists the configured ones).
        """
        try:
            return dict(self.catalogs[name])
        except KeyError:
            raise NotFoundError(
                f"Unknown catalog {name!r} (configured: {', '.join(sorted(self.catalogs))})"
            ) from None
