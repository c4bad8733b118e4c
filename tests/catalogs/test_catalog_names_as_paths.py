"""Names never become paths outside the warehouse, in every catalog (issue #13: ``("a", "../..")``).

The warehouse sits at ``<tmp>/outer/wh`` so that a name escaping it by one or two levels would land in
``<tmp>/outer`` or ``<tmp>``, folders this test owns and can list before and after.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _helpers import open_catalog, write_data_file

import floe
from floe.catalog import hadoop as hadoop_module
from floe.catalog.base import Catalog
from floe.errors import UnsupportedError, ValidationError
from floe.spec.schema import Schema

# (name, the rule the message states)
UNSAFE_NAMES = [
    ("..", "a name cannot be '.' or '..'"),
    (".", "a name cannot be '.' or '..'"),
    ("../..", "a name cannot contain '/' or '\\'"),
    ("a/b", "a name cannot contain '/' or '\\'"),
    ("a\\b", "a name cannot contain '/' or '\\'"),
    ("a\x00b", "a name cannot contain control characters"),
    ("a\nb", "a name cannot contain control characters"),
]
UNSAFE_IDS = ["dotdot", "dot", "dotdot-slash-dotdot", "slash", "backslash", "nul", "newline"]


@pytest.fixture
def walled(props: dict[str, str], tmp_path: Path) -> Catalog:
    """A catalog whose warehouse is ``<tmp>/outer/wh``, with namespace ``db``."""
    cat = open_catalog({**props, "warehouse": str(tmp_path / "outer" / "wh")})
    cat.create_namespace("db")
    return cat


def outside_entries(tmp_path: Path) -> set[str]:
    """Everything under ``tmp_path`` that is not in the warehouse (SQLite's own files excluded)."""
    warehouse = tmp_path / "outer" / "wh"
    return {
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p != warehouse and warehouse not in p.parents and not p.name.startswith("catalog.db")
    }


def expected_message(kind: str, name: str, catalog: Catalog, rule: str) -> str:
    return "^" + re.escape(f"Invalid {kind} name {name!r} in catalog {catalog.name!r}: {rule}") + "$"


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_create_table_unsafe_table_name_raises_one_line_naming_it(
    walled: Catalog, schema: Schema, name: str, rule: str
) -> None:
    with pytest.raises(ValidationError, match=expected_message("table", name, walled, rule)):
        walled.create_table(("db", name), schema)


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_create_table_unsafe_table_name_leaves_nothing_outside_warehouse(
    walled: Catalog, schema: Schema, tmp_path: Path, name: str, rule: str
) -> None:
    before = outside_entries(tmp_path)
    with pytest.raises(ValidationError):
        walled.create_table(("db", name), schema)
    assert outside_entries(tmp_path) == before


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_create_table_unsafe_table_name_creates_no_table(
    walled: Catalog, schema: Schema, name: str, rule: str
) -> None:
    with pytest.raises(ValidationError):
        walled.create_table(("db", name), schema)
    assert walled.list_tables("db") == []


def test_create_table_escaping_name_from_issue_is_refused_and_writes_nothing(
    walled: Catalog, schema: Schema, tmp_path: Path
) -> None:
    before = outside_entries(tmp_path)
    with pytest.raises(ValidationError, match=re.escape("Invalid table name '../..' in catalog")):
        walled.create_table(("a", "../.."), schema)
    assert outside_entries(tmp_path) == before


def test_create_table_explicit_location_with_unsafe_name_is_still_refused(
    walled: Catalog, schema: Schema, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match=re.escape("Invalid table name '..' in catalog")):
        walled.create_table(("db", ".."), schema, location=str(tmp_path / "outer" / "wh" / "db" / "x"))


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_create_table_unsafe_namespace_level_raises_one_line_naming_it(
    walled: Catalog, schema: Schema, tmp_path: Path, name: str, rule: str
) -> None:
    before = outside_entries(tmp_path)
    with pytest.raises(ValidationError, match=expected_message("namespace", name, walled, rule)):
        walled.create_table((name, "t"), schema)
    assert outside_entries(tmp_path) == before


@pytest.mark.parametrize("identifier", [("db", ""), ("", "t")], ids=["empty-table", "empty-namespace"])
def test_create_table_empty_name_raises_one_line(
    walled: Catalog, schema: Schema, identifier: tuple[str, str]
) -> None:
    with pytest.raises(ValidationError, match=r"^[^\n]*empty[^\n]*$"):
        walled.create_table(identifier, schema)


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_create_namespace_unsafe_level_raises_one_line_naming_it(
    walled: Catalog, name: str, rule: str
) -> None:
    with pytest.raises(ValidationError, match=expected_message("namespace", name, walled, rule)):
        walled.create_namespace(("db", name))


@pytest.mark.parametrize(
    "namespace",
    [("..", "evil"), ("..",), ("db", "..", "..", "evil"), ("a/b",)],
    ids=["up-evil", "up", "db-up-up", "slash"],
)
def test_create_namespace_escaping_leaves_nothing_outside_warehouse(
    walled: Catalog, tmp_path: Path, namespace: tuple[str, ...]
) -> None:
    before = outside_entries(tmp_path)
    with pytest.raises(ValidationError):
        walled.create_namespace(namespace)
    assert outside_entries(tmp_path) == before


@pytest.mark.parametrize("namespace", [("..", "evil"), ("a/b",)], ids=["up-evil", "slash"])
def test_create_namespace_escaping_lists_no_new_namespace(
    walled: Catalog, namespace: tuple[str, ...]
) -> None:
    with pytest.raises(ValidationError):
        walled.create_namespace(namespace)
    assert walled.list_namespaces() == [("db",)]


def test_create_namespace_empty_level_raises_one_line(walled: Catalog) -> None:
    with pytest.raises(ValidationError, match=r"^[^\n]*empty[^\n]*$"):
        walled.create_namespace(("db", ""))


@pytest.mark.parametrize("name", ["a.b", "...", "a..b", ".hidden", "with space", "ünïcode"])
def test_create_table_unusual_but_safe_name_stays_inside_warehouse(
    walled: Catalog, schema: Schema, tmp_path: Path, name: str
) -> None:
    table = walled.create_table(("db", name), schema)
    assert table.location() == str(tmp_path / "outer" / "wh" / "db" / name)


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_rename_table_unsafe_target_is_refused_naming_it(
    walled: Catalog, schema: Schema, props: dict[str, str], name: str, rule: str
) -> None:
    walled.create_table("db.t", schema)
    if props["type"] == "hadoop":  # Hadoop tables cannot be renamed at all
        with pytest.raises(UnsupportedError):
            walled.rename_table("db.t", ("db", name))
        return
    with pytest.raises(ValidationError, match=expected_message("table", name, walled, rule)):
        walled.rename_table("db.t", ("db", name))


def test_rename_table_unsafe_target_keeps_source(walled: Catalog, schema: Schema) -> None:
    walled.create_table("db.t", schema)
    with pytest.raises((ValidationError, UnsupportedError)):
        walled.rename_table("db.t", ("db", ".."))
    assert walled.table_exists("db.t")


@pytest.mark.parametrize(("name", "rule"), UNSAFE_NAMES, ids=UNSAFE_IDS)
def test_register_table_unsafe_name_raises_one_line_naming_it(
    walled: Catalog, schema: Schema, name: str, rule: str
) -> None:
    table = walled.create_table("db.t", schema)
    assert table.metadata_location is not None
    with pytest.raises(ValidationError, match=expected_message("table", name, walled, rule)):
        walled.register_table(("db", name), table.metadata_location)


def test_register_table_unsafe_name_adds_no_table(walled: Catalog, schema: Schema) -> None:
    table = walled.create_table("db.t", schema)
    assert table.metadata_location is not None
    with pytest.raises(ValidationError):
        walled.register_table(("db", "../x"), table.metadata_location)
    assert walled.list_tables("db") == [("db", "t")]


def test_drop_table_purge_keeps_sibling_folders(walled: Catalog, schema: Schema, tmp_path: Path) -> None:
    table = walled.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    sibling = tmp_path / "outer" / "wh" / "db" / "t_sibling" / "keep.txt"
    sibling.parent.mkdir(parents=True)
    sibling.write_text("keep")
    walled.drop_table("db.t", purge=True)
    assert sibling.read_text() == "keep"


def test_drop_table_purge_keeps_folders_outside_warehouse(
    walled: Catalog, schema: Schema, tmp_path: Path
) -> None:
    table = walled.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    outside = tmp_path / "outer" / "keep.txt"
    outside.write_text("keep")
    walled.drop_table("db.t", purge=True)
    assert outside.read_text() == "keep"


def test_drop_table_purge_removes_the_table(walled: Catalog, schema: Schema) -> None:
    table = walled.create_table("db.t", schema)
    table.append([write_data_file(table, [{"id": 1, "data": "a", "p": 1}])])
    walled.drop_table("db.t", purge=True)
    assert not walled.table_exists("db.t")


# -- Hadoop: names are folders, so every lookup is checked, and drops stay inside the warehouse --------------
def _hadoop(tmp_path: Path) -> Catalog:
    cat = floe.load_catalog("h", type="hadoop", warehouse=str(tmp_path / "outer" / "wh"))
    cat.create_namespace("db")
    return cat


def _victim(tmp_path: Path, schema: Schema) -> Path:
    """A Hadoop table at ``<tmp>/outer/victim``, outside the warehouse (``("db", "../../victim")``)."""
    victim = floe.load_catalog("v", type="hadoop", warehouse=str(tmp_path / "outer"))
    victim.create_namespace("victim_ns")
    victim.create_table("victim_ns.victim", schema)
    return tmp_path / "outer" / "victim_ns" / "victim"


def test_hadoop_load_table_escaping_name_is_refused(tmp_path: Path, schema: Schema) -> None:
    cat = _hadoop(tmp_path)
    _victim(tmp_path, schema)
    with pytest.raises(ValidationError, match=re.escape("Invalid namespace name '..' in catalog 'h'")):
        cat.load_table(("..", "victim_ns", "victim"))


def test_hadoop_drop_table_purge_escaping_name_keeps_outside_table(tmp_path: Path, schema: Schema) -> None:
    cat = _hadoop(tmp_path)
    victim = _victim(tmp_path, schema)
    with pytest.raises(ValidationError):
        cat.drop_table(("..", "victim_ns", "victim"), purge=True)
    assert (victim / "metadata" / "v1.metadata.json").is_file()


def test_hadoop_drop_namespace_escaping_name_keeps_outside_folder(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    (tmp_path / "outer" / "empty").mkdir()
    with pytest.raises(ValidationError):
        cat.drop_namespace(("..", "empty"))
    assert (tmp_path / "outer" / "empty").is_dir()


def test_hadoop_namespace_exists_escaping_name_is_refused(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    with pytest.raises(ValidationError, match=re.escape("Invalid namespace name '..' in catalog 'h'")):
        cat.namespace_exists(("..",))


def _without_name_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the name checks off, to reach the second line of defence (as a table with an odd name would)."""
    monkeypatch.setattr(hadoop_module, "check_identifier_segments", lambda *a, **k: None)
    monkeypatch.setattr(hadoop_module, "check_namespace_segments", lambda *a, **k: None)


def test_hadoop_drop_table_purge_outside_warehouse_refused_by_second_check(
    tmp_path: Path, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = _hadoop(tmp_path)
    victim = _victim(tmp_path, schema)
    _without_name_checks(monkeypatch)
    with pytest.raises(
        ValidationError, match=r"^Refusing to purge table \.\.\.victim_ns\.victim in catalog 'h': "
    ):
        cat.drop_table(("..", "victim_ns", "victim"), purge=True)
    assert (victim / "metadata" / "v1.metadata.json").is_file()


def test_hadoop_drop_table_outside_warehouse_refused_by_second_check(
    tmp_path: Path, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = _hadoop(tmp_path)
    victim = _victim(tmp_path, schema)
    _without_name_checks(monkeypatch)
    with pytest.raises(ValidationError, match=r"^Refusing to drop table "):
        cat.drop_table(("..", "victim_ns", "victim"))
    assert (victim / "metadata" / "v1.metadata.json").is_file()


def test_hadoop_drop_namespace_warehouse_itself_refused_by_second_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = _hadoop(tmp_path)
    cat.drop_namespace("db")
    _without_name_checks(monkeypatch)
    with pytest.raises(ValidationError, match=r"^Refusing to drop namespace "):
        cat.drop_namespace(("db", ".."))
    assert (tmp_path / "outer" / "wh").is_dir()


# -- SQL: statements reach the same catalog checks (no Spark needed for these) -------------------------------
@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("CREATE NAMESPACE h.`..`.`evil`", "Invalid namespace name '..' in catalog 'h'"),
        ("CREATE TABLE h.db.`../..` (id bigint)", "Invalid table name '../..' in catalog 'h'"),
        ("CREATE TABLE h.`..`.t (id bigint)", "Invalid namespace name '..' in catalog 'h'"),
    ],
    ids=["create-namespace", "create-table", "create-table-namespace"],
)
def test_sql_statement_unsafe_name_raises_catalog_message(
    tmp_path: Path, statement: str, message: str
) -> None:
    from floe.config import FloeConfig
    from floe.sql.engine import SqlSession
    from floe.sql.handlers import register_handlers

    cfg = FloeConfig.load(
        {
            "spark.sql.catalog.h.type": "hadoop",
            "spark.sql.catalog.h.warehouse": str(tmp_path / "outer" / "wh"),
        },
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    session = SqlSession(cfg)
    register_handlers(session)
    session.sql("CREATE NAMESPACE h.db")
    with pytest.raises(ValidationError, match=re.escape(message)):
        session.sql(statement)
