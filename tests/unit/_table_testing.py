"""Small helpers for the table unit tests: a SQLite catalog in a temp folder and file descriptors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import floe
from floe.catalog.sql import SqlCatalog
from floe.scan.planner import read_manifest_files
from floe.serde.manifest_avro import read_manifest
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import IntegerType, LongType, NestedField, StringType
from floe.table.table import Table

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "data", StringType()),
    NestedField(3, "p", IntegerType()),
)


def sql_catalog(tmp_path: Path) -> SqlCatalog:
    cat = floe.load_catalog(
        "unit", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh")
    )
    assert isinstance(cat, SqlCatalog)
    cat.create_namespace_if_not_exists("db")
    return cat


def make_table(
    tmp_path: Path, *, version: int = 2, partitioned: bool = True, name: str = "db.t", **props: str
) -> Table:
    cat = sql_catalog(tmp_path)
    spec = PartitionSpecBuilder(SCHEMA).identity("p").build() if partitioned else None
    return cat.create_table(
        name, SCHEMA, partition_spec=spec, properties={"format-version": str(version), **props}
    )


def data_file(
    name: str,
    *,
    p: int | None = 0,
    records: int = 10,
    size: int = 1000,
    content: FileContent = FileContent.DATA,
    lower: int | None = None,
    upper: int | None = None,
    **extra: Any,
) -> DataFile:
    """A descriptor for a file that need not exist (commits never open data files)."""
    bounds: dict[str, Any] = {}
    if lower is not None and upper is not None:
        bounds = {
            "lower_bounds": {1: lower.to_bytes(8, "little", signed=True)},
            "upper_bounds": {1: upper.to_bytes(8, "little", signed=True)},
            "value_counts": {1: records},
            "null_value_counts": {1: 0},
        }
    return DataFile(
        content,
        f"/data/{name}.parquet",
        FileFormat.PARQUET,
        () if p is None else (p,),
        records,
        size,
        **bounds,
        **extra,
    )


def entries(table: Table, snapshot_id: int | None = None) -> list[ManifestEntry]:
    """All manifest entries (any status) of a snapshot."""
    md = table.metadata
    snap = md.current_snapshot() if snapshot_id is None else md.snapshot_by_id(snapshot_id)
    assert snap is not None
    out: list[ManifestEntry] = []
    for m in read_manifest_files(table.io, snap):
        with table.io.new_input(m.manifest_path).open() as fo:
            out += read_manifest(fo.read(), manifest_file=m)
    return out


def live(table: Table, snapshot_id: int | None = None) -> set[str]:
    return {
        e.data_file.file_path.rsplit("/", 1)[-1].removesuffix(".parquet")
        for e in entries(table, snapshot_id)
        if e.status != 2
    }
