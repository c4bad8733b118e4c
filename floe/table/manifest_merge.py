"""Manifest merging for appends (Java's ``ManifestMergeManager``).

Manifests are grouped by partition spec and bin-packed, newest first, into bins of
``commit.manifest.target-size-bytes``. A bin of one manifest is kept; the bin holding the newest manifest
is merged only once it has ``commit.manifest.min-count-to-merge`` manifests; every other bin is merged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from floe.spec.manifest import ManifestFile

__all__ = ["merge_manifests", "pack_end"]


def pack_end(items: Sequence[ManifestFile], target_size: int) -> list[list[ManifestFile]]:
    """Greedy bins of at most ``target_size`` bytes filled from the end, so the partial bin is the first one."""
    bins: list[list[ManifestFile]] = []
    current: list[ManifestFile] = []
    weight = 0
    for m in reversed(items):
        if current and weight + m.manifest_length > target_size:
            bins.append(current)
            current, weight = [], 0
        current.append(m)
        weight += m.manifest_length
    if current:
        bins.append(current)
    return [list(reversed(b)) for b in reversed(bins)]


def merge_manifests(
    manifests: Sequence[ManifestFile],
    *,
    target_size: int,
    min_count: int,
    merge: Callable[[int, list[ManifestFile]], ManifestFile],
) -> list[ManifestFile]:
    """Merge small manifests; ``merge(spec_id, bin)`` writes one manifest with a bin's live entries."""
    if not manifests:
        return []
    first = manifests[0]
    groups: dict[int, list[ManifestFile]] = {}
    for m in manifests:
        groups.setdefault(m.partition_spec_id, []).append(m)
    out: list[ManifestFile] = []
    for spec_id in sorted(groups, reverse=True):
        for b in pack_end(groups[spec_id], target_size):
            if len(b) == 1 or (first in b and len(b) < min_count):
                out.extend(b)
            else:
                out.append(merge(spec_id, b))
    return out
