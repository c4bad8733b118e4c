"""Expire snapshots: commit their removal, then delete the files only they referenced.

Order matters for safety: the metadata commit comes first (retried on lost races, the plan recomputed on
the fresh metadata); only after it succeeded are files deleted, and the files kept are computed from the
committed metadata - every file a remaining snapshot references live is kept. If the commit fails,
nothing is deleted; if reading what remains fails, nothing is deleted either (the leftovers are orphans
for :func:`floe.maintenance.remove_orphan_files`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from floe.errors import ValidationError
from floe.io.locations import comparison_key
from floe.maintenance.expire_plan import ExpiryPlan, plan_expiry
from floe.maintenance.reachable import content_files, snapshot_manifests
from floe.spec import properties as P
from floe.spec.manifest import FileContent
from floe.spec.snapshot import PartitionStatisticsFile, Snapshot, StatisticsFile
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import (
    RemovePartitionSpecs,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    TableUpdate,
)
from floe.table.pending import PendingUpdate
from floe.table.table import Table

__all__ = ["ExpireSnapshotsResult", "expire_snapshots"]

_DEFAULT_DELETE_THREADS = 8


@dataclass(frozen=True, slots=True)
class ExpireSnapshotsResult:
    """What expiry removed (the counts are Iceberg's ``expire_snapshots`` output columns)."""

    expired_snapshot_ids: tuple[int, ...]
    deleted_data_files_count: int
    deleted_position_delete_files_count: int
    deleted_equality_delete_files_count: int
    deleted_manifest_files_count: int
    deleted_manifest_lists_count: int
    deleted_statistics_files_count: int


class _RemoveExpired(PendingUpdate):
    """The metadata change: plan expiry on each base it is applied to, remember what the last plan removed."""

    def __init__(
        self,
        table: Table,
        *,
        now_ms: int,
        older_than_ms: int | None,
        retain_last: int | None,
        snapshot_ids: tuple[int, ...],
        clean_expired_metadata: bool,
    ) -> None:
        super().__init__(table)
        self._args = (now_ms, older_than_ms, retain_last, snapshot_ids)
        self._clean = clean_expired_metadata
        self.plan = ExpiryPlan((), ())
        self.expired: list[Snapshot] = []
        self.base: TableMetadata = table.metadata

    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        now_ms, older_than_ms, retain_last, snapshot_ids = self._args
        self.plan = plan_expiry(
            base,
            now_ms=now_ms,
            older_than_ms=older_than_ms,
            retain_last=retain_last,
            snapshot_ids=snapshot_ids,
            table_name=self._table.name(),
        )
        self.base = base
        gone = set(self.plan.expired_snapshot_ids)
        self.expired = [s for s in base.snapshots if s.snapshot_id in gone]
        updates: list[TableUpdate] = [RemoveSnapshotRef(n) for n in self.plan.removed_refs]
        if gone:
            updates.append(RemoveSnapshots(self.plan.expired_snapshot_ids))
        if self._clean:
            updates += self._unused_specs_and_schemas(base, gone)
        return updates

    def _unused_specs_and_schemas(self, base: TableMetadata, gone: set[int]) -> list[TableUpdate]:
        remaining = [s for s in base.snapshots if s.snapshot_id not in gone]
        used_specs = {base.default_spec_id}
        for m in snapshot_manifests(self._table.io, remaining, missing_ok=False).values():
            used_specs.add(m.partition_spec_id)
        out: list[TableUpdate] = []
        unused_specs = tuple(sorted(s.spec_id for s in base.partition_specs if s.spec_id not in used_specs))
        if unused_specs:
            out.append(RemovePartitionSpecs(unused_specs))
        if all(s.schema_id is not None for s in remaining):  # unknown schema ids: keep every schema
            used_schemas = {base.current_schema_id} | {s.schema_id for s in remaining}
            unused = tuple(sorted(s.schema_id for s in base.schemas if s.schema_id not in used_schemas))
            if unused:
                out.append(RemoveSchemas(unused))
        return out


def expire_snapshots(
    table: Table,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] | None = None,
    max_concurrent_deletes: int | None = None,
    clean_expired_metadata: bool = False,
    now_ms: int | None = None,
) -> ExpireSnapshotsResult:
    """Remove old snapshots from ``table`` and delete the files no remaining snapshot needs.

    Args:
        older_than_ms: expire snapshots older than this (ms since the epoch; default: now minus
            ``history.expire.max-snapshot-age-ms``, 5 days).
        retain_last: ancestors of every branch kept regardless of age (default
            ``history.expire.min-snapshots-to-keep``, 1).
        snapshot_ids: also expire these snapshots.
        max_concurrent_deletes: threads deleting files (default 8).
        clean_expired_metadata: also remove partition specs and schemas no remaining snapshot uses.
        now_ms: the current time (tests pin it; ref ages are measured from it).

    Raises:
        ValidationError: ``gc.enabled`` is false, or invalid arguments.
        CommitFailedError / CommitStateUnknownError: the metadata commit failed (nothing deleted).
    """
    if not P.property_bool(table.properties, P.GC_ENABLED, P.GC_ENABLED_DEFAULT):
        raise ValidationError(f"Cannot expire snapshots of table {table.name()}: gc.enabled is false")
    if max_concurrent_deletes is not None and max_concurrent_deletes < 1:
        raise ValidationError(f"max_concurrent_deletes must be positive, got {max_concurrent_deletes}")
    change = _RemoveExpired(
        table,
        now_ms=time.time_ns() // 1_000_000 if now_ms is None else now_ms,
        older_than_ms=older_than_ms,
        retain_last=retain_last,
        snapshot_ids=tuple(snapshot_ids or ()),
        clean_expired_metadata=clean_expired_metadata,
    )
    change.commit()  # retried on lost races; raises before any file is touched
    committed = table.metadata
    if not change.expired:
        return ExpireSnapshotsResult((), 0, 0, 0, 0, 0, 0)
    doomed = files_only_expired_need(table, change.base, committed, change.expired)
    io = table.io
    failures = io.delete_many(
        [p for group in doomed.values() for p in group],
        max_workers=max_concurrent_deletes or _DEFAULT_DELETE_THREADS,
    )

    def count(kind: str) -> int:
        return sum(1 for p in doomed[kind] if p not in failures)

    return ExpireSnapshotsResult(
        expired_snapshot_ids=tuple(s.snapshot_id for s in change.expired),
        deleted_data_files_count=count("data"),
        deleted_position_delete_files_count=count("position_deletes"),
        deleted_equality_delete_files_count=count("equality_deletes"),
        deleted_manifest_files_count=count("manifests"),
        deleted_manifest_lists_count=count("manifest_lists"),
        deleted_statistics_files_count=count("statistics"),
    )


