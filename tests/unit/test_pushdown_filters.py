"""Which WHERE conjuncts a query pushes into Floe's scan of a table (floe.sql.handlers.pushdown)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
import sqlglot

from floe.spec.schema import Schema
from floe.spec.types import (
    DateType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)
from floe.sql.handlers.pushdown import scan_filter

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "dt", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "v", DoubleType()),
    NestedField(5, "d", DateType()),
    NestedField(6, "s", StructType(NestedField(7, "x", LongType()))),
)
UTC = dt.timezone.utc


def pushed(sql: str, index: int = 0, zone: dt.tzinfo | None = UTC) -> str | None:
    node = sqlglot.parse_one(sql, read="spark")
    expr = scan_filter(node, index, SCHEMA, zone)
    return None if expr is None else str(expr)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM t WHERE id = 5",
    "SELECT * FROM t WHERE id > 5 AND dt = '2024-01-01'",
    "SELECT count(*) FROM t WHERE id IN (1, 2, 3) GROUP BY dt",
    "SELECT * FROM t WHERE id BETWEEN 1 AND 9",
    "SELECT * FROM t WHERE dt LIKE '2024-%'",
    "SELECT * FROM t WHERE d >= DATE '2024-01-01'",
    "SELECT * FROM t WHERE id IS NULL OR id < 0",
    "SELECT * FROM t x WHERE x.id = 5",
    "SELECT * FROM t WHERE NOT (id = 5)",
])
def test_scan_filter_pushes_conjuncts_both_engines_read_alike(sql: str) -> None:
    assert pushed(sql) is not None


@pytest.mark.parametrize("sql", [
    "SELECT * FROM t WHERE v > 1.0",  # NaN orders above every number in Spark
    "SELECT * FROM t WHERE upper(dt) = 'A'",  # a function: Spark's alone
    "SELECT * FROM t WHERE id = '5'",  # a string literal on a number column: Spark casts
    "SELECT * FROM t WHERE dt LIKE '2024_%'",  # '_' is a wildcard, not a prefix
    "SELECT * FROM t WHERE s.x = 1",  # a struct field (reads as a qualifier here)
    "SELECT * FROM t WHERE id IN (SELECT id FROM u)",
    "SELECT * FROM t WHERE ts > TIMESTAMP_NTZ '2024-01-01 00:00:00'",
])
def test_scan_filter_keeps_other_conjuncts_with_spark(sql: str) -> None:
    assert pushed(sql) is None


def test_scan_filter_pushes_only_the_pushable_part_of_a_conjunction() -> None:
    assert pushed("SELECT * FROM t WHERE upper(dt) = 'A' AND id > 3") == str(pushed("SELECT * FROM t WHERE id > 3"))


def test_scan_filter_left_join_pushes_into_the_preserved_side_only() -> None:
    sql = "SELECT * FROM l LEFT JOIN r ON l.id = r.id WHERE r.id IS NULL AND l.id > 3"
    assert pushed(sql, 0) is not None and "id" in str(pushed(sql, 0))
    assert pushed(sql, 1) is None  # pushing r.id IS NULL into r would keep left rows whose match was removed


def test_scan_filter_inner_join_pushes_qualified_columns_per_table() -> None:
    sql = "SELECT * FROM l JOIN r ON l.id = r.id WHERE l.dt = 'a' AND r.id > 5 AND id < 9"
    assert pushed(sql, 0) == str(pushed("SELECT * FROM t WHERE dt = 'a'"))
    assert pushed(sql, 1) == str(pushed("SELECT * FROM t WHERE id > 5"))  # unqualified id is ambiguous: not pushed


def test_scan_filter_right_and_full_joins_push_nothing_into_null_extended_tables() -> None:
    assert pushed("SELECT * FROM l RIGHT JOIN r ON l.id = r.id WHERE l.id > 3", 0) is None
    assert pushed("SELECT * FROM l FULL JOIN r ON l.id = r.id WHERE r.id > 3", 1) is None


def test_scan_filter_timestamp_literal_reads_in_the_session_time_zone() -> None:
    la = zoneinfo.ZoneInfo("America/Los_Angeles")
    local = pushed("SELECT * FROM t WHERE ts >= TIMESTAMP '2024-01-01 00:00:00'", zone=la)
    utc = pushed("SELECT * FROM t WHERE ts >= TIMESTAMP '2024-01-01 08:00:00'", zone=UTC)
    assert local is not None and local == utc
    assert pushed("SELECT * FROM t WHERE ts >= TIMESTAMP '2024-01-01 00:00:00'", zone=None) is None


def test_scan_filter_subquery_tables_get_their_own_where() -> None:
    sql = "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE dt = 'x')"
    assert pushed(sql, 0) is None
    assert pushed(sql, 1) == str(pushed("SELECT * FROM t WHERE dt = 'x'"))
