"""Snapshots, refs and writers: what the table's history says, from metadata and summaries alone.

A writer is named by the first of these summary keys a snapshot carries: ``spark.sql.streaming.queryId``
(a streaming query: ``stream <id>``), ``flink.job-id``, ``spark.app.id``, ``engine-name``; a snapshot
without any is ``unnamed``. Compactions and other ``replace`` snapshots, and equality-delete conversions
(an ``overwrite`` marked in its summary), change no rows and are left out of the recent-writer list.
"""

from __future__ import annotations

from collections.abc import Callable

from floe.health.report import ManifestPoint, RefHealth, SnapshotPoint, SnapshotStats, WriterActivity
from floe.io.fileio import FileIO
from floe.io.manifest_reader import read_manifest_files
from floe.maintenance.expire_plan import plan_expiry
from floe.spec import properties as P
from floe.spec.refs import MAIN_BRANCH
from floe.spec.snapshot import Snapshot
from floe.spec.table_metadata import TableMetadata

__all__ = ["GROWTH_SAMPLES", "manifest_growth", "ref_health", "snapshot_stats", "timeline", "writer_of", "writers"]

# floe.maintenance.equality_delete_conversion.CONVERSION_SUMMARY_KEY (not imported: it loads the table layer)
_MAINTENANCE_KEYS = ("floe.rewrite-equality-deletes",)
GROWTH_SAMPLES = 40  # manifest lists read for the growth plot (evenly spaced over the current history)
_WRITER_KEYS = (
    ("spark.sql.streaming.queryId", "stream"),
    ("flink.job-id", "flink job"),
    ("spark.app.id", "spark app"),
    ("engine-name", "engine"),
)


def _int(summary: dict[str, str], key: str) -> int:
    try:
        return int(summary.get(key, "0"))
    except ValueError:
        return 0


def writer_of(snapshot: Snapshot) -> str:
    """Who wrote a snapshot, from its summary (see the module docstring)."""
    summary = snapshot.summary.as_dict() if snapshot.summary is not None else {}
    for key, label in _WRITER_KEYS:
        value = summary.get(key)
        if value:
            return f"{label} {value}"
    return "unnamed"


def _operation(snapshot: Snapshot) -> str:
    op = snapshot.operation
    return str(op) if op is not None else "unknown"


def timeline(metadata: TableMetadata) -> tuple[SnapshotPoint, ...]:
    """Every snapshot in commit order with what its summary says it changed."""
    points = []
    for s in sorted(metadata.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number)):
        summary = s.summary.as_dict() if s.summary is not None else {}
        points.append(
            SnapshotPoint(
                snapshot_id=s.snapshot_id,
                timestamp_ms=s.timestamp_ms,
                operation=_operation(s),
                added_files=_int(summary, "added-data-files"),
                removed_files=_int(summary, "deleted-data-files"),
                added_rows=_int(summary, "added-records"),
                deleted_rows=_int(summary, "deleted-records"),
                added_delete_files=_int(summary, "added-delete-files"),
                writer=writer_of(s),
            )
        )
    return tuple(points)


def _retention(metadata: TableMetadata) -> tuple[int, int, int]:
    props = metadata.properties
    return (
        P.property_int(props, P.MAX_SNAPSHOT_AGE_MS, P.MAX_SNAPSHOT_AGE_MS_DEFAULT),
        P.property_int(props, P.MIN_SNAPSHOTS_TO_KEEP, P.MIN_SNAPSHOTS_TO_KEEP_DEFAULT),
        P.property_int(props, P.MAX_REF_AGE_MS, P.MAX_REF_AGE_MS_DEFAULT),
    )


def snapshot_stats(metadata: TableMetadata, now_ms: int) -> SnapshotStats:
    """Snapshot counts and ages; ``past_retention`` is what expiry with the table's own settings removes."""
    max_age, min_keep, max_ref_age = _retention(metadata)
    stamps = [s.timestamp_ms for s in metadata.snapshots]
    plan = plan_expiry(metadata, now_ms=now_ms)
    return SnapshotStats(
        count=len(stamps),
        oldest_age_ms=now_ms - min(stamps) if stamps else None,
        newest_age_ms=now_ms - max(stamps) if stamps else None,
        max_snapshot_age_ms=max_age,
        min_snapshots_to_keep=min_keep,
        max_ref_age_ms=max_ref_age,
        past_retention=len(plan.expired_snapshot_ids),
        metadata_log_entries=len(metadata.metadata_log),
    )


def ref_health(metadata: TableMetadata, now_ms: int) -> tuple[RefHealth, ...]:
    """Branches and tags with their ages; ``main`` never expires."""
    _, _, default_ref_age = _retention(metadata)
    out = []
    for name, ref in sorted(metadata.refs.items()):
        snap = metadata.snapshot_by_id(ref.snapshot_id)
        age = now_ms - snap.timestamp_ms if snap is not None else None
        limit = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ref_age
        never = name == MAIN_BRANCH or limit >= P.MAX_REF_AGE_MS_DEFAULT
        out.append(
            RefHealth(
                name=name,
                type=str(ref.type),
                snapshot_id=ref.snapshot_id,
                age_ms=age,
                max_ref_age_ms=None if never else limit,
                past_max_age=not never and age is not None and age > limit,
            )
        )
    return tuple(out)


def writers(metadata: TableMetadata, *, now_ms: int, window_ms: int) -> tuple[WriterActivity, ...]:
    """Writers that committed rows in the last ``window_ms`` (newest first)."""
    seen: dict[str, tuple[set[str], int, int]] = {}
    for s in metadata.snapshots:
        if now_ms - s.timestamp_ms > window_ms or _operation(s) == "replace":
            continue
        if s.summary is not None and any(k in s.summary for k in _MAINTENANCE_KEYS):
            continue
        name = writer_of(s)
        ops, count, last = seen.get(name, (set(), 0, 0))
        ops.add(_operation(s))
        seen[name] = (ops, count + 1, max(last, s.timestamp_ms))
    activity = [WriterActivity(n, tuple(sorted(o)), c, last) for n, (o, c, last) in seen.items()]
    return tuple(sorted(activity, key=lambda w: -w.last_commit_ms))


def manifest_growth(
    io: FileIO,
    metadata: TableMetadata,
    current: list[tuple[Snapshot, int, int]],
    *,
    samples: int = GROWTH_SAMPLES,
) -> tuple[ManifestPoint, ...]:
    """Manifest count and bytes of up to ``samples`` snapshots of the current branch's history (oldest first).

    ``current`` is the current snapshot already read, as (snapshot, manifests, bytes). Snapshots whose
    manifest list is gone (expired elsewhere) are skipped.
    """
    snap = metadata.current_snapshot()
    if snap is None:
        return ()
    history = list(reversed(list(metadata.ancestors_of(snap.snapshot_id))))
    if len(history) > samples:
        step = (len(history) - 1) / (samples - 1)
        history = [history[round(i * step)] for i in range(samples)]
    known = {s.snapshot_id: (n, b) for s, n, b in current}
    location_of: Callable[[str], str] | None = getattr(io, "location_of", None)
    points = []
    for s in history:
        if s.snapshot_id in known:
            n, b = known[s.snapshot_id]
        else:
            try:
                manifests = read_manifest_files(io, s, location_of)
            except (FileNotFoundError, OSError):
                continue
            n, b = len(manifests), sum(m.manifest_length for m in manifests)
        points.append(ManifestPoint(s.snapshot_id, s.timestamp_ms, n, b))
    return tuple(points)
