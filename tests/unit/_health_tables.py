"""Degraded tables for the health tests, built with Floe's pure-Python paths (no Spark).

``streaming_table`` writes real Parquet files through ``table.append(arrow)`` (one commit per tiny batch,
as a streaming job would); the other builders commit file descriptors only (commits and health checks
never open data files), which builds thousands of snapshots in a second.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType
from floe.table.table import Table

SCHEMA = Schema(NestedField(1, "id", LongType(), False), NestedField(2, "dt", StringType(), False))
SPEC = PartitionSpecBuilder(SCHEMA).identity("dt").build()


def create(catalog: Any, name: str, *, version: int = 2, **props: str) -> Table:
    """A table (id bigint, dt string) partitioned by dt."""
    table = catalog.create_table(name, SCHEMA, partition_spec=SPEC, properties={"format-version": str(version), **props})
    assert isinstance(table, Table)
    return table


def streaming_table(catalog: Any, name: str, *, appends: int = 500, days: tuple[str, ...] = ("a", "b")) -> Table:
    """``appends`` commits of two rows each, alternating over ``days``: real tiny Parquet files."""
    table = create(catalog, name)
    for i in range(appends):
        day = days[i % len(days)]
        table.append(pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int64()), "dt": [day, day]}))
    return table.refresh()


def data_file(table: Table, name: str, day: str, *, size: int = 4096, rows: int = 100, **extra: Any) -> DataFile:
    """A data or delete file descriptor in partition ``dt=day`` (the file need not exist)."""
    return DataFile(
        content=extra.pop("content", FileContent.DATA),
        file_path=f"{table.location()}/data/dt={day}/{name}",
        file_format=extra.pop("file_format", FileFormat.PARQUET),
        partition=(day,),
        record_count=rows,
        file_size_in_bytes=size,
        **extra,
    )


def many_snapshots(catalog: Any, name: str, snapshots: int) -> Table:
    """``snapshots`` appends of one descriptor each, committed as one transaction (one metadata write).

    Merge appends (manifests merge from ``commit.manifest.min-count-to-merge``, 100): with fast appends every
    manifest list would list every earlier manifest, and building the table would take quadratic time.
    """
    table = create(catalog, name)
    txn = table.transaction()
    for i in range(snapshots):
        day = f"2024-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}"
        txn.new_append().append_file(data_file(table, f"{i:05d}.parquet", day)).commit()
    txn.commit_transaction()
    return table.refresh()


def deletes_table(catalog: Any, name: str, *, version: int = 2) -> Table:
    """Partition ``a``: 4 data files, 8 position delete files removing 30% of rows, 2 equality deletes;
    partition ``b``: one healthy 400 MiB file. On v3 the position deletes of ``a`` are vectors."""
    table = create(catalog, name, version=version)
    append = table.new_fast_append()
    for i in range(4):
        append.append_file(data_file(table, f"d{i}.parquet", "a", size=8 << 20, rows=1000))
    append.append_file(data_file(table, "big.parquet", "b", size=400 << 20, rows=50_000))
    append.commit()
    for i in range(8):
        delta = table.new_row_delta()
        if version >= 3:
            target = f"{table.location()}/data/dt=a/d{i % 4}.parquet"
            delta.add_deletes(
                data_file(
                    table, f"dv{i}.puffin", "a", size=200, rows=150, content=FileContent.POSITION_DELETES,
                    file_format=FileFormat.PUFFIN, referenced_data_file=target, content_offset=4,
                    content_size_in_bytes=100,
                )
            )
        else:
            delta.add_deletes(data_file(table, f"pos{i}.parquet", "a", size=900, rows=150, content=FileContent.POSITION_DELETES))
        delta.set("spark.app.id", "app-cdc-42").commit()
        if version >= 3 and i == 3:
            break  # one vector per data file
    for i in range(2):
        table.new_row_delta().add_deletes(
            data_file(table, f"eq{i}.parquet", "a", size=700, rows=200, content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
        ).commit()
    return table.refresh()
