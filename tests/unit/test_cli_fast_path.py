"""The inspection commands' read-only SQLite path: the SQL catalog's answers, minus SQLAlchemy and pyarrow."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from floe.catalog.sql import SqlCatalog
from floe.catalog.sqlite_reader import SqliteCatalogReader, open_sqlite_reader, sqlite_database_path
from floe.errors import NoSuchNamespaceError, NoSuchTableError
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField

REPO = Path(__file__).resolve().parents[2]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
NAMESPACES = [("db",), ("db", "inner"), ("a_b",), ("aXb", "child"), ("p%q",), ("empty",)]
TABLES = [
    ("db", "t1"),
    ("db", "t2"),
    ("db", "inner", "t3"),
    ("a_b", "t4"),
    ("aXb", "child", "t5"),
    ("p%q", "t6"),
]
# Probes include LIKE metacharacters and case (SQLite's LIKE ignores ASCII case: both must agree anyway).
NS_PROBES = [
    *[(), ("db",), ("DB",), ("db", "inner"), ("a_b",), ("aXb",)],
    *[("a%",), ("p%q",), ("nope",), ("empty",)],
]


def _props(db: Path, warehouse: Path) -> dict[str, str]:
    return {"type": "sql", "uri": f"sqlite:///{db}", "warehouse": str(warehouse)}


def _data_file(table_location: str, i: int) -> DataFile:
    return DataFile(
        content=FileContent.DATA,
        file_path=f"{table_location}/data/{i}.parquet",
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=10 + i,
        file_size_in_bytes=100,
    )


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SqlCatalog, SqliteCatalogReader]]:
    """A SQL catalog on a SQLite file with nested and oddly named namespaces, a view row and a second
    catalog in the same file; and the reader on the same file."""
    root = tmp_path_factory.mktemp("fast_path")
    props = _props(root / "catalog.db", root / "wh")
    catalog = SqlCatalog("cat", **{k: v for k, v in props.items() if k != "type"})
    for ns in NAMESPACES:
        catalog.create_namespace(ns)
    for ident in TABLES:
        catalog.create_table(ident, SCHEMA)
    other = SqlCatalog("other", **{k: v for k, v in props.items() if k != "type"})
    other.create_namespace(("db",))
    other.create_table(("db", "elsewhere"), SCHEMA)
    with sqlite3.connect(root / "catalog.db") as conn:  # a view shares the table in Java's V1 layout
        conn.execute(
            "INSERT INTO iceberg_tables VALUES ('cat', 'db', 'v1', '/x/v1.metadata.json', NULL, 'VIEW')"
        )
    reader = open_sqlite_reader("cat", props)
    assert reader is not None
    yield catalog, reader
    reader.close()
    catalog.close()
    other.close()


def test_reader_lists_and_probes_exactly_like_sql_catalog(
    catalogs: tuple[SqlCatalog, SqliteCatalogReader],
) -> None:
    catalog, reader = catalogs
    for ns in NS_PROBES:
        assert reader.namespace_exists(ns) == catalog.namespace_exists(ns), ns
    for ns in [(), ("db",), ("aXb",)]:
        assert reader.list_namespaces(ns) == catalog.list_namespaces(ns), ns
    for ns in NAMESPACES:
        assert reader.list_tables(ns) == catalog.list_tables(ns), ns
    assert reader.list_tables(("db",)) == [("db", "t1"), ("db", "t2")]  # no view, no other catalog
    for ident in [*TABLES, ("db", "v1"), ("db", "elsewhere"), ("db", "nope")]:
        assert reader.table_exists(ident) == catalog.table_exists(ident), ident


def test_reader_missing_namespace_and_table_errors_match(
    catalogs: tuple[SqlCatalog, SqliteCatalogReader],
) -> None:
    catalog, reader = catalogs
    for call in ("list_tables", "list_namespaces"):
        with pytest.raises(NoSuchNamespaceError) as expected:
            getattr(catalog, call)(("nope",))
        with pytest.raises(NoSuchNamespaceError) as got:
            getattr(reader, call)(("nope",))
        assert str(got.value) == str(expected.value)
    with pytest.raises(NoSuchTableError) as expected:
        catalog.table_operations(("db", "nope")).load()
    with pytest.raises(NoSuchTableError) as got:
        reader.table_operations(("db", "nope")).load()
    assert str(got.value) == str(expected.value) == "Table does not exist: db.nope (catalog cat)"


def test_reader_loads_current_metadata_after_each_commit(
    catalogs: tuple[SqlCatalog, SqliteCatalogReader],
) -> None:
    catalog, reader = catalogs
    table = catalog.load_table(("db", "t1"))
    for i in range(2):
        table.new_fast_append().append_file(_data_file(table.location(), i)).commit()
        expected, expected_location = catalog.table_operations(("db", "t1")).load()
        metadata, location = reader.table_operations(("db", "t1")).load()
        assert location == expected_location
        assert metadata == expected
        assert len(metadata.snapshots) == i + 1


def test_reader_on_catalog_without_iceberg_type_column(tmp_path: Path) -> None:
    # PyIceberg creates iceberg_tables without Java's iceberg_type column.
    db = tmp_path / "pyiceberg.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) "
            "NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), "
            "previous_metadata_location VARCHAR(1000), "
            "PRIMARY KEY (catalog_name, table_namespace, table_name))"
        )
        conn.execute(
            "CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL, namespace "
            "VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL, property_value VARCHAR(1000), "
            "PRIMARY KEY (catalog_name, namespace, property_key))"
        )
        conn.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', 't', '/m.json', NULL)")
    props = _props(db, tmp_path / "wh")
    reader = open_sqlite_reader("c", props)
    catalog = SqlCatalog("c", **{k: v for k, v in props.items() if k != "type"})
    assert reader is not None
    assert reader.list_tables(("ns",)) == catalog.list_tables(("ns",)) == [("ns", "t")]
    assert reader.list_namespaces() == catalog.list_namespaces() == [("ns",)]
    assert reader.current_location(("ns", "t")) == "/m.json"
    reader.close()
    catalog.close()


def test_reader_declines_what_only_the_sql_catalog_can_answer(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()  # a database without the catalog tables: the SQL catalog creates them
    assert open_sqlite_reader("c", _props(tmp_path / "missing.db", tmp_path)) is None
    assert not (tmp_path / "missing.db").exists()  # the reader never creates the database
    assert open_sqlite_reader("c", _props(empty, tmp_path)) is None
    for uri in ("sqlite://", "sqlite:///:memory:", f"sqlite:///{empty}?mode=ro", "postgresql://h/db"):
        assert sqlite_database_path({"type": "sql", "uri": uri}) is None, uri
    assert sqlite_database_path({"type": "hadoop", "uri": f"sqlite:///{empty}"}) is None
    relative = {"type": "sql", "uri": "sqlite:///rel/a%20b.db"}  # as SQLAlchemy: unquoted, from the cwd
    assert sqlite_database_path(relative) == os.path.abspath("rel/a b.db")


def _run(code: str, home: Path) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    environ.update(PYTHONPATH=str(REPO), FLOE_HOME=str(home), COLUMNS="200")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=home, env=environ, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _inspect_code(commands: list[list[str]], extra: list[str]) -> str:
    """Python that runs each command in-process, prints its output (repr), then the heavy modules loaded."""
    return (
        "import contextlib, io, sys\n"
        "from floe.cli.main import main\n"
        f"for args in {commands!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        f"        assert main([*args, *{extra!r}]) == 0\n"
        "    print(repr(out.getvalue()))\n"
        "print('LOADED', *[m for m in ('sqlalchemy', 'pyarrow', 'numpy') if m in sys.modules])\n"
    )


def test_cli_inspection_same_output_as_sql_catalog_without_sqlalchemy_or_pyarrow(tmp_path: Path) -> None:
    from floe.catalog.loader import open_catalog
    from floe.config import FloeConfig

    config = FloeConfig.load(environ={"FLOE_HOME": str(tmp_path), "HOME": str(tmp_path)}, cwd=tmp_path)
    catalog = open_catalog("floe", config.catalogs["floe"])
    catalog.create_namespace(("db",))  # type: ignore[attr-defined]
    table = catalog.create_table(("db", "t"), SCHEMA)  # type: ignore[attr-defined]
    for i in range(3):
        table.new_fast_append().append_file(_data_file(table.location(), i)).commit()
    db = tmp_path / "catalog.db"
    commands = [["tables"], *([cmd, "db.t"] for cmd in ("describe", "history", "snapshots", "files"))]
    # sqlite+pysqlite:// is the same database through the same driver, but only the SQL catalog opens it.
    via_sqlalchemy = ["--conf", f"spark.sql.catalog.floe.uri=sqlite+pysqlite:///{db}"]
    fast = _run(_inspect_code(commands, []), tmp_path)
    slow = _run(_inspect_code(commands, via_sqlalchemy), tmp_path)
    assert fast[-1] == "LOADED"
    assert slow[-1].startswith("LOADED sqlalchemy")  # the comparison really went through SQLAlchemy
    assert fast[:-1] == slow[:-1]
    assert "db" in fast[0]
    assert "t" in fast[0]
    assert len(fast) == len(commands) + 1


def test_cli_tables_fresh_home_falls_back_and_creates_catalog(tmp_path: Path) -> None:
    lines = _run(
        "from floe.cli.main import main\nprint('RC', main(['tables', '--format', 'csv']))\n", tmp_path
    )
    assert lines == ["namespace,table", "RC 0"]
    assert (tmp_path / "catalog.db").is_file()
