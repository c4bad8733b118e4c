"""``floe tables | describe | history | snapshots | files``: answers from metadata alone, no Spark.

A TABLE argument is a catalog identifier (``[catalog.]namespace.table``, resolved like SQL against the
configured catalogs and the default catalog) or a table location (a folder path or URI, or a
``*.metadata.json`` file). The row builders take a :class:`TableMetadata`, so the SQL engine can reuse
them for ``DESCRIBE`` and the ``history``/``snapshots`` metadata tables.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING

from floe.catalog.loader import open_catalog
from floe.cli.output import print_result
from floe.config import FloeConfig
from floe.errors import NoSuchNamespaceError, ValidationError
from floe.sql.identifiers import ResolvedTable, resolve_namespace, resolve_table
from floe.sql.result import ResultSet
from floe.table.identifiers import to_identifier

if TYPE_CHECKING:
    from floe.io.fileio import FileIO
    from floe.spec.manifest import ManifestEntry
    from floe.spec.table_metadata import TableMetadata

__all__ = [
    "describe_rows",
    "files_rows",
    "history_rows",
    "is_location",
    "partition_field_text",
    "run",
    "snapshot_rows",
]


def _ts(ms: int) -> dt.datetime:
    """Milliseconds since the epoch as a UTC datetime (printed without zone, as Spark does in UTC)."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).replace(tzinfo=None)


def is_location(text: str) -> bool:
    """Whether a TABLE argument is a location rather than a catalog identifier."""
    return "/" in text or "\\" in text or text.startswith(("file:", "s3:", "s3a:", "gs:", "hdfs:", "abfs"))


def partition_field_text(transform: object, source: str) -> str:
    """Spark's spelling of a partition field: ``dt``, ``bucket(16, id)``, ``days(ts)``."""
    t = str(transform)
    if t == "identity":
        return source
    if "[" in t:
        name, arg = t.rstrip("]").split("[", 1)
        return f"{name}({arg}, {source})"
    plural = {"year": "years", "month": "months", "day": "days", "hour": "hours"}
    return f"{plural.get(t, t)}({source})"


def describe_rows(metadata: TableMetadata, *, name: str) -> ResultSet:
    """``DESCRIBE TABLE EXTENDED``-style rows: columns, partitioning, then table details."""
    schema = metadata.schema()
    rows: list[tuple[object, ...]] = [(f.name, str(f.field_type), f.doc or "") for f in schema.fields]
    spec = metadata.spec()
    if spec.fields:
        rows += [("", "", ""), ("# Partitioning", "", "")]
        for i, pf in enumerate(spec.fields):
            source = schema.find_column_name(pf.source_id) or f"<field {pf.source_id}>"
            rows.append((f"Part {i}", partition_field_text(pf.transform, source), pf.name))
    order = metadata.sort_order()
    current = metadata.current_snapshot()
    props = ", ".join(f"{k}={v}" for k, v in sorted(metadata.properties.items()))
    rows += [
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Name", name, ""),
        ("Location", metadata.location, ""),
        ("Provider", "iceberg", ""),
        ("Format version", str(metadata.format_version), ""),
        ("Table UUID", str(metadata.table_uuid or ""), ""),
        ("Current snapshot", str(current.snapshot_id) if current else "none", ""),
        ("Sort order", str(order) if order.fields else "unsorted", ""),
        ("Identifier fields", ", ".join(schema.identifier_field_names) or "none", ""),
        ("Table Properties", f"[{props}]", ""),
    ]
    return ResultSet(columns=["col_name", "data_type", "comment"], rows=rows)


def history_rows(metadata: TableMetadata) -> ResultSet:
    """Iceberg's ``history`` metadata table: one row per snapshot-log entry."""
    current = metadata.current_snapshot()
    ancestors = {s.snapshot_id for s in metadata.ancestors_of(current.snapshot_id)} if current else set()
    rows: list[tuple[object, ...]] = []
    for entry in metadata.snapshot_log:
        snap = metadata.snapshot_by_id(entry.snapshot_id)
        rows.append(
            (
                _ts(entry.timestamp_ms),
                entry.snapshot_id,
                snap.parent_snapshot_id if snap else None,
                entry.snapshot_id in ancestors,
            )
        )
    return ResultSet(
        columns=["made_current_at", "snapshot_id", "parent_id", "is_current_ancestor"], rows=rows
    )


def snapshot_rows(metadata: TableMetadata) -> ResultSet:
    """Iceberg's ``snapshots`` metadata table."""
    rows: list[tuple[object, ...]] = []
    for s in sorted(metadata.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number)):
        summary = dict(s.summary.as_dict()) if s.summary is not None else {}
        operation = summary.pop("operation", None)
        rows.append(
            (_ts(s.timestamp_ms), s.snapshot_id, s.parent_snapshot_id, operation, s.manifest_list, summary)
        )
    return ResultSet(
        columns=["committed_at", "snapshot_id", "parent_id", "operation", "manifest_list", "summary"],
        rows=rows,
    )


_MANIFEST_READERS = 8  # threads fetching manifests (object stores answer in tens of milliseconds)


