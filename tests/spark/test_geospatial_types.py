"""Format v3 geometry and geography columns on Spark 4.3's GEOMETRY(srid) / GEOGRAPHY(srid) types: created
in SQL, written by Spark's Parquet writer as WKB with Parquet's geospatial logical types (the spec's
storage), read back by Spark and by the Arrow reader (WKB bytes), rewritten by UPDATE, with counts but no
min/max bounds in the manifests (the spec's bounds are bounding-box points, not byte order). What cannot
be stored is refused in one line: a column of any SRID, a CRS Spark has no SRID for, an edge algorithm
other than spherical, and the Arrow writer (pyarrow would write plain binary)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from floe.errors import FloeError, UnsupportedError
from floe.io.locations import to_local_path
from floe.spark.types import from_spark_type, to_spark_type
from floe.spec.types import GeographyType, GeometryType
from floe.sql.datatypes import parse_type
from floe.sql.engine import SqlSession

POINT = "X'0101000000000000000000F03F0000000000000040'"  # POINT (1 2), little-endian WKB
POINT_BYTES = bytes.fromhex(POINT[2:-1])


def test_geometry_and_geography_columns_round_trip_on_spark(session: SqlSession, spark: SparkSession) -> None:
    session.sql("CREATE TABLE geo (id BIGINT, g GEOMETRY(4326), h GEOGRAPHY(4326), m GEOMETRY(3857)) "
                "TBLPROPERTIES ('format-version'='3')")
    table = session.catalog().load_table("db.geo")
    types = {f.name: f.field_type for f in table.schema().fields}
    assert types["g"] == GeometryType() and types["h"] == GeographyType() and types["m"] == GeometryType("EPSG:3857")
    assert str(types["m"]) == "geometry(EPSG:3857)"
    session.sql(f"INSERT INTO geo VALUES (1, ST_GeomFromWKB({POINT}, 4326), ST_GeogFromWKB({POINT}), "
                f"ST_GeomFromWKB({POINT}, 3857)), (2, NULL, NULL, NULL)")
    rows = session.sql("SELECT id, hex(ST_AsBinary(g)), hex(ST_AsBinary(h)), ST_Srid(m) FROM geo ORDER BY id")[-1].rows
    assert rows == [(1, POINT[2:-1], POINT[2:-1], 3857), (2, None, None, None)]
    session.sql("UPDATE geo SET id = 10 WHERE id = 1")  # copy-on-write: Spark rewrites the geospatial values

    table = session.catalog().load_table("db.geo")
    got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": 2, "g": None, "h": None, "m": None}, {"id": 10, "g": POINT_BYTES, "h": POINT_BYTES, "m": POINT_BYTES}]
    ids = {f.name: f.field_id for f in table.schema().fields}
    for task in table.scan().include_column_stats().plan_files():
        f = task.data_file
        assert f.value_counts is not None and f.lower_bounds is not None
        assert f.value_counts[ids["g"]] == f.record_count and ids["id"] in f.lower_bounds
        assert not {ids["g"], ids["h"], ids["m"]} & (set(f.lower_bounds) | set(f.upper_bounds or {}))
        logical = {c.name: str(c.logical_type) for c in pq.ParquetFile(to_local_path(f.file_path)).schema}
        assert logical["g"].startswith("Geometry") and logical["h"].startswith("Geography"), logical
    assert session.sql("DESCRIBE TABLE geo")[-1].rows[1][:2] == ("g", "geometry")


def test_what_spark_or_the_spec_cannot_store_is_refused(session: SqlSession) -> None:
    with pytest.raises(FloeError, match=r"GEOMETRY\(ANY"):  # sqlglot's parse names the type
        session.sql("CREATE TABLE geo_any (id BIGINT, g GEOMETRY(ANY)) TBLPROPERTIES ('format-version'='3')")
    with pytest.raises(UnsupportedError, match="GEOMETRY: Iceberg needs one SRID"):
        parse_type("GEOMETRY")
    with pytest.raises(UnsupportedError, match="spherical"):
        to_spark_type(GeographyType("OGC:CRS84", "vincenty"), column="h")
    with pytest.raises(UnsupportedError, match="no SRID for CRS 'projjson:x'"):
        to_spark_type(GeometryType("projjson:x"), column="g")
    assert from_spark_type(to_spark_type(GeometryType("srid:0"))) == GeometryType("srid:0")
    # A list column sends Spark's writes through the Arrow writer: refused on the driver, nothing written.
    session.sql("CREATE TABLE geo_arrow (id BIGINT, g GEOMETRY(4326), tags ARRAY<INT>) TBLPROPERTIES ('format-version'='3')")
    with pytest.raises(UnsupportedError, match="column 'g' is geometry: the Arrow writer cannot write"):
        session.sql(f"INSERT INTO geo_arrow VALUES (1, ST_GeomFromWKB({POINT}, 4326), array(1))")
    assert session.catalog().load_table("db.geo_arrow").current_snapshot() is None
    table = session.catalog().load_table("db.geo_arrow")
    with pytest.raises(FloeError, match="column 'g'"):  # an Arrow table has no geometry type: binary is refused
        table.append(pa.table({"id": pa.array([1], pa.int64()), "g": pa.array([POINT_BYTES], pa.binary())}))
