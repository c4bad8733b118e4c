"""REST JSON of view updates and requirements (``CommitViewRequest``); shared actions as for tables."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from floe.errors import InvalidMetadataError
from floe.serde.json_types import JSON, get_int, get_str
from floe.serde.updates_json import update_from_json, update_to_json
from floe.serde.view_json import view_version_from_json, view_version_to_json
from floe.spec.updates import (
    AddSchema,
    AssignUUID,
    RemoveProperties,
    SetLocation,
    SetProperties,
    UpgradeFormatVersion,
)
from floe.spec.view_updates import AddViewVersion, AssertViewUUID, SetCurrentViewVersion, ViewUpdate

__all__ = ["view_requirement_from_json", "view_update_from_json", "view_update_to_json"]

_SHARED = ("assign-uuid", "upgrade-format-version", "add-schema", "set-location", "set-properties", "remove-properties")


def view_update_from_json(node: Mapping[str, JSON]) -> ViewUpdate:
    """Parse one view update.

    Raises:
        InvalidMetadataError: an action views do not have, or a malformed field.
    """
    action = get_str(node, "action")
    if action == "add-view-version":
        version = node.get("view-version")
        if not isinstance(version, Mapping):
            raise InvalidMetadataError("Cannot parse add-view-version: view-version must be an object")
        return AddViewVersion(view_version_from_json(version))
    if action == "set-current-view-version":
        return SetCurrentViewVersion(get_int(node, "view-version-id"))
    if action not in _SHARED:
        raise InvalidMetadataError(f"Cannot parse view update: unknown action {action!r}")
    parsed = update_from_json(node)
    assert isinstance(parsed, (AssignUUID, UpgradeFormatVersion, AddSchema, SetLocation, SetProperties, RemoveProperties))
    return parsed


def view_update_to_json(u: ViewUpdate) -> dict[str, JSON]:
    """The REST JSON of one view update."""
    if isinstance(u, AddViewVersion):
        return {"action": u.action, "view-version": view_version_to_json(u.version)}
    if isinstance(u, SetCurrentViewVersion):
        return {"action": u.action, "view-version-id": u.version_id}
    return update_to_json(u)


def view_requirement_from_json(node: Mapping[str, JSON]) -> AssertViewUUID:
    """Parse one view requirement (the spec has one kind: ``assert-view-uuid``).

    Raises:
        InvalidMetadataError: another type, or a malformed UUID.
    """
    kind = get_str(node, "type")
    if kind != "assert-view-uuid":
        raise InvalidMetadataError(f"Cannot parse view requirement: unknown type {kind!r}")
    try:
        return AssertViewUUID(uuid.UUID(get_str(node, "uuid")))
    except ValueError as e:
        raise InvalidMetadataError(f"Cannot parse assert-view-uuid: {e}") from None
