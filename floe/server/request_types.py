"""Request bodies of ``floe serve`` checked against the REST spec's types before anything reads them.

The shapes follow ``open-api/rest-catalog-open-api.yaml`` (Iceberg 1.10): property values are strings,
``remove-properties`` takes a list of strings, ``integer`` fields fit 32 bits and ``format: int64`` fields
(snapshot ids, sequence numbers, timestamps, sizes) fit signed 64 bits, booleans are booleans. A body that
breaks them is refused with 400 and one line naming the field, before a parser could coerce a value
(``{'b': 1}`` stored as its Python repr) or a number that Iceberg Java cannot read reached a metadata file.
Unknown fields are allowed (the spec's objects are open); unknown update actions and requirement types
are not.

:func:`parse_json` reads a body with a nesting limit: deeply nested JSON costs recursion, not information.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from floe.errors import ValidationError

__all__ = ["REQUEST_TYPES", "check_request", "parse_json"]

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class _Invalid(Exception):
    def __init__(self, at: str, expected: str, value: Any) -> None:
        super().__init__(at)
        self.at, self.expected, self.value = at, expected, value


Check = Callable[[Any, str], None]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        text = repr(value)
        return f"number {text[:40]}{'...' if len(text) > 40 else ''}"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "an array" if isinstance(value, list) else "an object"


def _string(value: Any, at: str) -> None:
    if not isinstance(value, str):
        raise _Invalid(at, "a string", value)


def _boolean(value: Any, at: str) -> None:
    if not isinstance(value, bool):
        raise _Invalid(at, "a boolean", value)


def _integer(bounds: tuple[int, int], name: str) -> Check:
    def check(value: Any, at: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
            raise _Invalid(at, name, value)

    return check


_int = _integer(_INT32, "a 32-bit integer")
_long = _integer(_INT64, "a signed 64-bit integer")


def _nullable(check: Check) -> Check:
    def nullable(value: Any, at: str) -> None:
        if value is not None:
            check(value, at)

    return nullable


def _list(item: Check) -> Check:
    def check(value: Any, at: str) -> None:
        if not isinstance(value, list):
            raise _Invalid(at, "an array", value)
        for i, v in enumerate(value):
            item(v, f"{at}[{i}]")

    return check


def _string_map(value: Any, at: str) -> None:
    if not isinstance(value, Mapping):
        raise _Invalid(at, "an object of strings", value)
    for k, v in value.items():
        _string(v, f"{at}[{json.dumps(k)[:60]}]")


def _object(required: Mapping[str, Check], optional: Mapping[str, Check] | None = None) -> Check:
    def check(value: Any, at: str) -> None:
        if not isinstance(value, Mapping):
            raise _Invalid(at, "an object", value)
        for key, field in required.items():
            if key not in value:
                raise _Invalid(f"{at}.{key}" if at else key, "present", None)
            field(value[key], f"{at}.{key}" if at else key)
        for key, field in (optional or {}).items():
            if key in value:
                field(value[key], f"{at}.{key}" if at else key)

    return check


def _tagged(tag: str, variants: Mapping[str, Check], what: str) -> Check:
    """One of several objects told apart by ``tag`` (``action`` of updates, ``type`` of requirements)."""

    def check(value: Any, at: str) -> None:
        if not isinstance(value, Mapping):
            raise _Invalid(at, "an object", value)
        kind = value.get(tag)
        if not isinstance(kind, str) or kind not in variants:
            raise _Invalid(f"{at}.{tag}", f"a known {what} {tag}", kind)
        variants[kind](value, at)

    return check


# -- schemas, specs, sort orders ------------------------------------------------------------------
def _type(value: Any, at: str) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, Mapping):
        raise _Invalid(at, "a type name or a struct, list or map object", value)
    kind = value.get("type")
    if kind == "struct":
        _struct(value, at)
    elif kind == "list":
        _object({"element-id": _int, "element": _type, "element-required": _boolean})(value, at)
    elif kind == "map":
        _object({"key-id": _int, "key": _type, "value-id": _int, "value": _type, "value-required": _boolean})(
            value, at
        )
    else:
        raise _Invalid(f"{at}.type", "struct, list or map", kind)


_field = _object({"id": _int, "name": _string, "type": _type, "required": _boolean}, {"doc": _nullable(_string)})


def _struct(value: Any, at: str) -> None:
    _object({"fields": _list(_field)})(value, at)


_schema = _object(
    {"type": _string, "fields": _list(_field)},
    {"schema-id": _int, "identifier-field-ids": _list(_int)},
)
_partition_spec = _object(
    {"fields": _list(_object(
        {"name": _string, "transform": _string},
        {"field-id": _int, "source-id": _int, "source-ids": _list(_int)},
    ))},
    {"spec-id": _int},
)
_sort_order = _object(
    {"order-id": _int, "fields": _list(_object(
        {"transform": _string, "direction": _string, "null-order": _string},
        {"source-id": _int, "source-ids": _list(_int)},
    ))},
)

# -- snapshots, refs, statistics, keys ------------------------------------------------------------
_summary = _object({"operation": _string})


def _snapshot_summary(value: Any, at: str) -> None:
    _summary(value, at)
    _string_map(value, at)


_snapshot = _object(
    {"snapshot-id": _long, "timestamp-ms": _long},
    {
        "parent-snapshot-id": _nullable(_long), "sequence-number": _long, "manifest-list": _string,
        "manifests": _list(_string), "summary": _snapshot_summary, "schema-id": _nullable(_int),
        "first-row-id": _nullable(_long), "added-rows": _nullable(_long), "key-id": _nullable(_string),
    },
)
_ref_fields: dict[str, Check] = {"type": _string, "snapshot-id": _long}
_ref_optional: dict[str, Check] = {
    "max-ref-age-ms": _nullable(_long), "max-snapshot-age-ms": _nullable(_long),
    "min-snapshots-to-keep": _nullable(_int),
}
_blob = _object(
    {"type": _string, "snapshot-id": _long, "sequence-number": _long, "fields": _list(_int)},
    {"properties": _string_map},
)
_statistics = _object({
    "snapshot-id": _long, "statistics-path": _string, "file-size-in-bytes": _long,
    "file-footer-size-in-bytes": _long, "blob-metadata": _list(_blob),
})
_partition_statistics = _object({"snapshot-id": _long, "statistics-path": _string, "file-size-in-bytes": _long})
_encrypted_key = _object(
    {"key-id": _string, "encrypted-key-metadata": _string},
    {"encrypted-by-id": _string, "properties": _string_map},
)

# -- updates and requirements ---------------------------------------------------------------------
_UPDATES: dict[str, Check] = {
    "assign-uuid": _object({"uuid": _string}),
    "upgrade-format-version": _object({"format-version": _int}),
    "add-schema": _object({"schema": _schema}, {"last-column-id": _int}),
    "set-current-schema": _object({"schema-id": _int}),
    "add-spec": _object({"spec": _partition_spec}),
    "set-default-spec": _object({"spec-id": _int}),
    "add-sort-order": _object({"sort-order": _sort_order}),
    "set-default-sort-order": _object({"sort-order-id": _int}),
    "add-snapshot": _object({"snapshot": _snapshot}),
    "set-snapshot-ref": _object({"ref-name": _string, **_ref_fields}, _ref_optional),
    "remove-snapshots": _object({"snapshot-ids": _list(_long)}),
    "remove-snapshot-ref": _object({"ref-name": _string}),
    "set-location": _object({"location": _string}),
    "set-properties": _object({"updates": _string_map}),
    "remove-properties": _object({"removals": _list(_string)}),
    "set-statistics": _object({"statistics": _statistics}, {"snapshot-id": _long}),
    "remove-statistics": _object({"snapshot-id": _long}),
    "set-partition-statistics": _object({"partition-statistics": _partition_statistics}),
    "remove-partition-statistics": _object({"snapshot-id": _long}),
    "remove-partition-specs": _object({"spec-ids": _list(_int)}),
    "remove-schemas": _object({"schema-ids": _list(_int)}),
    "add-encryption-key": _object({"encryption-key": _encrypted_key}),
    "remove-encryption-key": _object({"key-id": _string}),
}
_REQUIREMENTS: dict[str, Check] = {
    "assert-create": _object({}),
    "assert-table-uuid": _object({"uuid": _string}),
    "assert-ref-snapshot-id": _object({"ref": _string}, {"snapshot-id": _nullable(_long)}),
    "assert-last-assigned-field-id": _object({"last-assigned-field-id": _int}),
    "assert-current-schema-id": _object({"current-schema-id": _int}),
    "assert-last-assigned-partition-id": _object({"last-assigned-partition-id": _int}),
    "assert-default-spec-id": _object({"default-spec-id": _int}),
    "assert-default-sort-order-id": _object({"default-sort-order-id": _int}),
}
_identifier = _object({"namespace": _list(_string), "name": _string})
_commit_table = _object(
    {},
    {
        "identifier": _identifier,
        "requirements": _list(_tagged("type", _REQUIREMENTS, "requirement")),
        "updates": _list(_tagged("action", _UPDATES, "update")),
    },
)

_view_version = _object(
    {
        "version-id": _int, "timestamp-ms": _long, "schema-id": _int, "summary": _string_map,
        "representations": _list(_object({"type": _string})), "default-namespace": _list(_string),
    },
    {"default-catalog": _nullable(_string)},
)
_VIEW_UPDATES: dict[str, Check] = {
    **{k: _UPDATES[k] for k in (
        "assign-uuid", "upgrade-format-version", "add-schema", "set-location", "set-properties", "remove-properties",
    )},
    "add-view-version": _object({"view-version": _view_version}),
    "set-current-view-version": _object({"view-version-id": _int}),
}

REQUEST_TYPES: dict[str, Check] = {
    "CreateNamespaceRequest": _object({"namespace": _list(_string)}, {"properties": _nullable(_string_map)}),
    "UpdateNamespacePropertiesRequest": _object(
        {}, {"removals": _nullable(_list(_string)), "updates": _nullable(_string_map)}
    ),
    "CreateTableRequest": _object(
        {"name": _string, "schema": _schema},
        {
            "location": _nullable(_string), "partition-spec": _nullable(_partition_spec),
            "write-order": _nullable(_sort_order), "stage-create": _boolean, "properties": _nullable(_string_map),
        },
    ),
    "RegisterTableRequest": _object({"name": _string, "metadata-location": _string}, {"overwrite": _boolean}),
    "RenameTableRequest": _object({"source": _identifier, "destination": _identifier}),
    "CommitTableRequest": _commit_table,
    "CommitTransactionRequest": _object({"table-changes": _list(_commit_table)}),
    "ReportMetricsRequest": _object({}),
    "PlanTableScanRequest": _object({}, {
        "snapshot-id": _nullable(_long), "start-snapshot-id": _nullable(_long), "end-snapshot-id": _nullable(_long),
        "select": _nullable(_list(_string)), "stats-fields": _nullable(_list(_string)), "case-sensitive": _boolean,
        "use-snapshot-schema": _boolean, "min-rows-requested": _nullable(_long),
    }),
    "FetchScanTasksRequest": _object({"plan-task": _string}),
    "CreateViewRequest": _object(
        {"name": _string, "schema": _schema, "view-version": _view_version},
        {"location": _nullable(_string), "properties": _nullable(_string_map)},
    ),
    "CommitViewRequest": _object(
        {"updates": _list(_tagged("action", _VIEW_UPDATES, "view update"))},
        {
            "identifier": _identifier,
            "requirements": _list(_tagged("type", {"assert-view-uuid": _object({"uuid": _string})}, "requirement")),
        },
    ),
}


def check_request(body: Any, request_type: str) -> None:
    """Check a parsed body against the REST spec's shape of ``request_type`` (a key of REQUEST_TYPES).

    Raises:
        ValidationError: the first field that breaks the spec, in one line
            (``Invalid CommitTableRequest: updates[0].updates["a"] must be a string, got an object``).
    """
    try:
        REQUEST_TYPES[request_type](body, "")
    except _Invalid as e:
        at = e.at or "the body"
        if e.expected == "present":
            raise ValidationError(f"Invalid {request_type}: {at} is required by the REST spec") from None
        got = _kind(e.value) if not isinstance(e.value, str) else json.dumps(e.value)[:80]
        raise ValidationError(f"Invalid {request_type}: {at} must be {e.expected}, got {got}") from None


def parse_json(data: bytes, *, max_depth: int) -> Any:
    """Parse a request body, refusing JSON nested deeper than ``max_depth`` arrays and objects.

    Raises:
        ValidationError: not UTF-8 JSON, or nested too deeply (one line).
    """
    too_deep = ValidationError(f"Request body is nested deeper than {max_depth} levels of JSON arrays and objects")
    try:
        value = json.loads(data)
    except RecursionError:
        raise too_deep from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ValidationError(f"Request body is not valid JSON: {e}") from None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)):
            if depth > max_depth:
                raise too_deep
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return value
