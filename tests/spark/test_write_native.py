"""table.append(df) / overwrite / dynamic overwrite through Spark (native Parquet path and mapInArrow path).

PyIceberg 0.12 is the second reader: every table written here must read back with identical rows.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import floe
from floe.errors import ValidationError
from floe.io.arrow_schema import field_id_of
from floe.serde.single_value import decode_bounds
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    DateType,
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
    TimestamptzType,
)
from floe.write.arrow_data import to_floe_value

UTC = dt.timezone.utc

# One column per type a transform applies to (float for NaN metrics).
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "ts", TimestampType()),
    NestedField(4, "tstz", TimestamptzType()),
    NestedField(5, "d", DateType()),
    NestedField(6, "s", StringType()),
    NestedField(7, "dec", DecimalType(10, 2)),
    NestedField(8, "b", BinaryType()),
    NestedField(9, "v", DoubleType()),
    NestedField(10, "pt", StructType(NestedField(11, "x", LongType()), NestedField(12, "label", StringType()))),
)
DDL = (
    "id long, i int, ts timestamp_ntz, tstz timestamp, d date, s string, dec decimal(10,2), b binary, v double, "
    "pt struct<x:long,label:string>"
)


def _rows(n: int, seed: int = 7) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    epoch = dt.datetime(1970, 1, 1)
    out = []
    for k in range(n):
        us = rng.randint(-2 * 10**15, 2 * 10**15) if k % 4 else rng.randint(-10**10, 10**10)
        t = epoch + dt.timedelta(microseconds=us)
        null = k % 17 == 5
        out.append((
            k,
            None if null else rng.randint(-2**31, 2**31 - 1),
            None if null else t,
            None if null else t.replace(tzinfo=UTC),
            None if null else t.date(),
            None if null else "".join(rng.choice("ab😀é") for _ in range(rng.randint(0, 5))),
            None if null else Decimal(rng.randint(-10**8, 10**8)).scaleb(-2),
            None if null else bytes(rng.randrange(256) for _ in range(rng.randint(0, 5))),
            float("nan") if k % 13 == 0 else (None if null else rng.random()),
            None if null else (k, f"p{k % 3}"),
        ))
    return out


@pytest.fixture
def catalog(tmp_path: Path) -> floe.Catalog:
    cat = floe.load_catalog("w", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _pyiceberg(tmp_path: Path, name: str) -> pa.Table:
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("w", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    return cat.load_table(name).scan().to_arrow().sort_by("id")


def _normalize(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
    out = []
    for r in rows:
        vals = []
        for k, v in r.items():
            if isinstance(v, float) and math.isnan(v):
                v = "NaN"
            if isinstance(v, dt.datetime) and v.tzinfo is not None:
                v = v.astimezone(UTC)
            if k == "pt" and v is not None:
                v = (v["x"], v["label"]) if isinstance(v, dict) else tuple(v)
            vals.append(v)
        out.append(tuple(vals))
    return out


TRANSFORM_SPECS = {
    "identity": lambda b: b.identity("i").identity("s").identity("d").identity("dec").identity("ts"),
    "bucket": lambda b: b.bucket("id", 5).bucket("i", 3).bucket("s", 4).bucket("dec", 3).bucket("b", 2)
    .bucket("d", 3).bucket("ts", 2).bucket("tstz", 2),
    "truncate": lambda b: b.truncate("i", 1000).truncate("id", 50).truncate("s", 1).truncate("dec", 10000)
    .truncate("b", 1),
    "year_month_day": lambda b: b.year("ts").month("tstz").day("d"),
    "day_hour_year": lambda b: b.day("ts").hour("tstz").year("d"),
    "month_day_month": lambda b: b.month("ts").day("tstz").month("d"),
    "hour_year": lambda b: b.hour("ts").year("tstz"),
}


@pytest.mark.parametrize("kind", sorted(TRANSFORM_SPECS))
def test_write_every_transform_pyiceberg_reads_identical_rows(
    spark: SparkSession, catalog: floe.Catalog, tmp_path: Path, kind: str
) -> None:
    spec = TRANSFORM_SPECS[kind](PartitionSpecBuilder(SCHEMA)).build()
    t = catalog.create_table(f"db.{kind}", SCHEMA, partition_spec=spec)
    rows = _rows(40)
    df = spark.createDataFrame(rows, DDL)
    t.append(df)
    got = _pyiceberg(tmp_path, f"db.{kind}")
    assert _normalize(got.to_pylist()) == _normalize(spark.createDataFrame(rows, DDL).toArrow().sort_by("id").to_pylist())
    # every file's partition tuple is the floe transform of each of its rows
    ptype = spec.partition_type(SCHEMA)
    for task in t.scan().plan_files():
        f = task.data_file
        data = pq.read_table(f.file_path)
        for pf, value in zip(spec.fields, f.partition, strict=True):
            src = SCHEMA.find_field(pf.source_id)
            expected = pf.transform.apply_arrow(src.field_type, data.column(src.name))
            result_type = pf.transform.result_type(src.field_type)
            assert {to_floe_value(v, result_type) for v in expected} == {value}, (pf, f.file_path)
        assert spec.partition_path(f.partition, SCHEMA) in f.file_path
    assert ptype is not None


def test_write_native_files_have_field_ids_and_micros(spark: SparkSession, catalog: floe.Catalog) -> None:
    t = catalog.create_table("db.ids", SCHEMA)
    t.append(spark.createDataFrame(_rows(40), DDL))
    for task in t.scan().plan_files():
        schema = pq.ParquetFile(task.data_file.file_path).schema_arrow
        assert field_id_of(schema.field("pt").type.field(0)) == 11
        assert [field_id_of(f) for f in schema] == list(range(1, 11))
        assert schema.field("ts").type == pa.timestamp("us")
        assert task.data_file.file_path.endswith(".parquet")
        assert "/data/" in task.data_file.file_path
    assert t.current_snapshot().summary.properties
    assert dict(t.current_snapshot().summary.properties)["spark.app.id"]


def test_write_manifest_metrics_match_data(spark: SparkSession, catalog: floe.Catalog) -> None:
    t = catalog.create_table("db.metrics", SCHEMA)
    rows = _rows(200)
    t.append(spark.createDataFrame(rows, DDL).coalesce(1))
    files = [task.data_file for task in t.scan().include_column_stats().plan_files()]
    assert len(files) == 1
    f = files[0]
    assert f.record_count == 200
    assert f.value_counts[1] == 200
    assert f.null_value_counts[2] == sum(1 for r in rows if r[1] is None)
    lower, upper = decode_bounds(f.lower_bounds, SCHEMA), decode_bounds(f.upper_bounds, SCHEMA)
    assert lower[1] == 0
    assert upper[1] == 199
    ints = [r[1] for r in rows if r[1] is not None]
    assert lower[2] == min(ints)
    assert upper[2] == max(ints)
    # the double column holds NaN: no NaN count is claimed and no (NaN-polluted) bounds are kept
    assert 9 not in lower
    assert 9 not in upper
    assert 9 not in (f.nan_value_counts or {})
    clean = catalog.create_table("db.metrics2", SCHEMA)
    clean.append(spark.createDataFrame([r[:8] + (0.5,) + r[9:] for r in rows], DDL).coalesce(1))
    g = next(iter(clean.scan().include_column_stats().plan_files())).data_file
    assert g.nan_value_counts[9] == 0
    assert decode_bounds(g.lower_bounds, SCHEMA)[9] == 0.5


NESTED = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "tags", ListType(4, StringType(), element_required=False)),
    NestedField(3, "attrs", MapType(5, StringType(), 6, DoubleType(), value_required=False)),
)


def test_write_list_map_table_uses_arrow_path_with_ids_everywhere(
    spark: SparkSession, catalog: floe.Catalog, tmp_path: Path
) -> None:
    spec = PartitionSpecBuilder(NESTED).bucket("id", 2).build()
    t = catalog.create_table("db.nested", NESTED, partition_spec=spec)
    rows = [(i, [f"t{i}", None], {"k": float(i)}) for i in range(50)]
    t.append(spark.createDataFrame(rows, "id long, tags array<string>, attrs map<string,double>"))
    for task in t.scan().plan_files():
        schema = pq.ParquetFile(task.data_file.file_path).schema_arrow
        tags, attrs = schema.field("tags").type, schema.field("attrs").type
        assert [field_id_of(tags.value_field), field_id_of(attrs.key_field), field_id_of(attrs.item_field)] == [4, 5, 6]
    got = _pyiceberg(tmp_path, "db.nested")
    assert got.column("tags").to_pylist() == [[f"t{i}", None] for i in range(50)]
    assert got.column("attrs").to_pylist() == [[("k", float(i))] for i in range(50)]


def _data_files(location: str) -> set[str]:
    root = Path(location.removeprefix("file:")) / "data"
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("path", ["native", "arrow"])
def test_write_failing_task_leaves_snapshot_and_data_dir_unchanged(
    spark: SparkSession, catalog: floe.Catalog, path: str
) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "g", IntegerType()))
    t = catalog.create_table(f"db.fail_{path}", schema, partition_spec=PartitionSpecBuilder(schema).identity("g").build())
    t.append(spark.createDataFrame([(1, 0), (2, 1)], "id long, g int"))
    before_snapshot, before_files = t.current_snapshot().snapshot_id, _data_files(t.location())

    @F.udf("long")
    def explode_on_777(x: int) -> int:
        if x == 777:
            raise RuntimeError("boom on 777")
        return x

    df = spark.range(0, 2000, numPartitions=4).select(explode_on_777("id").alias("id"), (F.col("id") % 5).cast("int").alias("g"))
    with pytest.raises(Exception, match="boom on 777"):
        t.append(df) if path == "native" else floe.write.write(t, df, options={"write-path": "arrow"})
    t.refresh()
    assert t.current_snapshot().snapshot_id == before_snapshot
    assert _data_files(t.location()) == before_files


def test_write_overwrites_static_filter_and_dynamic(spark: SparkSession, catalog: floe.Catalog, tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "g", IntegerType()))
    t = catalog.create_table("db.ow", schema, partition_spec=PartitionSpecBuilder(schema).identity("g").build())
    t.append(spark.range(30).select("id", (F.col("id") % 3).cast("int").alias("g")))
    t.overwrite(spark.createDataFrame([(100, 0)], "id long, g int"), "g = 0")
    ids = _pyiceberg(tmp_path, "db.ow").column("id").to_pylist()
    assert ids == sorted([i for i in range(30) if i % 3] + [100])
    t.dynamic_partition_overwrite(spark.createDataFrame([(200, 1), (201, 1)], "id long, g int"))
    got = _pyiceberg(tmp_path, "db.ow").to_pylist()
    assert sorted(r["id"] for r in got if r["g"] == 1) == [200, 201]
    assert sorted(r["id"] for r in got if r["g"] == 2) == [i for i in range(30) if i % 3 == 2]
    t.overwrite(spark.createDataFrame([(7, 9)], "id long, g int"))
    assert _pyiceberg(tmp_path, "db.ow").to_pylist() == [{"id": 7, "g": 9}]
    ops = [s.summary.operation.value for s in t.snapshots()]
    assert ops == ["append", "overwrite", "overwrite", "overwrite"]


def test_write_schema_errors_name_the_column(spark: SparkSession, catalog: floe.Catalog) -> None:
    t = catalog.create_table("db.err", SCHEMA)
    with pytest.raises(ValidationError, match="required column 'id' is missing"):
        t.append(spark.createDataFrame([(1,)], "i int"))
    with pytest.raises(ValidationError, match=r"column 'i' has type string in the data but int"):
        t.append(spark.createDataFrame([(1, "x")], "id long, i string"))
    with pytest.raises(ValidationError, match="required column 'id'"):
        t.append(spark.createDataFrame([(None, 1), (2, 2)], "id long, i int"))
    assert t.current_snapshot() is None
    assert not _data_files(t.location())
    # safe widening int -> long, and mergeSchema adds a column
    t.append(spark.createDataFrame([(1, 2)], "id int, i int"))
    floe.write.write(t, spark.createDataFrame([(3, 4)], "id long, extra string").selectExpr("id", "'e' as extra"),
                     options={"mergeSchema": "true"})
    assert t.schema().find_field("extra").field_type == StringType()
