"""Helpers shared by the catalog tests and their worker processes (importable by multiprocessing)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import floe
from floe.catalog.base import Catalog
from floe.io.arrow_schema import schema_to_arrow
from floe.io.locations import to_local_path
from floe.io.parquet_metrics import footer_metrics
from floe.scan.planner import read_manifest_files
from floe.serde.manifest_avro import read_manifest
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntryStatus
from floe.table.table import Table


def catalog_props(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """load_catalog properties (plus ``name``) for one catalog kind, unique per test."""
    name = f"c{uuid.uuid4().hex[:12]}"
    warehouse = str(tmp_path / "warehouse")
    if kind == "hadoop":
        return {"name": name, "type": "hadoop", "warehouse": warehouse}
    if kind == "sqlite":
        return {
            "name": name,
            "type": "sql",
            "uri": f"sqlite:///{tmp_path}/catalog.db",
            "warehouse": warehouse,
        }
    if kind == "postgres":
        return {
            "name": name,
            "type": "sql",
            "uri": request.getfixturevalue("postgres_url"),
            "warehouse": warehouse,
        }
    if kind == "rest":  # floe serve over a SQLite catalog, in a thread, for this test only
        from floe.server import background_server

        backing = floe.load_catalog(
            f"srv{uuid.uuid4().hex[:8]}", type="sql", uri=f"sqlite:///{tmp_path}/served.db", warehouse=warehouse
        )
        server = background_server(backing)
        running = server.__enter__()
        request.addfinalizer(lambda: server.__exit__(None, None, None))
        return {"name": name, "type": "rest", "uri": running.uri}
    if kind == "mysql":
        return {
            "name": name,
            "type": "sql",
            "uri": request.getfixturevalue("mysql_url"),
            "warehouse": warehouse,
        }
    raise ValueError(kind)


def open_catalog(props: Mapping[str, str]) -> Catalog:
    """The catalog described by ``props`` (``name`` plus load_catalog properties)."""
    p = dict(props)
    return floe.load_catalog(p.pop("name"), **p)


def write_data_file(table: Table, rows: list[dict[str, Any]], partition: tuple[Any, ...] = ()) -> DataFile:
    """Write ``rows`` as a small Parquet file under the table and describe it as a DataFile."""
    location = f"{table.location()}/data/{uuid.uuid4()}.parquet"
    path = to_local_path(location)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema_to_arrow(table.schema())), path)
    m = footer_metrics(pq.ParquetFile(path).metadata, table.schema())
    return DataFile(
        FileContent.DATA,
        location,
        FileFormat.PARQUET,
        tuple(partition),
        m.record_count,
        os.path.getsize(path),
        dict(m.column_sizes),
        dict(m.value_counts),
        dict(m.null_value_counts),
        dict(m.nan_value_counts),
        dict(m.lower_bounds),
        dict(m.upper_bounds),
        spec_id=table.spec().spec_id,
    )


def fake_data_file(
    path: str, *, records: int = 1, size: int = 100, partition: tuple[Any, ...] = (), spec_id: int = 0
) -> DataFile:
    """A DataFile descriptor that needs no file on disk (for commit-only tests)."""
    return DataFile(FileContent.DATA, path, FileFormat.PARQUET, partition, records, size, spec_id=spec_id)


def live_files(table: Table, snapshot_id: int | None = None) -> set[str]:
    """Paths of the live data and delete files of a snapshot (default: current)."""
    md = table.metadata
    snap = md.current_snapshot() if snapshot_id is None else md.snapshot_by_id(snapshot_id)
    if snap is None:
        return set()
    out = set()
    for m in read_manifest_files(table.io, snap):
        with table.io.new_input(m.manifest_path).open() as fo:
            for e in read_manifest(fo.read(), manifest_file=m):
                if e.status != ManifestEntryStatus.DELETED:
                    out.add(e.data_file.file_path)
    return out


def missing_references(table: Table, *, check_data: bool = True, current_only: bool = False) -> list[str]:
    """Every file the metadata references (lists, manifests, data of all snapshots) that does not exist.

    With ``current_only`` the manifests and data files are checked for the current snapshot only (the
    manifest lists of all snapshots are still checked).
    """
    io = table.io
    missing: list[str] = []
    seen: set[str] = set()
    current = table.metadata.current_snapshot_id
    for s in table.metadata.snapshots:
        if current_only and s.snapshot_id != current:
            if s.manifest_list and not io.exists(s.manifest_list):
                missing.append(s.manifest_list)
            continue
        if s.manifest_list and not io.exists(s.manifest_list):
            missing.append(s.manifest_list)
            continue
        for m in read_manifest_files(io, s):
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            if not io.exists(m.manifest_path):
                missing.append(m.manifest_path)
                continue
            if not check_data:
                continue
            with io.new_input(m.manifest_path).open() as fo:
                for e in read_manifest(fo.read(), manifest_file=m):
                    if e.status != ManifestEntryStatus.DELETED and not io.exists(e.data_file.file_path):
                        missing.append(e.data_file.file_path)
    return missing


def row_count(table: Table) -> int:
    """Rows in the current snapshot, read with pyarrow."""
    return int(table.scan().to_arrow().num_rows)


def all_paths(items: Iterable[str]) -> list[str]:
    return sorted(items)
