"""The 0-100 health score: Amoro's weights for the data, plus a tenth for the metadata.

    score = round(0.9 * (40 * file_size + 40 * equality_deletes + 20 * position_deletes)
                  + 5 * manifests + 5 * snapshots)

Each fraction reads 1.0 on a healthy table. The first three are Amoro's (file sizes 40%, equality deletes
40%, position deletes 20%), scaled to 90 points:

- ``file_size`` = ideal data files / actual data files, where the ideal keeps every file that is not
  small and packs each partition's small files into ``ceil(small bytes / target)`` files (at least one).
  Amoro weighs the average file size against the target; dividing by what compaction can reach instead
  means a small table whose partitions each hold one small file scores full marks (nothing to compact),
  while 500 tiny files in one partition score 1/500.
- ``equality_deletes`` = 1 - min(1, equality delete rows / data rows).
- ``position_deletes`` = 1 - min(1, rows removed by position deletes and deletion vectors / data rows).

The metadata tenth (not in Amoro's score; here so that expiring snapshots and rewriting manifests, which
make planning and commits cheaper, show in the score too):

- ``manifests`` = min(1, tolerated / manifests), tolerated = max(2 x what ``rewrite_manifests`` would
  leave, ``MIN_MANIFESTS`` - 1): below 1.0 exactly when the ``MANIFESTS`` finding fires.
- ``snapshots`` = (1 - snapshots past retention / snapshots) x min(1, ``MANY_SNAPSHOTS`` / snapshots within
  retention): below 1.0 exactly when ``SNAPSHOTS_PAST_RETENTION`` or ``SNAPSHOTS_MANY`` fires.

A table without data files scores 100 when it has no delete files either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from floe.health.report import ManifestStats, PartitionHealth, ScoreParts, SnapshotStats

__all__ = [
    "DATA_SHARE",
    "EQUALITY_WEIGHT",
    "FILE_SIZE_WEIGHT",
    "MANIFEST_WEIGHT",
    "MANY_SNAPSHOTS",
    "MIN_MANIFESTS",
    "POSITION_WEIGHT",
    "SNAPSHOT_WEIGHT",
    "ideal_data_files",
    "manifest_fraction",
    "score",
    "score_parts",
    "snapshot_fraction",
]

FILE_SIZE_WEIGHT = 40
EQUALITY_WEIGHT = 40
POSITION_WEIGHT = 20
DATA_SHARE = 0.9  # Amoro's three parts fill 90 points, the metadata the other 10
MANIFEST_WEIGHT = 5
SNAPSHOT_WEIGHT = 5
MIN_MANIFESTS = 10  # fewer manifests are never a finding
MANY_SNAPSHOTS = 1000  # more snapshots within retention are a finding


def ideal_data_files(p: PartitionHealth, target: int) -> int:
    """Data files a partition would hold after compacting its small files to the target size."""
    packed = max(1, math.ceil(p.small_bytes / target)) if p.small_files else 0
    return p.data_files - p.small_files + min(packed, p.small_files)


def _healthy_fraction(removed: int, rows: int) -> float:
    if not removed:
        return 1.0
    return 1.0 - min(1.0, removed / rows) if rows else 0.0


def manifest_fraction(m: ManifestStats) -> float:
    """The manifests fraction of the module docstring."""
    tolerated = max(2 * m.ideal_count, MIN_MANIFESTS - 1)
    return min(1.0, tolerated / m.count) if m.count else 1.0


def snapshot_fraction(s: SnapshotStats) -> float:
    """The snapshots fraction of the module docstring."""
    if not s.count:
        return 1.0
    within = s.count - s.past_retention
    return (1 - s.past_retention / s.count) * (min(1.0, MANY_SNAPSHOTS / within) if within else 1.0)


def score_parts(
    partitions: Iterable[PartitionHealth], target: int, manifests: ManifestStats, snapshots: SnapshotStats
) -> ScoreParts:
    """The five fractions of the module docstring."""
    parts = list(partitions)
    files = sum(p.data_files for p in parts)
    ideal = sum(ideal_data_files(p, target) for p in parts)
    rows = sum(p.data_rows for p in parts)
    eq = sum(p.equality_delete_rows for p in parts)
    pos = sum(p.position_delete_rows + p.dv_rows for p in parts)
    return ScoreParts(
        file_size=ideal / files if files else 1.0,
        equality_deletes=_healthy_fraction(eq, rows),
        position_deletes=_healthy_fraction(pos, rows),
        manifests=manifest_fraction(manifests),
        snapshots=snapshot_fraction(snapshots),
    )


def score(parts: ScoreParts) -> int:
    """The weighted sum, rounded to an integer in 0-100."""
    data = (
        FILE_SIZE_WEIGHT * parts.file_size
        + EQUALITY_WEIGHT * parts.equality_deletes
        + POSITION_WEIGHT * parts.position_deletes
    )
    total = DATA_SHARE * data + MANIFEST_WEIGHT * parts.manifests + SNAPSHOT_WEIGHT * parts.snapshots
    return max(0, min(100, round(total)))
