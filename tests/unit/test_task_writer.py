"""The Arrow task writer, locations, schema checks and table.append/overwrite of Arrow data (no Spark)."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import floe
import floe.write
from floe.errors import UnsupportedError, ValidationError
from floe.io.arrow_schema import field_id_of
from floe.io.fileio import FileIO
from floe.serde.single_value import decode_bounds
from floe.spec.partitioning import UNPARTITIONED_SPEC, PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)
from floe.transforms import BucketTransform, DayTransform
from floe.write import LocationProvider, TaskWriter, check_write_schema, data_file_name

NAME = re.compile(r"^\d{5}-\d+-[0-9a-f-]{36}-\d{5}\.parquet$")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "category", StringType()),
    NestedField(4, "value", DoubleType()),
    NestedField(5, "tags", ListType(7, StringType(), element_required=False)),
    NestedField(6, "attrs", MapType(8, StringType(), 9, IntegerType(), value_required=False)),
    NestedField(10, "point", StructType(NestedField(11, "x", DoubleType()), NestedField(12, "y", DoubleType()))),
    NestedField(13, "price", DecimalType(9, 2)),
)


def _data(n: int = 1000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    value = rng.random(n)
    value[::97] = np.nan
    ts = np.datetime64("2024-03-01T00:00:00", "us") + rng.integers(0, 5 * 86_400 * 10**6, n).astype("timedelta64[us]")
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "ts": pa.array(ts),
            "category": pa.array([None if i % 11 == 0 else f"c{i % 3}" for i in range(n)]),
            "value": pa.array(value),
            "tags": pa.array([[f"t{i % 4}", None] if i % 5 else None for i in range(n)], pa.list_(pa.string())),
            "attrs": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
            "point": pa.array([{"x": float(i), "y": -float(i)} for i in range(n)]),
            "price": pa.array([Decimal(i).scaleb(-2) for i in range(n)], pa.decimal128(9, 2)),
        }
    )


def _writer(tmp_path: Path, spec=UNPARTITIONED_SPEC, props: dict[str, str] | None = None, **kw: object) -> TaskWriter:
    return TaskWriter(
        schema=SCHEMA, spec=spec, properties=props or {}, locations=LocationProvider(str(tmp_path / "data")),
        io=FileIO(), table_name="db.t", **kw,  # type: ignore[arg-type]
    )


def _all_field_ids(schema: pa.Schema) -> list[int | None]:
    out: list[int | None] = []

    def visit(f: pa.Field) -> None:
        out.append(field_id_of(f))
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i))
        elif pa.types.is_map(t):
            visit(t.key_field)
            visit(t.item_field)
        elif pa.types.is_list(t):
            visit(t.value_field)

    for f in schema:
        visit(f)
    return out


def test_task_writer_unpartitioned_files_have_field_ids_on_every_column(tmp_path: Path) -> None:
    files = _writer(tmp_path).write_all([_data()])
    assert len(files) == 1
    f = files[0]
    assert NAME.match(Path(f.file_path).name)
    pf = pq.ParquetFile(f.file_path)
    ids = _all_field_ids(pf.schema_arrow)
    assert None not in ids
    assert sorted(ids) == list(range(1, 14))
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"
    assert pf.schema_arrow.field("ts").type == pa.timestamp("us")
    assert f.record_count == 1000
    assert f.file_size_in_bytes == Path(f.file_path).stat().st_size


def test_task_writer_metrics_match_data(tmp_path: Path) -> None:
    data = _data()
    f = _writer(tmp_path).write_all([data])[0]
    assert f.value_counts[1] == 1000
    assert f.null_value_counts[3] == data.column("category").null_count
    nans = int(np.isnan(data.column("value").to_numpy(zero_copy_only=False)).sum())
    assert f.nan_value_counts[4] == nans
    assert f.nan_value_counts[11] == 0
    lower, upper = decode_bounds(f.lower_bounds, SCHEMA), decode_bounds(f.upper_bounds, SCHEMA)
    assert lower[1] == 0
    assert upper[1] == 999
    assert lower[13] == Decimal("0.00")
    assert upper[13] == Decimal("9.99")
    assert not math.isnan(upper[4])
    assert upper[4] <= 1.0
    assert 7 not in lower  # no bounds for list elements


def test_task_writer_partitioned_fanout_groups_rows_by_tuple(tmp_path: Path) -> None:
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 4).build()
    data = _data()
    files = _writer(tmp_path, spec).write_all([data.slice(0, 500), data.slice(500)])
    assert sum(f.record_count for f in files) == 1000
    assert len({f.partition for f in files}) == len(files)  # fanout: one file per partition
    for f in files:
        rows = pq.read_table(f.file_path)
        days = DayTransform().apply_arrow(TimestampType(), rows.column("ts")).cast(pa.int32()).to_pylist()
        buckets = BucketTransform(4).apply_arrow(LongType(), rows.column("id")).to_pylist()
        assert set(zip(days, buckets)) == {f.partition}
        assert spec.partition_path(f.partition, SCHEMA) in f.file_path
        assert NAME.match(Path(f.file_path).name)


def test_clustered_task_writer_writes_one_file_a_partition_across_batches(tmp_path: Path) -> None:
    # Rows sorted by (day, bucket) as Spark's sort hands them over; each batch meets the buckets in an order
    # other than their values' first appearance, and a partition runs on from one batch into the next.
    spec = PartitionSpecBuilder(SCHEMA).day("ts").bucket("id", 8).build()
    data = _data(2000)
    day = DayTransform().apply_arrow(TimestampType(), data.column("ts")).cast(pa.int32())
    bucket = BucketTransform(8).apply_arrow(LongType(), data.column("id"))
    data = data.append_column("d", day).append_column("b", bucket).sort_by([("d", "ascending"), ("b", "ascending")])
    data = data.drop_columns(["d", "b"])
    batches = [data.slice(start, 450) for start in range(0, data.num_rows, 450)]  # 9 partitions or so each
    files = _writer(tmp_path, spec, clustered=True).write_all(batches)
    assert sum(f.record_count for f in files) == 2000
    assert len({f.partition for f in files}) == len(files) == 5 * 8  # one file a partition


def test_task_writer_rolls_files_at_target_size(tmp_path: Path) -> None:
    props = {"write.target-file-size-bytes": "20000", "write.parquet.row-group-size-bytes": "8000"}
    files = _writer(tmp_path, props=props).write_all([_data(5000)])
    assert len(files) > 2
    assert sum(f.record_count for f in files) == 5000
    assert len({f.file_path for f in files}) == len(files)


def test_task_writer_compression_codec_property_is_used(tmp_path: Path) -> None:
    f = _writer(tmp_path, props={"write.parquet.compression-codec": "snappy"}).write_all([_data(100)])[0]
    assert pq.ParquetFile(f.file_path).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_task_writer_error_deletes_opened_files(tmp_path: Path) -> None:
    data = _data()
    bad = data.set_column(0, "id", pa.array([None] * data.num_rows, pa.int64()))
    with pytest.raises(ValidationError, match="required column 'id'"):
        _writer(tmp_path, PartitionSpecBuilder(SCHEMA).identity("category").build()).write_all([data, bad])
    assert not [p for p in (tmp_path / "data").rglob("*.parquet")]


def test_task_writer_missing_optional_column_is_written_as_nulls(tmp_path: Path) -> None:
    f = _writer(tmp_path).write_all([_data(10).drop_columns(["value"])])[0]
    assert pq.read_table(f.file_path).column("value").null_count == 10


def test_location_provider_object_storage_adds_hash_dirs() -> None:
    lp = LocationProvider.for_table("s3://b/db/t", {"write.object-storage.enabled": "true"})
    name = data_file_name(3, 7, "0f0e0d0c-0000-0000-0000-000000000000", 1)
    loc = lp.new_location(name, "day=2024-01-01")
    assert re.match(r"^s3://b/db/t/data/[01]{4}/[01]{4}/[01]{4}/[01]{8}/day=2024-01-01/00003-7-0f0e", loc)
    assert LocationProvider.for_table("/t", {"write.data.path": "/elsewhere"}).new_location("f.parquet") == "/elsewhere/f.parquet"


def test_location_provider_object_storage_path_applies_only_to_the_object_store_layout() -> None:
    props = {"write.object-storage.path": "s3://b/objects", "write.folder-storage.path": "s3://b/folders"}
    hashed = LocationProvider.for_table("s3://b/db/t", {**props, "write.object-storage.enabled": "true"})
    assert hashed.data_dir == "s3://b/objects"
    assert LocationProvider.for_table("s3://b/db/t", props).data_dir == "s3://b/folders"
    both = {**props, "write.data.path": "s3://b/data", "write.object-storage.enabled": "true"}
    assert LocationProvider.for_table("s3://b/db/t", both).data_dir == "s3://b/data"


def test_check_write_schema_errors_name_column_and_types() -> None:
    data = Schema(NestedField(1, "id", StringType()), NestedField(2, "extra", LongType()))
    with pytest.raises(ValidationError, match=r"column 'id' has type string in the data but long"):
        check_write_schema(SCHEMA, data, table_name="db.t")
    with pytest.raises(ValidationError, match="required column 'id' is missing"):
        check_write_schema(SCHEMA, Schema(NestedField(1, "ts", TimestampType())), table_name="db.t")
    with pytest.raises(ValidationError, match="'extra'"):
        check_write_schema(SCHEMA, Schema(NestedField(1, "id", LongType()), NestedField(2, "extra", LongType())), table_name="db.t")


def test_check_write_schema_widening_allowed_and_merge_collects_changes() -> None:
    narrow = Schema(NestedField(1, "id", IntegerType()), NestedField(2, "extra", LongType()))
    changes = check_write_schema(SCHEMA, narrow, table_name="db.t", merge_schema=True)
    assert changes.add == (("extra", LongType()),)
    assert changes.widen == ()
    table = Schema(NestedField(1, "id", IntegerType()))
    wider = check_write_schema(table, Schema(NestedField(1, "id", LongType())), table_name="t", merge_schema=True)
    assert wider.widen == (("id", LongType()),)


# -- through the Table seam ---------------------------------------------------------------------------
@pytest.fixture
def catalog(tmp_path: Path) -> floe.Catalog:
    cat = floe.load_catalog("w", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _simple(n: int, start: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "cat": pa.array([f"c{i % 3}" for i in range(n)]),
        "v": pa.array(np.arange(n, dtype=np.float64)),
    })


def _pyiceberg_rows(tmp_path: Path, name: str) -> pa.Table:
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("w", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    return cat.load_table(name).scan().to_arrow().sort_by("id")


def test_table_append_arrow_is_read_by_pyiceberg(catalog: floe.Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", _simple(1).schema)
    spec = PartitionSpecBuilder(t.schema()).identity("cat").build()
    catalog.drop_table("db.t")
    t = catalog.create_table("db.t", _simple(1).schema, partition_spec=spec)
    t.append(_simple(300))
    t.append(_simple(100, start=300))
    assert len(t.snapshots()) == 2
    got = _pyiceberg_rows(tmp_path, "db.t")
    assert got.column("id").to_pylist() == list(range(400))
    assert got.column("cat").to_pylist() == [f"c{i % 3}" for i in range(300)] + [f"c{i % 3}" for i in range(100)]


def test_table_overwrite_and_dynamic_overwrite_arrow(catalog: floe.Catalog, tmp_path: Path) -> None:
    schema = _simple(1).schema
    t = catalog.create_table("db.o", schema)
    spec = PartitionSpecBuilder(t.schema()).identity("cat").build()
    catalog.drop_table("db.o")
    t = catalog.create_table("db.o", schema, partition_spec=spec)
    t.append(_simple(30))
    t.overwrite(_simple(3, start=100).set_column(1, "cat", pa.array(["c0"] * 3)), "cat = 'c0'")
    ids = _pyiceberg_rows(tmp_path, "db.o").column("id").to_pylist()
    assert sorted(ids) == sorted([i for i in range(30) if i % 3 != 0] + [100, 101, 102])
    t.dynamic_partition_overwrite(_simple(2, start=200).set_column(1, "cat", pa.array(["c1"] * 2)))
    got = _pyiceberg_rows(tmp_path, "db.o")
    assert sorted(got.filter(pa.compute.equal(got["cat"], "c1")).column("id").to_pylist()) == [200, 201]
    assert t.current_snapshot().summary.operation.value == "overwrite"
    t.overwrite(_simple(5, start=500))
    assert _pyiceberg_rows(tmp_path, "db.o").column("id").to_pylist() == [500, 501, 502, 503, 504]


def test_table_append_arrow_schema_mismatch_raises_and_writes_nothing(catalog: floe.Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.s", _simple(1).schema)
    bad = _simple(3).set_column(2, "v", pa.array(["x", "y", "z"]))
    with pytest.raises(ValidationError, match="'v'"):
        t.append(bad)
    assert t.current_snapshot() is None
    assert not list((tmp_path / "wh").rglob("*.parquet"))


def test_table_append_arrow_merge_schema_adds_column(catalog: floe.Catalog) -> None:
    t = catalog.create_table("db.m", _simple(1).schema, properties={"write.spark.accept-any-schema": "true"})
    wider = _simple(3).append_column("extra", pa.array([1, 2, 3], pa.int64()))
    # As in Iceberg Java: the property lets the data differ, mergeSchema asks for the change.
    with pytest.raises(ValidationError, match="'extra'.*mergeSchema"):
        t.append(wider)
    floe.write.write(t, wider, options={"mergeSchema": "true"})
    assert t.schema().find_field("extra").field_type == LongType()
    with pytest.raises(UnsupportedError, match="write option 'compression-codec' is a Spark write's"):
        floe.write.write(t, wider, options={"compression-codec": "snappy"})



def test_table_append_arrow_with_nested_field_ids_matches_by_name(catalog: floe.Catalog) -> None:
    from floe.io.arrow_schema import schema_to_arrow

    data = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "point": pa.array([{"x": 1.0, "y": 2.0}, None], pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        "tags": pa.array([["a"], []], pa.list_(pa.string())),
    })
    t = catalog.create_table("db.nested", data.schema)
    # Data carrying the table's own ids at every depth (what a round trip through Parquet gives back).
    with_ids = data.cast(schema_to_arrow(t.schema()))
    assert field_id_of(with_ids.schema.field("point").type.field("x")) is not None
    t.append(with_ids)
    rows = t.scan().to_arrow().sort_by("id")
    assert rows.column("point").to_pylist() == [{"x": 1.0, "y": 2.0}, None]
    assert rows.column("tags").to_pylist() == [["a"], []]
