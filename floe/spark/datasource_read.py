"""The read side of Floe's Python data source: ``spark.read.format("iceberg").load(<table>)``.

The driver plans with floe.scan (bin-packed by ``read.split.*``); each Spark partition is one combined
task read with pyarrow (deletes applied) and returned as Arrow record batches. Filters Spark offers through
``pushFilters`` prune manifests and files, and are all handed back so Spark still evaluates them (kept
filters are not re-checked by Spark, and Floe's evaluator treats nulls in ``!=`` differently from SQL).

Read options: ``snapshot-id``, ``as-of-timestamp``, ``branch``, ``tag``, ``start-snapshot-id``,
``end-snapshot-id``, plus ``read.split.*`` overrides. Native ``floe.spark.read`` is several times faster
(DESIGN.md section 5); this path exists for ``format("iceberg")`` and SQL users.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)
from pyspark.sql.pandas.types import to_arrow_schema

from floe.config import FloeConfig
from floe.errors import ValidationError
from floe.expressions import builders as B
from floe.expressions.base import AlwaysTrue, BooleanExpression, and_, not_
from floe.io.fileio import FileIO
from floe.io.name_mapping import NameMapping
from floe.scan.arrow_read import ReadContext, name_mapping_of, read_task_to_arrow
from floe.scan.table_scan import TableScan
from floe.scan.tasks import FileScanTask
from floe.spark.read import load_table, scan_for
from floe.spark.types import to_spark_schema
from floe.spec.schema import Schema

__all__ = [
    "READ_OPTIONS",
    "SPARK_ARROW_TIMEZONE",
    "IcebergReader",
    "filter_to_expression",
    "scan_from_options",
    "spark_schema_for",
    "table_source",
    "task_group",
]

READ_OPTIONS = ("snapshot-id", "as-of-timestamp", "branch", "tag", "start-snapshot-id", "end-snapshot-id")


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"Read option {key} must be an integer, got {raw!r}") from None


# The option carrying the registering session's catalogs (JSON) to the reader and writer.
SESSION_CATALOGS_OPTION = "__floe_session_catalogs"


def config_from_options(options: Mapping[str, str]) -> FloeConfig | None:
    """The registering session's catalogs over the worker's own configuration, if the options carry them."""
    raw = {str(k).lower(): v for k, v in options.items()}.get(SESSION_CATALOGS_OPTION)
    if raw is None:
        return None
    carried = json.loads(raw)
    base = FloeConfig.load()
    return dataclasses.replace(
        base, catalogs={**base.catalogs, **carried["catalogs"]}, default_catalog=carried["default"]
    )



def table_source(options: Mapping[str, str], *, action: str) -> str:
    """The table a data source's options name (``path``, else ``table``): a location or an identifier.

    Args:
        options: the data source options (keys case-insensitive).
        action: ``read`` or ``write``, for the message.

    Raises:
        ValidationError: no table named. pyspark 4.3 keeps no OPTIONS (``path`` included) nor LOCATION
            for a session-catalog table created with ``CREATE TABLE ... USING iceberg``: reads and writes
            through such a table reach here without options, and the message says what works instead.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    source = (opts.get("path") or opts.get("table") or "").strip()
    if source:
        return source
    raise ValidationError(
        f"No Iceberg table to {action}: the iceberg data source needs a table identifier or location "
        f"in its path option (options given: {', '.join(sorted(opts)) or 'none'}). Pass it with "
        '.load(<table>) / .save(<table>). Tables created with CREATE TABLE ... USING iceberg '
        "OPTIONS (path ...) or LOCATION lose the path: Spark stores no options for Python data source "
        "tables; use CREATE TEMPORARY VIEW <name> USING iceberg OPTIONS (path '<location or catalog.db.table>') "
        "for SELECT and INSERT INTO, or Floe's SQL (floe sql)"
    )


