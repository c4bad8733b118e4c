"""``floe.spark.read``: an Iceberg table as a native Spark DataFrame.

Python plans (manifests -> files + deletes, floe.scan); Spark reads the Parquet files natively
(``spark.read.schema(<schema with parquet.field.id>).parquet(...)``) and applies deletes with joins; the
scan filter becomes a ``where()`` Spark can push into Parquet for columns whose names are stable (see
floe.spark.scan.scan_frames for why renamed columns are guarded).

ORC data files are read natively too, by each file's own column names: the driver reads every file's
schema (its tail only) and gives columns ids from the ``iceberg.id`` type attributes, else the table's
name mapping, else the current schema's names, as Iceberg Java does. Read on the driver with
pyarrow/fastavro (floe.scan.arrow_read) and unioned in:

- ORC files with position deletes: Spark's ORC source has no ``_metadata.row_index`` (Spark 4.3) to join
  the deleted positions on;
- tasks whose delete files are ORC or Avro (Spark reads Parquet delete files only here);
- Avro data files: pyspark ships no Avro source (``spark.read.format("avro")`` fails with
  AVRO_DATA_SOURCE_NOT_ENABLED unless the external spark-avro package is deployed).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import TypeAlias

from pyspark.sql import DataFrame, SparkSession

from floe.catalog.location import load_table as open_location
from floe.catalog.names import is_location, load_table_by_name
from floe.config import FloeConfig
from floe.errors import UnsupportedError, ValidationError
from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.expressions.binding import bind
from floe.expressions.to_spark_sql import to_spark_sql
from floe.io.fileio import FileIO
from floe.io.table_folder import FolderTable
from floe.scan.arrow_read import name_mapping_of
from floe.scan.planner import referenced_field_ids
from floe.scan.table_scan import LocatedTable, TableLike, TableScan
from floe.scan.tasks import FileScanTask
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import attach, session_config
from floe.spark.scan.metadata_columns import (
    LINEAGE_COLUMNS,
    METADATA_COLUMNS,
    add_metadata_columns,
    resolve_lineage,
)
from floe.spark.scan.row_columns import ROW_ID_STORED, ROW_SEQ_STORED
from floe.spark.scan.scan_frames import ROW_FILE_COLUMN, ROW_POS_COLUMN, ScanInputs, tasks_to_dataframe
from floe.spec.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from floe.spec.schema import Schema

_FIELD_ID_READ = "spark.sql.parquet.fieldId.read.enabled"

__all__ = ["TableSource", "dataframe_for_scan", "load_table", "located_folder_table", "read", "scan_for"]

# What ``read`` (and ``floe.spark.inspect``) accept as a table: a handle (Table, or anything with ``metadata``
# and ``io``), a location (folder, metadata JSON file, URI), a ``[catalog.]ns.t`` name, or identifier levels.
TableSource: TypeAlias = "TableLike | str | tuple[str, ...]"


def _quoted(part: str) -> str:
    return f"`{part.replace('`', '``')}`" if "." in part or "`" in part else part


def load_table(spark: SparkSession | None, source: TableSource, *, config: FloeConfig | None = None) -> TableLike:
    """A table handle from a Table, a location (folder or metadata JSON), a name or identifier levels.

    Identifiers resolve in ``config``, else the session's catalogs (floe.spark.runtime.configure.session_config),
    else Floe's configuration.

    Raises:
        NoSuchTableError: nothing readable at that location / identifier.
    """
    if isinstance(source, tuple) and source and all(isinstance(p, str) for p in source):
        source = ".".join(_quoted(p) for p in source)  # ("db", "t") reads as db.t; dotted levels back-quoted
    if not isinstance(source, str):
        if hasattr(source, "metadata") and hasattr(source, "io"):
            return source
        raise ValidationError(f"Cannot read {source!r}: pass a Table, a table location or an identifier")
    if is_location(source) or source.endswith(".json"):
        return open_location(source)  # one resolver (floe.catalog.location): folder, Hadoop table or JSON
    if config is None and spark is not None:
        config = session_config(spark)
    return load_table_by_name(source, config=config)


def located_folder_table(folder: FolderTable) -> LocatedTable:
    """A scan-able handle for a table opened with floe.io.table_folder (paths mapped onto the folder)."""
    return LocatedTable(
        metadata=folder.metadata,
        io=FileIO(),
        location_of=lambda recorded: str(folder.local_path(recorded)),
        table_name=folder.root.name,
        metadata_location=str(folder.metadata_file),
    )


def scan_for(
    table: TableLike,
    *,
    snapshot_id: int | None = None,
    as_of_timestamp: int | None = None,
    branch: str | None = None,
    tag: str | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    filter: BooleanExpression | str | None = None,
    columns: Sequence[str] | None = None,
    options: dict[str, str] | None = None,
) -> TableScan:
    """The TableScan for the read options (one of snapshot id, timestamp, branch, tag; or an append range).

    Raises:
        ValidationError: conflicting time-travel options.
    """
    if branch is not None and tag is not None:
        raise ValidationError("Choose either branch or tag, not both")
    ref = branch if branch is not None else tag
    if ref is not None:
        r = table.metadata.refs.get(ref)
        if r is not None and branch is not None and not r.is_branch:
            raise ValidationError(f"{ref!r} is a tag, not a branch")
        if r is not None and tag is not None and r.is_branch:
            raise ValidationError(f"{ref!r} is a branch, not a tag")
    incremental = start_snapshot_id is not None or end_snapshot_id is not None
    if incremental and any(x is not None for x in (snapshot_id, as_of_timestamp, ref)):
        raise ValidationError("Incremental reads (start/end snapshot) cannot be combined with time travel")
    scan = TableScan.of(
        table,
        row_filter=filter,
        selected_fields=tuple(columns) if columns else ("*",),
        snapshot_id=snapshot_id,
        as_of_timestamp=as_of_timestamp,
        ref=ref,
        options=options,
    )
    if incremental:
        scan = scan.appends_between(start_snapshot_id, end_snapshot_id)
    return scan


def _read_schema(
    scan: TableScan, bound: BooleanExpression, tasks: list[FileScanTask], lineage: bool = False
) -> Schema:
    """Top-level columns to read: the projection, plus filter and equality-delete columns, then (``lineage``)
    the row lineage values the files store."""
    table_schema = scan.table_schema()
    wanted = {f.field_id for f in scan.projection().fields}
    extra = set(referenced_field_ids(bound)) if not isinstance(bound, AlwaysTrue) else set()
    for t in tasks:
        for e in t.deletes:
            extra.update(e.data_file.equality_ids or ())
    projection = {f.field_id: f for f in scan.projection().fields}
    fields = []
    for f in table_schema.fields:
        if f.field_id in wanted:
            fields.append(projection[f.field_id])
        elif f.field_id in extra or any(table_schema.accessor_path(i)[0] == f.field_id for i in extra if table_schema.find_field_or_none(i)):
            fields.append(f)
    if lineage:
        fields += [replace(ROW_ID, name=ROW_ID_STORED), replace(LAST_UPDATED_SEQUENCE_NUMBER, name=ROW_SEQ_STORED)]
    return Schema(*fields, schema_id=table_schema.schema_id)


@without_call_sites()
def dataframe_for_scan(
    spark: SparkSession,
    scan: TableScan,
    tasks: list[FileScanTask] | None = None,
    *,
    with_position: bool = False,
    equality_matches: bool = False,
    lineage: bool = False,
) -> DataFrame:
    """The rows of a planned scan as a native DataFrame with the scan's projected columns.

    ``with_position`` adds each row's data file (its path as the manifest spells it) and position
    (floe.spark.scan.row_columns.ROW_FILE_COLUMN and ROW_POS_COLUMN) after those columns; every task must then
    read a Parquet data file natively. ``equality_matches`` keeps only the rows the tasks' equality deletes
    (one key) match, instead of dropping them. ``lineage`` adds the v3 row lineage values the files store
    (ROW_ID_STORED, ROW_SEQ_STORED), resolved: stored where the file has them, else inherited.
    """
    planned = list(scan.plan_files()) if tasks is None else tasks
    table_schema = scan.table_schema()
    bound = bind(table_schema, scan.row_filter, scan.case_sensitive)
    if lineage and not with_position:
        raise ValidationError("Row lineage values are inherited from row positions: read them with_position")
    selected_lineage = [f.name for f in scan.projection().fields if table_schema.find_field_or_none(f.field_id) is None]
    if selected_lineage:  # a scan's own selection would read only the stored values (nulls where inherited)
        raise UnsupportedError(
            f"Table {scan.table_name}: {', '.join(selected_lineage)} read on Spark as metadata columns "
            "(floe.spark.read(..., metadata_columns=[...]) or SQL), not as selected columns of a scan"
        )
    stored = lineage and scan.metadata.format_version >= 3
    read_schema = _read_schema(scan, bound, planned, stored)
    mapping = name_mapping_of(dict(scan.metadata.properties), table_schema)

    inputs = ScanInputs(
        table_name=scan.table_name,
        io=scan.io,
        table_schema=table_schema,
        read_schema=read_schema,
        output_schema=scan.projection(),
        all_schemas=scan.metadata.schemas,
        specs=dict(scan.metadata.specs_by_id()),
        name_mapping=mapping,
        location_of=scan.location_of,
        case_sensitive=scan.case_sensitive,
    )
    df = tasks_to_dataframe(spark, inputs, planned, with_position=with_position, equality_matches=equality_matches)
    if not isinstance(bound, AlwaysTrue):
        df = df.where(to_spark_sql(bound))
    if lineage:
        df = resolve_lineage(scan.metadata, planned, df)
    out = [f.name for f in scan.projection().fields]
    if with_position:
        out += [ROW_FILE_COLUMN, ROW_POS_COLUMN]
    if lineage:
        out += [ROW_ID_STORED, ROW_SEQ_STORED]
    if df.columns == out:
        return df
    return df.selectExpr(*["`" + n.replace("`", "``") + "`" for n in out])


def read(
    spark: SparkSession,
    table: TableSource,
    *,
    snapshot_id: int | None = None,
    as_of_timestamp: int | None = None,
    branch: str | None = None,
    tag: str | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    filter: BooleanExpression | str | None = None,
    columns: Sequence[str] | None = None,
    metadata_columns: Collection[str] = (),
) -> DataFrame:
    """Read an Iceberg table into a native Spark DataFrame.

    Args:
        spark: the session (Floe's settings are applied by ``floe.spark.attach``).
        table: a Table, a table location (folder or metadata JSON file), a ``[catalog.]ns.t`` name or a tuple
            of identifier levels (``("db", "t")``).
        snapshot_id: read this snapshot (time travel).
        as_of_timestamp: read the snapshot current at this time (ms since the epoch).
        branch: read the head of this branch.
        tag: read the snapshot this tag names.
        start_snapshot_id: incremental read of rows appended after this snapshot (exclusive).
        end_snapshot_id: end of the incremental range (inclusive; default: current snapshot).
        filter: a filter expression or string (``"id > 5 and name = 'x'"``) used for pruning and applied.
        columns: the columns to return (default: all, in schema order).
        metadata_columns: Iceberg metadata columns to add after them (``_file``, ``_pos``, ``_spec_id``,
            ``_partition``; floe.spark.scan.metadata_columns); they need Parquet data files.

    Returns:
        A DataFrame whose columns are the (selected) table columns with Spark types, then the asked
        metadata columns.

    Raises:
        NoSuchSnapshotError: the snapshot, ref or timestamp names no snapshot.
        UnsupportedError: the read needs a feature Floe does not support (an incremental range
            containing overwrites or deletes).
        ValidationError: conflicting options, a filter that does not bind to the schema, or an unknown
            metadata column.
    """
    if columns is not None:  # row lineage named among the columns: read as the metadata columns they are
        lineage_named = [c for c in columns if c in LINEAGE_COLUMNS]
        if lineage_named:
            columns = [c for c in columns if c not in LINEAGE_COLUMNS]
            metadata_columns = [*metadata_columns, *[c for c in lineage_named if c not in metadata_columns]]
    unknown = sorted(set(metadata_columns) - set(METADATA_COLUMNS))
    if unknown:
        raise ValidationError(f"Unknown metadata column(s) {', '.join(unknown)}; known: {', '.join(METADATA_COLUMNS)}")
    if spark.conf.get(_FIELD_ID_READ, "false") != "true":
        attach(spark)  # Floe's settings are required: ids decide which file column is which
    t = load_table(spark, table)
    scan = scan_for(
        t,
        snapshot_id=snapshot_id,
        as_of_timestamp=as_of_timestamp,
        branch=branch,
        tag=tag,
        start_snapshot_id=start_snapshot_id,
        end_snapshot_id=end_snapshot_id,
        filter=filter,
        columns=columns,
    )
    if not metadata_columns:
        return dataframe_for_scan(spark, scan)
    tasks = list(scan.plan_files())
    lineage = bool(set(metadata_columns) & set(LINEAGE_COLUMNS))
    df = dataframe_for_scan(spark, scan, tasks, with_position=True, lineage=lineage)
    names = [f.name for f in scan.projection().fields]
    return add_metadata_columns(spark, scan.metadata, tasks, df, names, metadata_columns)
