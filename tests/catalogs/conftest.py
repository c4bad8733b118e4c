"""Catalog fixtures: the same tests run against Hadoop (local disk), SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from floe.spec.schema import Schema
from floe.spec.types import IntegerType, LongType, NestedField, StringType

CATALOG_KINDS = ["hadoop", "sqlite", "postgres", "mysql"]


def catalog_props(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """load_catalog properties (plus ``name``) for one catalog kind, unique per test."""
    name = f"c{uuid.uuid4().hex[:12]}"
    warehouse = str(tmp_path / "warehouse")
    if kind == "hadoop":
        return {"name": name, "type": "hadoop", "warehouse": warehouse}
    if kind == "sqlite":
        return {
            "name": name,
            "type": "sql",
            "uri": f"sqlite:///{tmp_path}/catalog.db",
            "warehouse": warehouse,
        }
    if kind == "postgres":
        return {
            "name": name,
            "type": "sql",
            "uri": request.getfixturevalue("postgres_url"),
            "warehouse": warehouse,
        }
    if kind == "mysql":
        return {
            "name": name,
            "type": "sql",
            "uri": request.getfixturevalue("mysql_url"),
            "warehouse": warehouse,
        }
    raise ValueError(kind)


@pytest.fixture(params=CATALOG_KINDS)
def props(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_props(request.param, tmp_path, request)


@pytest.fixture
def schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "data", StringType()),
        NestedField(3, "p", IntegerType()),
    )
