"""Column metrics for a data file from its Parquet footer, keyed by field id (spec "Manifests": data_file).

Follows Iceberg Java's Parquet footer metrics:
- ``column_sizes``: compressed bytes of each leaf column chunk, summed over row groups.
- ``value_counts``: the chunks' ``num_values`` (nulls included; for repeated columns, every element slot).
- ``null_value_counts``: from chunk statistics; dropped for a column when any row group lacks them.
- bounds: only for columns reached through structs alone (no list/map ancestor), because a bound of a
  repeated column says nothing usable about rows; from exact row-group min/max, never for INT96; dropped
  when any row group with values has no min/max.
- metrics modes (``write.metadata.metrics.default`` / ``write.metadata.metrics.column.<name>``):
  ``none`` (nothing, not even sizes), ``counts`` (sizes and counts), ``truncate(N)`` (counts + bounds,
  string/binary/fixed bounds truncated to N code points / bytes) and ``full``. Without an explicit
  default, tables with more than ``write.metadata.metrics.max-inferred-column-defaults`` (100) leaf
  columns keep the default only for the first 100 (shallowest first, as Java does) and ``none`` after.
NaN counts are not in the footer: writers count them while writing with :class:`NanCounter`.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from floe.errors import ValidationError
from floe.io.arrow_schema import field_id_of
from floe.io.name_mapping import NameMapping, apply_name_mapping
from floe.serde.single_value import to_bytes
from floe.spec.properties import (
    METRICS_MAX_INFERRED_COLUMN_DEFAULTS,
    METRICS_MAX_INFERRED_COLUMN_DEFAULTS_DEFAULT,
    METRICS_MODE_COLUMN_PREFIX,
    METRICS_MODE_DEFAULT,
    METRICS_MODE_DEFAULT_DEFAULT,
)
from floe.spec.schema import Schema, walk_fields
from floe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    TimeType,
    UUIDType,
)

__all__ = [
    "MetricsConfig",
    "MetricsMode",
    "NanCounter",
    "ParquetMetrics",
    "footer_metrics",
    "nan_value_counts",
    "parse_metrics_mode",
    "truncate_lower_bound",
    "truncate_upper_bound",
]


@dataclass(frozen=True, slots=True)
class MetricsMode:
    """How much to record for a column: ``none``, ``counts``, ``truncate(length)`` or ``full``."""

    kind: Literal["none", "counts", "truncate", "full"]
    length: int = 0

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")


def parse_metrics_mode(text: str) -> MetricsMode:
    """Parse ``none`` / ``counts`` / ``full`` / ``truncate(N)`` (case-insensitive).

    Raises:
        ValidationError: the mode is not one of those, or N is not positive.
    """
    key = text.strip().lower()
    if key in ("none", "counts", "full"):
        return MetricsMode(key)  # type: ignore[arg-type]
    if m := _TRUNCATE.match(key):
        n = int(m.group(1))
        if n <= 0:
            raise ValidationError(f"Invalid metrics mode {text!r}: truncate length must be positive")
        return MetricsMode("truncate", n)
    raise ValidationError(f"Invalid metrics mode {text!r}: expected none, counts, truncate(N) or full")


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """The metrics mode of every field id of a schema, resolved from table properties."""

    modes: Mapping[int, MetricsMode]
    default: MetricsMode

    @classmethod
    def from_properties(cls, schema: Schema, properties: Mapping[str, str]) -> MetricsConfig:
        """Resolve modes from ``write.metadata.metrics.*`` properties.

        Raises:
            ValidationError: a mode string is invalid.
        """
        explicit_default = properties.get(METRICS_MODE_DEFAULT)
        default = parse_metrics_mode(explicit_default or METRICS_MODE_DEFAULT_DEFAULT)
        modes: dict[int, MetricsMode] = {}
        if explicit_default is None:
            limit = int(
                properties.get(
                    METRICS_MAX_INFERRED_COLUMN_DEFAULTS, METRICS_MAX_INFERRED_COLUMN_DEFAULTS_DEFAULT
                )
            )
            leaves = _leaves_shallowest_first(schema.as_struct())
            if len(leaves) > limit:
                for fid in leaves[limit:]:
                    modes[fid] = MetricsMode("none")
        for key, value in properties.items():
            if key.startswith(METRICS_MODE_COLUMN_PREFIX):
                name = key[len(METRICS_MODE_COLUMN_PREFIX) :]
                f = schema.find_field_or_none(name)
                if f is not None:
                    modes[f.field_id] = parse_metrics_mode(value)
        return cls(modes, default)

    def mode(self, field_id: int) -> MetricsMode:
        return self.modes.get(field_id, self.default)


def _leaves_shallowest_first(struct: StructType) -> list[int]:
    """Primitive field ids: each struct's primitive children first, then its nested children's."""
    out: list[int] = []
    queue: list[IcebergType] = [struct]
    while queue:
        t = queue.pop(0)
        children = t.children if isinstance(t, (StructType, ListType, MapType)) else ()
        out += [c.field_id for c in children if isinstance(c.field_type, PrimitiveType)]
        queue += [c.field_type for c in children if not isinstance(c.field_type, PrimitiveType)]
    return out


@dataclass(frozen=True, slots=True)
class ParquetMetrics:
    """The metrics of one data file; the writer builds its ``DataFile`` from these maps."""

    record_count: int
    column_sizes: Mapping[int, int] = field(default_factory=dict)
    value_counts: Mapping[int, int] = field(default_factory=dict)
    null_value_counts: Mapping[int, int] = field(default_factory=dict)
    nan_value_counts: Mapping[int, int] = field(default_factory=dict)
    lower_bounds: Mapping[int, bytes] = field(default_factory=dict)
    upper_bounds: Mapping[int, bytes] = field(default_factory=dict)


# -- footer ------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Leaf:
    field: NestedField
    bounds_allowed: bool  # no list/map ancestor


def _resolve_leaves(arrow_schema: pa.Schema, schema: Schema) -> list[_Leaf | None]:
    """One entry per Parquet leaf column, in column order: the schema field it holds, or None."""
    out: list[_Leaf | None] = []

    def visit(f: pa.Field, target: NestedField | None, bounds_ok: bool) -> None:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        tt = target.field_type if target is not None else None
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                child = t.field(i)
                fid = field_id_of(child)
                sub = tt.field(fid) if isinstance(tt, StructType) and fid is not None else None
                visit(child, sub, bounds_ok)
        elif pa.types.is_map(t):
            key = tt.key_field if isinstance(tt, MapType) else None
            value = tt.value_field if isinstance(tt, MapType) else None
            visit(t.key_field, key, False)
            visit(t.item_field, value, False)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            visit(t.value_field, tt.element_field if isinstance(tt, ListType) else None, False)
        else:
            ok = target is not None and isinstance(target.field_type, PrimitiveType)
            out.append(_Leaf(target, bounds_ok) if ok and target is not None else None)

    struct = schema.as_struct()
    for f in arrow_schema:
        fid = field_id_of(f)
        visit(f, struct.field(fid) if fid is not None else None, True)
    return out


def footer_metrics(
    metadata: pq.FileMetaData,
    schema: Schema,
    *,
    properties: Mapping[str, str] | None = None,
    nan_counts: Mapping[int, int] | None = None,
    name_mapping: NameMapping | None = None,
) -> ParquetMetrics:
    """Metrics of a written Parquet file from its footer (``pq.ParquetFile(...).metadata`` or a writer's).

    Args:
        metadata: the file's footer.
        schema: the table schema the file was written with (columns are matched by field id).
        properties: table properties (metrics modes).
        nan_counts: NaN counts per field id from :class:`NanCounter` (the footer has none).
        name_mapping: for files without field ids.

    Raises:
        ValidationError: a metrics mode property is invalid.
    """
    config = MetricsConfig.from_properties(schema, properties or {})
    arrow_schema = metadata.schema.to_arrow_schema()
    if name_mapping is not None and not any(field_id_of(f) is not None for f in arrow_schema):
        arrow_schema = apply_name_mapping(arrow_schema, name_mapping)
    leaves = _resolve_leaves(arrow_schema, schema)
    pschema = metadata.schema
    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int | None] = {}
    lower: dict[int, Any] = {}
    upper: dict[int, Any] = {}
    no_bounds: set[int] = set()
    for rg_index in range(metadata.num_row_groups):
        rg = metadata.row_group(rg_index)
        for col_index, leaf in enumerate(leaves):
            if leaf is None:
                continue
            fid = leaf.field.field_id
            mode = config.mode(fid)
            if mode.kind == "none":
                continue
            chunk = rg.column(col_index)
            sizes[fid] = sizes.get(fid, 0) + chunk.total_compressed_size
            values[fid] = values.get(fid, 0) + chunk.num_values
            stats = chunk.statistics if chunk.is_stats_set else None
            if stats is not None and stats.has_null_count and nulls.get(fid, 0) is not None:
                nulls[fid] = (nulls.get(fid) or 0) + stats.null_count
            else:
                nulls[fid] = None
            if mode.kind == "counts" or not leaf.bounds_allowed or fid in no_bounds:
                continue
            nonnull = chunk.num_values - (
                stats.null_count if stats is not None and stats.has_null_count else 0
            )
            if stats is None or not stats.has_min_max:
                if stats is None or nonnull > 0:
                    no_bounds.add(fid)  # values without min/max: no bound is valid for the file
                continue
            col = pschema.column(col_index)
            lo = _stat_value(leaf.field.field_type, col, stats.min_raw, upper=False)
            hi = _stat_value(leaf.field.field_type, col, stats.max_raw, upper=True)
            if lo is None or hi is None:
                no_bounds.add(fid)
                continue
            if fid not in lower or lo < lower[fid]:
                lower[fid] = lo
            if fid not in upper or hi > upper[fid]:
                upper[fid] = hi
    lower_bytes: dict[int, bytes] = {}
    upper_bytes: dict[int, bytes] = {}
    for fid, lo in lower.items():
        if fid in no_bounds:
            continue
        t = schema.find_type(fid)
        mode = config.mode(fid)
        lo_t, hi_t = lo, upper[fid]
        if mode.kind == "truncate" and isinstance(t, (StringType, BinaryType, FixedType)):
            lo_t = truncate_lower_bound(lo, mode.length)
            hi_t = truncate_upper_bound(upper[fid], mode.length)
            if isinstance(t, FixedType):
                t = BinaryType()  # a truncated fixed bound is shorter than the type, as Iceberg Java writes it
        lower_bytes[fid] = to_bytes(t, lo_t)
        if hi_t is not None:
            upper_bytes[fid] = to_bytes(t, hi_t)
    nan = {fid: n for fid, n in (nan_counts or {}).items() if config.mode(fid).kind != "none"}
    return ParquetMetrics(
        record_count=metadata.num_rows,
        column_sizes=sizes,
        value_counts=values,
        null_value_counts={fid: n for fid, n in nulls.items() if n is not None},
        nan_value_counts=nan,
        lower_bounds=lower_bytes,
        upper_bounds=upper_bytes,
    )


def _time_unit(col: Any) -> str | None:
    """The Parquet TIME/TIMESTAMP unit of a column (``microseconds``...), or None for legacy converted types."""
    try:
        unit = json.loads(col.logical_type.to_json()).get("timeUnit")
    except (ValueError, AttributeError):
        return None
    return unit if isinstance(unit, str) else None


def _stat_value(t: IcebergType, col: Any, raw: Any, *, upper: bool) -> Any:
    """A row-group min/max (physical value) in Floe's representation for type ``t``, or None if unusable."""
    physical = col.physical_type
    if physical == "INT96":
        return None  # legacy timestamps: their statistics are not ordered correctly
    if isinstance(t, StringType):
        try:
            return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        except UnicodeDecodeError:
            return None
    if isinstance(t, UUIDType):
        return uuid.UUID(bytes=bytes(raw)) if isinstance(raw, bytes) and len(raw) == 16 else None
    if isinstance(t, (BinaryType, FixedType)):
        return bytes(raw)
    if isinstance(t, DecimalType):
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
        sign = 1 if unscaled < 0 else 0
        return Decimal((sign, tuple(int(d) for d in str(abs(unscaled))), -t.scale))
    if isinstance(t, (FloatType, DoubleType)):
        return float(raw)
    if isinstance(t, DateType):
        return int(raw)
    if isinstance(t, TimeType) or _is_timestamp(t):
        nanos = isinstance(t, (TimestampNanoType, TimestamptzNanoType))
        return _to_unit(int(raw), _time_unit(col), physical, nanos=nanos, upper=upper)
    if isinstance(raw, (bool, int)):
        return raw
    return None


def _is_timestamp(t: IcebergType) -> bool:
    return str(t).startswith("timestamp")


def _to_unit(value: int, unit: str | None, physical: str, *, nanos: bool, upper: bool) -> int | None:
    if unit is None:
        unit = "milliseconds" if physical == "INT32" else "microseconds"
    per_unit_nanos = {"milliseconds": 1_000_000, "microseconds": 1000, "nanoseconds": 1}.get(unit)
    if per_unit_nanos is None:
        return None
    ns = value * per_unit_nanos
    if nanos:
        return ns
    # a file with a finer unit than the column: round outwards so the bounds stay valid
    return -(-ns // 1000) if upper else ns // 1000


# -- truncation (spec: "truncate(L)" metrics keep a prefix lower bound and an incremented upper bound)
def truncate_lower_bound(value: Any, length: int) -> Any:
    """A prefix of at most ``length`` code points (str) or bytes: still <= every value."""
    return value[:length] if isinstance(value, (str, bytes)) else value


def truncate_upper_bound(value: Any, length: int) -> Any | None:
    """The shortest value of at most ``length`` code points/bytes that is >= ``value``, or None if none exists.

    The prefix's last code point (byte) is incremented; if it is already the maximum it is dropped and
    the one before is incremented. Surrogate code points are skipped (not valid in UTF-8).
    """
    if isinstance(value, str):
        if len(value) <= length:
            return value
        chars = list(value[:length])
        while chars:
            cp = ord(chars.pop()) + 1
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xE000
            if cp <= 0x10FFFF:
                return "".join(chars) + chr(cp)
        return None
    if isinstance(value, bytes):
        if len(value) <= length:
            return value
        prefix = bytearray(value[:length])
        while prefix:
            last = prefix.pop()
            if last < 0xFF:
                prefix.append(last + 1)
                return bytes(prefix)
        return None
    return value


# -- NaN counts --------------------------------------------------------------------------------
def _float_columns(schema: Schema) -> list[tuple[list[int], int]]:
    """(path of field ids from a top-level column, leaf field id) for every float/double field."""
    return [
        (schema.accessor_path(f.field_id), f.field_id)
        for _, f in walk_fields(schema.as_struct())
        if isinstance(f.field_type, (FloatType, DoubleType))
    ]


def _leaf_values(arr: pa.Array, path: list[int], schema: Schema) -> pa.Array:
    """The flattened values of the field at ``path`` (ids) below a top-level column array."""
    for parent_id, child_id in itertools.pairwise(path):
        t = schema.find_type(parent_id)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if isinstance(t, StructType):
            idx = [f.field_id for f in t.fields].index(child_id)
            arr = arr.field(idx)
        elif isinstance(t, ListType):
            arr = arr.flatten()
        elif isinstance(t, MapType):
            # keys/items span the whole child array, also under sliced-off rows: cut to this slice's range
            offsets = arr.offsets
            start = offsets[0].as_py() if len(offsets) else 0
            end = offsets[-1].as_py() if len(offsets) else 0
            child = arr.keys if child_id == t.key_id else arr.items
            arr = child.slice(start, end - start)
    return arr


def nan_value_counts(data: pa.Table | pa.RecordBatch, schema: Schema) -> dict[int, int]:
    """NaN counts per float/double field id of Arrow data laid out as ``schema`` (columns by name)."""
    out: dict[int, int] = {}
    for path, fid in _float_columns(schema):
        top = schema.find_field(path[0])
        if top.name not in data.schema.names:
            continue
        values = _leaf_values(data.column(top.name), path, schema)
        out[fid] = int(pc.sum(pc.is_nan(values)).as_py() or 0)
    return out


class NanCounter:
    """Accumulates NaN counts over the batches a writer writes into one file."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._counts: dict[int, int] = {fid: 0 for _, fid in _float_columns(schema)}

    def update(self, data: pa.Table | pa.RecordBatch) -> None:
        for fid, n in nan_value_counts(data, self.schema).items():
            self._counts[fid] = self._counts.get(fid, 0) + n

    def update_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        for b in batches:
            self.update(b)

    @property
    def counts(self) -> dict[int, int]:
        return dict(self._counts)
