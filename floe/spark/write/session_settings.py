"""Iceberg's session-wide Spark write settings (``spark.sql.iceberg.*``), resolved as Iceberg Java resolves them.

Iceberg Java (SparkWriteConf) reads each of these as: the write option, else the session's conf, else the
table property, else the default. Floe's writers take their settings from the options and the table
properties, so the session's value is applied here as the option's default: :func:`with_session_settings`
fills each option the write did not give from the session conf, and every Floe write path reads the options.

- ``spark.sql.iceberg.distribution-mode`` (option ``distribution-mode``): none, hash or range, over
  ``write.distribution-mode`` and, for DELETE/UPDATE/MERGE, over ``write.<command>.distribution-mode``.
- ``spark.sql.iceberg.compression-codec`` / ``.compression-level`` (options ``compression-codec`` /
  ``compression-level``): the Parquet codec and level of data files and delete files alike, over
  ``write.parquet.compression-*`` and ``write.delete.parquet.compression-*``.
- ``spark.sql.iceberg.merge-schema`` (options ``mergeSchema`` / ``merge-schema``): add new columns and widen
  types before the write (default false).
- ``spark.sql.iceberg.check-nullability`` / ``.check-ordering`` (options of the same names, default true):
  on a table with ``write.spark.accept-any-schema=true``, where Spark leaves the data's schema to Iceberg,
  refuse an optional column written to a required one and columns out of the table's order.

``spark.sql.iceberg.compression-strategy`` is ORC's only; Floe writes Parquet. A value that is not valid is
refused in one line naming the conf or option; nothing is written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.spec import properties as P

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "CHECK_NULLABILITY_CONF",
    "CHECK_NULLABILITY_OPTION",
    "CHECK_ORDERING_CONF",
    "CHECK_ORDERING_OPTION",
    "COMPRESSION_CODEC_CONF",
    "COMPRESSION_CODEC_OPTION",
    "COMPRESSION_LEVEL_CONF",
    "COMPRESSION_LEVEL_OPTION",
    "DISTRIBUTION_MODE_CONF",
    "DISTRIBUTION_MODE_OPTION",
    "MERGE_SCHEMA_CONF",
    "SESSION_WRITE_OPTIONS",
    "SchemaChecks",
    "check_write_options",
    "compression_properties",
    "merge_schema_requested",
    "option_value",
    "schema_checks",
    "session_distribution_mode",
    "session_write_properties",
    "with_session_settings",
]

DISTRIBUTION_MODE_CONF = "spark.sql.iceberg.distribution-mode"
COMPRESSION_CODEC_CONF = "spark.sql.iceberg.compression-codec"
COMPRESSION_LEVEL_CONF = "spark.sql.iceberg.compression-level"
MERGE_SCHEMA_CONF = "spark.sql.iceberg.merge-schema"
CHECK_NULLABILITY_CONF = "spark.sql.iceberg.check-nullability"
CHECK_ORDERING_CONF = "spark.sql.iceberg.check-ordering"

DISTRIBUTION_MODE_OPTION = "distribution-mode"
COMPRESSION_CODEC_OPTION = "compression-codec"
COMPRESSION_LEVEL_OPTION = "compression-level"
MERGE_SCHEMA_OPTION = "merge-schema"
CHECK_NULLABILITY_OPTION = "check-nullability"
CHECK_ORDERING_OPTION = "check-ordering"

# Option -> the session conf it defaults to. ``mergeSchema`` (Spark's spelling) is read as ``merge-schema``.
_CONF_OF = {
    DISTRIBUTION_MODE_OPTION: DISTRIBUTION_MODE_CONF,
    COMPRESSION_CODEC_OPTION: COMPRESSION_CODEC_CONF,
    COMPRESSION_LEVEL_OPTION: COMPRESSION_LEVEL_CONF,
    MERGE_SCHEMA_OPTION: MERGE_SCHEMA_CONF,
    CHECK_NULLABILITY_OPTION: CHECK_NULLABILITY_CONF,
    CHECK_ORDERING_OPTION: CHECK_ORDERING_CONF,
}
# The write options named here, lower case (writeTo / save / the streaming sink accept them).
SESSION_WRITE_OPTIONS = frozenset({*_CONF_OF, "mergeschema"})
_DISTRIBUTION_MODES = ("none", "hash", "range")
_BOOLEAN_OPTIONS = (MERGE_SCHEMA_OPTION, CHECK_NULLABILITY_OPTION, CHECK_ORDERING_OPTION)


def option_value(options: Mapping[str, str], name: str) -> str | None:
    """An option by name, ignoring case (Spark's options are case-insensitive); ``mergeSchema`` for merge-schema."""
    wanted = {name, "mergeschema"} if name == MERGE_SCHEMA_OPTION else {name}
    return next((str(v) for k, v in options.items() if k.lower() in wanted), None)


def _session_conf(spark: SparkSession, key: str) -> str | None:
    value = spark.conf.get(key, None)
    return None if value is None or not str(value).strip() else str(value).strip()


def with_session_settings(
    spark: SparkSession, options: Mapping[str, str], *, table_name: str, only: Collection[str] = tuple(_CONF_OF)
) -> dict[str, str]:
    """``options`` (keys as given) plus each setting above (or of ``only``) the write did not give, from the
    session's conf.

    Raises:
        ValidationError: an option or session value that is not valid (names it and the table).
    """
    out = {str(k): str(v) for k, v in options.items()}
    for option in only:
        given = option_value(out, option)
        source = f"write option {option}"
        if given is None:
            given = _session_conf(spark, _CONF_OF[option])
            if given is None:
                continue
            out[option] = given
            source = _CONF_OF[option]
        _check(option, given, source, table_name)
    return out


def check_write_options(options: Mapping[str, str], *, table_name: str) -> None:
    """Refuse an invalid value of the options above (for writers that cannot read the session).

    Raises:
        ValidationError: names the option, the value and the table.
    """
    for option in _CONF_OF:
        given = option_value(options, option)
        if given is not None:
            _check(option, given, f"write option {option}", table_name)


def _check(option: str, value: str, source: str, table_name: str) -> None:
    v = value.strip().lower()
    if option == DISTRIBUTION_MODE_OPTION and v not in _DISTRIBUTION_MODES:
        raise ValidationError(f"Table {table_name}: {source}={value!r} is not valid: expected none, hash or range")
    if option == COMPRESSION_CODEC_OPTION and v not in P.PARQUET_CODECS:
        raise ValidationError(
            f"Table {table_name}: {source}={value!r} is not a Parquet codec: expected {', '.join(P.PARQUET_CODECS)}"
        )
    if option == COMPRESSION_LEVEL_OPTION:
        try:
            int(v)
        except ValueError:
            raise ValidationError(f"Table {table_name}: {source}={value!r} is not an integer") from None
    if option in _BOOLEAN_OPTIONS and v not in ("true", "false"):
        raise ValidationError(f"Table {table_name}: {source}={value!r} is not valid: expected true or false")


def session_distribution_mode(spark: SparkSession, options: Mapping[str, str], *, table_name: str) -> str | None:
    """The distribution mode the option or the session asks for (it wins over every table property), or None."""
    filled = with_session_settings(spark, options, table_name=table_name, only=(DISTRIBUTION_MODE_OPTION,))
    value = filled.get(DISTRIBUTION_MODE_OPTION)
    return value.strip().lower() if value is not None else None


def compression_properties(
    properties: Mapping[str, str], options: Mapping[str, str], *, table_name: str
) -> dict[str, str]:
    """``properties`` with the ``compression-codec`` / ``compression-level`` options (filled from the session by
    :func:`with_session_settings`) in place of the data and delete files' codec and level properties.

    Raises:
        ValidationError: the level, wherever it comes from, is out of the resolved codec's range.
    """
    out = dict(properties)
    codec, level = option_value(options, COMPRESSION_CODEC_OPTION), option_value(options, COMPRESSION_LEVEL_OPTION)
    if codec is None and level is None:
        return out
    if codec is not None:
        out[P.PARQUET_COMPRESSION] = out[P.DELETE_PARQUET_COMPRESSION] = codec.strip().lower()
    if level is not None:
        out[P.PARQUET_COMPRESSION_LEVEL] = out[P.DELETE_PARQUET_COMPRESSION_LEVEL] = level.strip()
    for deletes in (False, True):
        name, _, raw, level_key = P.parquet_codec_and_level(out, deletes=deletes)
        bounds = P.PARQUET_COMPRESSION_LEVELS.get(name)
        # A codec without levels ignores one, as in Iceberg Java (a table's zstd level under a session's snappy).
        if raw is not None and bounds is not None and not bounds[0] <= P.property_int(out, level_key, 0) <= bounds[1]:
            raise ValidationError(
                f"Table {table_name}: compression level {raw} is out of range for {name} ({bounds[0]} to {bounds[1]}); "
                f"the codec or level comes from the write's compression-codec / compression-level option or "
                f"{COMPRESSION_CODEC_CONF} / {COMPRESSION_LEVEL_CONF}"
            )
    return out


def session_write_properties(
    spark: SparkSession, table: Table, options: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The table's properties as a write of ``table`` in ``spark`` takes them: the codec and level the options or
    the session give in place of the table's (for writers that read only the properties)."""
    filled = with_session_settings(
        spark, options or {}, table_name=table.name(), only=(COMPRESSION_CODEC_OPTION, COMPRESSION_LEVEL_OPTION)
    )
    return compression_properties(table.properties, filled, table_name=table.name())


def merge_schema_requested(options: Mapping[str, str]) -> bool:
    """Whether the write asks to evolve the table's schema: the ``mergeSchema`` / ``merge-schema`` option, filled
    from ``spark.sql.iceberg.merge-schema`` (default false). ``write.spark.accept-any-schema`` alone does not: it
    lets the data's schema differ, and the option asks for the change, as in Iceberg Java."""
    value = option_value(options, MERGE_SCHEMA_OPTION)
    return value is not None and value.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class SchemaChecks:
    """The two strict checks of Iceberg's own schema validation, on or off."""

    nullability: bool
    ordering: bool


def schema_checks(properties: Mapping[str, str], options: Mapping[str, str]) -> SchemaChecks:
    """The checks Iceberg Java makes of a DataFrame write's schema: on a table with
    ``write.spark.accept-any-schema=true`` (Spark then leaves the data's schema to Iceberg), an optional column
    written to a required one and columns out of the table's order are refused unless ``check-nullability`` /
    ``check-ordering`` (options, filled from the session) are false. Other tables get Spark's by-name matching,
    where neither applies; a null in a required column fails the write on every table."""
    if not P.property_bool(properties, P.SPARK_WRITE_ACCEPT_ANY_SCHEMA, False):
        return SchemaChecks(nullability=False, ordering=False)

    def on(option: str) -> bool:
        value = option_value(options, option)
        return value is None or value.strip().lower() != "false"

    return SchemaChecks(nullability=on(CHECK_NULLABILITY_OPTION), ordering=on(CHECK_ORDERING_OPTION))