def scan_from_options(options: Mapping[str, str]) -> TableScan:
    """The TableScan described by data source options (``path`` names the table).

    Raises:
        ValidationError: no table given, or an option has a bad value.
    """
    opts = {k.lower(): v for k, v in options.items()}
    table = load_table(None, table_source(opts, action="read"), config=config_from_options(opts))
    extra = {k: v for k, v in opts.items() if k.startswith("read.")}
    return scan_for(
        table,
        snapshot_id=_int_option(opts, "snapshot-id"),
        as_of_timestamp=_int_option(opts, "as-of-timestamp"),
        branch=opts.get("branch"),
        tag=opts.get("tag"),
        start_snapshot_id=_int_option(opts, "start-snapshot-id"),
        end_snapshot_id=_int_option(opts, "end-snapshot-id"),
        options=extra,
    )


def spark_schema_for(scan: TableScan) -> T.StructType:
    """The Spark schema of the rows a scan returns."""
    return to_spark_schema(scan.projection())


def _column(attr: Sequence[str]) -> str:
    return ".".join(attr)


def filter_to_expression(f: Filter) -> BooleanExpression | None:
    """A Floe expression for a Spark data source filter, or None when Floe cannot express it."""
    if isinstance(f, (EqualTo, EqualNullSafe)):
        return B.equal_to(_column(f.attribute), f.value) if f.value is not None else None
    if isinstance(f, GreaterThan):
        return B.greater_than(_column(f.attribute), f.value)
    if isinstance(f, GreaterThanOrEqual):
        return B.greater_than_or_equal(_column(f.attribute), f.value)
    if isinstance(f, LessThan):
        return B.less_than(_column(f.attribute), f.value)
    if isinstance(f, LessThanOrEqual):
        return B.less_than_or_equal(_column(f.attribute), f.value)
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return B.in_(_column(f.attribute), values) if values else None
    if isinstance(f, IsNull):
        return B.is_null(_column(f.attribute))
    if isinstance(f, IsNotNull):
        return B.not_null(_column(f.attribute))
    if isinstance(f, StringStartsWith):
        return B.starts_with(_column(f.attribute), f.value)
    if isinstance(f, Not):
        inner = filter_to_expression(f.child)
        # NOT over a comparison differs from Iceberg's negation for nulls; only negate null checks.
        if inner is not None and isinstance(f.child, (IsNull, IsNotNull)):
            return not_(inner)
    return None


@dataclass(frozen=True)
class _TaskGroup(InputPartition):
    """One Spark partition: a bin-packed group of file scan tasks and what reading them needs."""

    index: int
    tasks: tuple[FileScanTask, ...]
    locations: Mapping[str, str]
    io_properties: Mapping[str, str]
    table_schema: Schema
    projection: Schema
    mapping_json: str | None
    table_name: str
    case_sensitive: bool


_HEX = np.array([f"{i:02x}".encode() for i in range(256)], dtype="S2").view(np.uint8).reshape(256, 2)
# Spark's batch check builds the expected Arrow schema with this zone (pyspark.sql.worker.
# plan_data_source_read: to_arrow_schema(return_type, timezone="UTC")); TimestampType needs one.
SPARK_ARROW_TIMEZONE = "UTC"


