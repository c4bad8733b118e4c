"""Every Java-written fixture table reads with the right rows through floe.spark.read, at every snapshot.

The oracle is the differential reader in _delete_oracle.py (plain pyarrow/fastavro reads, the spec's delete
rules written out directly). Every snapshot is also read through the local Arrow path (``to_arrow``), and
the current snapshot of every table with delete files through ``format("iceberg")``.
duckdb__generated_spec1_0_001 is also compared with the rows Spark + Iceberg Java returned
(expected_results/). Tables using features Floe does not support must fail with a clear error naming the
feature.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from _delete_oracle import canon, reference_rows
from pyspark.sql import SparkSession

import floe.spark
from floe.errors import FloeError, NoSuchFileError, ValidationError
from floe.io.table_folder import FolderTable, open_table_folder
from floe.spark.scan.table_read import located_folder_table
from floe.spec.schema import Schema

FIXTURES = Path("/work/shared/fixtures/java-tables")
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text()) if (FIXTURES / "MANIFEST.json").exists() else []

# Out of scope, with the error the read must raise (the message must name the feature).
OUT_OF_SCOPE: dict[str, tuple[type[Exception], str]] = {}


def _comparable(schema: Schema) -> Schema:
    """The columns both readers can compare: variant values (Spark reads them natively) are left out."""
    keep = [f for f in schema.fields if "variant" not in str(f.field_type)]
    return Schema(*keep, schema_id=schema.schema_id)


def _spark_rows(spark: SparkSession, table: Any, schema: Schema, **options: Any) -> list[tuple[Any, ...]]:
    arrow = floe.spark.read(spark, table, columns=[f.name for f in schema.fields], **options).toArrow()
    return [tuple(canon(r[f.name], f.field_type) for f in schema.fields) for r in arrow.to_pylist()]


def _arrow_rows(table: Any, schema: Schema, **options: Any) -> list[tuple[Any, ...]]:
    arrow = table.scan(selected_fields=tuple(f.name for f in schema.fields), **options).to_arrow()
    return [tuple(canon(r[f.name], f.field_type) for f in schema.fields) for r in arrow.to_pylist()]


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def _folder(entry: dict[str, Any]) -> FolderTable:
    return open_table_folder(FIXTURES / entry["folder"] / entry["table_root"], prefixes=list(entry["ref_prefixes"]))


@pytest.mark.parametrize("entry", MANIFEST, ids=[m["folder"] for m in MANIFEST])
def test_read_fixture_every_snapshot_matches_reference(spark: SparkSession, entry: dict[str, Any]) -> None:
    ft = _folder(entry)
    table = located_folder_table(ft)
    md = ft.metadata
    if entry["folder"] in OUT_OF_SCOPE:
        error, words = OUT_OF_SCOPE[entry["folder"]]
        with pytest.raises(error, match=words):
            floe.spark.read(spark, table).collect()
        return
    current = md.current_snapshot()
    if current is None:
        assert floe.spark.read(spark, table).count() == 0
        return
    checked = 0
    for snap in md.snapshots:
        schema = md.schema() if snap.snapshot_id == current.snapshot_id else (md.schema_by_id(snap.schema_id) if snap.schema_id is not None else md.schema())
        schema = _comparable(schema)
        try:
            expected = reference_rows(ft, snap, schema)
        except (NoSuchFileError, FileNotFoundError):
            continue  # an expired snapshot whose manifests were not kept with the fixture
        options: dict[str, Any] = {} if snap.snapshot_id == current.snapshot_id else {"snapshot_id": snap.snapshot_id}
        got = _spark_rows(spark, table, schema, **options)
        assert len(got) == len(expected), f"{entry['folder']} snapshot {snap.snapshot_id}"
        assert _sorted(got) == _sorted(expected), f"{entry['folder']} snapshot {snap.snapshot_id}"
        local = _arrow_rows(table, schema, **options)
        assert _sorted(local) == _sorted(expected), f"{entry['folder']} snapshot {snap.snapshot_id} (to_arrow)"
        checked += 1
    assert checked >= 1


def test_read_fixture_generated_spec_matches_spark_expected_results(spark: SparkSession) -> None:
    base = FIXTURES / "duckdb__generated_spec1_0_001"
    entry = next(m for m in MANIFEST if m["folder"] == "duckdb__generated_spec1_0_001")
    ft = _folder(entry)
    schema = ft.metadata.schema()
    expected_table = pq.read_table(base / "expected_results" / "last" / "data")
    expected = [tuple(canon(r[f.name]) for f in schema.fields) for r in expected_table.to_pylist()]
    got = [tuple(canon(v) for v in row) for row in _spark_rows(spark, located_folder_table(ft), schema)]
    assert int((base / "expected_results" / "last" / "count.csv").read_text().split()[-1]) == len(got)
    assert _sorted(got) == _sorted(expected)


def test_read_fixture_filter_and_columns_match_reference(spark: SparkSession) -> None:
    entry = next(m for m in MANIFEST if m["folder"] == "duckdb__equality_deletes_mytable_partitioned")
    ft = _folder(entry)
    schema = ft.metadata.schema()
    first = schema.fields[0]
    all_rows = reference_rows(ft, ft.metadata.current_snapshot(), schema)  # type: ignore[arg-type]
    value = all_rows[0][0]
    df = floe.spark.read(spark, located_folder_table(ft), filter=f"{first.name} = {value!r}", columns=[first.name])
    assert [r[0] for r in df.collect()] == [v[0] for v in all_rows if v[0] == value]


def test_read_fixture_unknown_snapshot_and_bad_filter_raise(spark: SparkSession) -> None:
    ft = _folder(MANIFEST[0])
    table = located_folder_table(ft)
    with pytest.raises(FloeError, match="999"):
        floe.spark.read(spark, table, snapshot_id=999)
    with pytest.raises(ValidationError, match="no_such_column"):
        floe.spark.read(spark, table, filter="no_such_column = 1")
