"""load_catalog: explicit properties, environment variables, the config file, type inference."""

from __future__ import annotations

from pathlib import Path

import pytest

import floe
from floe.catalog import HadoopCatalog, SqlCatalog
from floe.catalog.loader import catalog_properties
from floe.errors import UnsupportedError, ValidationError


def test_load_catalog_infers_type_from_uri_or_warehouse(tmp_path: Path) -> None:
    sql = floe.load_catalog("a", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    hadoop = floe.load_catalog("b", warehouse=str(tmp_path / "wh"))
    assert isinstance(sql, SqlCatalog) and sql.name == "a"
    assert isinstance(hadoop, HadoopCatalog)


def test_load_catalog_by_name_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOE_CATALOG__PROD__TYPE", "sql")
    monkeypatch.setenv("FLOE_CATALOG__PROD__URI", f"sqlite:///{tmp_path}/env.db")
    monkeypatch.setenv("FLOE_CATALOG__PROD__S3__ENDPOINT", "http://localhost:9000")
    monkeypatch.setenv("FLOE_CATALOG__PROD__WAREHOUSE", str(tmp_path))
    props = catalog_properties("prod")
    assert props["s3.endpoint"] == "http://localhost:9000"
    cat = floe.load_catalog("prod")
    assert isinstance(cat, SqlCatalog) and cat.properties["uri"].endswith("env.db")


def test_load_catalog_by_name_from_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "floe.yaml"
    config.write_text(f"catalog:\n  local:\n    type: hadoop\n    warehouse: {tmp_path}/wh\n")
    monkeypatch.setenv("FLOE_CONFIG", str(config))
    cat = floe.load_catalog("local")
    assert isinstance(cat, HadoopCatalog) and cat.warehouse == f"{tmp_path}/wh"
    override = floe.load_catalog("local", warehouse=str(tmp_path / "other"))
    assert isinstance(override, HadoopCatalog) and override.warehouse == str(tmp_path / "other")


def test_load_catalog_without_configuration_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FLOE_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ValidationError, match="FLOE_CATALOG__NOWHERE__TYPE"):
        floe.load_catalog("nowhere")
    with pytest.raises(UnsupportedError, match="Unknown catalog type"):
        floe.load_catalog("x", type="glue")
