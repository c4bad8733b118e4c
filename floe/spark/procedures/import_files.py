"""Adding existing Parquet files to an Iceberg table without rewriting them (Iceberg's ``add_files``).

As Iceberg Java's SparkTableUtil does: the table gets a name mapping (``schema.name-mapping.default``) when
it has none, because imported files carry no field ids; metrics come from each file's footer through that
mapping; partition values come from the Hive-style folders, converted to the partition source column's
type; the table's spec must be identity-only on the source's partition columns, in order; files already in
the table's current snapshot are refused unless ``check_duplicate_files`` is false. One append commits the
files. Footers are read on the driver, ``parallelism`` at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from floe.errors import ValidationError
from floe.expressions.literals import convert_literal
from floe.io.manifest_group import ManifestGroup
from floe.io.name_mapping import NameMapping, name_mapping_from_schema
from floe.spark.procedures.import_sources import (
    FILE_FORMATS,
    ImportSource,
    SourcePartition,
    check_format,
    folder_source,
    parse_source_name,
    spark_table_source,
)
from floe.spec import properties as P
from floe.spec.manifest import DataFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.write.parquet_files import data_file_from_footer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.io.fileio import FileIO
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = [
    "AddFilesResult",
    "add_files",
    "append_imported",
    "find_compatible_spec",
    "import_data_files",
    "name_mapping_for",
    "resolve_source",
    "validate_partition_filter",
]

_DUPLICATE_MESSAGE = (
    "Cannot complete import because data files to be imported already exist within the target table {table}: "
    "{files}. Set check_duplicate_files => false to import them anyway"
)


@dataclass(frozen=True, slots=True)
class AddFilesResult:
    """Result of ``add_files``: files added, and the snapshot's changed partition count (when it has one)."""

    added_files_count: int
    changed_partition_count: int | None


def resolve_source(spark: SparkSession, io: FileIO, source_table: str, *, what: str) -> ImportSource:
    """``source_table`` as a source: ``` `parquet`.`/path` ``` (a folder) or a Spark session-catalog table.

    Raises:
        ValidationError / NoSuchTableError: see :func:`floe.spark.procedures.import_sources.spark_table_source`.
    """
    parts = parse_source_name(source_table)
    if len(parts) == 2 and parts[0].lower() in FILE_FORMATS:
        return folder_source(io, parts[1], parts[0].lower())
    return spark_table_source(spark, parts, what=what)


def name_mapping_for(table: Table) -> tuple[NameMapping, bool]:
    """The table's name mapping, and whether it must be set (Java sets the default one when absent)."""
    text = table.properties.get(P.SCHEMA_NAME_MAPPING_DEFAULT)
    if text:
        return NameMapping.from_json(text), False
    return name_mapping_from_schema(table.schema()), True


def find_compatible_spec(table: Table, partition_columns: Sequence[str]) -> PartitionSpec:
    """The first identity-only spec of ``table`` whose field names are the source's partition columns, in order.

    Raises:
        ValidationError: no spec matches (message names the table and columns).
    """
    wanted = [c.lower() for c in partition_columns]
    for spec in table.specs().values():
        if all(str(f.transform) == "identity" for f in spec.fields) and [f.name.lower() for f in spec.fields] == wanted:
            return spec
    raise ValidationError(
        f"Cannot find a partition spec in Iceberg table {table.name()} that matches the partition columns "
        f"({', '.join(partition_columns) or 'none'}) in input table")


def validate_partition_filter(spec: PartitionSpec, partition_filter: Mapping[str, str], table_name: str) -> None:
    """Java's checks: a filter needs a partitioned spec, and names only its partition columns.

    Raises:
        ValidationError: the filter cannot apply (message names the table and columns).
    """
    if not partition_filter:
        return
    if spec.is_unpartitioned:
        raise ValidationError(f"Cannot use partition filter with an unpartitioned table {table_name}")
    names = [f.name for f in spec.fields]
    if len(partition_filter) > len(names):
        raise ValidationError(
            f"Cannot add data files to target table {table_name} because that table is partitioned, but the number "
            f"of columns in the provided partition filter ({len(partition_filter)}) is greater than the number "
            f"of partitioned columns in table ({len(names)})")
    unknown = [k for k in partition_filter if k not in names]
    if unknown:
        raise ValidationError(
            f"Cannot add files to target table {table_name}: the partition filter refers to columns that are "
            f"not partitioned: {', '.join(unknown)}; valid partition columns: {', '.join(names)}")


def _partition_tuple(spec: PartitionSpec, schema: Schema, part: SourcePartition) -> tuple[Any, ...]:
    values: list[Any] = []
    for f in spec.fields:
        raw = next((v for k, v in part.values.items() if k.lower() == f.name.lower()), None)
        if raw is None:
            values.append(None)
            continue
        source = schema.find_field(f.source_id)
        values.append(convert_literal(raw, source.field_type, column=source.name))
    return tuple(values)


