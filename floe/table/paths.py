"""Where a table's metadata files go: metadata JSON, manifest lists and manifests (Iceberg's names)."""

from __future__ import annotations

import uuid

from floe.io.locations import join
from floe.spec.properties import WRITE_METADATA_LOCATION
from floe.spec.table_metadata import TableMetadata

__all__ = ["manifest_list_location", "manifest_location", "metadata_dir"]


def metadata_dir(metadata: TableMetadata) -> str:
    """``write.metadata.path`` or ``<table location>/metadata``."""
    custom = metadata.properties.get(WRITE_METADATA_LOCATION)
    return custom.rstrip("/") if custom else join(metadata.location, "metadata")


def manifest_location(metadata: TableMetadata, commit_uuid: uuid.UUID, counter: int) -> str:
    """``<metadata dir>/<commit uuid>-m<N>.avro`` (Java's SnapshotProducer naming)."""
    return join(metadata_dir(metadata), f"{commit_uuid}-m{counter}.avro")


def manifest_list_location(
    metadata: TableMetadata, snapshot_id: int, attempt: int, commit_uuid: uuid.UUID
) -> str:
    """``<metadata dir>/snap-<snapshot id>-<attempt>-<commit uuid>.avro``."""
    return join(metadata_dir(metadata), f"snap-{snapshot_id}-{attempt}-{commit_uuid}.avro")
