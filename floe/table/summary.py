"""Snapshot summaries with Iceberg Java's keys (``added-data-files``, ``total-records`` ...).

Counts describe what a snapshot changed; totals carry forward from the parent snapshot's summary (spec
"Snapshots", summary is free-form but every engine writes these keys, and readers such as Spark's
``snapshots`` table and PyIceberg show them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from floe.spec.manifest import DataFile, FileContent
from floe.spec.snapshot import Operation, Snapshot, Summary

__all__ = ["TOTAL_KEYS", "SummaryBuilder"]

# (total key, the count keys that add to it, the count keys that subtract from it)
TOTAL_KEYS: tuple[tuple[str, str, str], ...] = (
    ("total-records", "added-records", "deleted-records"),
    ("total-files-size", "added-files-size", "removed-files-size"),
    ("total-data-files", "added-data-files", "deleted-data-files"),
    ("total-delete-files", "added-delete-files", "removed-delete-files"),
    ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
    ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"),
)

# Java's SnapshotSummary.UpdateMetrics order.
_COUNT_KEYS = (
    "added-data-files",
    "deleted-data-files",
    "added-delete-files",
    "added-equality-delete-files",
    "removed-equality-delete-files",
    "added-position-delete-files",
    "removed-position-delete-files",
    "removed-delete-files",
    "added-records",
    "deleted-records",
    "added-files-size",
    "removed-files-size",
    "added-position-deletes",
    "removed-position-deletes",
    "added-equality-deletes",
    "removed-equality-deletes",
)


@dataclass
class SummaryBuilder:
    """Accumulates added and removed files, then renders the summary map."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNT_KEYS, 0))
    partitions: set[tuple[int, tuple[object, ...]]] = field(default_factory=set)
    manifest_counts: dict[str, int] = field(default_factory=dict)
    # Iceberg 1.10 writes manifests-created/kept/replaced only for rewrite_manifests (BaseRewriteManifests);
    # its appends, overwrites and row deltas leave them out (they arrive in 1.11), so producers opt in.
    with_manifest_counts: bool = False

    def _file(self, f: DataFile, added: bool) -> None:
        c = self.counts
        self.partitions.add((f.spec_id, _hashable(f.partition)))
        if f.content == FileContent.DATA:
            c["added-data-files" if added else "deleted-data-files"] += 1
            c["added-records" if added else "deleted-records"] += f.record_count
        else:
            c["added-delete-files" if added else "removed-delete-files"] += 1
            if f.content == FileContent.POSITION_DELETES:
                c["added-position-delete-files" if added else "removed-position-delete-files"] += 1
                c["added-position-deletes" if added else "removed-position-deletes"] += f.record_count
            else:
                c["added-equality-delete-files" if added else "removed-equality-delete-files"] += 1
                c["added-equality-deletes" if added else "removed-equality-deletes"] += f.record_count
        c["added-files-size" if added else "removed-files-size"] += f.file_size_in_bytes

    def added(self, f: DataFile) -> None:
        """Count a file the snapshot adds."""
        self._file(f, True)

    def removed(self, f: DataFile) -> None:
        """Count a file the snapshot removes."""
        self._file(f, False)

    def build(
        self,
        operation: Operation,
        parent: Snapshot | None,
        extra: Mapping[str, str] | None = None,
    ) -> Summary:
        """The summary: user properties, then counts (non-zero only), partitions, manifests (when opted in) and totals."""
        out: dict[str, str] = dict(extra or {})
        for k in _COUNT_KEYS:
            if self.counts[k] > 0:
                out[k] = str(self.counts[k])
        out["changed-partition-count"] = str(len(self.partitions))
        if self.with_manifest_counts:
            for k, v in self.manifest_counts.items():
                out[k] = str(v)
        previous = parent.summary if parent is not None and parent.summary is not None else None
        for total, plus, minus in TOTAL_KEYS:
            if parent is None:
                base = 0
            elif previous is None or total not in previous:
                continue  # Java leaves a total out when the parent has none to carry forward
            else:
                try:
                    base = int(previous[total])
                except ValueError:
                    continue
            out[total] = str(base + self.counts[plus] - self.counts[minus])
        return Summary.of(operation, out)


def _hashable(partition: tuple[object, ...]) -> tuple[object, ...]:
    return tuple(bytes(v) if isinstance(v, (bytearray, memoryview)) else v for v in partition)
