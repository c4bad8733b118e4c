"""DuckDB (its iceberg extension, from PyPI) as a client of ``floe serve``: it creates a table, inserts,
deletes and updates (its merge-on-read delete files), Floe reads exactly DuckDB's rows and appends, and
DuckDB reads Floe's commit."""

from __future__ import annotations

from pathlib import Path

import duckdb
import duckdb_extensions
import pyarrow as pa
from _rest import served_catalog


def _duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for extension in ("avro", "httpfs", "iceberg"):  # httpfs: DuckDB's REST client
        duckdb_extensions.import_extension(extension, con=con)
    return con


def test_duckdb_writes_through_floe_serve_and_each_reads_the_other(tmp_path: Path) -> None:
    with served_catalog(tmp_path) as served:
        served.backing.create_namespace("db")
        con = _duck()
        con.sql(f"ATTACH '' AS cat (TYPE iceberg, ENDPOINT '{served.uri}', AUTHORIZATION_TYPE 'none')")
        con.sql("CREATE TABLE cat.db.dt (id BIGINT, s VARCHAR, d DATE)")
        con.sql("INSERT INTO cat.db.dt SELECT range, 'x' || range, DATE '2024-01-01' + range::INT FROM range(0, 50)")
        con.sql("INSERT INTO cat.db.dt VALUES (100, 'hundred', NULL)")
        con.sql("DELETE FROM cat.db.dt WHERE id % 5 = 0")
        con.sql("UPDATE cat.db.dt SET s = 'updated' WHERE id % 5 = 1")

        def duck_rows() -> list[tuple[object, ...]]:
            return sorted(con.sql("SELECT id, s, d FROM cat.db.dt").fetchall())

        table = served.client().load_table("db.dt")
        kinds = {e.data_file.content.name for t in table.scan().plan_files() for e in t.deletes}
        assert kinds, "DuckDB's DELETE/UPDATE wrote no delete files: the read below would prove nothing"
        ours = table.scan().to_arrow().sort_by("id")
        expected = duck_rows()
        assert len(expected) == 40
        assert [tuple(r.values()) for r in ours.to_pylist()] == expected

        table.append(pa.table({"id": pa.array([200, 201], pa.int64()), "s": ["floe", "floe"], "d": pa.array([None, None], pa.date32())}))
        con.sql("DETACH cat")  # DuckDB caches what it loaded: attach again to see Floe's commits
        con.sql(f"ATTACH '' AS cat (TYPE iceberg, ENDPOINT '{served.uri}', AUTHORIZATION_TYPE 'none')")
        assert duck_rows() == sorted([*expected, (200, "floe", None), (201, "floe", None)])
