"""Delete files written by hand into a table (as other engines write them: with or without field ids), and
the check that every read path returns the rows the differential reader (_delete_oracle.py) expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from _delete_oracle import canon
from pyspark.sql import SparkSession

import floe.spark
from floe.io.locations import to_local_path
from floe.spec.manifest import FileContent
from floe.spec.schema import Schema
from floe.table.table import Table
from floe.write.parquet_files import data_file_from_footer


def write_equality_delete(table: Table, name: str, rows: pa.Table, *, schema: Schema, equality_ids: tuple[int, ...],
                          partition: tuple[Any, ...], spec_id: int, with_ids: bool = True) -> None:
    """``rows`` as an equality delete file of ``table`` on ``equality_ids``, committed in a row delta."""
    folder = Path(to_local_path(table.location())) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if with_ids:
        ids = {f.name: f.field_id for f in schema.fields}
        rows = rows.cast(pa.schema([f.with_metadata({b"PARQUET:field_id": str(ids[f.name]).encode()}) for f in rows.schema]))
    pq.write_table(rows, path)
    f = data_file_from_footer(pq.read_metadata(path), location=str(path), file_size=path.stat().st_size,
                              schema=schema, properties={}, partition=partition, spec_id=spec_id)
    table.new_row_delta().add_deletes(f.with_changes(content=FileContent.EQUALITY_DELETES, equality_ids=equality_ids)).commit()


def sorted_rows(arrow: pa.Table, schema: Schema) -> list[tuple[Any, ...]]:
    return sorted((tuple(canon(r[f.name], f.field_type) for f in schema.fields) for r in arrow.to_pylist()), key=repr)


def assert_every_read_path(spark: SparkSession, table: Any, location: str, expected: list[tuple[Any, ...]]) -> None:
    """floe.spark.scan.table_read, format("iceberg") split into small tasks, and to_arrow all return ``expected``."""
    schema = table.metadata.schema()
    assert sorted_rows(floe.spark.read(spark, table).toArrow(), schema) == expected, "floe.spark.scan.table_read"
    assert sorted_rows(table.scan().to_arrow(), schema) == expected, "to_arrow"
    via_source = spark.read.format("iceberg").option("split-size", "4096").load(location)
    assert sorted_rows(via_source.toArrow(), schema) == expected, 'format("iceberg")'


def spark_compiles(spark: SparkSession) -> int:
    """Classes Spark's code generator has compiled in this JVM (its cache hits are not counted): a read that
    runs code compiled before adds none."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics  # type: ignore[union-attr]
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


def jvm_helper_filters(plan: str) -> bool:
    """Whether an executed plan drops deleted positions with Floe's JVM helper: its lookup object called with
    primitive longs (``floe_undeleted_positions.applyAsLong``), or its Java UDF where files share a size."""
    return "floe_undeleted_positions.applyAsLong" in plan or "Filter UDF(" in plan
