"""Parquet writer properties on the pyarrow writer, as Iceberg Java writes them: compression levels, Bloom filters
(checked by DuckDB's probe), the page row limit, columns without statistics, the delete files' own settings; bad
values refused when set."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _parquet_pages import data_pages
from _table_testing import entries, sql_catalog

from floe.errors import UnsupportedError, ValidationError
from floe.spec.parquet_columns import (
    BloomFilterColumn,
    bloom_filter_columns,
    column_settings,
    ndv_filling_bytes,
)
from floe.spec.schema import Schema
from floe.spec.types import IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType
from floe.table.table import Table
from floe.write.locations import LocationProvider
from floe.write.parquet_files import ParquetSettings

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "st", StructType(NestedField(4, "x", IntegerType()))),
    NestedField(5, "tags", ListType(6, StringType(), element_required=False)),
    NestedField(7, "attrs", MapType(8, StringType(), 9, LongType(), value_required=False)),
)
BLOOM = {
    "write.parquet.bloom-filter-enabled.column.s": "true",
    "write.parquet.bloom-filter-enabled.column.st.x": "true",
    "write.parquet.bloom-filter-ndv.column.st.x": "1000",
    "write.parquet.bloom-filter-enabled.column.tags.element": "true",
    "write.parquet.bloom-filter-fpp.column.tags.element": "0.05",
    "write.parquet.bloom-filter-enabled.column.attrs.value": "true",
    "write.parquet.bloom-filter-ndv.column.attrs.value": "50",
    "write.parquet.bloom-filter-enabled.column.id": "false",
}
# What Iceberg Java 1.10 (parquet-mr) writes for NDV 1000 at fpp 0.01, read off its files: an 18-byte header and
# the optimal bitset. Without an NDV parquet-mr takes all of max-bytes; pyarrow sizes for the chunk's values.
JAVA_NDV_1000_FILTER_LENGTH = 2_064
MAX_BYTES = 1 << 20


def _rows(n: int = 2000) -> pa.Table:
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": [f"s{i}" for i in range(n)],
        "st": pa.array([{"x": i % 700} for i in range(n)], pa.struct([("x", pa.int32())])),
        "tags": [[f"t{i % 13}"] for i in range(n)],
        "attrs": pa.array([[("k", i % 40)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    })


def _table(tmp_path: Path, name: str = "db.t", **props: str) -> Table:
    return sql_catalog(tmp_path).create_table(name, SCHEMA, properties=props)


def _one_file(table: Table) -> str:
    table.append(_rows())
    [task] = list(table.scan().plan_files())
    return task.data_file.file_path


def _filters(path: str) -> dict[str, int | None]:
    md = pq.ParquetFile(path).metadata
    out = {}
    for i in range(md.num_columns):
        col = md.row_group(0).column(i)
        out[col.path_in_schema] = col.bloom_filter_length
    return out


def _probe(path: str, column: str, value: object) -> bool:
    """DuckDB's answer: does the file's Bloom filter exclude ``value``? (DuckDB probes top-level columns.)"""
    [(_, _, excluded)] = duckdb.execute("SELECT * FROM parquet_bloom_probe(?, ?, ?)", [path, column, value]).fetchall()
    return bool(excluded)


def test_bloom_filter_columns_resolve_iceberg_names_to_parquet_paths() -> None:
    assert bloom_filter_columns(SCHEMA, BLOOM) == (
        BloomFilterColumn("s", None, 0.01),
        BloomFilterColumn("st.x", 1000, 0.01),
        BloomFilterColumn("tags.list.element", None, 0.05),
        BloomFilterColumn("attrs.key_value.value", 50, 0.01),
    )
    # A column dropped since the property was set gets no filter (as in Iceberg Java).
    assert bloom_filter_columns(SCHEMA.select(["id"]), BLOOM) == ()


def test_ndv_filling_bytes_sizes_pyarrow_filters_as_parquet_mr() -> None:
    # Optimal bytes for an NDV: -8 * ndv / ln(1 - fpp ** (1/8)) bits, rounded up to a power of two.
    import math

    for size, fpp in ((1 << 20, 0.01), (1 << 16, 0.05), (3_000_000, 0.01)):
        ndv = ndv_filling_bytes(size, fpp)
        bits = -8 * ndv / math.log(1 - fpp ** (1 / 8))
        power = 1 << (size.bit_length() - 1)
        assert power * 4 < bits <= power * 8


def test_pyarrow_writer_writes_the_bloom_filters_java_writes(tmp_path: Path) -> None:
    path = _one_file(_table(tmp_path, **BLOOM))
    lengths = _filters(path)
    assert lengths["id"] is None  # enabled=false
    assert lengths["s"] is not None and 2000 < lengths["s"] <= MAX_BYTES + 18
    assert lengths["st.x"] is not None and lengths["st.x"] <= JAVA_NDV_1000_FILTER_LENGTH  # pyarrow rounds down
    assert lengths["tags.list.element"] is not None and lengths["tags.list.element"] <= MAX_BYTES + 18
    assert lengths["attrs.key_value.value"] is not None and lengths["attrs.key_value.value"] < 1024
    assert not _probe(path, "s", "s1999") and _probe(path, "s", "absent")


def test_bloom_filter_max_bytes_caps_every_filter(tmp_path: Path) -> None:
    path = _one_file(_table(tmp_path, **BLOOM, **{"write.parquet.bloom-filter-max-bytes": "1024"}))
    lengths = _filters(path)
    assert lengths["s"] is not None and lengths["s"] <= 1024 + 32
    assert lengths["st.x"] is not None and lengths["st.x"] <= 1024 + 32
    assert not _probe(path, "s", "s7")


def test_compression_level_reaches_the_files(tmp_path: Path) -> None:
    sizes = {}
    for codec, level in (("zstd", "1"), ("zstd", "19"), ("gzip", "1"), ("gzip", "9")):
        t = _table(tmp_path, f"db.{codec}{level}", **{
            "write.parquet.compression-codec": codec, "write.parquet.compression-level": level,
        })
        t.append(pa.table({"id": pa.array(range(200_000), pa.int64()), "s": [f"v{i * 7919 % 100_003}" for i in range(200_000)],
                           "st": pa.nulls(200_000, pa.struct([("x", pa.int32())])),
                           "tags": pa.nulls(200_000, pa.list_(pa.string())),
                           "attrs": pa.nulls(200_000, pa.map_(pa.string(), pa.int64()))}))
        [task] = list(t.scan().plan_files())
        sizes[codec, level] = task.data_file.file_size_in_bytes
        assert pq.ParquetFile(task.data_file.file_path).metadata.row_group(0).column(1).compression == codec.upper()
    assert sizes["zstd", "19"] < sizes["zstd", "1"]
    assert sizes["gzip", "9"] < sizes["gzip", "1"]


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"write.parquet.compression-codec": "snappy", "write.parquet.compression-level": "3"},
         "compression-level=3 has no effect with write.parquet.compression-codec=snappy"),
        ({"write.parquet.compression-codec": "gzip", "write.parquet.compression-level": "12"},
         "compression-level=12 is out of range for gzip \\(0 to 9\\)"),
        ({"write.parquet.compression-level": "fast"}, "compression-level must be an integer, got 'fast'"),
        ({"write.parquet.compression-codec": "lzo"}, "compression-codec must be one of .*got 'lzo'"),
        ({"write.parquet.bloom-filter-enabled.column.nope": "true"},
         "bloom-filter-enabled.column.nope names no column of the table"),
        ({"write.parquet.bloom-filter-enabled.column.st": "true"}, "names struct<.*not a primitive column"),
        ({"write.parquet.bloom-filter-enabled.column.s": "yes"}, "must be true or false, got 'yes'"),
        ({"write.parquet.bloom-filter-fpp.column.s": "1.5"}, "between 0 and 1 \\(exclusive\\), got '1.5'"),
        ({"write.parquet.bloom-filter-ndv.column.s": "0"}, "must be a positive integer, got '0'"),
        ({"write.parquet.bloom-filter-max-bytes": "-1"}, "max-bytes must be a positive integer, got '-1'"),
    ],
)
def test_unusable_writer_properties_are_refused_when_set(tmp_path: Path, props: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _table(tmp_path, "db.created", **props)
    table = _table(tmp_path)
    with pytest.raises(ValidationError, match=message):
        table.set_properties(props)
    assert "write.parquet.compression-level" not in table.refresh().properties


def test_codec_change_is_checked_against_the_stored_level(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"write.parquet.compression-level": "9"})  # zstd, Iceberg's default codec
    with pytest.raises(ValidationError, match="compression-level=9 has no effect with .*=snappy"):
        table.set_properties({"write.parquet.compression-codec": "snappy"})
    table.set_properties({"write.parquet.compression-codec": "gzip"})
    table.set_properties({"unrelated": "1"})  # the stored pair is not re-checked by other changes


def test_a_level_set_elsewhere_on_a_codec_without_levels_writes_as_java() -> None:
    # Iceberg Java stores snappy with a level and writes plain snappy; Floe writes what Java writes.
    settings = ParquetSettings.from_properties({
        "write.parquet.compression-codec": "snappy", "write.parquet.compression-level": "5",
    })
    assert settings.compression == "snappy" and settings.compression_level is None
    assert "compression_level" not in settings.writer_options()


@pytest.mark.parametrize("key", ["write.format.default", "write.delete.format.default"])
def test_orc_and_avro_file_formats_are_refused(tmp_path: Path, key: str) -> None:
    message = f"{key}=orc is not supported: Floe writes Parquet files only"
    with pytest.raises(UnsupportedError, match=message):
        _table(tmp_path, "db.orc", **{key: "orc"})
    table = _table(tmp_path, **{key: "Parquet"})
    with pytest.raises(UnsupportedError, match=message.replace("orc", "avro")):
        table.set_properties({key: "avro"})


def test_a_table_set_to_orc_elsewhere_is_not_written_as_parquet(tmp_path: Path) -> None:
    # Iceberg Java writes ORC into such a table; Floe refuses rather than write Parquet in its place.
    with pytest.raises(UnsupportedError, match="Table db.j: write.format.default=orc is not supported"):
        ParquetSettings.from_properties({"write.format.default": "orc"}, table_name="db.j")
    with pytest.raises(UnsupportedError, match="write.format.default=avro"):
        ParquetSettings.from_properties({"write.format.default": "avro"}, deletes=True)  # deletes follow it
    ParquetSettings.from_properties({"write.format.default": "avro", "write.delete.format.default": "parquet"}, deletes=True)


def test_page_row_limit_cuts_pages(tmp_path: Path) -> None:
    path = _one_file(_table(tmp_path, **{"write.parquet.page-row-limit": "100"}))
    assert data_pages(path, 0) == 20  # 2,000 rows
    default = _one_file(_table(tmp_path, "db.default"))
    assert data_pages(default, 0) == 1  # Iceberg's default limit, 20,000 rows


def test_statistics_off_for_a_column_leaves_its_bounds_out(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"write.parquet.stats-enabled.column.s": "false",
                                "write.parquet.stats-enabled.column.st.x": "true"})
    table.append(_rows())
    [task] = list(table.scan().plan_files())
    md = pq.ParquetFile(task.data_file.file_path).metadata.row_group(0)
    stats = {md.column(i).path_in_schema: md.column(i).is_stats_set for i in range(md.num_columns)}
    assert stats["s"] is False and stats["id"] and stats["st.x"] and stats["tags.list.element"]
    [entry] = entries(table)
    assert 2 not in (entry.data_file.lower_bounds or {}) and 1 in (entry.data_file.lower_bounds or {})
    assert table.scan(row_filter="s = 's7'").to_arrow().num_rows == 1  # no bounds: the file is kept, not pruned


def test_delete_files_take_the_delete_parquet_properties() -> None:
    props = {
        "write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "9",
        "write.delete.parquet.compression-codec": "snappy",
        "write.parquet.row-group-size-bytes": "1000000", "write.delete.parquet.row-group-size-bytes": "2000000",
        "write.delete.parquet.page-row-limit": "500", "write.parquet.page-size-bytes": "4096",
    }
    data = ParquetSettings.from_properties(props)
    deletes = ParquetSettings.from_properties(props, deletes=True)
    assert (data.compression, data.compression_level, data.row_group_bytes, data.page_rows) == ("zstd", 9, 1_000_000, 20_000)
    # snappy inherits no level (Java's fallback gives it zstd's, which snappy ignores); page size falls back.
    assert (deletes.compression, deletes.compression_level, deletes.row_group_bytes, deletes.page_rows) == (
        "snappy", None, 2_000_000, 500
    )
    assert deletes.page_bytes == 4096 and not deletes.column_settings
    assert "bloom_filter_options" not in deletes.writer_options(column_settings(SCHEMA, BLOOM))


def test_delete_level_on_a_codec_without_levels_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="write.delete.parquet.compression-level=3 has no effect with "
                                              "write.delete.parquet.compression-codec=lz4"):
        _table(tmp_path, **{"write.delete.parquet.compression-codec": "lz4",
                            "write.delete.parquet.compression-level": "3"})


def test_a_java_location_provider_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match="write.location-provider.impl=com.acme.Places is not supported"):
        _table(tmp_path, **{"write.location-provider.impl": "com.acme.Places"})
    with pytest.raises(UnsupportedError, match="Floe cannot load a Java location provider"):
        LocationProvider.for_table("/wh/db/t", {"write.location-provider.impl": "com.acme.Places"})
