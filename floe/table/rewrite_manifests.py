"""Rewrite a snapshot's manifests clustered by partition (Java's ``RewriteManifestsSparkAction``).

Java's rule, followed here: only manifests of one partition spec (the table's default spec unless one is
named) are candidates, data and delete manifests separately. A kind whose candidates are one manifest that
fits ``commit.manifest.target-size-bytes`` is left alone; otherwise its live entries are sorted by
partition and cut into ``ceil(total bytes / target)`` manifests. Entries keep their snapshot ids and
sequence numbers (written as EXISTING) and the result is one ``replace`` snapshot: the table's rows do not
change, only how planning finds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from floe.serde.manifest_writer import ManifestWriter
from floe.spec import properties as P
from floe.spec.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile
from floe.spec.snapshot import Operation, Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.table.snapshot_producer import SnapshotProducer
from floe.table.summary import SummaryBuilder

if TYPE_CHECKING:
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["RewriteManifests", "cluster_by_partition", "manifests_to_rewrite", "target_manifest_count"]


def _partition_key(partition: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    # Values of one field share a type; nulls sort first without comparing None with a value.
    return tuple((v is not None, v if v is not None else 0) for v in partition)


def target_manifest_count(manifests: Sequence[ManifestFile], target_size_bytes: int) -> int:
    """How many manifests the rewrite writes: the candidates' total bytes over the target, rounded up."""
    total = sum(m.manifest_length for m in manifests)
    return max(1, -(-total // max(1, target_size_bytes)))


def manifests_to_rewrite(
    manifests: Sequence[ManifestFile], spec_id: int, target_size_bytes: int
) -> dict[ManifestContent, list[ManifestFile]]:
    """The manifests a rewrite replaces, per content (pure): those of ``spec_id`` unless already compact.

    A single candidate manifest within the target size would be rewritten into itself, so Java skips it.
    """
    out: dict[ManifestContent, list[ManifestFile]] = {}
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        chosen = [m for m in manifests if m.content == content and m.partition_spec_id == spec_id]
        if not chosen or (len(chosen) == 1 and target_manifest_count(chosen, target_size_bytes) == 1):
            continue
        out[content] = chosen
    return out


def cluster_by_partition(entries: Sequence[ManifestEntry], count: int) -> list[list[ManifestEntry]]:
    """Live entries sorted by partition, cut into at most ``count`` contiguous groups of near-equal size."""
    live = sorted(
        (e for e in entries if e.status != ManifestEntryStatus.DELETED),
        key=lambda e: (_partition_key(e.data_file.partition), e.data_file.file_path),
    )
    count = max(1, min(count, len(live)))
    bounds = [len(live) * i // count for i in range(count + 1)]
    return [live[bounds[i] : bounds[i + 1]] for i in range(count) if bounds[i] < bounds[i + 1]]


class RewriteManifests(SnapshotProducer):
    """Replace the manifests of the branch head of ``spec_id`` (default: the table's spec), clustered."""

    def __init__(
        self,
        table: Table,
        transaction: Transaction | None = None,
        *,
        spec_id: int | None = None,
        branch: str | None = None,
    ) -> None:
        super().__init__(table, transaction, branch=branch)
        self._spec_id = spec_id
        self._cache: dict[tuple[str, ...], list[ManifestFile]] = {}
        self.rewritten_manifests_count = 0
        self.added_manifests_count = 0

    def _operation(self) -> Operation:
        return Operation.REPLACE

    def _manifests(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        current: list[ManifestFile],
        summary: SummaryBuilder,
    ) -> list[ManifestFile]:
        # Format v3 row lineage: reading a manifest gives each data file its inherited first_row_id and the
        # writer stores it with the EXISTING entry, so row ids survive; the new manifests get fresh ranges
        # from the manifest list, as Java's writer assigns them.
        spec_id = base.default_spec_id if self._spec_id is None else self._spec_id
        target = P.property_int(base.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT)
        plan = manifests_to_rewrite(current, spec_id, target)
        chosen = [m for group in plan.values() for m in group]
        chosen_paths = {m.manifest_path for m in chosen}
        kept = [m for m in current if m.manifest_path not in chosen_paths]
        key = tuple(m.manifest_path for m in chosen)
        new = self._cache.get(key)
        if new is None:
            new = [m for content, group in plan.items() for m in self._rewrite(base, spec_id, content, group, target)]
            self._cache[key] = new
        self.rewritten_manifests_count, self.added_manifests_count = len(chosen), len(new)
        self._extra["entries-processed"] = str(sum((m.existing_files_count or 0) for m in new))
        summary.with_manifest_counts = True  # Java's rewrite_manifests summary carries manifest counts
        return new + kept

    def _rewrite(
        self,
        base: TableMetadata,
        spec_id: int,
        content: ManifestContent,
        chosen: list[ManifestFile],
        target: int,
    ) -> list[ManifestFile]:
        entries = [e for m in chosen for e in self._read_entries(base, m)]
        out: list[ManifestFile] = []
        for group in cluster_by_partition(entries, target_manifest_count(chosen, target)):

            def fill(w: ManifestWriter, group: list[ManifestEntry] = group) -> None:
                for e in group:
                    w.existing(e)

            out.append(self._write_manifest(base, spec_id, content, fill))
        return out
