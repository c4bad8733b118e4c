"""load_catalog: names resolved through floe.config (env > floe.toml > embedded), keyword overrides, types."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import floe
from floe.catalog import HadoopCatalog, SqlCatalog
from floe.catalog.loader import open_catalog
from floe.config import resolve_catalog_properties
from floe.errors import UnsupportedError, ValidationError


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory, HOME and FLOE_HOME of the test's own, with no FLOE_* variables set."""
    for var in list(os.environ):
        if var.startswith("FLOE_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLOE_HOME", str(tmp_path / "fh"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_load_catalog_infers_type_from_uri_or_warehouse(isolated: Path) -> None:
    sql = floe.load_catalog("a", uri=f"sqlite:///{isolated}/c.db", warehouse=str(isolated))
    hadoop = floe.load_catalog("b", warehouse=str(isolated / "wh"))
    assert isinstance(sql, SqlCatalog)
    assert sql.name == "a"
    assert isinstance(hadoop, HadoopCatalog)


def test_load_catalog_by_name_from_environment(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOE_CATALOG__PROD__TYPE", "sql")
    monkeypatch.setenv("FLOE_CATALOG__PROD__URI", f"sqlite:///{isolated}/env.db")
    monkeypatch.setenv("FLOE_CATALOG__PROD__S3__ENDPOINT", "http://localhost:9000")
    monkeypatch.setenv("FLOE_CATALOG__PROD__WAREHOUSE", str(isolated))
    name, props = resolve_catalog_properties("prod")
    assert name == "prod"
    assert props["s3.endpoint"] == "http://localhost:9000"
    cat = floe.load_catalog("prod")
    assert isinstance(cat, SqlCatalog)
    assert cat.properties["uri"].endswith("env.db")


def test_load_catalog_by_name_from_toml_file_keywords_win(isolated: Path) -> None:
    (isolated / "floe.toml").write_text(f'[catalog.local]\ntype = "hadoop"\nwarehouse = "{isolated}/wh"\n')
    cat = floe.load_catalog("local")
    assert isinstance(cat, HadoopCatalog)
    assert cat.warehouse == f"{isolated}/wh"
    override = floe.load_catalog("local", warehouse=str(isolated / "other"))
    assert isinstance(override, HadoopCatalog)
    assert override.warehouse == str(isolated / "other")


def test_load_catalog_environment_over_file(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated / "floe.toml").write_text(f'[catalog.local]\ntype = "hadoop"\nwarehouse = "{isolated}/file"\n')
    monkeypatch.setenv("FLOE_CATALOG__LOCAL__WAREHOUSE", str(isolated / "env"))
    cat = floe.load_catalog("local")
    assert isinstance(cat, HadoopCatalog)
    assert cat.warehouse == str(isolated / "env")


def test_load_catalog_no_name_is_embedded_default_in_floe_home(isolated: Path) -> None:
    cat = floe.load_catalog()
    assert isinstance(cat, SqlCatalog)
    assert cat.name == "floe"
    assert cat.properties["uri"] == f"sqlite:///{isolated / 'fh' / 'catalog.db'}"
    assert (isolated / "fh").is_dir()  # the embedded catalog's folder is created on first use


def test_load_catalog_no_name_follows_configured_default(isolated: Path) -> None:
    (isolated / "floe.toml").write_text(
        f'default_catalog = "lake"\n[catalog.lake]\nwarehouse = "{isolated}/lake"\n'
    )
    cat = floe.load_catalog()
    assert isinstance(cat, HadoopCatalog)
    assert cat.name == "lake"


def test_load_catalog_explicit_floe_properties_replace_embedded(isolated: Path) -> None:
    cat = floe.load_catalog("floe", type="hadoop", warehouse=str(isolated / "wh"))
    assert isinstance(cat, HadoopCatalog)
    assert "uri" not in cat.properties  # the embedded catalog's SQLite uri does not leak in


def test_load_catalog_incomplete_other_catalog_does_not_block(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOE_CATALOG__HALF__S3__ENDPOINT", "http://localhost:9000")  # no type: incomplete
    cat = floe.load_catalog("b", warehouse=str(isolated / "wh"))
    assert isinstance(cat, HadoopCatalog)
    with pytest.raises(ValidationError, match="'half' has no type"):
        floe.load_catalog("half")


def test_load_catalog_jdbc_type_from_environment_becomes_sql(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOE_CATALOG__J__TYPE", "jdbc")
    monkeypatch.setenv("FLOE_CATALOG__J__URI", f"jdbc:sqlite:{isolated}/j.db")
    monkeypatch.setenv("FLOE_CATALOG__J__WAREHOUSE", str(isolated / "wh"))
    cat = floe.load_catalog("j")
    assert isinstance(cat, SqlCatalog)
    assert cat.properties["uri"] == f"sqlite:///{isolated}/j.db"


def test_load_catalog_without_configuration_names_the_fix(isolated: Path) -> None:
    with pytest.raises(ValidationError, match="FLOE_CATALOG__NOWHERE__TYPE"):
        floe.load_catalog("nowhere")
    with pytest.raises(UnsupportedError, match="Unknown catalog type"):
        floe.load_catalog("x", type="glue")


def test_load_catalog_rest_uri_infers_rest_type(isolated: Path) -> None:
    _, props = resolve_catalog_properties("r", {"uri": "https://catalog.example.com"})
    assert props["type"] == "rest"


def test_load_catalog_non_iceberg_spark_catalog_raises(isolated: Path) -> None:
    (isolated / "floe.toml").write_text('[spark]\n"spark.sql.catalog.other" = "com.example.OtherCatalog"\n')
    with pytest.raises(ValidationError, match="not an Iceberg catalog"):
        floe.load_catalog("other")


def test_open_catalog_reads_no_configuration(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOE_CATALOG__P__WAREHOUSE", str(isolated / "from-env"))
    cat = open_catalog("p", {"type": "hadoop", "warehouse": str(isolated / "given")})
    assert isinstance(cat, HadoopCatalog)
    assert cat.warehouse == str(isolated / "given")
