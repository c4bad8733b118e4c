"""Per-column Parquet settings asked for by Iceberg's table properties: Bloom filters, and columns without
statistics (``write.parquet.stats-enabled.column.<name>=false``).

A property names a primitive column by its Iceberg name (``id``, ``st.x``, ``tags.element``, ``attrs.value``);
its Parquet path follows the layout both of Floe's writers produce (``tags.list.element``,
``attrs.key_value.value``). ``write.parquet.bloom-filter-enabled.column.<name>=true`` asks for a Bloom filter;
``...-fpp.column.<name>`` (default 0.01) and ``...-ndv.column.<name>`` size its bitset, at most
``write.parquet.bloom-filter-max-bytes`` (1 MiB). Without an NDV, parquet-mr (Spark's writer, as Iceberg Java's)
takes all of max-bytes unless ``write.parquet.bloom-filter-adaptive-enabled`` asks it to size for the chunk's
actual NDV; pyarrow always sizes for the values of the column chunk, which keeps the false-positive rate in
fewer bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from floe.errors import ValidationError
from floe.spec import properties as P
from floe.spec.schema import Schema
from floe.spec.types import IcebergType, ListType, MapType, StructType

__all__ = [
    "BloomFilterColumn", "ColumnSettings", "bloom_filter_columns", "check_column_properties", "column_settings",
    "ndv_filling_bytes",
]


@dataclass(frozen=True, slots=True)
class BloomFilterColumn:
    """One Parquet column to write a Bloom filter for."""

    parquet_path: str
    ndv: int | None  # None: the bitset is the whole max-bytes
    fpp: float


def _parquet_paths(t: IcebergType, prefix: str) -> Iterator[tuple[int, str]]:
    """(field id, Parquet column path) of every primitive below ``t``."""
    if isinstance(t, StructType):
        for f in t.fields:
            path = f"{prefix}{f.name}"
            if f.field_type.is_primitive:
                yield f.field_id, path
            yield from _parquet_paths(f.field_type, path + ".")
    elif isinstance(t, ListType):
        ef = t.element_field
        path = prefix + "list.element"
        if ef.field_type.is_primitive:
            yield ef.field_id, path
        yield from _parquet_paths(ef.field_type, path + ".")
    elif isinstance(t, MapType):
        for f, leaf in ((t.key_field, "key"), (t.value_field, "value")):
            path = f"{prefix}key_value.{leaf}"
            if f.field_type.is_primitive:
                yield f.field_id, path
            yield from _parquet_paths(f.field_type, path + ".")


@dataclass(frozen=True, slots=True)
class ColumnSettings:
    """The per-column settings of one file: Bloom filters, and the Parquet paths written without statistics."""

    bloom_filters: tuple[BloomFilterColumn, ...] = ()
    without_statistics: tuple[str, ...] = ()


def _columns(properties: Mapping[str, str], prefix: str) -> list[str]:
    """The column names the ``prefix`` properties name."""
    return [k[len(prefix):] for k in properties if k.startswith(prefix)]


def _named(properties: Mapping[str, str], prefix: str, value: bool) -> list[str]:
    """The column names of the ``prefix`` properties set to ``value``."""
    return [n for n in _columns(properties, prefix) if P.property_bool(properties, prefix + n, not value) is value]


def check_column_properties(schema: Schema, properties: Mapping[str, str], table_name: str) -> None:
    """Refuse a Bloom filter or statistics setting for a column the schema lacks or one that is not primitive (a
    struct, list or map has no Parquet column of its own; Iceberg Java stores such a property and ignores it).

    Raises:
        ValidationError: names the table, the property and the column.
    """
    for prefix in (P.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX, P.PARQUET_COLUMN_STATS_ENABLED_PREFIX):
        for name in _columns(properties, prefix):
            key = prefix + name
            field = schema.find_field_or_none(name)
            if field is None:
                raise ValidationError(f"Table {table_name}: {key} names no column of the table")
            if not field.field_type.is_primitive:
                raise ValidationError(
                    f"Table {table_name}: {key} names {field.field_type}, not a primitive column: the setting goes "
                    f"on leaf columns (such as {name}.<field>, {name}.element or {name}.value)"
                )


def column_settings(schema: Schema, properties: Mapping[str, str]) -> ColumnSettings:
    """The Bloom filters and statistics settings of a data file of ``schema``."""
    off = _named(properties, P.PARQUET_COLUMN_STATS_ENABLED_PREFIX, False)
    if not off:
        return ColumnSettings(bloom_filter_columns(schema, properties))
    paths = dict(_parquet_paths(schema.as_struct(), ""))
    fields = [schema.find_field_or_none(name) for name in off]
    return ColumnSettings(
        bloom_filter_columns(schema, properties),
        tuple(paths[f.field_id] for f in fields if f is not None and f.field_id in paths),
    )


def bloom_filter_columns(schema: Schema, properties: Mapping[str, str]) -> tuple[BloomFilterColumn, ...]:
    """The Bloom filters a file of ``schema`` gets. A column named by a property but gone from the schema since
    (dropped or renamed) gets none, as in Iceberg Java; setting such a property is refused up front."""
    names = _named(properties, P.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX, True)
    if not names:
        return ()
    paths = dict(_parquet_paths(schema.as_struct(), ""))
    out = []
    for name in names:
        field = schema.find_field_or_none(name)
        if field is None or field.field_id not in paths:
            continue
        ndv_key = P.PARQUET_BLOOM_FILTER_COLUMN_NDV_PREFIX + name
        ndv = P.property_int(properties, ndv_key, 0) if ndv_key in properties else None
        fpp = P.property_probability(
            properties, P.PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX + name, P.PARQUET_BLOOM_FILTER_COLUMN_FPP_DEFAULT
        )
        out.append(BloomFilterColumn(paths[field.field_id], ndv, fpp))
    return tuple(out)


def ndv_filling_bytes(num_bytes: int, fpp: float) -> int:
    """The largest NDV whose optimal split-block bitset at ``fpp`` is at most ``num_bytes`` (rounded down to a
    power of two): for writers that size filters only by NDV (pyarrow) to write a filter of a given size."""
    target = 1 << max(5, num_bytes.bit_length() - 1)  # a power of two, at least the 32-byte minimum block
    # Optimal bits = -8 * ndv / ln(1 - fpp ** (1/8)), rounded up to a power of two.
    per_value_bits = -8.0 / math.log(1.0 - fpp ** (1.0 / 8.0))
    return max(1, int(target * 8 / per_value_bits * 0.999))
