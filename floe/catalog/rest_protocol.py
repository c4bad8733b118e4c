"""The REST catalog protocol's shapes, shared by the client (:mod:`floe.catalog.rest`) and ``floe serve``.

Pure translations between Floe values and the JSON of Iceberg's REST catalog OpenAPI
(``open-api/rest-catalog-open-api.yaml``): namespaces in URL paths (levels joined by the unit separator
``0x1F``), table identifiers, create-table and commit requests, load-table results, the error model
``{"error": {"message", "type", "code"}}`` and which Floe error each status/type pair means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from floe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    FloeError,
    InvalidMetadataError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    NotFoundError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.serde.json_types import (
    JSON,
    partition_spec_from_json,
    partition_spec_to_json,
    schema_from_json,
    schema_to_json,
    sort_order_from_json,
    sort_order_to_json,
)
from floe.serde.metadata_json import table_metadata_from_dict, table_metadata_to_dict
from floe.serde.updates_json import (
    requirement_from_json,
    requirement_to_json,
    update_from_json,
    update_to_json,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.sort_order import SortOrder
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import TableRequirement, TableUpdate
from floe.table.identifiers import Identifier, Namespace

__all__ = [
    "DEFAULT_ENDPOINTS",
    "NAMESPACE_SEPARATOR",
    "SERVER_ENDPOINTS",
    "VIEW_ENDPOINTS",
    "CommitTableRequest",
    "CreateTableRequest",
    "ForbiddenError",
    "LoadTableResult",
    "NotAuthorizedError",
    "RestError",
    "decode_namespace",
    "encode_namespace",
    "error_from_response",
    "error_json",
    "error_status",
    "identifier_from_json",
    "identifier_to_json",
    "namespace_from_json",
]

NAMESPACE_SEPARATOR = "\x1f"

# The endpoints a server that sends no ``endpoints`` list is assumed to offer (OpenAPI, GET /v1/config).
DEFAULT_ENDPOINTS = frozenset({
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
})
# Iceberg views (a client uses them only when the server lists them).
VIEW_ENDPOINTS = (
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
)
# What ``floe serve`` implements (and advertises): the defaults plus the HEAD existence checks.
SERVER_ENDPOINTS = (
    *sorted(DEFAULT_ENDPOINTS),
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    *VIEW_ENDPOINTS,
)


# -- errors -----------------------------------------------------------------------------------------
class RestError(FloeError):
    """An error a REST catalog server answered with (its HTTP status and error type are kept)."""

    def __init__(self, message: str, *, code: int, error_type: str) -> None:
        super().__init__(message)
        self.code = code
        self.error_type = error_type

    def __reduce__(self) -> tuple[object, ...]:
        # keyword-only fields: picklable across processes (worker pools re-raise errors in the parent)
        return (_rebuild_rest_error, (type(self), str(self), self.code, self.error_type))


def _rebuild_rest_error(cls: type[RestError], message: str, code: int, error_type: str) -> RestError:
    return cls(message, code=code, error_type=error_type)


class NotAuthorizedError(RestError):
    """401: no credentials, wrong or expired ones."""


class ForbiddenError(RestError):
    """403: the credentials do not allow this operation on this namespace."""


# Floe error -> (HTTP status, the error type Iceberg Java names it), most specific first.
_STATUS: tuple[tuple[type[BaseException], int, str], ...] = (
    (NotAuthorizedError, 401, "NotAuthorizedException"),
    (ForbiddenError, 403, "ForbiddenException"),
    (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (NoSuchTableError, 404, "NoSuchTableException"),
    (NoSuchViewError, 404, "NoSuchViewException"),
    (NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (CommitFailedError, 409, "CommitFailedException"),
    (CommitStateUnknownError, 500, "CommitStateUnknownException"),
    (UnsupportedError, 406, "UnsupportedOperationException"),
    (FileNotFoundError, 400, "BadRequestException"),  # e.g. register_table with a missing metadata file
    (ValidationError, 400, "BadRequestException"),
    (NotFoundError, 404, "NotFoundException"),
)


def error_status(error: BaseException) -> tuple[int, str]:
    """The HTTP status and error type a server answers ``error`` with (500 for anything unexpected)."""
    if isinstance(error, RestError):
        return error.code, error.error_type
    for cls, code, kind in _STATUS:
        if isinstance(error, cls):
            return code, kind
    return 500, "InternalServerError"


def error_json(message: str, error_type: str, code: int) -> dict[str, JSON]:
    """The OpenAPI ``IcebergErrorResponse`` body."""
    return {"error": {"message": message, "type": error_type, "code": code}}


def error_from_response(
    code: int, body: object, *, fallback: str, already_exists: type[FloeError] = TableAlreadyExistsError
) -> FloeError:
    """The Floe error for a server's error answer (``body`` is the parsed JSON, or anything else).

    Args:
        code: the HTTP status.
        body: the decoded JSON body (an ErrorModel when the server follows the spec).
        fallback: the message when the body has none (names the request).
        already_exists: what a 409 ``AlreadyExistsException`` means for this request.
    """
    message, kind = fallback, ""
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping):
            message = str(err.get("message") or fallback)
            kind = str(err.get("type") or "")
        elif isinstance(err, str):  # an OAuth2 error: {"error": "invalid_client", "error_description": ...}
            message = f"{err}: {body.get('error_description') or fallback}"
            kind = err
    text = f"{message} (HTTP {code}{', ' + kind if kind else ''})"
    if code in (401, 419):
        return NotAuthorizedError(text, code=code, error_type=kind or "NotAuthorizedException")
    if code == 403:
        return ForbiddenError(text, code=code, error_type=kind or "ForbiddenException")
    if code == 404:
        if "Namespace" in kind:
            return NoSuchNamespaceError(text)
        if "View" in kind:
            return NoSuchViewError(text)
        return NoSuchTableError(text)
    if code == 409:
        if kind == "CommitFailedException":
            return CommitFailedError(text)
        if kind == "NamespaceNotEmptyException":
            return NamespaceNotEmptyError(text)
        return already_exists(text)
    if code == 406:
        return UnsupportedError(text)
    if code in (400, 422):
        return ValidationError(text)
    return RestError(text, code=code, error_type=kind or "RESTException")


# -- names ------------------------------------------------------------------------------------------
def encode_namespace(namespace: Sequence[str]) -> str:
    """A namespace as one URL path segment: levels joined by 0x1F, percent-encoded (``/`` too)."""
    return quote(NAMESPACE_SEPARATOR.join(namespace), safe="")


def decode_namespace(segment: str) -> Namespace:
    """The levels of a namespace path segment or ``parent`` parameter that is already percent-decoded."""
    return tuple(segment.split(NAMESPACE_SEPARATOR)) if segment else ()


def decode_segment(raw: str) -> str:
    """One raw (still percent-encoded) URL path segment, decoded strictly as UTF-8.

    Raises:
        ValidationError: the segment is not valid percent-encoded UTF-8.
    """
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError as e:
        raise ValidationError(f"Invalid percent-encoding in URL path segment {raw!r}") from e


def _str_list(node: JSON, what: str) -> tuple[str, ...]:
    if not isinstance(node, list) or not all(isinstance(v, str) for v in node):
        raise ValidationError(f"{what} must be a list of strings, got {node!r}"[:300])
    return tuple(node)


def namespace_from_json(node: JSON) -> Namespace:
    """A namespace from its JSON form (a list of levels)."""
    return _str_list(node, "namespace")


def identifier_to_json(identifier: Identifier) -> dict[str, JSON]:
    """``{"namespace": [...], "name": ...}``."""
    return {"namespace": list(identifier[:-1]), "name": identifier[-1]}


def identifier_from_json(node: JSON) -> Identifier:
    """A table identifier from ``{"namespace": [...], "name": ...}``.

    Raises:
        ValidationError: malformed.
    """
    if not isinstance(node, Mapping) or not isinstance(node.get("name"), str):
        raise ValidationError(f"A table identifier must be {{'namespace': [...], 'name': ...}}, got {node!r}"[:300])
    return (*namespace_from_json(node.get("namespace")), str(node["name"]))


def string_map(node: JSON, what: str) -> dict[str, str]:
    """A JSON object of strings (properties), or {} for null.

    Raises:
        ValidationError: not an object of strings.
    """
    if node is None:
        return {}
    if not isinstance(node, Mapping) or not all(isinstance(v, str) for v in node.values()):
        raise ValidationError(f"{what} must be an object of strings, got {node!r}"[:300])
    return {str(k): str(v) for k, v in node.items()}


# -- tables ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CreateTableRequest:
    """The body of ``POST .../namespaces/{namespace}/tables``."""

    name: str
    schema: Schema
    location: str | None = None
    partition_spec: PartitionSpec | None = None
    write_order: SortOrder | None = None
    stage_create: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        """The request's JSON."""
        out: dict[str, JSON] = {"name": self.name, "schema": schema_to_json(self.schema)}
        if self.location:
            out["location"] = self.location
        if self.partition_spec is not None:
            out["partition-spec"] = partition_spec_to_json(self.partition_spec)
        if self.write_order is not None:
            out["write-order"] = sort_order_to_json(self.write_order)
        out["stage-create"] = self.stage_create
        out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(node: JSON) -> CreateTableRequest:
        """Parse the request.

        Raises:
            ValidationError: malformed (names the field).
        """
        if not isinstance(node, Mapping) or not isinstance(node.get("name"), str) or "schema" not in node:
            raise ValidationError("CreateTableRequest needs 'name' (a string) and 'schema'")
        location = node.get("location")
        if location is not None and not isinstance(location, str):
            raise ValidationError("CreateTableRequest 'location' must be a string")
        stage = node.get("stage-create", False)
        if not isinstance(stage, bool):
            raise ValidationError("CreateTableRequest 'stage-create' must be a boolean")
        try:
            spec = node.get("partition-spec")
            order = node.get("write-order")
            return CreateTableRequest(
                name=str(node["name"]),
                schema=schema_from_json(node["schema"]),
                location=location or None,
                partition_spec=None if spec is None else partition_spec_from_json(spec),
                write_order=None if order is None else sort_order_from_json(order),
                stage_create=stage,
                properties=string_map(node.get("properties"), "properties"),
            )
        except InvalidMetadataError as e:
            raise ValidationError(f"Invalid CreateTableRequest: {e}") from e


