"""Server-side scan planning of ``floe serve`` (REST spec: planTableScan, fetchPlanningResult,
cancelPlanning, fetchScanTasks), answered by Floe's planner.

A plan request is planned at once (status ``completed``) by :class:`floe.scan.table_scan.TableScan`, with
the request's snapshot or append range, filter, projection and case sensitivity. The first
``batch_size`` file scan tasks come in the answer; the rest are cut into batches kept in memory behind
opaque, unguessable ``plan-tasks`` tokens the client fetches with ``fetchScanTasks``. Each batch lists the
delete files its tasks reference (``delete-file-references`` index that list). The manifest lists and
manifests a plan reads pass the server's location policy first (a client wrote them). A plan belongs to the
principal and table that asked for it (anyone else gets 404, as for an unknown id); plans expire after
``ttl_s`` and at most ``max_plans`` are kept (the oldest go first), so memory stays bounded.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.catalog.rest_protocol import RestError
from floe.errors import ValidationError
from floe.expressions.base import AlwaysTrue
from floe.io.manifest_reader import read_manifest_files
from floe.scan.table_scan import TableScan
from floe.scan.tasks import FileScanTask
from floe.serde.content_file_json import content_file_to_json
from floe.serde.expression_json import expression_from_json, expression_to_json
from floe.serde.json_types import JSON
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import StructType
from floe.table.identifiers import Identifier
from floe.table.table import Table

__all__ = ["PLANNING_ENDPOINTS", "ScanPlans"]

PLANNING_ENDPOINTS = (
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
)


def _no_plan(what: str, kind: str) -> RestError:
    return RestError(f"{what} does not exist (or has expired)", code=404, error_type=kind)


@dataclass
class _Plan:
    owner: str
    identifier: Identifier
    first: dict[str, JSON]
    tokens: list[str]
    created: float = field(default_factory=time.monotonic)


def _long(node: Mapping[str, Any], key: str) -> int | None:
    value = node.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"Invalid PlanTableScanRequest: {key} must be an integer")
    return value


def _names(node: Mapping[str, Any], key: str) -> list[str] | None:
    value = node.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"Invalid PlanTableScanRequest: {key} must be a list of column names")
    return value


class _Batcher:
    """Turns planned tasks into the spec's ``ScanTasks`` JSON, one batch at a time."""

    def __init__(self, metadata: TableMetadata, schema: Schema, stats_columns: frozenset[int]) -> None:
        self.metadata, self.schema, self.stats_columns = metadata, schema, stats_columns
        self._types: dict[int, StructType] = {}

    def _partition_type(self, spec_id: int) -> StructType:
        if spec_id not in self._types:
            self._types[spec_id] = self.metadata.partition_type(spec_id)
        return self._types[spec_id]

    def batch(self, tasks: Sequence[FileScanTask]) -> dict[str, JSON]:
        deletes: list[JSON] = []
        index: dict[str, int] = {}
        out: list[JSON] = []
        for task in tasks:
            refs = []
            for entry in task.deletes:
                f = entry.data_file
                if f.file_key not in index:
                    index[f.file_key] = len(deletes)
                    deletes.append(content_file_to_json(f, self._partition_type(f.spec_id), schema=self.schema))
                refs.append(index[f.file_key])
            df = task.data_file
            node: dict[str, JSON] = {
                "data-file": content_file_to_json(
                    df, self._partition_type(df.spec_id), schema=self.schema, stats_columns=self.stats_columns
                ),
            }
            if refs:
                node["delete-file-references"] = list(refs)
            if not isinstance(task.residual, AlwaysTrue):
                node["residual-filter"] = expression_to_json(task.residual)
            out.append(node)
        return {"file-scan-tasks": out, "delete-files": deletes}


def _planned_snapshots(table: Table, scan: TableScan) -> list[Snapshot]:
    """The snapshots whose manifests planning reads: the one scanned, or each of an append range."""
    if not scan.is_incremental:
        snap = scan.snapshot()
        return [snap] if snap is not None else []
    out = []
    for snap in table.metadata.ancestors_of(scan.end_snapshot_id or table.metadata.current_snapshot_id):
        if snap.snapshot_id == scan.start_snapshot_id:
            break
        out.append(snap)
    return out