def _data_file(io: FileIO, location: str, size: int, table: Table, spec: PartitionSpec,
               partition: tuple[Any, ...], mapping: NameMapping) -> DataFile:
    with io.new_input(location).open() as f:
        meta = pq.read_metadata(f)
    return data_file_from_footer(
        meta, location=location, file_size=size, schema=table.schema(), properties=table.properties,
        partition=partition, spec_id=spec.spec_id, name_mapping=mapping,
    )


def _listed(io: FileIO, folder: str) -> list[tuple[str, int]]:
    """The visible files directly in ``folder`` (not in sub-folders), as Java's listPartition takes them."""
    base = folder.rstrip("/")
    out = []
    for entry in io.list_prefix(base):
        rel = entry.location[len(base):].lstrip("/")
        if "/" not in rel and not rel.startswith(("_", ".")):
            out.append((entry.location, entry.size))
    return sorted(out)


def import_data_files(
    table: Table, source: ImportSource, spec: PartitionSpec, mapping: NameMapping, *, parallelism: int = 1
) -> list[DataFile]:
    """DataFile descriptors for the source's files (all of them when unpartitioned, else its partitions')."""
    io = table.io
    folders = ([(source.location, ())] if spec.is_unpartitioned
               else [(p.location, _partition_tuple(spec, table.schema(), p)) for p in source.partitions])
    jobs = [(loc, size, part) for folder, part in folders for loc, size in _listed(io, folder)]
    with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        return list(pool.map(lambda j: _data_file(io, j[0], j[1], table, spec, j[2], mapping), jobs))


def _live_paths(table: Table) -> set[str]:
    group = ManifestGroup.of_snapshot(table.io, table.current_snapshot()).with_metadata(table.metadata)
    return {e.data_file.file_path for e in group.data_only().ignore_deleted().select_stats(()).entries()}


def check_duplicates(table: Table, files: Sequence[DataFile]) -> None:
    """Refuse files the table's current snapshot already has.

    Raises:
        ValidationError: some are there (the message names up to 10).
    """
    live = _live_paths(table)
    dupes = [f.file_path for f in files if f.file_path in live]
    if dupes:
        raise ValidationError(_DUPLICATE_MESSAGE.format(table=table.name(), files=", ".join(dupes[:10])))


def append_imported(txn: Transaction, files: Sequence[DataFile], mapping: NameMapping, set_mapping: bool) -> None:
    """Stage the name mapping (when the table had none) and one append of ``files`` on ``txn``."""
    if set_mapping:
        txn.set_properties({P.SCHEMA_NAME_MAPPING_DEFAULT: mapping.to_json()})
    txn.new_append().append_files(files).commit()


def add_files(
    table: Table,
    *,
    spark: SparkSession,
    source_table: str,
    partition_filter: Mapping[str, str] | None = None,
    check_duplicate_files: bool = True,
    parallelism: int = 1,
) -> AddFilesResult:
    """Add the Parquet files of a Spark table or folder to ``table`` (Iceberg's ``add_files`` procedure).

    Args:
        table: the Iceberg table to add files to.
        spark: the session whose catalog holds ``source_table`` (unless it is a folder).
        source_table: ``db.t`` / ``spark_catalog.db.t``, or ``` `parquet`.`/path` ``` for a folder.
        partition_filter: partition column -> value (as the folder spells it): only those partitions.
        check_duplicate_files: refuse files the table already references.
        parallelism: footers read at once.

    Raises:
        ValidationError: no compatible spec, a bad filter, duplicates, no matching partition of a folder.
        UnsupportedError: the source's files are not Parquet.
        NoSuchTableError: the Spark table does not exist.
    """
    what = f"add_files to {table.name()}"
    if parallelism < 1:
        raise ValidationError(f"{what}: parallelism should be larger than 0, got {parallelism}")
    filt = dict(partition_filter or {})
    source = resolve_source(spark, table.io, source_table, what=what)
    spec = find_compatible_spec(table, source.partition_columns)
    validate_partition_filter(spec, filt, table.name())
    check_format(source, what=what)
    source = source.filtered(filt)
    is_folder = source_table.strip().startswith("`") or parse_source_name(source_table)[0].lower() in FILE_FORMATS
    if is_folder and spec.is_partitioned and not source.partitions:
        raise ValidationError(f"Cannot find any matching partitions in table {table.name()} under {source.location}")
    mapping, set_mapping = name_mapping_for(table)
    files = import_data_files(table, source, spec, mapping, parallelism=parallelism)
    if check_duplicate_files:
        check_duplicates(table, files)
    txn = table.transaction()
    append_imported(txn, files, mapping, set_mapping)
    txn.commit_transaction()
    snap = table.refresh().current_snapshot()
    summary = snap.summary.as_dict() if snap is not None and snap.summary is not None else {}
    # Java appends manifests for partitioned or folder imports (no changed-partition-count in the summary)
    # and files for an unpartitioned Spark table (the summary then counts the partition).
    changed = None if is_folder or spec.is_partitioned else summary.get("changed-partition-count")
    return AddFilesResult(int(summary.get("added-data-files", 0)), int(changed) if changed is not None else None)
