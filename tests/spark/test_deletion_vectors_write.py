"""Merge-on-read changes of format v3 tables write deletion vectors (spec: v3 adds no position delete files):
one vector per data file holding every deleted position (earlier vectors merged and replaced), which
Iceberg Java reads back, also when Java wrote the earlier vectors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from floe.cli.sql import make_session
from floe.config import FloeConfig
from floe.sql.engine import SqlSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

_CREATE = (
    "CREATE TABLE c.db.dv (id bigint, p string) USING iceberg PARTITIONED BY (p) "
    "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
)


def _session(spark: SparkSession, warehouse: Path, tmp_path: Path) -> SqlSession:
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.catalog.c": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.c.type": "hadoop",
        "spark.sql.catalog.c.warehouse": f"file:{warehouse}",
    }
    cfg = FloeConfig.load(conf, environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / ".floe")}, cwd=tmp_path)
    return make_session(cfg, spark=spark)


def _ids(session: SqlSession) -> list[int]:
    return sorted(r[0] for r in session.sql("SELECT id FROM c.db.dv")[-1].rows)


def _delete_files(session: SqlSession) -> list[tuple[Any, ...]]:
    return session.sql("SELECT file_format, referenced_data_file, record_count FROM c.db.dv.delete_files")[-1].rows


@pytest.fixture
def changed(spark: SparkSession, tmp_path: Path) -> tuple[SqlSession, Path, list[int]]:
    warehouse = tmp_path / "wh"
    session = _session(spark, warehouse, tmp_path)
    session.sql(_CREATE)
    session.sql("INSERT INTO c.db.dv SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range(40)")
    session.sql("DELETE FROM c.db.dv WHERE id < 6")
    session.sql("DELETE FROM c.db.dv WHERE id IN (10, 11, 12)")  # the same data files again
    session.sql("UPDATE c.db.dv SET p = p WHERE id = 20")
    session.sql("MERGE INTO c.db.dv t USING (SELECT 21 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    expected = [i for i in range(40) if i >= 6 and i not in (10, 11, 12, 21)]
    return session, warehouse, expected


def test_v3_merge_on_read_writes_only_deletion_vectors(changed: tuple[SqlSession, Path, list[int]]) -> None:
    session, _, _ = changed
    assert {r[0] for r in _delete_files(session)} == {"PUFFIN"}


def test_v3_each_data_file_has_one_deletion_vector(changed: tuple[SqlSession, Path, list[int]]) -> None:
    session, _, _ = changed
    per_file = Counter(r[1] for r in _delete_files(session))
    assert max(per_file.values()) == 1


def test_v3_deletion_vectors_hold_every_deleted_row(changed: tuple[SqlSession, Path, list[int]]) -> None:
    session, _, expected = changed
    deleted = 40 - len(expected) + 1  # the update deletes id 20's old row and adds it again
    assert sum(r[2] for r in _delete_files(session)) == deleted


def test_v3_rows_after_changes(changed: tuple[SqlSession, Path, list[int]]) -> None:
    session, _, expected = changed
    assert _ids(session) == expected


@pytest.mark.slow
def test_java_reads_floe_deletion_vectors(changed: tuple[SqlSession, Path, list[int]], jsql: Any) -> None:
    _, warehouse, expected = changed
    out = jsql.run(["SELECT id FROM c.db.dv ORDER BY id"], jsql.hadoop_catalog("c", warehouse))
    assert [r[0] for r in out[0]["rows"]] == expected


@pytest.mark.slow
def test_floe_merges_java_deletion_vectors(spark: SparkSession, tmp_path: Path, jsql: Any) -> None:
    warehouse = tmp_path / "wh"
    conf = jsql.hadoop_catalog("c", warehouse)
    jsql.run([_CREATE, "INSERT INTO c.db.dv SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range(20)",
              "DELETE FROM c.db.dv WHERE id IN (2, 3)"], conf)
    session = _session(spark, warehouse, tmp_path)
    session.sql("DELETE FROM c.db.dv WHERE id IN (4, 5)")
    expected = [i for i in range(20) if i not in (2, 3, 4, 5)]
    assert _ids(session) == expected
    per_file = Counter(r[1] for r in _delete_files(session))
    assert max(per_file.values()) == 1
    out = jsql.run(["SELECT id FROM c.db.dv ORDER BY id"], conf)
    assert [r[0] for r in out[0]["rows"]] == expected
