"""Iceberg tables over a Spark Parquet table's files: ``snapshot`` (a copy that leaves the source alone) and
``migrate`` (the Iceberg table replaces the Spark table).

Both follow Iceberg Java's SnapshotTableSparkAction / MigrateTableSparkAction: the new table takes the
source's schema, identity partitioning on its partition columns and table properties (less ``path``,
``transient_lastDdlTime``, ``serialization.format`` and location keys), gets a name mapping, and one commit
creates it with every file (floe.spark.procedures.import_files). A snapshot is marked ``snapshot=true`` and
``gc.enabled=false`` (its files are not its own); a migrated table ``migrated=true``, at the source location.

Java migrates inside ``spark_catalog`` (an Iceberg SparkSessionCatalog). Floe's tables live in Floe catalogs, so
``migrate`` creates the table in the procedure's catalog under the name the ``table`` argument resolves to
there, after renaming the Spark table to its backup (``<name>_BACKUP_``); a failure renames it back. Managed
Spark tables are refused: Spark moves a managed table's folder when it renames it, away from the new table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from floe.errors import FloeError, TableAlreadyExistsError, UnsupportedError, ValidationError
from floe.spark.procedures.import_files import append_imported, import_data_files, name_mapping_for
from floe.spark.procedures.import_sources import (
    FILE_FORMATS,
    SparkTableSource,
    check_format,
    parse_source_name,
    spark_table_source,
)
from floe.spark.types import from_spark_schema
from floe.spec import properties as P
from floe.spec.partitioning import PartitionSpecBuilder

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.catalog.base import Catalog
    from floe.table.table import Table

__all__ = ["BACKUP_SUFFIX", "migrate_table", "snapshot_table"]

BACKUP_SUFFIX = "_BACKUP_"
_EXCLUDED = ("path", "transient_lastDdlTime", "serialization.format", "location", P.WRITE_METADATA_LOCATION,
             P.WRITE_DATA_LOCATION, P.WRITE_FOLDER_STORAGE_LOCATION, "write.object-storage.path")


def _source(spark: SparkSession, name: str, *, what: str) -> SparkTableSource:
    parts = parse_source_name(name)
    if len(parts) == 2 and parts[0].lower() in FILE_FORMATS or (len(parts) == 3 and parts[0].lower() != "spark_catalog"):
        raise ValidationError(
            f"{what}: cannot use {name!r} as a source; it must be a table in the session catalog (spark_catalog)")
    source = spark_table_source(spark, parts, what=what)
    check_format(source, what=what)
    if source.bucketed:
        raise UnsupportedError(f"{what}: cannot create an Iceberg table from the bucketed Spark table {source.name}")
    return source


def _properties(source: SparkTableSource, extra: Mapping[str, str], marks: Mapping[str, str]) -> dict[str, str]:
    props = {k: v for k, v in source.properties.items()
             if k not in _EXCLUDED and not k.startswith(("spark.sql.", "option."))}
    props.update(extra)
    props.update(marks)
    return props


def _create(catalog: Catalog, identifier: tuple[str, ...], source: SparkTableSource, *, location: str | None,
            properties: dict[str, str], parallelism: int) -> Table:
    assert source.schema is not None
    schema = from_spark_schema(source.schema)
    builder = PartitionSpecBuilder(schema)
    for col in source.partition_columns:
        builder.identity(col)
    txn = catalog.create_table_transaction(
        identifier, schema, location=location, partition_spec=builder.build(), properties=properties)
    staged = txn.table  # the new table's first metadata: its schema ids and spec
    mapping, _ = name_mapping_for(staged)
    files = import_data_files(staged, source, staged.spec(), mapping, parallelism=parallelism)
    append_imported(txn, files, mapping, True)
    return txn.commit_transaction()


def _total_files(table: Table) -> int:
    snap = table.current_snapshot()
    summary = snap.summary.as_dict() if snap is not None and snap.summary is not None else {}
    return int(summary.get("total-data-files", 0))


def snapshot_table(
    spark: SparkSession,
    catalog: Catalog,
    identifier: tuple[str, ...],
    *,
    source_table: str,
    location: str | None = None,
    properties: Mapping[str, str] | None = None,
    parallelism: int = 1,
) -> int:
    """Create Iceberg table ``identifier`` in ``catalog`` over the files of Spark table ``source_table``.

    Returns:
        The number of data files the new table references (``imported_files_count``).

    Raises:
        ValidationError: the source is not a session-catalog table, or the locations overlap.
        UnsupportedError: the source is not Parquet, or is bucketed.
        TableAlreadyExistsError: the destination exists.
    """
    what = f"snapshot of {source_table} as {'.'.join(identifier)}"
    if parallelism < 1:
        raise ValidationError(f"{what}: parallelism should be larger than 0, got {parallelism}")
    source = _source(spark, source_table, what=what)
    src = source.location.rstrip("/")
    if location is not None and _same_path(location, src):
        raise ValidationError(
            f"{what}: the snapshot table location cannot be the source table location {source.location}")
    dest = catalog.table_location(identifier, location).rstrip("/")
    if _same_path(dest, src) or _inside(dest, src) or _inside(src, dest):
        raise ValidationError(
            f"{what}: cannot create a snapshot at location {dest} because it would overlap with source table "
            f"location {source.location}")
    props = _properties(source, properties or {}, {P.GC_ENABLED: "false", "snapshot": "true"})
    table = _create(catalog, identifier, source, location=location, properties=props, parallelism=parallelism)
    return _total_files(table)


def _path(location: str) -> str:
    for prefix in ("file://", "file:"):
        if location.startswith(prefix):
            return location[len(prefix):].rstrip("/")
    return location.rstrip("/")


def _same_path(a: str, b: str) -> bool:
    return _path(a) == _path(b)


def _inside(child: str, parent: str) -> bool:
    return _path(child).startswith(_path(parent) + "/")


def migrate_table(
    spark: SparkSession,
    catalog: Catalog,
    identifier: tuple[str, ...],
    *,
    source_table: str,
    properties: Mapping[str, str] | None = None,
    drop_backup: bool = False,
    backup_table_name: str | None = None,
    parallelism: int = 1,
) -> int:
    """Replace Spark table ``source_table`` by Iceberg table ``identifier`` of ``catalog`` over the same files.

    The Spark table is renamed to ``backup_table_name`` (default ``<name>_BACKUP_``) first and dropped after
    when ``drop_backup``; a failure renames it back.

    Returns:
        The number of data files migrated (``migrated_files_count``).

    Raises:
        ValidationError: the source is managed or not in the session catalog, or the backup name is taken.
        UnsupportedError: the source is not Parquet, or is bucketed.
        TableAlreadyExistsError: the Iceberg table exists.
    """
    what = f"migrate {source_table} to {'.'.join(identifier)}"
    if parallelism < 1:
        raise ValidationError(f"{what}: parallelism should be larger than 0, got {parallelism}")
    source = _source(spark, source_table, what=what)
    if source.managed:
        raise ValidationError(
            f"{what}: {source.name} is a managed Spark table; renaming it to its backup would move its files. "
            "Migrate an external table (created with LOCATION)")
    if catalog.table_exists(identifier):
        raise TableAlreadyExistsError(f"{what}: table {'.'.join(identifier)} already exists")
    backup = backup_table_name or f"{source.table}{BACKUP_SUFFIX}"
    backup_parts = parse_source_name(backup)
    backup_db = backup_parts[-2] if len(backup_parts) >= 2 else source.database
    if spark.catalog.tableExists(f"`{backup_db}`.`{backup_parts[-1]}`"):
        raise ValidationError(f"{what}: backup table {backup_db}.{backup_parts[-1]} already exists")
    backup_name = f"`{backup_db}`.`{backup_parts[-1]}`"  # RENAME TO takes no catalog part
    spark.sql(f"ALTER TABLE {source.spark_name} RENAME TO {backup_name}")
    try:
        moved = spark_table_source(spark, (backup_db, backup_parts[-1]), what=what)
        props = _properties(moved, properties or {}, {"migrated": "true"})
        table = _create(catalog, identifier, moved, location=source.location, properties=props,
                        parallelism=parallelism)
    except (FloeError, Exception):
        spark.sql(f"ALTER TABLE {backup_name} RENAME TO `{source.database}`.`{source.table}`")  # no catalog part
        raise
    if drop_backup:
        spark.sql(f"DROP TABLE {backup_name}")
    return _total_files(table)
