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

from floe.config import FloeConfig
from floe.errors import ValidationError
from floe.expressions import builders as B
from floe.expressions.base import BooleanExpression, and_, not_
from floe.scan.arrow_read import name_mapping_of
from floe.scan.table_scan import TableScan
from floe.scan.tasks import FileScanTask
from floe.spark.scan.table_read import load_table, scan_for
from floe.spark.scan.worker_read import SPARK_ARROW_TIMEZONE, TaskGroup, make_task_group, read_group
from floe.spark.types import to_spark_schema
from floe.spec.schema import Schema

__all__ = [
    "READ_OPTIONS",
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
        assert isinstance(partition, TaskGroup)
        yield from read_group(partition, to_arrow_schema(self.schema, timezone=SPARK_ARROW_TIMEZONE))


def task_group(scan: TableScan, index: int, tasks: Sequence[FileScanTask]) -> InputPartition:
    """One Spark partition reading ``tasks`` of ``scan`` (residuals dropped: Spark re-applies every filter)."""
    table_schema = scan.table_schema()
    return make_task_group(
        index, tasks, io=scan.io, table_schema=table_schema, projection=scan.projection(),
        name_mapping=name_mapping_of(dict(scan.metadata.properties), table_schema), location_of=scan.location_of,
        table_name=scan.table_name, case_sensitive=scan.case_sensitive,
    )


def projection_schema(scan: TableScan) -> Schema:
    """The schema of rows the data source returns."""
    return scan.projection()
