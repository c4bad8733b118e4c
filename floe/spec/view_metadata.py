"""View metadata (spec: Iceberg View Spec, format version 1). Frozen values, validated eagerly. No IO.

Iceberg Java checks some rules lazily (on first access of the current schema or version); Floe checks
them on construction so a broken view fails when it is loaded, with the same messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from floe.errors import InvalidMetadataError
from floe.spec.schema import Schema

__all__ = [
    "SUPPORTED_VIEW_FORMAT_VERSIONS",
    "SQLViewRepresentation",
    "UnknownViewRepresentation",
    "ViewHistoryEntry",
    "ViewMetadata",
    "ViewRepresentation",
    "ViewVersion",
]

SUPPORTED_VIEW_FORMAT_VERSIONS = (1,)


@dataclass(frozen=True, slots=True)
class SQLViewRepresentation:
    """A view's SQL text in one dialect (``type: sql``)."""

    sql: str
    dialect: str
    type: str = "sql"


@dataclass(frozen=True, slots=True)
class UnknownViewRepresentation:
    """A representation type Floe does not know; kept verbatim so rewriting the view preserves it."""

    type: str
    payload: Mapping[str, object] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash(self.type)


ViewRepresentation = SQLViewRepresentation | UnknownViewRepresentation


@dataclass(frozen=True, slots=True)
class ViewVersion:
    """One version of a view: its query representations, output schema and default catalog/namespace."""

    version_id: int
    schema_id: int
    timestamp_ms: int
    summary: Mapping[str, str]
    representations: tuple[ViewRepresentation, ...]
    default_namespace: tuple[str, ...] = ()
    default_catalog: str | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for r in self.representations:
            if isinstance(r, SQLViewRepresentation):
                key = r.dialect.lower()
                if key in seen:
                    raise InvalidMetadataError(
                        f"Invalid view version {self.version_id}: Cannot add multiple queries for dialect {r.dialect}"
                    )
                seen.add(key)

    def __hash__(self) -> int:
        return hash((self.version_id, self.schema_id, self.timestamp_ms))

    def sql_for(self, dialect: str) -> str | None:
        """The SQL text for ``dialect`` (case-insensitive), or None."""
        low = dialect.lower()
        return next(
            (
                r.sql
                for r in self.representations
                if isinstance(r, SQLViewRepresentation) and r.dialect.lower() == low
            ),
            None,
        )


@dataclass(frozen=True, slots=True)
class ViewHistoryEntry:
    """One ``version-log`` entry: when a version became current."""

    timestamp_ms: int
    version_id: int


@dataclass(frozen=True, eq=True)
class ViewMetadata:
    """A view's metadata file content. Not slotted: lookup indexes are cached."""

    view_uuid: uuid.UUID
    format_version: int
    location: str
    schemas: tuple[Schema, ...]
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", dict(self.properties))
        if self.format_version not in SUPPORTED_VIEW_FORMAT_VERSIONS:
            raise InvalidMetadataError(f"Unsupported format version: {self.format_version}")
        if not self.location:
            raise InvalidMetadataError("Invalid view metadata: location must be set")
        if not self.versions:
            raise InvalidMetadataError("Invalid view metadata: at least one version is required")
        schema_ids = [s.schema_id for s in self.schemas]
        version_ids = [v.version_id for v in self.versions]
        if len(set(schema_ids)) != len(schema_ids):
            raise InvalidMetadataError(f"Invalid view metadata: duplicate schema ids {schema_ids}")
        if len(set(version_ids)) != len(version_ids):
            raise InvalidMetadataError(f"Invalid view metadata: duplicate version ids {version_ids}")
        current = next((v for v in self.versions if v.version_id == self.current_version_id), None)
        if current is None:
            raise InvalidMetadataError(
                f"Cannot find current version {self.current_version_id} in view versions: {version_ids}"
            )
        if current.schema_id not in schema_ids:
            raise InvalidMetadataError(
                f"Cannot find current schema with id {current.schema_id} in schemas: {schema_ids}"
            )
        for v in self.versions:
            if v.schema_id not in schema_ids:
                raise InvalidMetadataError(
                    f"Cannot find schema with id {v.schema_id} of view version {v.version_id} in schemas: {schema_ids}"
                )

    def __hash__(self) -> int:
        return hash((self.view_uuid, self.current_version_id, self.location))

    def current_version(self) -> ViewVersion:
        """The current view version."""
        return next(v for v in self.versions if v.version_id == self.current_version_id)

    def version_by_id(self, version_id: int) -> ViewVersion | None:
        """The version with this id, or None."""
        return next((v for v in self.versions if v.version_id == version_id), None)

    def schema_by_id(self, schema_id: int) -> Schema | None:
        """The schema with this id, or None."""
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def schema(self) -> Schema:
        """The current version's schema."""
        found = self.schema_by_id(self.current_version().schema_id)
        assert found is not None  # checked on construction
        return found
