"""Fixtures shared by the Spark SQL test modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> SqlSession:
    """A SQL session on its own embedded catalog (one per module), in database ``db``.

    Modules with another catalog layout (the seeds' hadoop_catalog) define their own ``session``.
    """
    tmp_path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    cfg = FloeConfig.load(
        {"spark.sql.session.timeZone": "UTC"},
        environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")},
        cwd=tmp_path,
    )
    s = make_session(cfg, spark=spark)
    s.sql("CREATE DATABASE db; USE db")
    return s
