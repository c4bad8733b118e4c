"""Footer metrics of Java-written data files equal the metrics Iceberg Java stored in their manifests."""

from __future__ import annotations

from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest

from floe.io.parquet_metrics import footer_metrics
from floe.serde.metadata_json import table_metadata_from_bytes

# Tables whose data files Iceberg Java (Spark, Impala, Dremio, ...) wrote itself. Left out on purpose:
# files written by other tools and added later (Java computed their metrics from partition values or a
# name mapping), and files written before an int -> long promotion (their bounds keep the old width).
JAVA_WRITTEN = [
    "dremio__nation",
    "dremio__v2_orders",
    "duckdb__equality_deletes_mytable_partitioned",
    "duckdb__fake_data_control",
    "duckdb__is_null_is_not_null",
    "duckdb__legacy_v1",
    "duckdb__lineitem_iceberg",
    "duckdb__partition_bucket_test",
    "duckdb__partition_timestamp_year",
    "glaredb__v2_lineitem_versioned",
    "gluten__test_upsert_query",
    "icelake__simple_table",
    "impala__iceberg_partitioned",
    "impala__iceberg_timestamptz_part",
    "impala__iceberg_v3_deletion_vectors",
    "impala__test_complex_default",
    "polars__iceberg_table",
]


def _kv(pairs: list[dict[str, object]] | None) -> dict[object, object]:
    return {p["key"]: p["value"] for p in pairs or []}


@pytest.mark.parametrize("table", JAVA_WRITTEN)
def test_footer_metrics_java_data_files_match_manifest(java_tables: Path, table: str) -> None:
    root = java_tables / table
    metadata_files = sorted(root.rglob("metadata/*.metadata.json"), key=lambda p: p.stat().st_mtime)
    md = table_metadata_from_bytes(metadata_files[-1].read_bytes())
    schema = next(s for s in md.schemas if s.schema_id == md.current_schema_id)
    checked = 0
    for manifest in root.rglob("metadata/*-m*.avro"):
        with manifest.open("rb") as f:
            entries = list(fastavro.reader(f))
        for entry in entries:
            df = entry["data_file"]
            if df.get("content", 0) != 0 or df["file_format"] != "PARQUET":
                continue
            rel = df["file_path"][df["file_path"].find("/data/") + 1 :]
            local = next(root.rglob(rel), None)
            if local is None:
                continue
            m = footer_metrics(pq.ParquetFile(local).metadata, schema, properties=md.properties)
            where = f"{table}: {local.name}"
            assert m.record_count == df["record_count"], where
            assert dict(m.column_sizes) == _kv(df["column_sizes"]), where
            assert dict(m.value_counts) == _kv(df["value_counts"]), where
            assert dict(m.null_value_counts) == _kv(df["null_value_counts"]), where
            assert dict(m.lower_bounds) == _kv(df["lower_bounds"]), where
            assert dict(m.upper_bounds) == _kv(df["upper_bounds"]), where
            checked += 1
    assert checked > 0, f"{table}: no data file found next to its manifests"
