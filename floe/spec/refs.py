"""Snapshot references: branches and tags (spec "Snapshot References"). No IO."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from floe.errors import ValidationError

__all__ = ["MAIN_BRANCH", "SnapshotRef", "SnapshotRefType"]

MAIN_BRANCH = "main"


class SnapshotRefType(str, Enum):
    """A branch moves with commits; a tag names one snapshot forever."""

    BRANCH = "branch"
    TAG = "tag"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> SnapshotRefType:
        """The ref type named ``text`` (case-insensitive).

        Raises:
            ValidationError: neither ``branch`` nor ``tag``.
        """
        try:
            return cls(text.lower())
        except ValueError:
            raise ValidationError(f"Invalid snapshot ref type: {text!r} (expected branch or tag)") from None


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A named pointer at a snapshot, with optional retention settings."""

    snapshot_id: int
    type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        if self.type == SnapshotRefType.TAG and (
            self.min_snapshots_to_keep is not None or self.max_snapshot_age_ms is not None
        ):
            # Spec: min-snapshots-to-keep and max-snapshot-age-ms apply to branches only.
            raise ValidationError(
                f"Tags do not support min-snapshots-to-keep or max-snapshot-age-ms (tag at snapshot {self.snapshot_id})"
            )
        if self.min_snapshots_to_keep is not None and self.min_snapshots_to_keep <= 0:
            raise ValidationError(
                f"min-snapshots-to-keep must be greater than 0, got {self.min_snapshots_to_keep}"
            )
        if self.max_snapshot_age_ms is not None and self.max_snapshot_age_ms <= 0:
            raise ValidationError(
                f"max-snapshot-age-ms must be greater than 0, got {self.max_snapshot_age_ms}"
            )
        if self.max_ref_age_ms is not None and self.max_ref_age_ms <= 0:
            raise ValidationError(f"max-ref-age-ms must be greater than 0, got {self.max_ref_age_ms}")

    @property
    def is_branch(self) -> bool:
        return self.type == SnapshotRefType.BRANCH

    @property
    def is_tag(self) -> bool:
        return self.type == SnapshotRefType.TAG

    @staticmethod
    def branch(snapshot_id: int, **retention: int | None) -> SnapshotRef:
        """A branch at ``snapshot_id`` (keyword retention: min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms)."""
        return SnapshotRef(snapshot_id, SnapshotRefType.BRANCH, **retention)

    @staticmethod
    def tag(snapshot_id: int, *, max_ref_age_ms: int | None = None) -> SnapshotRef:
        """A tag at ``snapshot_id``."""
        return SnapshotRef(snapshot_id, SnapshotRefType.TAG, max_ref_age_ms=max_ref_age_ms)
