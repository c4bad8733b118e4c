"""Rewrite the current snapshot's manifests clustered by partition (one ``replace`` snapshot)."""

from __future__ import annotations

from dataclasses import dataclass

from floe.errors import ValidationError
from floe.io.manifest_reader import read_manifest_files
from floe.spec import properties as P
from floe.table.rewrite_manifests import RewriteManifests, manifests_to_rewrite
from floe.table.table import Table

__all__ = ["RewriteManifestsResult", "rewrite_manifests"]


@dataclass(frozen=True, slots=True)
class RewriteManifestsResult:
    """Iceberg's ``rewrite_manifests`` output: manifests replaced and manifests written."""

    rewritten_manifests_count: int
    added_manifests_count: int


def rewrite_manifests(table: Table, *, spec_id: int | None = None) -> RewriteManifestsResult:
    """Rewrite the manifests of ``table``'s current snapshot of ``spec_id`` (default: the table's spec).

    As in Java, a table without a current snapshot, or whose candidate manifests are already one manifest
    within ``commit.manifest.target-size-bytes`` (per content: data, deletes), is left unchanged (no commit).

    Raises:
        ValidationError: ``spec_id`` is not a partition spec of the table.
        UnsupportedError: a format version 3 table.
        CommitFailedError: lost every retry (the new manifests are deleted).
    """
    meta = table.metadata
    if spec_id is not None and meta.spec_by_id(spec_id) is None:
        raise ValidationError(f"Invalid spec id {spec_id} for table {table.name()}")
    current = meta.current_snapshot()
    if current is None:
        return RewriteManifestsResult(0, 0)
    target = P.property_int(meta.properties, P.MANIFEST_TARGET_SIZE_BYTES, P.MANIFEST_TARGET_SIZE_BYTES_DEFAULT)
    plan = manifests_to_rewrite(
        read_manifest_files(table.io, current), meta.default_spec_id if spec_id is None else spec_id, target
    )
    if not plan:
        return RewriteManifestsResult(0, 0)
    op = RewriteManifests(table, spec_id=spec_id)
    op.commit()
    return RewriteManifestsResult(op.rewritten_manifests_count, op.added_manifests_count)
