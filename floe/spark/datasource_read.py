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

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
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

from floe.errors import ValidationError
from floe.expressions import builders as B
from floe.expressions.base import AlwaysTrue, BooleanExpression, and_, not_
from floe.io.fileio import FileIO
from floe.io.name_mapping import NameMapping
from floe.scan.arrow_read import ReadContext, name_mapping_of, read_task_to_arrow
from floe.scan.table_scan import TableScan
from floe.scan.tasks import FileScanTask
from floe.spark.types import to_spark_schema
from floe.spec.schema import Schema

__all__ = ["READ_OPTIONS", "IcebergReader", "filter_to_expression", "scan_from_options", "spark_schema_for"]

READ_OPTIONS = ("snapshot-id", "as-of-timestamp", "branch", "tag", "start-snapshot-id", "end-snapshot-id")


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"Read option {key} must be an integer, got {raw!r}") from None


def scan_from_options(options: Mapping[str, str]) -> TableScan:
    """The TableScan described by data source options (``path`` names the table).

    Raises:
        ValidationError: no table given, or an option has a bad value.
    """
    from floe.spark.read import load_table, scan_for

    opts = {k.lower(): v for k, v in options.items()}
    source = opts.get("path") or opts.get("table")
    if not source:
        raise ValidationError('spark.read.format("iceberg").load(<table>) needs a table identifier or location')
    table = load_table(None, source)
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


def _uuid_strings(arr: pa.Array) -> pa.Array:
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    return pa.array([None if b is None else str(uuid.UUID(bytes=b)) for b in storage.to_pylist()], pa.string())


def _to_spark_arrow(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast to exactly the Arrow types Spark expects for the declared schema (uuid -> string text)."""
    cols = []
    for i, f in enumerate(target):
        col = table.column(i).combine_chunks()
        src = col.type
        if isinstance(src, pa.ExtensionType) or (pa.types.is_fixed_size_binary(src) and pa.types.is_string(f.type)):
            col = _uuid_strings(col)
        cols.append(col.cast(f.type) if col.type != f.type else col)
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
        table_schema = scan.table_schema()
        mapping = name_mapping_of(dict(scan.metadata.properties), table_schema)
        mapping_json = mapping.to_json() if mapping is not None else None
        out: list[InputPartition] = []
        for i, g in enumerate(groups):
            locs: dict[str, str] = {}
            for t in g.tasks:
                locs[t.data_file.file_path] = scan.location_of(t.data_file.file_path)
                for e in t.deletes:
                    locs[e.data_file.file_path] = scan.location_of(e.data_file.file_path)
            # Residuals are dropped: Spark re-applies every filter (see module docstring).
            tasks = tuple(
                FileScanTask(t.data_file, t.data_sequence_number, t.deletes, AlwaysTrue(), t.start, t.length, t.spec)
                for t in g.tasks
            )
            out.append(
                _TaskGroup(
                    i, tasks, locs, dict(scan.io.properties), table_schema, scan.projection(), mapping_json,
                    scan.table_name, scan.case_sensitive,
                )
            )
        return out

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
        target = to_arrow_schema(self.schema)
        for t in p.tasks:
            yield from _to_spark_arrow(read_task_to_arrow(ctx, t), target).to_batches()


def projection_schema(scan: TableScan) -> Schema:
    """The schema of rows the data source returns."""
    return scan.projection()
