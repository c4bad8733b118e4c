"""Rewrite a snapshot's data manifests clustered by partition (Java's ``RewriteManifests``).

Live entries of the parent's data manifests (optionally of one partition spec) are sorted by partition and
cut into manifests of about ``commit.manifest.target-size-bytes``, estimated from the bytes per entry of
the manifests being replaced. Entries keep their snapshot ids and sequence numbers (written as EXISTING),
delete manifests are kept as they are, and the result is one ``replace`` snapshot: the table's rows do not
change, only how planning finds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from floe.errors import UnsupportedError
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

__all__ = ["RewriteManifests", "cluster_by_partition", "entries_per_manifest"]


def _partition_key(partition: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    # Values of one field share a type; nulls sort first without comparing None with a value.
    return tuple((v is not None, v if v is not None else 0) for v in partition)


def entries_per_manifest(manifests: Sequence[ManifestFile], target_size_bytes: int) -> int:
    """How many entries fit a manifest of ``target_size_bytes``, from the replaced manifests' bytes per entry."""
    entries = sum(
        (m.added_files_count or 0) + (m.existing_files_count or 0) + (m.deleted_files_count or 0)
        for m in manifests
    )
    size = sum(m.manifest_length for m in manifests)
    if entries == 0 or size == 0:
        return max(1, target_size_bytes // 512)  # unknown counts: a conservative guess per entry
    return max(1, target_size_bytes * entries // size)


def cluster_by_partition(entries: Sequence[ManifestEntry], per_manifest: int) -> list[list[ManifestEntry]]:
    """Live entries sorted by partition, cut into groups of at most ``per_manifest`` (pure)."""
    live = sorted(
        (e for e in entries if e.status != ManifestEntryStatus.DELETED),
        key=lambda e: (_partition_key(e.data_file.partition), e.data_file.file_path),
    )
    return [list(live[i : i + per_manifest]) for i in range(0, len(live), per_manifest)]


class RewriteManifests(SnapshotProducer):
    """Replace the data manifests of the branch head (of ``spec_id``, or all) by partition-clustered ones."""

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

    def _selected(self, m: ManifestFile) -> bool:
        return m.content == ManifestContent.DATA and (self._spec_id is None or m.partition_spec_id == self._spec_id)

    def _manifests(
        self,
        base: TableMetadata,
        parent: Snapshot | None,
        current: list[ManifestFile],
        summary: SummaryBuilder,
    ) -> list[ManifestFile]:
        if base.format_version >= 3:
            # Rewritten manifests would need their row-id ranges carried over, which is not implemented.
            raise UnsupportedError(f"Cannot rewrite manifests of format version 3 table {self._table.name()}")
        chosen = [m for m in current if self._selected(m)]
        kept = [m for m in current if not self._selected(m)]
        key = tuple(m.manifest_path for m in chosen)
        new = self._cache.get(key)
        if new is None:
            new = self._rewrite(base, chosen)
            self._cache[key] = new
        self.rewritten_manifests_count, self.added_manifests_count = len(chosen), len(new)
        self._extra["entries-processed"] = str(sum((m.existing_files_count or 0) for m in new))
        return new + kept

    def _rewrite(self, base: TableMetadata, chosen: list[ManifestFile]) -> list[ManifestFile]:
        target = P.property_int(base.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT)
        by_spec: dict[int, list[ManifestFile]] = {}
        for m in chosen:
            by_spec.setdefault(m.partition_spec_id, []).append(m)
        out: list[ManifestFile] = []
        for spec_id in sorted(by_spec):
            manifests = by_spec[spec_id]
            entries = [e for m in manifests for e in self._read_entries(base, m)]
            for group in cluster_by_partition(entries, entries_per_manifest(manifests, target)):

                def fill(w: ManifestWriter, group: list[ManifestEntry] = group) -> None:
                    for e in group:
                        w.existing(e)

                out.append(self._write_manifest(base, spec_id, ManifestContent.DATA, fill))
        return out
