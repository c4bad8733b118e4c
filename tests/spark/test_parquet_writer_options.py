"""Spark's native Parquet writer takes the table's compression level, Bloom filters, page row limit and statistics
settings (parquet-mr options), and delete files their own codec: an INSERT through Floe writes the files Iceberg
Java writes for the same properties; bad values are refused in SQL."""

from __future__ import annotations

import glob
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from floe.errors import ValidationError
from floe.sql.engine import SqlSession
from tests.conftest import Jsql
from tests.unit._parquet_pages import data_pages

pytestmark = pytest.mark.spark

# Iceberg Java 1.10's properties (the NDV and adaptive ones came later: checked here against parquet-mr's sizes).
JAVA_BLOOM = (
    "'write.parquet.bloom-filter-enabled.column.s'='true', 'write.parquet.bloom-filter-enabled.column.st.x'='true', "
    "'write.parquet.bloom-filter-enabled.column.u'='true', 'write.parquet.bloom-filter-fpp.column.u'='0.05', "
    "'write.parquet.bloom-filter-max-bytes'='65536'"
)
BLOOM = JAVA_BLOOM + ", 'write.parquet.bloom-filter-ndv.column.st.x'='1000'"
ROWS = "SELECT id, concat('s', id) AS s, named_struct('x', cast(id AS int)) AS st, uuid() AS u FROM range(0, 3000, 1, 1)"


def _files(session: SqlSession, name: str) -> list[str]:
    table = session.catalog().load_table(("db", name))  # type: ignore[attr-defined]
    return sorted(t.data_file.file_path for t in table.scan().plan_files())


def _filter_lengths(path: str) -> dict[str, int | None]:
    md = pq.ParquetFile(path).metadata
    return {md.row_group(0).column(i).path_in_schema: md.row_group(0).column(i).bloom_filter_length
            for i in range(md.num_columns)}


def _excluded(path: str, column: str, value: object) -> bool:
    [(_, _, excluded)] = duckdb.execute("SELECT * FROM parquet_bloom_probe(?, ?, ?)", [path, column, value]).fetchall()
    return bool(excluded)


def test_insert_writes_bloom_filters_sized_as_parquet_mr(session: SqlSession) -> None:
    session.sql(f"CREATE TABLE bf (id bigint, s string, st struct<x:int>, u string) USING iceberg TBLPROPERTIES ({BLOOM})")
    session.sql(f"INSERT INTO bf {ROWS}")
    [path] = _files(session, "bf")  # one input partition, one file
    lengths = _filter_lengths(path)
    assert lengths["id"] is None
    # parquet-mr: without an NDV the bitset is all of max-bytes (65536, after a header of a few bytes); with NDV
    # 1000 at fpp 0.01 it is 2048 (Iceberg Java's files have the same lengths: test_bloom_filters_match_iceberg_java).
    # parquet-mr writes none for a chunk that stays dictionary-encoded (its dictionary answers exactly): the
    # columns here have distinct values.
    for column, bitset in (("s", 65536), ("u", 65536), ("st.x", 2048)):
        length = lengths[column]
        assert length is not None and bitset < length < bitset + 32, (column, length)
    assert not _excluded(path, "s", "s2999") and _excluded(path, "s", "s3000")
    assert session.sql("SELECT count(*) FROM bf WHERE s = 's17'")[-1].rows == [(1,)]


def test_adaptive_bloom_filters_fit_the_values(session: SqlSession) -> None:
    session.sql(
        f"CREATE TABLE bfa (id bigint, s string, st struct<x:int>, u string) USING iceberg TBLPROPERTIES ({JAVA_BLOOM}, "
        "'write.parquet.bloom-filter-adaptive-enabled'='true')"
    )
    session.sql(f"INSERT INTO bfa {ROWS}")
    [path] = _files(session, "bfa")
    lengths = _filter_lengths(path)
    # 3,000 distinct values at fpp 0.01 need a 4 KiB bitset, not the 64 KiB of max-bytes.
    assert lengths["s"] is not None and lengths["s"] <= 8192 + 32
    assert not _excluded(path, "s", "s2999") and _excluded(path, "s", "s3000")


def test_insert_takes_the_compression_level(session: SqlSession) -> None:
    sizes = {}
    for codec, level in (("zstd", 1), ("zstd", 19), ("gzip", 1), ("gzip", 9)):
        name = f"c_{codec}{level}"
        session.sql(
            f"CREATE TABLE {name} (id bigint, s string) USING iceberg TBLPROPERTIES "
            f"('write.parquet.compression-codec'='{codec}', 'write.parquet.compression-level'='{level}')"
        )
        session.sql(
            f"INSERT INTO {name} SELECT id, concat('customer-', id % 5000, '-', sha1(cast(id % 777 AS string))) "
            "FROM range(0, 300000, 1, 1)"
        )
        [path] = _files(session, name)
        assert pq.ParquetFile(path).metadata.row_group(0).column(1).compression == codec.upper()
        sizes[codec, level] = Path(path).stat().st_size
    assert sizes["zstd", 19] < sizes["zstd", 1] * 0.97
    assert sizes["gzip", 9] < sizes["gzip", 1]


