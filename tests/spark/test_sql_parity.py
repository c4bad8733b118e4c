"""SQL parity with Iceberg Java: each scenario of tests/spark/parity runs on Floe and matches Java's results.

Java's results are recorded in parity/java (``python tests/spark/_sql_parity.py record``). Every run checks
that each record holds the scenario's statements as they are now (an edited scenario needs a new record);
``make test-parity-java`` re-runs Java on every scenario to prove the recorded results are still Java's
(about 10 minutes of Iceberg Java on 2 cores, so not in CI: Java's version is pinned by ../shared/tools).
``python tests/spark/_sql_parity.py compare`` prints every difference and the totals (statements run,
scenarios matching).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _sql_parity import (
    compare,
    load_record,
    normalise,
    record_is_of,
    run_floe,
    run_java,
    scenario_names,
    statements_of,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.conftest import Jsql

pytestmark = pytest.mark.spark

# Scenarios with a known difference from Java, each with what differs (the test fails once they match).
KNOWN_DIFFERENCES: dict[str, str] = {
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[n], strict=True))
     if n in KNOWN_DIFFERENCES else n for n in scenario_names()],
)
def test_scenario_matches_java(name: str, spark: SparkSession, tmp_path: Path) -> None:
    java, java_root = load_record(name)
    floe = run_floe(spark, statements_of(name), tmp_path)
    result = compare(name, java, java_root, floe, tmp_path)
    assert result.matches, result.report()


@pytest.mark.parametrize("name", scenario_names())
def test_java_record_holds_the_scenario_statements(name: str) -> None:
    recorded, recorded_root = load_record(name)
    stale = record_is_of(statements_of(name), recorded, recorded_root)
    assert stale is None, f"{name}: the Java record is stale ({stale}); re-record: python tests/spark/_sql_parity.py record {name}"


@pytest.mark.java_record
@pytest.mark.parametrize("name", scenario_names())
def test_java_record_is_current(name: str, jsql: Jsql, tmp_path: Path) -> None:
    recorded, recorded_root = load_record(name)
    fresh = run_java(jsql.command, statements_of(name), tmp_path)
    assert [normalise(r, recorded_root) for r in recorded] == [normalise(r, tmp_path) for r in fresh]
