"""Findings: each problem the health check sees, the CALL statement that fixes it and its expected effect.

Thresholds (module constants):

- ``SMALL_FILES``: a partition with at least ``MIN_SMALL_FILES`` (5) small files, the number of files
  ``rewrite_data_files`` needs in a group before it rewrites one (Java's ``min-input-files`` default).
- ``POSITION_DELETE_FILES``: a partition with at least ``MIN_DELETE_FILES`` (5) position delete files (not
  vectors): ``rewrite_position_delete_files`` merges them (and drops rows of data files that are gone).
- ``DELETED_ROWS``: position deletes and vectors remove at least ``MAX_DELETED_RATIO`` (10%) of a
  partition's rows, or it holds at least ``MIN_DELETE_FILES`` delete files: ``rewrite_data_files`` with
  ``delete-file-threshold`` 1 rewrites its data files with the deletes applied.
- ``EQUALITY_DELETES``: any equality delete file: ``rewrite_equality_deletes`` turns them into position
  deletes (vectors on v3), which reads apply far more cheaply.
- ``MANIFESTS``: at least ``MIN_MANIFESTS`` (10) manifests and more than twice what ``rewrite_manifests``
  would leave.
- ``SNAPSHOTS_PAST_RETENTION`` / ``REFS_PAST_MAX_AGE``: what ``expire_snapshots`` with the table's own
  retention would remove; ``SNAPSHOTS_MANY``: more than ``MANY_SNAPSHOTS`` (1,000) snapshots even within
  retention (every commit rewrites the metadata file listing them all): keep the last ``KEEP_SNAPSHOTS``.
- ``ORPHAN_FILES`` (only when asked to list the folder): files no metadata references, older than
  remove_orphan_files' default of three days.

``safe_now``: a fix that rewrites files conflicts with writers that change rows in place (``overwrite``
and ``delete`` snapshots: MERGE, UPDATE, DELETE, upserts, CDC streams), so it is not safe while such a
writer committed within the recent window; appends never conflict with it. Metadata-only fixes
(manifests, expiry, orphans older than the cut-off) retry on conflict and are safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from floe.health.files import FileCounts, human_bytes
from floe.health.report import (
    Finding,
    ManifestStats,
    PartitionHealth,
    RefHealth,
    SnapshotStats,
    WriterActivity,
)
from floe.health.score import MANY_SNAPSHOTS, MIN_MANIFESTS, ideal_data_files
from floe.health.statements import call, timestamp_literal, where_for_partitions
from floe.maintenance.expire_plan import plan_expiry
from floe.spec.table_metadata import TableMetadata

__all__ = [
    "KEEP_SNAPSHOTS",
    "MANY_SNAPSHOTS",
    "MAX_DELETED_RATIO",
    "MIN_DELETE_FILES",
    "MIN_MANIFESTS",
    "MIN_SMALL_FILES",
    "ORPHAN_AGE_MS",
    "FindingContext",
    "find",
]

MIN_SMALL_FILES = 5
MIN_DELETE_FILES = 5
MAX_DELETED_RATIO = 0.1
KEEP_SNAPSHOTS = 100
ORPHAN_AGE_MS = 3 * 24 * 60 * 60 * 1000
_ROW_CHANGING = frozenset({"overwrite", "delete"})


@dataclass(frozen=True, slots=True)
class FindingContext:
    """What the findings are computed from."""

    metadata: TableMetadata
    catalog: str
    table: str
    now_ms: int
    target: int
    counts: FileCounts
    manifests: ManifestStats
    snapshots: SnapshotStats
    refs: tuple[RefHealth, ...]
    writers: tuple[WriterActivity, ...]
    window_ms: int
    orphans_old: int | None
    orphans_young: int | None
    small_below: int

    @property
    def counts_threshold_text(self) -> str:
        return human_bytes(self.small_below)

    @property
    def target_text(self) -> str:
        return human_bytes(self.target)


def _rewrites_files_safety(ctx: FindingContext) -> tuple[bool, str]:
    changing = [w for w in ctx.writers if _ROW_CHANGING & set(w.operations)]
    minutes = ctx.window_ms // 60000
    if changing:
        names = ", ".join(f"{w.writer} ({'/'.join(w.operations)})" for w in changing)
        return False, f"rows were changed in place in the last {minutes} min by {names}; run it when they pause"
    if ctx.writers:
        names = ", ".join(w.writer for w in ctx.writers)
        return True, f"only appends in the last {minutes} min ({names}), which do not conflict with a rewrite"
    return True, f"no writer committed in the last {minutes} min"


def _metadata_only_safety(what: str) -> tuple[bool, str]:
    return True, f"{what} commits metadata only and is retried on a conflicting commit"


def _pick(ctx: FindingContext, keep: Sequence[bool]) -> tuple[list[PartitionHealth], list[tuple[int, tuple[object, ...]]]]:
    chosen = [(p, raw) for p, raw, k in zip(ctx.counts.partitions, ctx.counts.raw_partitions, keep) if k]
    return [p for p, _ in chosen], [raw for _, raw in chosen]


def _names(parts: Sequence[PartitionHealth]) -> tuple[str, ...]:
    return tuple(p.partition for p in parts)


def _small_files(ctx: FindingContext) -> Finding | None:
    parts, raw = _pick(ctx, [p.small_files >= MIN_SMALL_FILES for p in ctx.counts.partitions])
    if not parts:
        return None
    before = sum(p.data_files for p in parts)
    after = sum(ideal_data_files(p, ctx.target) for p in parts)
    small = sum(p.small_files for p in parts)
    safe, reason = _rewrites_files_safety(ctx)
    return Finding(
        code="SMALL_FILES",
        severity="high" if small >= 100 else "medium",
        message=(
            f"{small} data files below {ctx.counts_threshold_text} in {len(parts)} partition(s); "
            f"compaction packs them towards the {ctx.target_text} target"
        ),
        statement=call(ctx.catalog, "rewrite_data_files", ctx.table, where=where_for_partitions(ctx.metadata, raw)),
        metric="data files",
        files_before=before,
        files_after=after,
        safe_now=safe,
        safe_reason=reason,
        partitions=_names(parts),
    )


def _position_delete_files(ctx: FindingContext) -> Finding | None:
    parts, _ = _pick(ctx, [p.position_delete_files >= MIN_DELETE_FILES for p in ctx.counts.partitions])
    if not parts:
        return None
    before = sum(p.position_delete_files for p in parts)
    safe, reason = _rewrites_files_safety(ctx)
    return Finding(
        code="POSITION_DELETE_FILES",
        severity="medium",
        message=f"{before} position delete files in {len(parts)} partition(s) that every read must open and join",
        statement=call(
            ctx.catalog, "rewrite_position_delete_files", ctx.table, options={"rewrite-all": "true"}
        ),
        metric="position delete files",
        files_before=before,
        files_after=len(parts),
        safe_now=safe,
        safe_reason=reason,
        partitions=_names(parts),
    )


def _deleted_rows(ctx: FindingContext) -> Finding | None:
    keep = [
        (p.position_delete_files + p.dv_count) > 0
        and (p.position_delete_ratio >= MAX_DELETED_RATIO or p.position_delete_files + p.dv_count >= MIN_DELETE_FILES)
        for p in ctx.counts.partitions
    ]
    parts, raw = _pick(ctx, keep)
    if not parts:
        return None
    removed = sum(p.position_delete_rows + p.dv_rows for p in parts)
    rows = sum(p.data_rows for p in parts)
    before = sum(p.position_delete_files + p.dv_count for p in parts)
    safe, reason = _rewrites_files_safety(ctx)
    return Finding(
        code="DELETED_ROWS",
        severity="high" if rows and removed / rows >= 0.3 else "medium",
        message=(
            f"position deletes remove {removed} of {rows} rows ({removed / rows:.0%}) in {len(parts)} partition(s); "
            "rewriting the data files applies them"
            if rows
            else f"{before} position delete files in {len(parts)} partition(s) without data rows"
        ),
        statement=call(
            ctx.catalog,
            "rewrite_data_files",
            ctx.table,
            where=where_for_partitions(ctx.metadata, raw),
            options={"delete-file-threshold": "1", "remove-dangling-deletes": "true"},
        ),
        metric="position delete files and vectors",
        files_before=before,
        files_after=0,
        safe_now=safe,
        safe_reason=reason,
        partitions=_names(parts),
    )


def _equality_deletes(ctx: FindingContext) -> Finding | None:
    parts, raw = _pick(ctx, [p.equality_delete_files > 0 for p in ctx.counts.partitions])
    if not parts:
        return None
    before = sum(p.equality_delete_files for p in parts)
    rows = sum(p.equality_delete_rows for p in parts)
    data_rows = sum(p.data_rows for p in parts)
    # Unpartitioned deletes in a partitioned table apply everywhere and convert only without a filter.
    scoped = all(spec_id == ctx.metadata.default_spec_id for spec_id, _ in raw)
    where = where_for_partitions(ctx.metadata, raw) if scoped else None
    safe, reason = _rewrites_files_safety(ctx)
    ratio = f" ({rows / data_rows:.0%} of the data rows)" if data_rows else ""
    return Finding(
        code="EQUALITY_DELETES",
        severity="high" if data_rows and rows / data_rows >= 0.1 else "medium",
        message=(
            f"{before} equality delete files ({rows} rows{ratio}) in {len(parts)} partition(s): each read joins "
            "them by key; converting them to position deletes makes reads apply them by position"
        ),
        statement=call(ctx.catalog, "rewrite_equality_deletes", ctx.table, where=where),
        metric="equality delete files",
        files_before=before,
        files_after=0,
        safe_now=safe,
        safe_reason=reason,
        partitions=_names(parts),
    )


def _manifests(ctx: FindingContext) -> Finding | None:
    m = ctx.manifests
    if m.count <= max(2 * m.ideal_count, MIN_MANIFESTS - 1):  # as floe.health.score.manifest_fraction
        return None
    safe, reason = _metadata_only_safety("rewrite_manifests")
    return Finding(
        code="MANIFESTS",
        severity="medium" if m.count >= 100 else "low",
        message=(
            f"{m.count} manifests (median {human_bytes(m.median_bytes)}) where {m.ideal_count} would do: planning reads "
            "every one"
        ),
        statement=call(ctx.catalog, "rewrite_manifests", ctx.table),
        metric="manifests",
        files_before=m.count,
        files_after=m.ideal_count,
        safe_now=safe,
        safe_reason=reason,
    )


def _expire_statement(ctx: FindingContext, older_than_ms: int, retain_last: int) -> str:
    return call(
        ctx.catalog,
        "expire_snapshots",
        ctx.table,
        extra=(("older_than", timestamp_literal(older_than_ms)), ("retain_last", str(retain_last))),
    )


def _retention(ctx: FindingContext) -> list[Finding]:
    s = ctx.snapshots
    cutoff = ctx.now_ms - s.max_snapshot_age_ms
    statement = _expire_statement(ctx, cutoff, s.min_snapshots_to_keep)
    safe, reason = _metadata_only_safety("expire_snapshots")
    out = []
    if s.past_retention:
        out.append(
            Finding(
                code="SNAPSHOTS_PAST_RETENTION",
                severity="medium",
                message=(
                    f"{s.past_retention} of {s.count} snapshots are older than history.expire.max-snapshot-age-ms "
                    f"({s.max_snapshot_age_ms} ms) beyond the {s.min_snapshots_to_keep} to keep"
                ),
                statement=statement,
                metric="snapshots",
                files_before=s.count,
                files_after=s.count - s.past_retention,
                safe_now=safe,
                safe_reason=reason,
            )
        )
    stale = [r for r in ctx.refs if r.past_max_age]
    if stale:
        out.append(
            Finding(
                code="REFS_PAST_MAX_AGE",
                severity="low",
                message=f"{len(stale)} ref(s) older than their max-ref-age: {', '.join(r.name for r in stale)}",
                statement=statement,
                metric="refs",
                files_before=len(ctx.refs),
                files_after=len(ctx.refs) - len(stale),
                safe_now=safe,
                safe_reason=reason,
            )
        )
    remaining = s.count - s.past_retention
    if remaining > MANY_SNAPSHOTS:
        keep = max(KEEP_SNAPSHOTS, s.min_snapshots_to_keep)
        older_than = ctx.now_ms + 1  # everything committed before the check, down to the last `keep`
        plan = plan_expiry(ctx.metadata, now_ms=ctx.now_ms, older_than_ms=older_than, retain_last=keep)
        out.append(
            Finding(
                code="SNAPSHOTS_MANY",
                severity="medium",
                message=(
                    f"{remaining} snapshots within retention: every commit rewrites a metadata file listing them "
                    f"all; keeping the last {keep} drops time travel to older ones"
                ),
                statement=_expire_statement(ctx, older_than, keep),
                metric="snapshots",
                files_before=s.count,
                files_after=s.count - len(plan.expired_snapshot_ids),
                safe_now=safe,
                safe_reason=reason,
            )
        )
    return out


def _orphans(ctx: FindingContext) -> Finding | None:
    if not ctx.orphans_old:
        return None
    young = f"; {ctx.orphans_young} younger ones may belong to commits in progress" if ctx.orphans_young else ""
    return Finding(
        code="ORPHAN_FILES",
        severity="low",
        message=f"{ctx.orphans_old} files under the table location older than 3 days that no metadata references{young}",
        statement=call(
            ctx.catalog,
            "remove_orphan_files",
            ctx.table,
            extra=(("older_than", timestamp_literal(ctx.now_ms - ORPHAN_AGE_MS)),),
        ),
        metric="unreferenced files",
        files_before=ctx.orphans_old,
        files_after=0,
        safe_now=True,
        safe_reason="only files older than three days are removed, past any commit still in progress",
    )


def find(ctx: FindingContext) -> tuple[Finding, ...]:
    """Every finding, most valuable fix first (score weights: file sizes and equality deletes lead)."""
    found: list[Finding | None] = [
        _small_files(ctx),
        _equality_deletes(ctx),
        _deleted_rows(ctx),
        _position_delete_files(ctx),
        _manifests(ctx),
        *_retention(ctx),
        _orphans(ctx),
    ]
    return tuple(f for f in found if f is not None)
