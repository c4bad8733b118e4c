"""Changes to a view's metadata as the REST protocol sends them (``CommitViewRequest``), and applying them.

The actions shared with tables (``assign-uuid``, ``upgrade-format-version``, ``add-schema``,
``set-location``, ``set-properties``, ``remove-properties``) are :mod:`floe.spec.updates`' values; the
view's own are :class:`AddViewVersion` and :class:`SetCurrentViewVersion`. Ids follow Iceberg Java's view
builder: an equal schema or version already present is reused, a new one gets the highest id + 1, and
``-1`` names the schema or version added earlier in the same commit. Pure values, no IO.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from floe.errors import CommitFailedError, ValidationError
from floe.spec.schema import Schema
from floe.spec.updates import (
    LAST_ADDED,
    AddSchema,
    AssignUUID,
    RemoveProperties,
    SetLocation,
    SetProperties,
    UpgradeFormatVersion,
)
from floe.spec.view_metadata import (
    SUPPORTED_VIEW_FORMAT_VERSIONS,
    ViewHistoryEntry,
    ViewMetadata,
    ViewVersion,
)

__all__ = [
    "AddViewVersion",
    "AssertViewUUID",
    "SetCurrentViewVersion",
    "ViewUpdate",
    "apply_view_updates",
    "new_view_from_request",
    "view_updates_between",
]


@dataclass(frozen=True, slots=True)
class AddViewVersion:
    """Add a view version (its ``schema_id`` may be ``-1``: the schema added by this commit)."""

    action: ClassVar[str] = "add-view-version"
    version: ViewVersion


@dataclass(frozen=True, slots=True)
class SetCurrentViewVersion:
    """Make a version current; ``-1`` means the one added by this commit."""

    action: ClassVar[str] = "set-current-view-version"
    version_id: int


@dataclass(frozen=True, slots=True)
class AssertViewUUID:
    """The view's UUID must be this one (the view was not dropped and created anew meanwhile)."""

    type: ClassVar[str] = "assert-view-uuid"
    uuid: uuid.UUID


ViewUpdate = (
    AssignUUID | UpgradeFormatVersion | AddSchema | SetLocation | SetProperties | RemoveProperties
    | AddViewVersion | SetCurrentViewVersion
)


def _same_version(a: ViewVersion, b: ViewVersion) -> bool:
    """Versions that behave alike (ids, timestamps aside), as Java's builder compares them."""
    return (
        dict(a.summary) == dict(b.summary) and a.representations == b.representations
        and a.default_catalog == b.default_catalog and a.default_namespace == b.default_namespace
        and a.schema_id == b.schema_id
    )


def _same_schema(a: Schema, b: Schema) -> bool:
    return a.as_struct() == b.as_struct() and tuple(a.identifier_field_ids) == tuple(b.identifier_field_ids)


