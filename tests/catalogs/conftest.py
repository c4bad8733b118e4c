"""Catalog fixtures: the same tests run against Hadoop (local disk), SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import catalog_props

from floe.spec.schema import Schema
from floe.spec.types import IntegerType, LongType, NestedField, StringType

CATALOG_KINDS = ["hadoop", "sqlite", "postgres", "mysql"]


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
