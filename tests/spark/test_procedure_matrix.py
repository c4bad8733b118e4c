"""Every procedure Floe supports, on format v1, v2 and v3 tables: Floe runs it (through ``spark.sql`` of an
attached session, on the JDBC SQLite catalog Iceberg Java shares), then Iceberg Java (one jsql call per
format version) and PyIceberg read each table, and both must see the rows Floe sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _sql_parity import catalog_conf, json_value, run_floe

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.conftest import Jsql

pytestmark = pytest.mark.spark

_ROWS = "(1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')"


def _table(name: str, version: int, *, mor: bool = False) -> list[str]:
    props = f"'format-version'='{version}'"
    if mor:
        props += ", 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read'"
    return [
        (f"CREATE TABLE cat.db.{name} (id bigint, data string, p string) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ({props})"),
        f"INSERT INTO cat.db.{name} VALUES {_ROWS}",
        f"INSERT INTO cat.db.{name} VALUES (4, 'd', 'y')",
    ]


def _procedures(version: int, root: Path) -> dict[str, list[str]]:
    """Per procedure, the statements that set its table up and call it (table ``cat.db.<procedure>``)."""
    out: dict[str, list[str]] = {
        "rollback_to_snapshot": [*_table("rollback_to_snapshot", version),
                                 ("CALL cat.system.rollback_to_snapshot('db.rollback_to_snapshot', "
                                 "${snapshot:db.rollback_to_snapshot:0})")],
        "rollback_to_timestamp": [*_table("rollback_to_timestamp", version),
                                  ("CALL cat.system.rollback_to_timestamp('db.rollback_to_timestamp', "
                                  "TIMESTAMP '${timestamp:db.rollback_to_timestamp:1}')")],
        "set_current_snapshot": [*_table("set_current_snapshot", version),
                                 ("CALL cat.system.set_current_snapshot('db.set_current_snapshot', "
                                 "${snapshot:db.set_current_snapshot:0})")],
        "cherrypick_snapshot": [*_table("cherrypick_snapshot", version),
                                "ALTER TABLE cat.db.cherrypick_snapshot SET TBLPROPERTIES ('write.wap.enabled'='true')",
                                "SET spark.wap.id = w1",
                                "INSERT INTO cat.db.cherrypick_snapshot VALUES (5, 'e', 'x')",
                                "RESET spark.wap.id",
                                ("CALL cat.system.cherrypick_snapshot('db.cherrypick_snapshot', "
                                "${snapshot:db.cherrypick_snapshot:2})")],
        "publish_changes": [*_table("publish_changes", version),
                            "ALTER TABLE cat.db.publish_changes SET TBLPROPERTIES ('write.wap.enabled'='true')",
                            "SET spark.wap.id = w2",
                            "INSERT INTO cat.db.publish_changes VALUES (6, 'f', 'y')",
                            "RESET spark.wap.id",
                            "CALL cat.system.publish_changes('db.publish_changes', 'w2')"],
        "fast_forward": [*_table("fast_forward", version),
                         "ALTER TABLE cat.db.fast_forward CREATE BRANCH b1",
                         "INSERT INTO cat.db.fast_forward.branch_b1 VALUES (7, 'g', 'x')",
                         "CALL cat.system.fast_forward('db.fast_forward', 'main', 'b1')"],
        "ancestors_of": [*_table("ancestors_of", version), "CALL cat.system.ancestors_of('db.ancestors_of')"],
        "expire_snapshots": [*_table("expire_snapshots", version),
                             ("CALL cat.system.expire_snapshots(table => 'db.expire_snapshots', "
                             "older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)")],
        "remove_orphan_files": [*_table("remove_orphan_files", version),
                                "CALL cat.system.remove_orphan_files(table => 'db.remove_orphan_files', dry_run => true)"],
        "rewrite_manifests": [*_table("rewrite_manifests", version),
                              "CALL cat.system.rewrite_manifests('db.rewrite_manifests')"],
        "rewrite_data_files": [*_table("rewrite_data_files", version),
                               "CALL cat.system.rewrite_data_files('db.rewrite_data_files')"],
        "compute_table_stats": [*_table("compute_table_stats", version),
                                "CALL cat.system.compute_table_stats('db.compute_table_stats')"],
        "create_changelog_view": [*_table("create_changelog_view", version),
                                  ("CALL cat.system.create_changelog_view(table => 'db.create_changelog_view', "
                                  "changelog_view => 'matrix_changes')"),
                                  "SELECT count(*) FROM matrix_changes"],
        "add_files": [(f"CREATE TABLE add_src_v{version} (id bigint, data string, p string) USING parquet "
                      f"PARTITIONED BY (p) LOCATION '{root}/add_src'"),
                      f"INSERT INTO add_src_v{version} VALUES {_ROWS}",
                      ("CREATE TABLE cat.db.add_files (id bigint, data string, p string) USING iceberg "
                      f"PARTITIONED BY (p) TBLPROPERTIES ('format-version'='{version}')"),
                      f"CALL cat.system.add_files('db.add_files', 'add_src_v{version}')"],
        "snapshot": [(f"CREATE TABLE snap_src_v{version} (id bigint, data string, p string) USING parquet "
                     f"PARTITIONED BY (p) LOCATION '{root}/snap_src'"),
                     f"INSERT INTO snap_src_v{version} VALUES {_ROWS}",
                     (f"CALL cat.system.snapshot(source_table => 'snap_src_v{version}', table => 'cat.db.snapshot', "
                     f"properties => map('format-version', '{version}'))")],
    }
    if version >= 2:
        out["rewrite_position_delete_files"] = [
            *_table("rewrite_position_delete_files", version, mor=True),
            "DELETE FROM cat.db.rewrite_position_delete_files WHERE id = 1",
            "DELETE FROM cat.db.rewrite_position_delete_files WHERE id = 3",
            ("CALL cat.system.rewrite_position_delete_files(table => 'db.rewrite_position_delete_files', "
            "options => map('rewrite-all', 'true'))"),
        ]
    return out


def _pyiceberg_rows(root: Path, name: str) -> list[list[Any]]:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("cat", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    data = catalog.load_table(f"db.{name}").scan().to_arrow().sort_by("id")
    return [[json_value(v) for v in row] for row in zip(*(data.column(c).to_pylist() for c in ("id", "data", "p")))]


@pytest.mark.slow
@pytest.mark.parametrize("version", [1, 2, 3])
def test_procedures_on_every_format_version_read_alike(version: int, spark: SparkSession, jsql: Jsql,
                                                       tmp_path: Path) -> None:
    procedures = _procedures(version, tmp_path)
    statements = [s for calls in procedures.values() for s in calls]
    reads = [f"SELECT id, data, p FROM cat.db.{name} ORDER BY id" for name in procedures]
    floe = run_floe(spark, [*statements, *reads], tmp_path)
    failed = [f"{r['sql']}: {r['error']}" for r in floe if "error" in r]
    assert not failed, "Floe failed:\n" + "\n".join(failed)
    floe_rows = {name: r["rows"] for name, r in zip(procedures, floe[len(statements):])}
    java = jsql.run(reads, catalog_conf(tmp_path))
    problems = []
    for name, j in zip(procedures, java):
        if j["rows"] != floe_rows[name]:
            problems.append(f"{name}: Java reads {j['rows']}, Floe {floe_rows[name]}")
        py = _pyiceberg_rows(tmp_path, name)
        if py != floe_rows[name]:
            problems.append(f"{name}: PyIceberg reads {py}, Floe {floe_rows[name]}")
    assert not problems, "\n".join(problems)
