"""Iceberg views in a catalog: building view metadata versions and storing them as metadata files.

A view is a metadata file (view spec, format 1) holding versions of its SQL text, output schema and the
catalog/namespace its names resolve in; a catalog maps the view's name to the current file, as for tables.
This module builds the metadata values (create, replace with a new version, change properties) and writes
the files; :class:`ViewCatalog` is what a catalog that stores views provides (the SQL catalog does, with
Java's V1 layout: an ``iceberg_type`` of ``VIEW`` in ``iceberg_tables``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from floe.catalog.metadata_files import parse_version
from floe.io.fileio import FileIO
from floe.serde.metadata_names import versioned_metadata_file_name
from floe.serde.view_json import view_metadata_from_json, view_metadata_to_json
from floe.spec.schema import Schema
from floe.spec.view_metadata import SQLViewRepresentation, ViewHistoryEntry, ViewMetadata, ViewVersion

__all__ = [
    "ViewCatalog",
    "new_view_metadata",
    "read_view_metadata",
    "view_with_properties",
    "view_with_version",
    "write_view_metadata",
]


@runtime_checkable
class ViewCatalog(Protocol):
    """The view operations of a catalog that stores views."""

    name: str

    def create_view(self, identifier: Sequence[str], metadata: ViewMetadata) -> str: ...

    def load_view(self, identifier: Sequence[str]) -> tuple[ViewMetadata, str]: ...

    def replace_view(self, identifier: Sequence[str], base_location: str, metadata: ViewMetadata) -> str: ...

    def drop_view(self, identifier: Sequence[str]) -> None: ...

    def list_views(self, namespace: Sequence[str]) -> list[tuple[str, ...]]: ...

    def view_exists(self, identifier: Sequence[str]) -> bool: ...

    def default_table_location(self, identifier: tuple[str, ...]) -> str: ...


def _with_id(schema: Schema, schema_id: int) -> Schema:
    return Schema(*schema.fields, schema_id=schema_id, identifier_field_ids=schema.identifier_field_ids)


def _version(
    version_id: int, schema_id: int, sql: str, dialect: str, catalog: str, namespace: Sequence[str],
    engine: Mapping[str, str],
) -> ViewVersion:
    return ViewVersion(
        version_id=version_id,
        schema_id=schema_id,
        timestamp_ms=int(time.time() * 1000),
        summary=dict(engine),
        representations=(SQLViewRepresentation(sql=sql, dialect=dialect),),
        default_namespace=tuple(namespace),
        default_catalog=catalog,
    )


def new_view_metadata(
    *, location: str, schema: Schema, sql: str, dialect: str, catalog: str, namespace: Sequence[str],
    properties: Mapping[str, str], engine: Mapping[str, str],
) -> ViewMetadata:
    """The first metadata of a view: version 1 with ``schema`` (id 0) and its SQL in ``dialect``."""
    version = _version(1, 0, sql, dialect, catalog, namespace, engine)
    return ViewMetadata(
        view_uuid=uuid.uuid4(),
        format_version=1,
        location=location,
        schemas=(_with_id(schema, 0),),
        current_version_id=1,
        versions=(version,),
        version_log=(ViewHistoryEntry(version.timestamp_ms, 1),),
        properties=dict(properties),
    )


def view_with_version(
    base: ViewMetadata, *, schema: Schema, sql: str, dialect: str, catalog: str, namespace: Sequence[str],
    properties: Mapping[str, str], engine: Mapping[str, str],
) -> ViewMetadata:
    """``CREATE OR REPLACE VIEW``: a new current version (and schema, unless an equal one exists)."""
    same = next((s for s in base.schemas if s.as_struct() == schema.as_struct()), None)
    schemas = base.schemas
    if same is None:
        same = _with_id(schema, max(s.schema_id for s in base.schemas) + 1)
        schemas = (*schemas, same)
    version_id = max(v.version_id for v in base.versions) + 1
    version = _version(version_id, same.schema_id, sql, dialect, catalog, namespace, engine)
    return replace(
        base, schemas=schemas, versions=(*base.versions, version), current_version_id=version_id,
        version_log=(*base.version_log, ViewHistoryEntry(version.timestamp_ms, version_id)),
        properties={**base.properties, **properties},
    )


def view_with_properties(base: ViewMetadata, updates: Mapping[str, str], removals: Sequence[str]) -> ViewMetadata:
    """``ALTER VIEW ... SET|UNSET TBLPROPERTIES``."""
    props = {k: v for k, v in base.properties.items() if k not in set(removals)}
    props.update(updates)
    return replace(base, properties=props)


def write_view_metadata(io: FileIO, metadata: ViewMetadata, base_location: str | None) -> str:
    """Write the next metadata file of a view (``<location>/metadata/NNNNN-<uuid>.metadata.json``)."""
    version = parse_version(base_location) + 1 if base_location else 0
    location = f"{metadata.location.rstrip('/')}/metadata/{versioned_metadata_file_name(version)}"
    io.new_output(location).write_bytes(view_metadata_to_json(metadata).encode("utf-8"))
    return location


def read_view_metadata(io: FileIO, location: str) -> ViewMetadata:
    """Read a view metadata file."""
    return view_metadata_from_json(io.new_input(location).read_bytes())
