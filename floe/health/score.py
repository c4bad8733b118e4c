"""The 0-100 health score: Amoro's weights over three fractions that read 1.0 on a healthy table.

    score = round(40 * file_size + 40 * equality_deletes + 20 * position_deletes)

- ``file_size`` = ideal data files / actual data files, where the ideal keeps every file that is not
  small and packs each partition's small files into ``ceil(small bytes / target)`` files (at least one).
  Amoro weighs the average file size against the target; dividing by what compaction can reach instead
  means a small table whose partitions each hold one small file scores full marks (nothing to compact),
  while 500 tiny files in one partition score 1/500.
- ``equality_deletes`` = 1 - min(1, equality delete rows / data rows).
- ``position_deletes`` = 1 - min(1, rows removed by position deletes and deletion vectors / data rows).

A table without data files scores 100 when it has no delete files either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from floe.health.report import PartitionHealth, ScoreParts

__all__ = ["EQUALITY_WEIGHT", "FILE_SIZE_WEIGHT", "POSITION_WEIGHT", "ideal_data_files", "score", "score_parts"]

FILE_SIZE_WEIGHT = 40
EQUALITY_WEIGHT = 40
POSITION_WEIGHT = 20


def ideal_data_files(p: PartitionHealth, target: int) -> int:
    """Data files a partition would hold after compacting its small files to the target size."""
    packed = max(1, math.ceil(p.small_bytes / target)) if p.small_files else 0
    return p.data_files - p.small_files + min(packed, p.small_files)


def _healthy_fraction(removed: int, rows: int) -> float:
    if not removed:
        return 1.0
    return 1.0 - min(1.0, removed / rows) if rows else 0.0


def score_parts(partitions: Iterable[PartitionHealth], target: int) -> ScoreParts:
    """The three fractions of the module docstring."""
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
    )


def score(parts: ScoreParts) -> int:
    """The weighted sum, rounded to an integer in 0-100."""
    total = (
        FILE_SIZE_WEIGHT * parts.file_size
        + EQUALITY_WEIGHT * parts.equality_deletes
        + POSITION_WEIGHT * parts.position_deletes
    )
    return max(0, min(100, round(total)))
