"""The values a health check returns: frozen, JSON-ready (``HealthReport.to_dict``), no IO."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "DeleteStats",
    "Finding",
    "HealthReport",
    "ManifestPoint",
    "ManifestStats",
    "PartitionHealth",
    "RefHealth",
    "ScoreParts",
    "SizeBin",
    "SkewStats",
    "SnapshotPoint",
    "SnapshotStats",
    "WriterActivity",
]


@dataclass(frozen=True, slots=True)
class SizeBin:
    """One bar of a file-size histogram: files with ``low_bytes <= size < high_bytes`` (None: no upper end)."""

    low_bytes: int
    high_bytes: int | None
    label: str


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """Live data and delete files of one partition of the current snapshot."""

    spec_id: int
    partition: str  # ``dt=2021-12-01/bucket=3``; ``(unpartitioned)`` for an empty tuple
    data_files: int
    data_bytes: int
    data_rows: int
    small_files: int
    small_bytes: int
    position_delete_files: int  # deletion vectors excluded (see dv_count)
    position_delete_rows: int
    dv_count: int  # v3 deletion vectors (one per data file they cover)
    dv_rows: int
    equality_delete_files: int
    equality_delete_rows: int
    histogram: tuple[int, ...]  # file counts per bin of HealthReport.size_bins

    @property
    def delete_files(self) -> int:
        return self.position_delete_files + self.dv_count + self.equality_delete_files

    @property
    def position_delete_ratio(self) -> float:
        """Rows removed by position deletes and vectors per data row (1.0 when there are no data rows)."""
        removed = self.position_delete_rows + self.dv_rows
        return (removed / self.data_rows if self.data_rows else 1.0) if removed else 0.0

    @property
    def equality_delete_ratio(self) -> float:
        """Equality delete rows per data row (1.0 when there are no data rows)."""
        rows = self.equality_delete_rows
        return (rows / self.data_rows if self.data_rows else 1.0) if rows else 0.0


@dataclass(frozen=True, slots=True)
class DeleteStats:
    """Delete files of the current snapshot, table-wide."""

    position_delete_files: int
    position_delete_rows: int
    dv_count: int
    dv_rows: int
    equality_delete_files: int
    equality_delete_rows: int
    data_files_with_position_deletes: int  # data files of partitions holding position delete files
    data_files_with_dv: int
    dv_coverage: float  # data files with a vector / data files any position delete may apply to (1.0: none)


@dataclass(frozen=True, slots=True)
class ManifestStats:
    """The current snapshot's manifests and their sizes."""

    count: int
    data_manifests: int
    delete_manifests: int
    total_bytes: int
    min_bytes: int
    median_bytes: int
    max_bytes: int
    target_bytes: int  # commit.manifest.target-size-bytes
    small_count: int  # manifests under a quarter of the target
    ideal_count: int  # what rewrite_manifests would leave: per content, ceil(total / target)


@dataclass(frozen=True, slots=True)
class ManifestPoint:
    """Manifests of one snapshot (a sample of the history, for the growth plot)."""

    snapshot_id: int
    timestamp_ms: int
    manifests: int
    total_bytes: int


@dataclass(frozen=True, slots=True)
class SnapshotPoint:
    """What one snapshot changed, from its summary (no manifest is read)."""

    snapshot_id: int
    timestamp_ms: int
    operation: str
    added_files: int
    removed_files: int
    added_rows: int
    deleted_rows: int
    added_delete_files: int
    writer: str


@dataclass(frozen=True, slots=True)
class SnapshotStats:
    """Snapshots against the table's retention properties."""

    count: int
    oldest_age_ms: int | None
    newest_age_ms: int | None
    max_snapshot_age_ms: int  # history.expire.max-snapshot-age-ms
    min_snapshots_to_keep: int  # history.expire.min-snapshots-to-keep
    max_ref_age_ms: int  # history.expire.max-ref-age-ms (2**63-1: never)
    past_retention: int  # snapshots expire_snapshots would remove today with the table's own settings
    metadata_log_entries: int


@dataclass(frozen=True, slots=True)
class RefHealth:
    """A branch or tag, its age against its max-ref-age."""

    name: str
    type: str
    snapshot_id: int
    age_ms: int | None
    max_ref_age_ms: int | None  # the ref's own, else the table default; None: never expires
    past_max_age: bool


@dataclass(frozen=True, slots=True)
class SkewStats:
    """How unevenly rows and bytes spread over partitions (ratios of the largest to the median)."""

    partitions: int
    largest_partition: str | None
    max_rows: int
    median_rows: int
    rows_ratio: float
    max_bytes: int
    median_bytes: int
    bytes_ratio: float


@dataclass(frozen=True, slots=True)
class WriterActivity:
    """A writer seen in the recent window, from snapshot summaries (streaming query, Spark app, Flink job)."""

    writer: str
    operations: tuple[str, ...]
    snapshots: int
    last_commit_ms: int


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """The five health fractions the score weighs (1.0 = healthy; see floe.health.score)."""

    file_size: float
    equality_deletes: float
    position_deletes: float
    manifests: float = 1.0
    snapshots: float = 1.0


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem, the statement that fixes it and what running it should change."""

    code: str
    severity: str  # high | medium | low
    message: str
    statement: str  # a Spark SQL CALL statement, ready to run (floe sql, spark.sql on an attached session)
    metric: str  # what files_before/after count: data files, delete files, manifests, snapshots, files
    files_before: int
    files_after: int
    safe_now: bool
    safe_reason: str
    partitions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Everything ``floe.health`` found about one table, from its metadata and manifests alone."""

    table: str  # namespace.table (the location for tables opened by path)
    catalog: str
    location: str
    format_version: int
    snapshot_id: int | None
    generated_at_ms: int
    target_file_size_bytes: int
    small_file_bytes: int  # files below this are small: SMALL_FILE_FRACTION of the target
    score: int
    score_parts: ScoreParts
    data_files: int
    data_bytes: int
    data_rows: int
    small_files: int
    small_bytes: int
    size_bins: tuple[SizeBin, ...]
    size_histogram: tuple[int, ...]
    partitions: tuple[PartitionHealth, ...]
    deletes: DeleteStats
    manifests: ManifestStats
    manifest_growth: tuple[ManifestPoint, ...]
    snapshots: SnapshotStats
    timeline: tuple[SnapshotPoint, ...]
    refs: tuple[RefHealth, ...]
    skew: SkewStats
    recent_writers: tuple[WriterActivity, ...]
    recent_window_ms: int
    orphan_candidates: int | None  # None: not asked (listing the folder costs a full listing)
    findings: tuple[Finding, ...]

    @property
    def qualified_name(self) -> str:
        return f"{self.catalog}.{self.table}" if self.catalog else self.table

    def finding(self, code: str) -> Finding | None:
        """The finding with this code, if any."""
        return next((f for f in self.findings if f.code == code), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible values (``json.dumps(report.to_dict())``)."""
        out = asdict(self)
        out["partitions"] = [
            {
                **asdict(p),
                "position_delete_ratio": p.position_delete_ratio,
                "equality_delete_ratio": p.equality_delete_ratio,
            }
            for p in self.partitions
        ]
        return out
