"""Which snapshots and refs snapshot expiry removes (pure: metadata in, decision out; no IO).

Rules (spec "Snapshot Retention Policy"):

- A ref other than ``main`` is dropped once its snapshot is older than its ``max-ref-age-ms`` (table
  default ``history.expire.max-ref-age-ms``, never by default); ``main`` is never dropped.
- A kept tag keeps its snapshot.
- A kept branch keeps its newest ancestors while fewer than ``min-snapshots-to-keep`` are kept or the
  ancestor is not older than the cut-off (the branch's ``max-snapshot-age-ms``, else ``older_than``, else
  ``history.expire.max-snapshot-age-ms`` ago); the first ancestor failing both ends its history.
- A snapshot on no kept ref's history is kept while it is not older than the cut-off.
- Snapshots named explicitly expire too, unless a kept ref points at them (an error).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from floe.errors import NoSuchSnapshotError, ValidationError
from floe.spec import properties as P
from floe.spec.refs import MAIN_BRANCH, SnapshotRef
from floe.spec.table_metadata import TableMetadata

__all__ = ["ExpiryPlan", "plan_expiry"]


@dataclass(frozen=True, slots=True)
class ExpiryPlan:
    """Snapshot ids to remove and the refs that go with them (sorted, for stable commits and output)."""

    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        return not self.expired_snapshot_ids and not self.removed_refs


def _kept_refs(metadata: TableMetadata, now_ms: int, default_ref_age: int) -> dict[str, SnapshotRef]:
    kept: dict[str, SnapshotRef] = {}
    for name, ref in metadata.refs.items():
        snap = metadata.snapshot_by_id(ref.snapshot_id)
        if name == MAIN_BRANCH or snap is None:
            kept[name] = ref  # a dangling ref is the metadata builder's business, not expiry's
            continue
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ref_age
        if now_ms - snap.timestamp_ms <= max_age:
            kept[name] = ref
    return kept


def plan_expiry(
    metadata: TableMetadata,
    *,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    table_name: str = "",
) -> ExpiryPlan:
    """Decide what expiry removes from ``metadata`` at time ``now_ms``.

    Args:
        older_than_ms: cut-off timestamp (default: now minus ``history.expire.max-snapshot-age-ms``).
        retain_last: ancestors of each branch kept regardless of age (default
            ``history.expire.min-snapshots-to-keep``); a branch's own setting wins.
        snapshot_ids: snapshots to expire in addition.

    Raises:
        ValidationError: ``retain_last`` < 1, or an explicit id is the snapshot of a kept branch or tag.
        NoSuchSnapshotError: an explicit id is not a snapshot of the table.
    """
    name = table_name or metadata.location
    props = metadata.properties
    if retain_last is not None and retain_last < 1:
        raise ValidationError(f"retain_last must be at least 1 for table {name}, got {retain_last}")
    cutoff = (
        older_than_ms
        if older_than_ms is not None
        else now_ms - P.property_int(props, P.MAX_SNAPSHOT_AGE_MS, P.MAX_SNAPSHOT_AGE_MS_DEFAULT)
    )
    min_keep = (
        retain_last
        if retain_last is not None
        else P.property_int(props, P.MIN_SNAPSHOTS_TO_KEEP, P.MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    )
    kept_refs = _kept_refs(
        metadata, now_ms, P.property_int(props, P.MAX_REF_AGE_MS, P.MAX_REF_AGE_MS_DEFAULT)
    )

    retained: set[int] = set()
    on_ref_history: set[int] = set()
    for ref in kept_refs.values():
        if ref.is_tag:
            retained.add(ref.snapshot_id)
            on_ref_history.add(ref.snapshot_id)
            continue
        branch_cutoff = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else cutoff
        branch_min = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else min_keep
        keeping = True
        count = 0
        for ancestor in metadata.ancestors_of(ref.snapshot_id):
            on_ref_history.add(ancestor.snapshot_id)
            if keeping and (count < branch_min or ancestor.timestamp_ms >= branch_cutoff):
                retained.add(ancestor.snapshot_id)
                count += 1
            else:
                keeping = False
    for s in metadata.snapshots:
        if s.snapshot_id not in on_ref_history and s.timestamp_ms >= cutoff:
            retained.add(s.snapshot_id)

    explicit = set(snapshot_ids)
    heads = {ref.snapshot_id: n for n, ref in kept_refs.items()}
    for i in sorted(explicit):
        if metadata.snapshot_by_id(i) is None:
            raise NoSuchSnapshotError(f"Cannot expire snapshot {i} of table {name}: no such snapshot")
        if i in heads:
            raise ValidationError(f"Cannot expire snapshot {i} of table {name}: still referenced by {heads[i]!r}")
    expired = {s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in retained} | explicit
    removed_refs = sorted(
        n for n, ref in metadata.refs.items() if n not in kept_refs or ref.snapshot_id in expired
    )
    return ExpiryPlan(tuple(sorted(expired)), tuple(removed_refs))
