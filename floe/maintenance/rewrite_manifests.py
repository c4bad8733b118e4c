"""Rewrite the current snapshot's data manifests clustered by partition (one ``replace`` snapshot)."""

from __future__ import annotations

from dataclasses import dataclass

from floe.errors import ValidationError
from floe.scan.planner import read_manifest_files
from floe.spec.manifest import ManifestContent
from floe.table.rewrite_manifests import RewriteManifests
from floe.table.table import Table

__all__ = ["RewriteManifestsResult", "rewrite_manifests"]


@dataclass(frozen=True, slots=True)
class RewriteManifestsResult:
    """Iceberg's ``rewrite_manifests`` output: manifests replaced and manifests written."""

    rewritten_manifests_count: int
    added_manifests_count: int


def rewrite_manifests(table: Table, *, spec_id: int | None = None) -> RewriteManifestsResult:
    """Rewrite the data manifests of ``table``'s current snapshot (only those of ``spec_id`` if given).

    A table without a current snapshot or without matching manifests is left unchanged (no commit).

    Raises:
        ValidationError: ``spec_id`` is not a partition spec of the table.
        UnsupportedError: a format version 3 table.
        CommitFailedError: lost every retry (the new manifests are deleted).
    """
    if spec_id is not None and table.metadata.spec_by_id(spec_id) is None:
        raise ValidationError(f"Table {table.name()} has no partition spec {spec_id}")
    current = table.metadata.current_snapshot()
    if current is None:
        return RewriteManifestsResult(0, 0)
    matching = [
        m
        for m in read_manifest_files(table.io, current)
        if m.content == ManifestContent.DATA and (spec_id is None or m.partition_spec_id == spec_id)
    ]
    if not matching:
        return RewriteManifestsResult(0, 0)
    op = RewriteManifests(table, spec_id=spec_id)
    op.commit()
    return RewriteManifestsResult(op.rewritten_manifests_count, op.added_manifests_count)