class ScanPlans:
    """The plans of one server (thread-safe)."""

    def __init__(self, *, batch_size: int = 1000, max_plans: int = 256, ttl_s: float = 600.0) -> None:
        self.batch_size, self.max_plans, self.ttl_s = batch_size, max_plans, ttl_s
        self._plans: OrderedDict[str, _Plan] = OrderedDict()
        self._batches: dict[str, tuple[str, dict[str, JSON]]] = {}  # token -> (plan id, ScanTasks)
        self._lock = threading.Lock()

    # -- planning ------------------------------------------------------------------------------------
    def plan(
        self, owner: str, identifier: Identifier, table: Table, body: Mapping[str, Any],
        check_read: Callable[[str, str], None] = lambda location, what: None,
    ) -> dict[str, JSON]:
        """Plan a scan of ``table`` as ``body`` (a PlanTableScanRequest) asks; the ``completed`` result.

        ``check_read(location, what)`` is called on every manifest the plan reads before it is read: they
        are named inside manifest lists, which a client wrote, so the server's location policy applies.

        Raises:
            ValidationError: a malformed request, both a snapshot and an append range, an unknown column.
            NoSuchSnapshotError: the snapshot does not exist.
        """
        snapshot_id = _long(body, "snapshot-id")
        start, end = _long(body, "start-snapshot-id"), _long(body, "end-snapshot-id")
        if snapshot_id is not None and (start is not None or end is not None):
            raise ValidationError("Invalid PlanTableScanRequest: snapshot-id cannot be combined with start/end-snapshot-id")
        if start is not None and end is None:
            raise ValidationError("Invalid PlanTableScanRequest: end-snapshot-id is required with start-snapshot-id")
        case_sensitive = body.get("case-sensitive", True)
        if not isinstance(case_sensitive, bool):
            raise ValidationError("Invalid PlanTableScanRequest: case-sensitive must be a boolean")
        select = _names(body, "select")
        stats = _names(body, "stats-fields") or []
        row_filter = expression_from_json(body["filter"]) if body.get("filter") is not None else AlwaysTrue()
        scan = table.scan(
            row_filter, selected_fields=tuple(select) if select else ("*",), case_sensitive=case_sensitive,
            snapshot_id=snapshot_id,
        )
        if start is not None or end is not None:
            scan = scan.appends_between(start, end)
        schema = scan.table_schema()
        scan.projection()  # refuses unknown selected columns (400) before planning
        stats_columns = frozenset(schema.find_field(name, case_sensitive).field_id for name in stats)
        if stats_columns:
            scan = scan.include_column_stats()
        for snap in _planned_snapshots(table, scan):
            if snap.manifest_list:
                check_read(snap.manifest_list, f"manifest list of snapshot {snap.snapshot_id}")
            for m in read_manifest_files(table.io, snap):
                check_read(m.manifest_path, f"manifest of snapshot {snap.snapshot_id}")
        tasks = list(scan.plan_files())
        batcher = _Batcher(table.metadata, schema, stats_columns)
        size = self.batch_size
        first = batcher.batch(tasks[:size])
        rest = [batcher.batch(tasks[i:i + size]) for i in range(size, len(tasks), size)]
        plan_id = secrets.token_urlsafe(18)
        tokens = [f"{plan_id}.{secrets.token_urlsafe(12)}" for _ in rest]
        with self._lock:
            self._expire()
            self._plans[plan_id] = _Plan(owner, tuple(identifier), first, tokens)
            for token, batch in zip(tokens, rest):
                self._batches[token] = (plan_id, batch)
        return {"status": "completed", "plan-id": plan_id, **first, "plan-tasks": list(tokens)}

    def result(self, owner: str, identifier: Identifier, plan_id: str) -> dict[str, JSON]:
        """fetchPlanningResult: the completed result again.

        Raises:
            RestError: 404 NoSuchPlanIdException for an unknown, expired or someone else's plan.
        """
        with self._lock:
            self._expire()
            plan = self._own(owner, identifier, plan_id)
            return {"status": "completed", **plan.first, "plan-tasks": list(plan.tokens)}

    def cancel(self, owner: str, identifier: Identifier, plan_id: str) -> None:
        """cancelPlanning: forget the plan and its batches."""
        with self._lock:
            plan = self._own(owner, identifier, plan_id)
            self._drop(plan_id, plan)

    def tasks(self, owner: str, identifier: Identifier, token: str) -> dict[str, JSON]:
        """fetchScanTasks: the batch behind one plan task token.

        Raises:
            RestError: 404 NoSuchPlanTaskException for an unknown, expired or someone else's token.
        """
        with self._lock:
            self._expire()
            found = self._batches.get(token)
            plan = self._plans.get(found[0]) if found else None
            if found is None or plan is None or plan.owner != owner or plan.identifier != tuple(identifier):
                raise _no_plan("Plan task", "NoSuchPlanTaskException")
            return {**found[1], "plan-tasks": []}

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _own(self, owner: str, identifier: Identifier, plan_id: str) -> _Plan:
        plan = self._plans.get(plan_id)
        if plan is None or plan.owner != owner or plan.identifier != tuple(identifier):
            raise _no_plan(f"Plan {plan_id[:40]}", "NoSuchPlanIdException")
        return plan

    def _drop(self, plan_id: str, plan: _Plan) -> None:
        self._plans.pop(plan_id, None)
        for token in plan.tokens:
            self._batches.pop(token, None)

    def _expire(self) -> None:
        now = time.monotonic()
        for plan_id, plan in list(self._plans.items()):
            if now - plan.created > self.ttl_s or len(self._plans) >= self.max_plans:
                self._drop(plan_id, plan)
            else:
                break  # ordered by creation: the rest are younger