class _Builder:
    def __init__(self, base: ViewMetadata) -> None:
        self.md = base
        self.last_schema: int | None = None
        self.last_version: int | None = None
        self.added_versions: set[int] = set()
        self.history: list[ViewHistoryEntry] = []

    def add_schema(self, schema: Schema) -> int:
        for s in self.md.schemas:
            if _same_schema(s, schema):
                return s.schema_id
        new_id = max((s.schema_id for s in self.md.schemas), default=-1) + 1
        added = Schema(*schema.fields, schema_id=new_id, identifier_field_ids=schema.identifier_field_ids)
        self.md = replace(self.md, schemas=(*self.md.schemas, added))
        self.last_schema = new_id
        return new_id

    def add_version(self, version: ViewVersion) -> int:
        if version.schema_id == LAST_ADDED:
            if self.last_schema is None:
                raise ValidationError("Cannot set last added schema: no schema has been added")
            version = replace(version, schema_id=self.last_schema)
        if self.md.schema_by_id(version.schema_id) is None:
            raise ValidationError(f"Cannot add version with unknown schema: {version.schema_id}")
        for v in self.md.versions:
            if _same_version(v, version):
                self.last_version = v.version_id if v.version_id in self.added_versions else None
                return v.version_id
        new_id = max([version.version_id, *(v.version_id + 1 for v in self.md.versions)])
        version = replace(version, version_id=new_id)
        # a version may be added before it becomes current: check it alone, not through ViewMetadata
        self.md = replace(self.md, versions=(*self.md.versions, version))
        self.last_version = new_id
        self.added_versions.add(new_id)
        return new_id

    def set_current(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_version is None:
                raise ValidationError("Cannot set last version id: no current version id has been set")
            version_id = self.last_version
        version = self.md.version_by_id(version_id)
        if version is None:
            raise ValidationError(f"Cannot set current version to unknown version: {version_id}")
        if version_id == self.md.current_version_id:
            return
        stamp = version.timestamp_ms if version_id in self.added_versions else int(time.time() * 1000)
        self.history.append(ViewHistoryEntry(stamp, version_id))
        self.md = replace(self.md, current_version_id=version_id)

    def apply(self, u: ViewUpdate) -> None:
        match u:
            case AssignUUID():
                if u.uuid != self.md.view_uuid:
                    raise ValidationError(f"Cannot reassign the UUID of view {self.md.view_uuid} to {u.uuid}")
            case UpgradeFormatVersion():
                if u.format_version not in SUPPORTED_VIEW_FORMAT_VERSIONS:
                    raise ValidationError(f"Unsupported view format version: {u.format_version}")
                if u.format_version < self.md.format_version:
                    raise ValidationError(
                        f"Cannot downgrade view format version {self.md.format_version} to {u.format_version}"
                    )
                self.md = replace(self.md, format_version=u.format_version)
            case AddSchema():
                self.add_schema(u.schema)
            case SetLocation():
                if not u.location:
                    raise ValidationError("Invalid view location: empty")
                self.md = replace(self.md, location=u.location.rstrip("/"))
            case SetProperties():
                self.md = replace(self.md, properties={**self.md.properties, **u.updates})
            case RemoveProperties():
                gone = set(u.removals)
                self.md = replace(self.md, properties={k: v for k, v in self.md.properties.items() if k not in gone})
            case AddViewVersion():
                self.add_version(u.version)
            case SetCurrentViewVersion():
                self.set_current(u.version_id)

    def build(self) -> ViewMetadata:
        # ViewMetadata validates the whole result (current version and its schema exist, no duplicates)
        return ViewMetadata(
            view_uuid=self.md.view_uuid, format_version=self.md.format_version, location=self.md.location,
            schemas=self.md.schemas, current_version_id=self.md.current_version_id, versions=self.md.versions,
            version_log=(*self.md.version_log, *self.history), properties=self.md.properties,
        )


def apply_view_updates(
    base: ViewMetadata, requirements: Sequence[AssertViewUUID], updates: Sequence[ViewUpdate]
) -> ViewMetadata:
    """The view metadata after a ``CommitViewRequest``.

    Raises:
        CommitFailedError: a requirement does not hold (409: the client refreshes and retries).
        ValidationError: an update is invalid (unknown schema or version, a second UUID ...).
    """
    for r in requirements:
        if r.uuid != base.view_uuid:
            raise CommitFailedError(f"Requirement failed: view UUID does not match: expected {base.view_uuid} != {r.uuid}")
    builder = _Builder(base)
    for u in updates:
        builder.apply(u)
    return builder.build()


def new_view_from_request(
    *, location: str, schema: Schema, version: ViewVersion, properties: Mapping[str, str]
) -> ViewMetadata:
    """The first metadata of a view created by a ``CreateViewRequest``: the schema gets id 0 and the
    version points at it (whatever schema id it was sent with), as the spec says."""
    first = Schema(*schema.fields, schema_id=0, identifier_field_ids=schema.identifier_field_ids)
    current = replace(version, schema_id=0)
    return ViewMetadata(
        view_uuid=uuid.uuid4(), format_version=1, location=location.rstrip("/"), schemas=(first,),
        current_version_id=current.version_id, versions=(current,),
        version_log=(ViewHistoryEntry(current.timestamp_ms, current.version_id),), properties=dict(properties),
    )


def view_updates_between(base: ViewMetadata, new: ViewMetadata) -> list[ViewUpdate]:
    """The updates that turn ``base`` into ``new`` (what a REST client sends to replace a view)."""
    out: list[ViewUpdate] = []
    if new.location != base.location:
        out.append(SetLocation(new.location))
    known_schemas = {s.schema_id for s in base.schemas}
    added_schemas = [s for s in new.schemas if s.schema_id not in known_schemas]
    out += [AddSchema(s) for s in added_schemas]
    known_versions = {v.version_id for v in base.versions}
    added = [v for v in new.versions if v.version_id not in known_versions]
    last_schema = added_schemas[-1].schema_id if added_schemas else None
    for v in added:
        out.append(AddViewVersion(replace(v, schema_id=LAST_ADDED) if v.schema_id == last_schema else v))
    if new.current_version_id != base.current_version_id:
        last = added[-1].version_id if added else None
        out.append(SetCurrentViewVersion(LAST_ADDED if new.current_version_id == last else new.current_version_id))
    changed = {k: v for k, v in new.properties.items() if base.properties.get(k) != v}
    if changed:
        out.append(SetProperties(changed))
    removed = tuple(k for k in base.properties if k not in new.properties)
    if removed:
        out.append(RemoveProperties(removed))
    return out