def files_only_expired_need(
    table: Table, before: TableMetadata, committed: TableMetadata, expired: list[Snapshot]
) -> dict[str, list[str]]:
    """Files live in ``expired`` snapshots and in no snapshot of ``committed``, grouped by kind (as Java's
    Spark action: an entry recording a removal is no reference; the file went when its last live snapshot did).

    Raises:
        FileNotFoundError: a remaining snapshot's manifest list or manifest is missing (then what it
            references is unknown, so nothing may be deleted).
    """
    io = table.io
    kept_manifests = snapshot_manifests(io, committed.snapshots, missing_ok=False)
    kept_manifest_keys = {comparison_key(p) for p in kept_manifests}
    old_manifests = snapshot_manifests(io, expired, missing_ok=True)
    gone_manifests = {p: m for p, m in old_manifests.items() if comparison_key(p) not in kept_manifest_keys}
    data: list[str] = []
    pos: list[str] = []
    eq: list[str] = []
    if gone_manifests:
        candidates = content_files(io, gone_manifests.values(), live_only=True, missing_ok=True)
        kept = content_files(io, kept_manifests.values(), live_only=True, missing_ok=False)
        for key, f in sorted(candidates.items()):
            if key in kept:
                continue
            if f.content == FileContent.DATA:
                data.append(f.path)
            elif f.content == FileContent.POSITION_DELETES:
                pos.append(f.path)
            else:
                eq.append(f.path)
    kept_lists = {comparison_key(s.manifest_list) for s in committed.snapshots if s.manifest_list}
    lists = [s.manifest_list for s in expired if s.manifest_list and comparison_key(s.manifest_list) not in kept_lists]
    kept_stats = {comparison_key(f.statistics_path) for f in _statistics_files(committed)}
    gone_ids = {s.snapshot_id for s in expired}
    stats = sorted(
        {
            f.statistics_path
            for f in _statistics_files(before)
            if f.snapshot_id in gone_ids and comparison_key(f.statistics_path) not in kept_stats
        }
    )
    return {
        "data": data,
        "position_deletes": pos,
        "equality_deletes": eq,
        "manifests": sorted(gone_manifests),
        "manifest_lists": sorted(lists),
        "statistics": stats,
    }


def _statistics_files(metadata: TableMetadata) -> list[StatisticsFile | PartitionStatisticsFile]:
    return [*metadata.statistics, *metadata.partition_statistics]