def _uuid_strings(arr: pa.Array) -> pa.Array:
    """16-byte uuids (extension or fixed_size_binary(16)) as their canonical text, vectorized."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    n = len(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)[storage.offset * 16 : (storage.offset + n) * 16]
    hexed = _HEX[raw.reshape(n, 16)].reshape(n, 32)
    text = np.insert(hexed, [8, 12, 16, 20], ord("-"), axis=1)  # 8-4-4-4-12 (RFC 4122 text form)
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    out = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(text.tobytes()))
    return pc.if_else(storage.is_null(), pa.scalar(None, pa.string()), out) if storage.null_count else out


def _is_uuid(t: pa.DataType) -> bool:
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    return bool(pa.types.is_fixed_size_binary(storage) and storage.byte_width == 16)


def _rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """A list/map array's offsets starting at 0 (int32), and the child range they cover.

    Offsets of a sliced array index into the whole child; pyarrow rebuilds with a null mask only from
    offsets that start at 0.
    """
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    return pa.array(offsets - lo, pa.int32()), lo, hi


def _conform(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as exactly ``target``: uuids become text, nested values are converted recursively.

    Spark checks each batch's Arrow schema against the declared one exactly (names, nullability, time
    zone, time unit), so leaves are cast and containers rebuilt with the target's field names.
    """
    src = arr.type
    if src == target:
        return arr
    if pa.types.is_string(target) and _is_uuid(src):
        return _uuid_strings(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target) and pa.types.is_struct(src):
        flat = arr.flatten()  # children with the parent's validity folded in
        children = [_conform(flat[i], target.field(i).type) for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(src):
        offsets, lo, hi = _rebased_offsets(arr)
        keys = _conform(arr.keys.slice(lo, hi - lo), target.key_type)
        items = _conform(arr.items.slice(lo, hi - lo), target.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) and (pa.types.is_list(src) or pa.types.is_large_list(src)):
        offsets, lo, hi = _rebased_offsets(arr)
        values = _conform(arr.values.slice(lo, hi - lo), target.value_type)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(src, pa.BaseExtensionType):
        arr = arr.storage
    return arr.cast(target)


def _to_spark_arrow(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Exactly the Arrow schema Spark expects for the declared schema (see :func:`_conform`)."""
    cols = [_conform(table.column(i).combine_chunks(), f.type) for i, f in enumerate(target)]
    return pa.Table.from_arrays(cols, schema=target)


class IcebergReader(DataSourceReader):
    """Plans on the driver, reads one combined task per Spark partition with pyarrow."""

    def __init__(self, options: Mapping[str, str], schema: T.StructType) -> None:
        self.options = dict(options)
        self.schema = schema
        self.pushed: list[BooleanExpression] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Record convertible filters for pruning; return all of them so Spark evaluates them too."""
        for f in filters:
            e = filter_to_expression(f)
            if e is not None:
                self.pushed.append(e)
        return iter(filters)

    def _scan(self) -> TableScan:
        scan = scan_from_options(self.options)
        return scan.filter(and_(*self.pushed)) if self.pushed else scan

    def partitions(self) -> Sequence[InputPartition]:
        scan = self._scan()
        try:
            groups = list(scan.plan_tasks())
        except ValidationError:
            # A pushed filter Floe cannot bind (e.g. a literal of another type): plan without it; Spark
            # evaluates every filter anyway.
            scan = scan_from_options(self.options)
            groups = list(scan.plan_tasks())
        return [task_group(scan, i, g.tasks) for i, g in enumerate(groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _TaskGroup)
        p = partition
        locs = dict(p.locations)
        ctx = ReadContext(
            io=FileIO(p.io_properties),
            table_schema=p.table_schema,
            projection=p.projection,
            name_mapping=NameMapping.from_json(p.mapping_json) if p.mapping_json else None,
            location_of=lambda path: locs.get(path, path),
            case_sensitive=p.case_sensitive,
            table_name=p.table_name,
        )
        target = to_arrow_schema(self.schema, timezone=SPARK_ARROW_TIMEZONE)
        for t in p.tasks:
            yield from _to_spark_arrow(read_task_to_arrow(ctx, t), target).to_batches()


def task_group(scan: TableScan, index: int, tasks: Sequence[FileScanTask]) -> InputPartition:
    """One Spark partition reading ``tasks`` of ``scan`` (residuals dropped: Spark re-applies every filter)."""
    table_schema = scan.table_schema()
    mapping = name_mapping_of(dict(scan.metadata.properties), table_schema)
    locs: dict[str, str] = {}
    for t in tasks:
        locs[t.data_file.file_path] = scan.location_of(t.data_file.file_path)
        for e in t.deletes:
            locs[e.data_file.file_path] = scan.location_of(e.data_file.file_path)
    kept = tuple(
        FileScanTask(t.data_file, t.data_sequence_number, t.deletes, AlwaysTrue(), t.start, t.length, t.spec)
        for t in tasks
    )
    return _TaskGroup(
        index, kept, locs, dict(scan.io.properties), table_schema, scan.projection(),
        mapping.to_json() if mapping is not None else None, scan.table_name, scan.case_sensitive,
    )


def projection_schema(scan: TableScan) -> Schema:
    """The schema of rows the data source returns."""
    return scan.projection()