@dataclass(frozen=True, slots=True)
class LoadTableResult:
    """The answer to load, create, register (``metadata-location`` is None for a staged create)."""

    metadata: TableMetadata
    metadata_location: str | None
    config: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        """The result's JSON (also the shape of CommitTableResponse, whose ``config`` is ignored)."""
        out: dict[str, JSON] = {"metadata": table_metadata_to_dict(self.metadata)}
        if self.metadata_location is not None:
            out["metadata-location"] = self.metadata_location
        out["config"] = dict(self.config)
        return out

    @staticmethod
    def from_json(node: JSON) -> LoadTableResult:
        """Parse a LoadTableResult or CommitTableResponse.

        Raises:
            InvalidMetadataError: malformed.
        """
        if not isinstance(node, Mapping) or not isinstance(node.get("metadata"), Mapping):
            raise InvalidMetadataError("REST answer has no 'metadata' object")
        location = node.get("metadata-location")
        return LoadTableResult(
            table_metadata_from_dict(node["metadata"]),
            str(location) if location else None,
            string_map(node.get("config"), "config"),
        )


@dataclass(frozen=True, slots=True)
class CommitTableRequest:
    """A commit as data: ``requirements`` checked on the current metadata, then ``updates`` applied."""

    identifier: Identifier | None
    requirements: tuple[TableRequirement, ...]
    updates: tuple[TableUpdate, ...]

    def to_json(self) -> dict[str, JSON]:
        """The request's JSON."""
        out: dict[str, JSON] = {}
        if self.identifier is not None:
            out["identifier"] = identifier_to_json(self.identifier)
        out["requirements"] = [requirement_to_json(r) for r in self.requirements]
        out["updates"] = [update_to_json(u) for u in self.updates]
        return out

    @staticmethod
    def from_json(node: JSON) -> CommitTableRequest:
        """Parse the request (unknown update actions or requirement types are refused).

        Raises:
            ValidationError: malformed or unknown entries (names the first).
        """
        if not isinstance(node, Mapping):
            raise ValidationError("CommitTableRequest must be a JSON object")
        reqs, ups = node.get("requirements", []), node.get("updates", [])
        if not isinstance(reqs, list) or not isinstance(ups, list):
            raise ValidationError("CommitTableRequest 'requirements' and 'updates' must be lists")
        ident = node.get("identifier")
        try:
            return CommitTableRequest(
                None if ident is None else identifier_from_json(ident),
                tuple(requirement_from_json(r) for r in reqs),
                tuple(update_from_json(u) for u in ups),
            )
        except (InvalidMetadataError, KeyError, TypeError, AttributeError) as e:
            raise ValidationError(f"Invalid CommitTableRequest: {e}") from e