def _live_entries(io: FileIO, metadata: TableMetadata) -> Iterator[ManifestEntry]:
    # Imported here: only ``floe files`` reads manifests; the other commands start faster without.
    from floe.io.manifest_group import ManifestGroup

    # A table folder copied from elsewhere maps recorded paths (floe.io.table_folder.FolderFileIO).
    location_of = getattr(io, "location_of", None)
    group = ManifestGroup.of_snapshot(io, metadata.current_snapshot(), location_of=location_of)
    # stats_columns=(): the metrics maps are most of the decode time and the listing shows none.
    group = group.with_metadata(metadata)
    return group.ignore_deleted().select_stats(()).plan_with(_MANIFEST_READERS).entries()


def files_rows(io: FileIO, metadata: TableMetadata) -> ResultSet:
    """Iceberg's ``files`` metadata table (main columns): live data and delete files of the current snapshot."""
    rows: list[tuple[object, ...]] = []
    for entry in _live_entries(io, metadata):
        f = entry.data_file
        spec = metadata.spec_by_id(f.spec_id)
        names = [pf.name for pf in spec.fields] if spec else []
        partition = dict(zip(names, f.partition)) if names else {}
        rows.append(
            (
                int(f.content),
                f.file_path,
                str(f.file_format.value),
                f.spec_id,
                partition,
                f.record_count,
                f.file_size_in_bytes,
            )
        )
    return ResultSet(
        columns=[
            "content",
            "file_path",
            "file_format",
            "spec_id",
            "partition",
            "record_count",
            "file_size_in_bytes",
        ],
        rows=rows,
    )


# -- opening tables --------------------------------------------------------------------------------------


def _load_catalog(config: FloeConfig, name: str) -> object:
    """The catalog to read from: inspection never writes, so a local SQLite catalog is read with the stdlib
    ``sqlite3`` (same queries and answers as the SQL catalog) and the command never imports SQLAlchemy."""
    from floe.catalog.sqlite_reader import open_sqlite_reader

    properties = config.catalog_properties(name)
    reader = open_sqlite_reader(name, properties)
    return reader if reader is not None else open_catalog(name, properties)


def _default_namespace(config: FloeConfig, catalog: str) -> tuple[str, ...]:
    default = config.catalogs.get(catalog, {}).get("default-namespace")
    return tuple(default.split(".")) if default else ("default",)


def resolve(config: FloeConfig, text: str) -> ResolvedTable:
    """Resolve a TABLE argument that is a catalog identifier."""
    parts = tuple(text.split("."))
    return resolve_table(
        parts,
        current_catalog=config.default_catalog,
        current_namespace=_default_namespace(config, config.default_catalog),
        catalogs=config.catalogs,
    )


def open_table(config: FloeConfig, text: str) -> tuple[str, TableMetadata, FileIO]:
    """(display name, metadata, FileIO) for a TABLE argument (identifier or location)."""
    if is_location(text):
        return _open_location(text)
    ref = resolve(config, text)
    if ref.metadata_table is not None:
        raise ValidationError(
            f"{text!r} names the {ref.metadata_table} metadata table; give the table itself"
        )
    catalog = _load_catalog(config, ref.catalog)
    # The table's operations, not a Table handle: reading metadata needs none of the table layer
    # (producers, expressions, scan planning), which would double the command's start-up time.
    ops = catalog.table_operations(to_identifier(ref.identifier))  # type: ignore[attr-defined]
    metadata, _ = ops.load()
    return str(ref), metadata, ops.io


def _open_location(location: str) -> tuple[str, TableMetadata, FileIO]:
    from floe.catalog.location import location_operations  # opens folders and metadata files

    ops = location_operations(location)
    metadata, _ = ops.load()
    return location, metadata, ops.io


# -- commands --------------------------------------------------------------------------------------------


def _tables(config: FloeConfig, namespace: str | None) -> ResultSet:
    if namespace:
        catalog_name, ns = resolve_namespace(
            tuple(namespace.split(".")), current_catalog=config.default_catalog, catalogs=config.catalogs
        )
        if len(ns) == 1 and namespace in config.catalogs and "." not in namespace:
            catalog_name, ns = namespace, ()
    else:
        catalog_name, ns = config.default_catalog, ()
    catalog = _load_catalog(config, catalog_name)
    rows: list[tuple[object, ...]] = []

    def walk(prefix: tuple[str, ...]) -> None:
        if prefix:
            rows.extend((".".join(t[:-1]), t[-1]) for t in catalog.list_tables(prefix))  # type: ignore[attr-defined]
        for child in catalog.list_namespaces(prefix):  # type: ignore[attr-defined]
            walk(tuple(child))

    if ns and not catalog.namespace_exists(ns):  # type: ignore[attr-defined]
        raise NoSuchNamespaceError(f"Namespace {'.'.join(ns)} does not exist in catalog {catalog_name}")
    walk(ns)
    return ResultSet(columns=["namespace", "table"], rows=sorted(rows))


def run(command: str, config: FloeConfig, args: argparse.Namespace, *, fmt: str) -> int:
    """Run one inspection command and print its result."""
    if command == "tables":
        result = _tables(config, args.namespace)
    else:
        name, metadata, io = open_table(config, args.table)
        if command == "describe":
            result = describe_rows(metadata, name=name)
        elif command == "history":
            result = history_rows(metadata)
        elif command == "snapshots":
            result = snapshot_rows(metadata)
        elif command == "files":
            result = files_rows(io, metadata)
        else:
            raise ValidationError(f"Unknown command {command!r}")
    print_result(result, fmt)
    return 0
