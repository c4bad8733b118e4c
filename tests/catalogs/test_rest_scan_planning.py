"""Server-side scan planning of ``floe serve`` (planTableScan, fetchPlanningResult, cancelPlanning,
fetchScanTasks): the tasks' data files and deletes match Floe's local plan (filters, position and equality
deletes, batches behind plan tasks, append ranges), and PyIceberg in ``scan-planning-mode=server`` reads
the table through them."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _rest import Served, assert_error, prefix, request, served_catalog

from floe.expressions.parser import parse_filter
from floe.io.arrow_schema import schema_to_arrow
from floe.io.locations import to_local_path
from floe.server import ServerSettings
from floe.server.scan_planning import PLANNING_ENDPOINTS
from floe.server.settings import Principal
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.partitioning import PartitionSpecBuilder
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType
from floe.table.table import Table
from floe.write.delta_writer import POSITION_DELETE_SCHEMA

rest = pytest.importorskip("pyiceberg.catalog.rest")
from pyiceberg.expressions import EqualTo, GreaterThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType as PyLong
from pyiceberg.types import NestedField as PyField
from pyiceberg.types import StringType as PyString

SETTINGS = ServerSettings(
    tokens={"admin": Principal("admin", {"*": "admin"}), "other": Principal("other", {"*": "read"})},
    scan_planning_batch_size=2,
)
ROWS = pa.table({"id": pa.array(range(1, 7), pa.int64()), "cat": ["a", "a", "b", "b", "c", "c"]})


def _write_deletes(table: Table, partition: tuple[Any, ...], columns: pa.Table, content: FileContent,
                   schema: Schema, equality_ids: tuple[int, ...] | None = None) -> DataFile:
    location = f"{table.location()}/data/del-{uuid.uuid4()}.parquet"
    path = to_local_path(location)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(columns.cast(schema_to_arrow(schema)), path)
    return DataFile(content, location, FileFormat.PARQUET, partition, columns.num_rows, os.path.getsize(path),
                    spec_id=table.spec().spec_id, equality_ids=equality_ids)


def _plan(served: Served, body: dict[str, Any], token: str = "admin") -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    """Plan over raw HTTP and fetch every batch; (plan id, sorted (data file, delete files) pairs)."""
    base = f"{prefix(served)}/namespaces/db/tables/events"
    resp = request(served, "POST", f"{base}/plan", token=token, json=body)
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert answer["status"] == "completed"
    pairs = []
    batches, pending = [answer], list(answer.get("plan-tasks") or [])
    while pending:
        got = request(served, "POST", f"{base}/tasks", token=token, json={"plan-task": pending.pop(0)})
        assert got.status_code == 200, got.text
        batches.append(got.json())
        pending += got.json().get("plan-tasks") or []
    for batch in batches:
        assert len(batch["file-scan-tasks"]) <= 2  # scan-planning-batch-size
        for task in batch["file-scan-tasks"]:
            deletes = tuple(sorted(batch["delete-files"][i]["file-path"] for i in task.get("delete-file-references", [])))
            pairs.append((task["data-file"]["file-path"], deletes))
    return answer["plan-id"], sorted(pairs)


def _local(table: Table, row_filter: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    scan = table.scan(parse_filter(row_filter) if row_filter else None)
    return sorted((t.data_file.file_path, tuple(sorted(d.file_path for d in t.delete_files))) for t in scan.plan_files())


def test_rest_scan_planning_matches_local_plan_and_pyiceberg_reads_through_it(tmp_path: Path) -> None:
    with served_catalog(tmp_path, SETTINGS) as served:
        config = request(served, "GET", "/v1/config", token="admin").json()
        assert set(PLANNING_ENDPOINTS) <= set(config["endpoints"])
        py = rest.RestCatalog("py", uri=served.uri, token="admin", **{"scan-planning-mode": "server"})
        assert py.supports_server_side_planning()
        py.create_namespace("db")
        schema = PySchema(PyField(1, "id", PyLong(), required=False), PyField(2, "cat", PyString(), required=False))
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))
        pt = py.create_table("db.events", schema=schema, partition_spec=spec)
        pt.append(ROWS)
        first_snapshot = pt.refresh().current_snapshot().snapshot_id
        pt.append(ROWS.slice(0, 2))  # a second file in partition a
        table = served.backing.load_table("db.events")
        a_files = sorted((t.data_file for t in table.scan("cat = 'a'").plan_files()), key=lambda f: f.file_path)
        victim = a_files[0].file_path
        # a position delete of the victim's first row (id 1), committed by Floe
        pos = _write_deletes(table, ("a",), pa.table({"file_path": [victim], "pos": pa.array([0], pa.int64())}),
                             FileContent.POSITION_DELETES, POSITION_DELETE_SCHEMA)
        table.new_row_delta().add_deletes(pos).commit()
        table = served.backing.load_table("db.events")
        _, everything = _plan(served, {})
        assert everything == _local(table) and len(everything) == 4
        assert next(p for p in everything if p[0] == victim)[1] == (pos.file_path,)
        _, only_a = _plan(served, {"filter": {"type": "eq", "term": "cat", "value": "a"}, "select": ["id"]})
        assert only_a == _local(table, "cat = 'a'") and len(only_a) == 2
        _, high = _plan(served, {"filter": {"type": "gt", "term": "id", "value": 4}})
        assert high == _local(table, "id > 4") and len(high) == 1  # metrics pruning
        second_snapshot = [s.snapshot_id for s in table.snapshots()][1]
        _, appended = _plan(served, {"start-snapshot-id": first_snapshot, "end-snapshot-id": second_snapshot})
        assert appended == sorted(
            (t.data_file.file_path, ()) for t in table.scan().appends_between(first_snapshot, second_snapshot).plan_files()
        )
        assert len(appended) == 1 and appended[0][0] in {f.file_path for f in a_files}
        # PyIceberg plans on the server and reads the same rows as Floe
        loaded = py.load_table("db.events")
        tasks = list(loaded.scan(row_filter=EqualTo("cat", "a")).plan_files())
        assert sorted(t.file.file_path for t in tasks) == [p[0] for p in only_a]
        assert all(not t.file.lower_bounds for t in tasks)  # planned by the server (no stats were asked for)
        assert any(t.file.lower_bounds for t in py.load_table("db.events").scan()._plan_files_local())
        ids = sorted(loaded.scan().to_arrow()["id"].to_pylist())
        assert ids == sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 2, 3, 4, 5, 6]
        assert sorted(loaded.scan(row_filter=GreaterThan("id", 4)).to_arrow()["id"].to_pylist()) == [5, 6]
        # an equality delete (Java writes them for upserts): referenced by the tasks of its partition only
        eq_schema = Schema(NestedField(1, "id", LongType()))
        eq = _write_deletes(table, ("b",), pa.table({"id": pa.array([3], pa.int64())}), FileContent.EQUALITY_DELETES,
                            eq_schema, equality_ids=(1,))
        table.new_row_delta().add_deletes(eq).commit()
        table = served.backing.load_table("db.events")
        _plan_id, with_eq = _plan(served, {})
        assert with_eq == _local(table)
        assert [p[1] for p in with_eq if eq.file_path in p[1]] == [(eq.file_path,)]


def test_rest_scan_planning_results_cancel_and_refusals(tmp_path: Path) -> None:
    with served_catalog(tmp_path, SETTINGS) as served:
        py = rest.RestCatalog("py", uri=served.uri, token="admin")
        py.create_namespace("db")
        pt = py.create_table("db.events", schema=PySchema(PyField(1, "id", PyLong(), required=False),
                                                          PyField(2, "cat", PyString(), required=False)))
        for i in range(3):
            pt.append(ROWS.slice(i, 1))
        base = f"{prefix(served)}/namespaces/db/tables/events"
        answer = request(served, "POST", f"{base}/plan", token="admin", json={}).json()
        assert len(answer["file-scan-tasks"]) == 2 and len(answer["plan-tasks"]) == 1
        plan_id, token = answer["plan-id"], answer["plan-tasks"][0]
        again = request(served, "GET", f"{base}/plan/{plan_id}", token="admin").json()
        assert again["status"] == "completed" and again["file-scan-tasks"] == answer["file-scan-tasks"]
        # a plan and its tasks belong to who asked, for that table
        assert_error(request(served, "GET", f"{base}/plan/{plan_id}", token="other"), 404, "NoSuchPlanIdException")
        assert_error(request(served, "POST", f"{base}/tasks", token="other", json={"plan-task": token}), 404,
                     "NoSuchPlanTaskException")
        assert_error(request(served, "POST", f"{base}/tasks", token="admin", json={"plan-task": "made-up"}), 404,
                     "NoSuchPlanTaskException")
        assert request(served, "DELETE", f"{base}/plan/{plan_id}", token="admin").status_code == 204
        assert_error(request(served, "GET", f"{base}/plan/{plan_id}", token="admin"), 404, "NoSuchPlanIdException")
        assert_error(request(served, "POST", f"{base}/tasks", token="admin", json={"plan-task": token}), 404,
                     "NoSuchPlanTaskException")
        stats = request(served, "POST", f"{base}/plan", token="admin", json={
            "stats-fields": ["id"], "filter": {"type": "gt-eq", "term": "id", "value": 2},
        }).json()
        first = stats["file-scan-tasks"][0]
        assert first["data-file"]["lower-bounds"]["keys"] == [1] and first["data-file"]["record-count"] == 1
        assert "cat" not in str(first["data-file"].get("upper-bounds")) and first["data-file"]["partition"] == []
        assert first["residual-filter"] == {"type": "gt-eq", "term": "id", "value": 2}
        bad = [
            {"snapshot-id": 1, "start-snapshot-id": 1, "end-snapshot-id": 2},
            {"snapshot-id": "x"},
            {"filter": {"type": "eq", "term": {"type": "transform", "transform": "bucket[4]", "term": "id"}, "value": 1}},
            {"filter": {"type": "frobnicate", "term": "id"}},
            {"select": ["nope"]},
            {"filter": {"type": "eq", "term": "nope", "value": 1}},
        ]
        for body in bad:
            assert_error(request(served, "POST", f"{base}/plan", token="admin", json=body), 400, "BadRequestException")
        assert_error(request(served, "POST", f"{prefix(served)}/namespaces/db/tables/nope/plan", token="admin", json={}),
                     404, "NoSuchTableException")


def test_rest_scan_planning_reads_no_manifest_outside_the_allowed_locations(tmp_path: Path) -> None:
    with served_catalog(tmp_path, SETTINGS) as served:
        py = rest.RestCatalog("py", uri=served.uri, token="admin")
        py.create_namespace("db")
        py.create_table("db.events", schema=PySchema(PyField(1, "id", PyLong(), required=False)))
        # a writer that bypasses the server (the shared catalog) puts the table's metadata elsewhere
        table = served.backing.load_table("db.events")
        with table.transaction() as txn:
            txn.set_properties({"write.metadata.path": str(tmp_path / "elsewhere")})
        served.backing.load_table("db.events").append(pa.table({"id": pa.array([1], pa.int64())}))
        base = f"{prefix(served)}/namespaces/db/tables/events"
        message = assert_error(request(served, "POST", f"{base}/plan", token="admin", json={}), 403, "ForbiddenException")
        assert "manifest list" in message and "allowed locations" in message


@pytest.mark.slow
def test_rest_scan_planning_answer_parses_in_iceberg_java(tmp_path: Path, jsql) -> None:  # type: ignore[no-untyped-def]
    """Iceberg Java's PlanTableScanResponseParser reads the server's answer into the same tasks and deletes
    as Floe's local plan (partitioned table, a position and an equality delete)."""
    settings = ServerSettings(tokens={"admin": Principal("admin", {"*": "admin"})}, scan_planning_batch_size=100)
    with served_catalog(tmp_path, settings) as served:
        served.backing.create_namespace("db")
        schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "cat", StringType()))
        table = served.backing.create_table(
            "db.events", schema, partition_spec=PartitionSpecBuilder(schema).identity("cat").build()
        )
        table.append(ROWS)
        victim = min(t.data_file.file_path for t in table.scan("cat = 'a'").plan_files())
        pos = _write_deletes(table, ("a",), pa.table({"file_path": [victim], "pos": pa.array([0], pa.int64())}),
                             FileContent.POSITION_DELETES, POSITION_DELETE_SCHEMA)
        eq = _write_deletes(table, ("b",), pa.table({"id": pa.array([3], pa.int64())}), FileContent.EQUALITY_DELETES,
                            Schema(NestedField(1, "id", LongType())), equality_ids=(1,))
        table.new_row_delta().add_deletes(pos).add_deletes(eq).commit()
        table = served.backing.load_table("db.events")
        resp = request(served, "POST", f"{prefix(served)}/namespaces/db/tables/events/plan", token="admin", json={})
        assert resp.status_code == 200, resp.text
        (tmp_path / "plan.json").write_text(resp.text)
        metadata = to_local_path(str(table.metadata_location))
        parsed = json.loads(jsql.python(Path(__file__).with_name("_java_plan_parser.py"), "--metadata", metadata,
                                        "--response", str(tmp_path / "plan.json")).strip().splitlines()[-1])
        assert parsed["status"] == "completed"
        java = sorted((file, tuple(deletes)) for file, deletes in parsed["tasks"])
        assert java == [(f, d) for f, d in _local(table)] and len(java) == 3
        assert sum(1 for _, d in java if d) == 2  # the position delete and the equality delete each reach a file
