"""View metadata JSON (Iceberg View Spec), keys in Iceberg Java's ViewMetadataParser order."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from floe.errors import InvalidMetadataError, ValidationError
from floe.serde.json_types import JSON, get_int, get_str, get_str_or_none, schema_from_json, schema_to_json
from floe.serde.metadata_json import decompress_metadata
from floe.spec.view_metadata import (
    SUPPORTED_VIEW_FORMAT_VERSIONS,
    SQLViewRepresentation,
    UnknownViewRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewRepresentation,
    ViewVersion,
)

__all__ = [
    "view_metadata_from_dict",
    "view_metadata_from_json",
    "view_metadata_to_dict",
    "view_metadata_to_json",
    "view_version_from_json",
    "view_version_to_json",
]


def _representation_from_json(node: Mapping[str, JSON]) -> ViewRepresentation:
    kind = get_str(node, "type")
    if kind.lower() == "sql":
        return SQLViewRepresentation(sql=get_str(node, "sql"), dialect=get_str(node, "dialect"))
    return UnknownViewRepresentation(kind, {k: v for k, v in node.items() if k != "type"})


def _representation_to_json(r: ViewRepresentation) -> dict[str, JSON]:
    if isinstance(r, SQLViewRepresentation):
        return {"type": "sql", "sql": r.sql, "dialect": r.dialect}
    return {"type": r.type, **dict(r.payload)}


def view_version_from_json(node: Mapping[str, JSON]) -> ViewVersion:
    """Parse one view version object."""
    namespace = node.get("default-namespace")
    if not isinstance(namespace, list):
        raise InvalidMetadataError("Cannot parse missing list: default-namespace")
    reps = node.get("representations")
    if not isinstance(reps, list):
        raise InvalidMetadataError("Cannot parse missing list: representations")
    summary = node.get("summary")
    if not isinstance(summary, Mapping):
        raise InvalidMetadataError("Cannot parse missing map: summary")
    return ViewVersion(
        version_id=get_int(node, "version-id"),
        schema_id=get_int(node, "schema-id"),
        timestamp_ms=get_int(node, "timestamp-ms"),
        summary={str(k): str(v) for k, v in summary.items()},
        representations=tuple(_representation_from_json(r) for r in reps),
        default_namespace=tuple(str(n) for n in namespace),
        default_catalog=get_str_or_none(node, "default-catalog"),
    )


def view_version_to_json(v: ViewVersion) -> dict[str, JSON]:
    """The JSON object of one view version."""
    out: dict[str, JSON] = {
        "version-id": v.version_id,
        "timestamp-ms": v.timestamp_ms,
        "schema-id": v.schema_id,
        "summary": dict(v.summary),
    }
    if v.default_catalog is not None:
        out["default-catalog"] = v.default_catalog
    out["default-namespace"] = list(v.default_namespace)
    out["representations"] = [_representation_to_json(r) for r in v.representations]
    return out


def view_metadata_from_dict(node: Mapping[str, JSON]) -> ViewMetadata:
    """Build ViewMetadata from a decoded JSON object.

    Raises:
        InvalidMetadataError: a required field is missing or a view rule is broken (message says which).
    """
    if not isinstance(node, Mapping):
        raise InvalidMetadataError(f"Cannot parse view metadata from non-object: {type(node).__name__}")
    try:
        version = get_int(node, "format-version")
        if version not in SUPPORTED_VIEW_FORMAT_VERSIONS:
            raise InvalidMetadataError(f"Unsupported format version: {version}")
        try:
            view_uuid = uuid.UUID(get_str(node, "view-uuid"))
        except ValueError as e:
            raise InvalidMetadataError(f"Invalid view-uuid {node.get('view-uuid')!r}") from e
        location = get_str(node, "location")
        current_version_id = get_int(node, "current-version-id")
        schemas_node = node.get("schemas")
        if not isinstance(schemas_node, list):
            raise InvalidMetadataError("Cannot parse missing list: schemas")
        versions_node = node.get("versions")
        if not isinstance(versions_node, list):
            raise InvalidMetadataError("Cannot parse missing list: versions")
        return ViewMetadata(
            view_uuid=view_uuid,
            format_version=version,
            location=location,
            schemas=tuple(schema_from_json(s) for s in schemas_node),
            current_version_id=current_version_id,
            versions=tuple(view_version_from_json(v) for v in versions_node),
            version_log=tuple(
                ViewHistoryEntry(get_int(e, "timestamp-ms"), get_int(e, "version-id"))
                for e in node.get("version-log") or ()
            ),
            properties={str(k): str(v) for k, v in (node.get("properties") or {}).items()},
        )
    except InvalidMetadataError:
        raise
    except ValidationError as e:
        raise InvalidMetadataError(f"Invalid view metadata: {e}") from e
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InvalidMetadataError(f"Malformed view metadata: {type(e).__name__}: {e}") from e


def view_metadata_from_json(text: str | bytes) -> ViewMetadata:
    """Parse view metadata JSON text (bytes may be gzip/zstd compressed)."""
    if isinstance(text, (bytes, bytearray)):
        text = decompress_metadata(bytes(text)).decode("utf-8")
    try:
        node = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidMetadataError(f"Cannot parse view metadata JSON: {e}") from e
    return view_metadata_from_dict(node)


def view_metadata_to_dict(md: ViewMetadata) -> dict[str, JSON]:
    """The JSON object of view metadata."""
    return {
        "view-uuid": str(md.view_uuid),
        "format-version": md.format_version,
        "location": md.location,
        "properties": dict(md.properties),
        "schemas": [schema_to_json(s) for s in md.schemas],
        "current-version-id": md.current_version_id,
        "versions": [view_version_to_json(v) for v in md.versions],
        "version-log": [{"timestamp-ms": e.timestamp_ms, "version-id": e.version_id} for e in md.version_log],
    }


def view_metadata_to_json(md: ViewMetadata, *, indent: int | None = None) -> str:
    """View metadata as JSON text (compact unless ``indent`` is given)."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(view_metadata_to_dict(md), indent=indent, separators=separators, ensure_ascii=False)