def test_sql_refuses_unusable_writer_properties(session: SqlSession) -> None:
    session.sql("CREATE TABLE refused (id bigint, st struct<x:int>) USING iceberg")
    with pytest.raises(ValidationError, match="bloom-filter-enabled.column.st names struct<.*not a primitive column"):
        session.sql("ALTER TABLE refused SET TBLPROPERTIES ('write.parquet.bloom-filter-enabled.column.st'='true')")
    with pytest.raises(ValidationError, match="compression-level=4 has no effect with .*compression-codec=snappy"):
        session.sql(
            "ALTER TABLE refused SET TBLPROPERTIES "
            "('write.parquet.compression-codec'='snappy', 'write.parquet.compression-level'='4')"
        )
    with pytest.raises(ValidationError, match="names no column of the table"):
        session.sql(
            "CREATE TABLE refused2 (id bigint) USING iceberg "
            "TBLPROPERTIES ('write.parquet.bloom-filter-enabled.column.nope'='true')"
        )
    props = dict(session.sql("SHOW TBLPROPERTIES refused")[-1].rows)
    assert "write.parquet.compression-level" not in props and "write.parquet.bloom-filter-enabled.column.st" not in props


@pytest.mark.slow
def test_bloom_filters_match_iceberg_java(session: SqlSession, jsql: Jsql, tmp_path: Path) -> None:
    """Iceberg Java writes the same rows into a table with the same properties: the same columns carry filters of
    the same lengths, and each engine reads the other's point lookups."""
    session.sql(
        f"CREATE TABLE bf_ours (id bigint, s string, st struct<x:int>, u string) USING iceberg TBLPROPERTIES ({JAVA_BLOOM})"
    )
    session.sql(f"INSERT INTO bf_ours {ROWS}")
    [_, _, count] = jsql.run(
        [(f"CREATE TABLE j.db.bf (id bigint, s string, st struct<x:int>, u string) USING iceberg "
         f"TBLPROPERTIES ({JAVA_BLOOM})"),
         f"INSERT INTO j.db.bf {ROWS}", "SELECT count(*) FROM j.db.bf WHERE s = 's17'"],
        {"spark.sql.catalog.j": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.j.type": "hadoop",
         "spark.sql.catalog.j.warehouse": f"file://{tmp_path}/jwh"},
    )
    assert count["rows"] == [[1]]
    [java] = glob.glob(f"{tmp_path}/jwh/db/bf/data/*.parquet")
    [ours] = _files(session, "bf_ours")
    assert _filter_lengths(java) == _filter_lengths(ours)
    assert not _excluded(java, "s", "s17") and _excluded(java, "s", "absent")
    assert session.sql(f"SELECT count(*) FROM parquet.`{java}` WHERE s = 's17'")[-1].rows == [(1,)]


def test_insert_takes_page_rows_and_statistics_settings(session: SqlSession) -> None:
    session.sql(
        "CREATE TABLE pg (id bigint, s string, st struct<x:int>, u string) USING iceberg TBLPROPERTIES "
        "('write.parquet.page-row-limit'='100', 'write.parquet.stats-enabled.column.st.x'='false')"
    )
    session.sql(f"INSERT INTO pg {ROWS}")
    [path] = _files(session, "pg")
    assert data_pages(path, 0) == 30  # 3,000 rows
    md = pq.ParquetFile(path).metadata.row_group(0)
    assert {md.column(i).path_in_schema: md.column(i).is_stats_set for i in range(md.num_columns)} == {
        "id": True, "s": True, "st.x": False, "u": True,
    }
    assert session.sql("SELECT count(*) FROM pg WHERE st.x = 7")[-1].rows == [(1,)]


def test_merge_on_read_deletes_take_the_delete_parquet_properties(session: SqlSession) -> None:
    session.sql(
        f"CREATE TABLE mor (id bigint, s string, st struct<x:int>, u string) USING iceberg TBLPROPERTIES ({JAVA_BLOOM}, "
        "'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.parquet.compression-codec'='zstd', "
        "'write.delete.parquet.compression-codec'='snappy')"
    )
    session.sql(f"INSERT INTO mor {ROWS}")
    session.sql("DELETE FROM mor WHERE id % 10 = 0")
    table = session.catalog().load_table(("db", "mor"))  # type: ignore[attr-defined]
    [task] = list(table.scan().plan_files())
    [delete] = task.deletes
    md = pq.ParquetFile(delete.data_file.file_path).metadata.row_group(0)
    assert {md.column(i).compression for i in range(md.num_columns)} == {"SNAPPY"}
    assert all(md.column(i).bloom_filter_length is None for i in range(md.num_columns))  # data files only, as Java
    assert pq.ParquetFile(task.data_file.file_path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert session.sql("SELECT count(*) FROM mor")[-1].rows == [(2700,)]
