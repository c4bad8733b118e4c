"""What each REST catalog route does to the served catalog (synchronous; the app runs them in threads).

Every handler gets the catalog, the caller's principal, the route's names (already checked and in NFC by
the app), query parameters and the parsed, type-checked JSON body. It checks the caller's grant on the
namespaces it touches before anything else (so a caller without access learns nothing, not even whether
a name exists) and returns ``(status, body)``. Names from bodies go through :mod:`floe.server.names`;
every catalog still refuses names that cannot be path segments (:mod:`floe.catalog.path_segments`).

Every create, register, commit and purge passes :meth:`Handlers.guard`, the one place the location policy
(:mod:`floe.server.location_policy`) is applied: on the metadata about to be written, registered or
purged, before anything is written or deleted, with write required on every namespace whose folder the
table's folders touch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from floe.catalog.base import LOCATION, WAREHOUSE, Catalog
from floe.catalog.metadata_files import read_metadata
from floe.catalog.path_segments import check_identifier_segments
from floe.catalog.resolved_locations import inside_folder
from floe.catalog.rest_protocol import (
    SERVER_ENDPOINTS,
    VIEW_ENDPOINTS,
    CommitTableRequest,
    CreateTableRequest,
    ForbiddenError,
    LoadTableResult,
    RestError,
    identifier_from_json,
    identifier_to_json,
    namespace_from_json,
    string_map,
)
from floe.catalog.views import ViewCatalog
from floe.errors import CommitFailedError, NoSuchNamespaceError, UnsupportedError, ValidationError
from floe.serde.json_types import schema_from_json
from floe.serde.metadata_json import table_metadata_to_dict
from floe.serde.view_json import view_metadata_to_dict, view_version_from_json
from floe.serde.view_updates_json import view_requirement_from_json, view_update_from_json
from floe.server.location_policy import LocationPolicy, Touched, table_folders
from floe.server.names import request_identifier, request_name, request_namespace, split_namespace
from floe.server.scan_planning import PLANNING_ENDPOINTS, ScanPlans
from floe.server.settings import LEVELS, Principal
from floe.spec.metadata_builder import apply_updates
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import AssertCreate, validate_requirements
from floe.spec.view_metadata import ViewMetadata
from floe.spec.view_updates import apply_view_updates, new_view_from_request
from floe.table.identifiers import Identifier, Namespace, identifier_to_string, namespace_to_string
from floe.table.purge import purge_table_files, require_gc_enabled
from floe.table.transaction import apply_commit

__all__ = ["Handlers", "Reply", "require_grant"]

Reply = tuple[int, Any]
TRANSACTIONS = "POST /v1/{prefix}/transactions/commit"
JSONBody = Any


def require_grant(principal: Principal, namespace: Namespace, level: str, *, why: str = "") -> None:
    """Refuse (403) unless ``principal`` holds ``level`` on ``namespace`` (``()``: on some namespace).

    Raises:
        ForbiddenError: one line naming the principal, the level, the namespace and ``why``.
    """
    if principal.level_for(namespace) < LEVELS[level]:
        where = f"namespace {namespace_to_string(namespace)}" if namespace else "any namespace"
        raise ForbiddenError(
            f"{principal.name} may not {level} in {where}{': ' + why if why else ''}",
            code=403, error_type="ForbiddenException",
        )


def _page(items: list[Any], params: Mapping[str, str]) -> tuple[list[Any], str | None]:
    """One page of ``items``: ``pageToken`` is the offset this server handed out, ``pageSize`` the size."""
    try:
        start = int(params.get("pageToken") or 0)
        size = int(params["pageSize"]) if params.get("pageSize") else len(items) or 1
    except ValueError:
        raise ValidationError("pageToken and pageSize must be integers") from None
    if start < 0 or size < 1:
        raise ValidationError("pageToken must be >= 0 and pageSize >= 1")
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def _object(body: JSONBody, what: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ValidationError(f"{what}: the request body must be a JSON object")
    return body


def _moves(base: TableMetadata | None, new: TableMetadata) -> bool:
    """Whether a change places the table's folders anew (create, set-location, a location property)."""
    return base is None or set(table_folders(base)) != set(table_folders(new))


@dataclass
class Handlers:
    """The routes of one served catalog; ``policy`` is where its tables' files may go."""

    catalog: Catalog
    prefix: str
    policy: LocationPolicy
    separator: str = "\x1f"
    plans: ScanPlans = field(default_factory=ScanPlans)

    def guard(
        self,
        principal: Principal,
        identifier: Identifier,
        metadata: TableMetadata,
        *,
        base: TableMetadata | None = None,
        metadata_file: str | None = None,
    ) -> None:
        """The location policy for metadata about to be written, registered or purged, and the grants on
        the namespaces whose folders it touches.

        Raises:
            ForbiddenError: a rule of the policy, or a missing grant (one line naming it).
            ValidationError: a malformed location.
        """
        touched = self.policy.check_table(identifier, metadata, base=base, metadata_file=metadata_file)
        self._authorize(principal, touched)

    @staticmethod
    def _authorize(principal: Principal, touched: list[Touched]) -> None:
        for t in touched:
            require_grant(principal, t.namespace, "write", why=f"{t.reason} (authorization by what is touched)")

    @contextlib.contextmanager
    def _placing(self, moves: bool) -> Iterator[None]:
        """Serialize changes that place table folders: each passes the overlap rule against the others."""
        if not moves:
            yield
            return
        with self.policy.moving:
            yield

    # -- configuration ---------------------------------------------------------------------------
    def config(self, principal: Principal, params: Mapping[str, str]) -> Reply:
        wanted = params.get(WAREHOUSE)
        served = {self.catalog.name, self.catalog.properties.get(WAREHOUSE, "")}
        if wanted and wanted not in served:
            raise ValidationError(
                f"This server serves catalog {self.catalog.name!r}; warehouse {wanted!r} is not served here"
            )
        endpoints = [e for e in SERVER_ENDPOINTS if e != TRANSACTIONS or self.catalog.supports_multi_table_commits]
        if not isinstance(self.catalog, ViewCatalog):  # a catalog that stores no views offers none
            endpoints = [e for e in endpoints if e not in VIEW_ENDPOINTS]
        endpoints += PLANNING_ENDPOINTS
        separator = "".join(f"%{b:02X}" for b in self.separator.encode("utf-8"))  # URL-encoded, as the spec asks
        overrides = {"prefix": self.prefix, "namespace-separator": separator}
        return 200, {"defaults": {}, "overrides": overrides, "endpoints": endpoints}

    # -- namespaces ------------------------------------------------------------------------------
    def list_namespaces(self, principal: Principal, params: Mapping[str, str]) -> Reply:
        raw = params.get("parent") or ""
        parent = request_namespace(split_namespace(raw, self.separator)) if raw else ()
        if parent:
            require_grant(principal, parent, "read")
        visible = [ns for ns in self.catalog.list_namespaces(parent) if principal.sees(ns)]
        page, token = _page([list(ns) for ns in visible], params)
        return 200, {"namespaces": page, "next-page-token": token}

    def create_namespace(self, principal: Principal, body: JSONBody) -> Reply:
        node = _object(body, "CreateNamespaceRequest")
        ns = request_namespace(namespace_from_json(node.get("namespace")))
        if not ns:
            raise ValidationError("Cannot create the root namespace")
        require_grant(principal, ns, "admin")
        props = string_map(node.get("properties"), "properties")
        if LOCATION in props:
            self.policy.check_namespace_location(ns, props[LOCATION])
        self.catalog.create_namespace(ns, props)
        return 200, {"namespace": list(ns), "properties": self.catalog.load_namespace_properties(ns)}

    def load_namespace(self, principal: Principal, ns: Namespace) -> Reply:
        require_grant(principal, ns, "read")
        return 200, {"namespace": list(ns), "properties": self.catalog.load_namespace_properties(ns)}

    def namespace_exists(self, principal: Principal, ns: Namespace) -> Reply:
        require_grant(principal, ns, "read")
        return (204, None) if self.catalog.namespace_exists(ns) else (404, None)

    def drop_namespace(self, principal: Principal, ns: Namespace) -> Reply:
        require_grant(principal, ns, "admin")
        self.catalog.drop_namespace(ns)
        return 204, None

    def update_namespace_properties(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        require_grant(principal, ns, "admin")
        node = _object(body, "UpdateNamespacePropertiesRequest")
        removals = node.get("removals") or []
        if not isinstance(removals, list) or not all(isinstance(r, str) for r in removals):
            raise ValidationError("removals must be a list of strings")
        updates = string_map(node.get("updates"), "updates")
        if LOCATION in updates:
            self.policy.check_namespace_location(ns, updates[LOCATION])
        both = sorted(set(removals) & set(updates))
        if both:
            raise RestError(
                f"Properties both removed and updated: {both}", code=422, error_type="UnprocessableEntityException"
            )
        summary = self.catalog.update_namespace_properties(ns, removals, updates)
        return 200, {"updated": summary.updated, "removed": summary.removed, "missing": summary.missing or None}

    # -- tables ----------------------------------------------------------------------------------
    def list_tables(self, principal: Principal, ns: Namespace, params: Mapping[str, str]) -> Reply:
        require_grant(principal, ns, "read")
        page, token = _page([identifier_to_json(i) for i in self.catalog.list_tables(ns)], params)
        return 200, {"identifiers": page, "next-page-token": token}

    def create_table(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        require_grant(principal, ns, "write")
        req = CreateTableRequest.from_json(body)
        ident = (*ns, request_name(req.name, kind="table"))
        txn = self.catalog.create_table_transaction(
            ident, req.schema, location=req.location, partition_spec=req.partition_spec, sort_order=req.write_order,
            properties=req.properties,
        )
        with self._placing(True):
            self.guard(principal, ident, txn.table_metadata)
            if req.stage_create:
                return 200, LoadTableResult(txn.table_metadata, None).to_json()
            table = txn.commit_transaction()
        if table.metadata_location:
            self.policy.remember(table.metadata_location, table.metadata)
        return 200, LoadTableResult(table.metadata, table.metadata_location).to_json()

    def register_table(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        """Register a metadata file: where it lies and everything it says pass the location policy, and
        the file is read only when the caller may write where it lies."""
        require_grant(principal, ns, "write")
        node = _object(body, "RegisterTableRequest")
        name, location = node.get("name"), node.get("metadata-location")
        if not isinstance(name, str) or not isinstance(location, str) or not location:
            raise ValidationError("RegisterTableRequest needs 'name' and 'metadata-location' strings")
        if node.get("overwrite"):
            raise UnsupportedError("register_table with overwrite=true is not supported by floe serve")
        ident = (*ns, request_name(name, kind="table"))
        check_identifier_segments(ident, catalog=self.catalog.name)  # the name first: 400 before any 403
        subject = identifier_to_string(ident)
        self._authorize(principal, self.policy.check_metadata_file(location, subject=subject))
        metadata = read_metadata(self.catalog.io(location), location)
        with self._placing(True):
            self.guard(principal, ident, metadata, metadata_file=location)
            table = self.catalog.register_table(ident, location)
            if table.metadata != metadata:  # rewritten between the check and the registration
                self.catalog.drop_table(ident)
                raise CommitFailedError(f"Metadata file {location} changed while {subject} was registered; retry")
        self.policy.remember(location, table.metadata)
        return 200, LoadTableResult(table.metadata, table.metadata_location).to_json()

    def load_table(self, principal: Principal, ident: Identifier, params: Mapping[str, str]) -> Reply:
        require_grant(principal, ident[:-1], "read")
        if params.get("snapshots") not in (None, "all", "refs"):
            raise ValidationError(f"snapshots must be 'all' or 'refs', got {params.get('snapshots')!r}")
        # 'refs' allows the server to leave unreferenced snapshots out; sending all of them is also valid.
        table = self.catalog.load_table(ident)
        return 200, LoadTableResult(table.metadata, table.metadata_location).to_json()

    def table_exists(self, principal: Principal, ident: Identifier) -> Reply:
        require_grant(principal, ident[:-1], "read")
        return (204, None) if self.catalog.table_exists(ident) else (404, None)

    def commit_table(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        require_grant(principal, ident[:-1], "write")
        req = CommitTableRequest.from_json(body)
        if req.identifier is not None and request_identifier(req.identifier) != tuple(ident):
            raise ValidationError(
                f"Commit body names {identifier_to_string(req.identifier)} but the route {identifier_to_string(ident)}"
            )
        if any(isinstance(r, AssertCreate) for r in req.requirements):
            return self._create_by_commit(principal, ident, req)
        ops = self.catalog.table_operations(ident)
        base, base_location = ops.load()
        new = apply_commit(
            base, list(req.requirements), list(req.updates), name=identifier_to_string(ident),
            base_location=base_location,
        )
        with self._placing(_moves(base, new)):
            self.guard(principal, ident, new, base=base)
            location = ops.commit(base, base_location, new)
        self.policy.remember(location, new)
        return 200, {"metadata-location": location, "metadata": table_metadata_to_dict(new)}

    def _create_by_commit(self, principal: Principal, ident: Identifier, req: CommitTableRequest) -> Reply:
        """A staged create (``stage-create`` then a commit with ``assert-create``): build from nothing."""
        check_identifier_segments(ident, catalog=self.catalog.name)
        self.catalog._check_namespace(ident[:-1])
        if self.catalog.table_exists(ident):
            raise CommitFailedError(f"Requirement failed: table {identifier_to_string(ident)} already exists")
        validate_requirements(None, req.requirements)
        new = apply_updates(None, req.updates)
        ops = self.catalog.table_operations(ident)
        with self._placing(True):
            self.guard(principal, ident, new)
            location = ops.commit(None, None, new)
        self.policy.remember(location, new)
        return 200, {"metadata-location": location, "metadata": table_metadata_to_dict(new)}

    def drop_table(self, principal: Principal, ident: Identifier, params: Mapping[str, str]) -> Reply:
        require_grant(principal, ident[:-1], "write")
        purge = (params.get("purgeRequested") or "false").lower()
        if purge not in ("true", "false"):
            raise ValidationError(f"purgeRequested must be true or false, got {purge!r}")
        if purge == "false":
            self.catalog.drop_table(ident)
            return 204, None
        table = self.catalog.load_table(ident)
        require_gc_enabled(table.metadata, identifier_to_string(ident))
        # The metadata is checked as it is now (its file may have been rewritten since it was accepted).
        self.guard(principal, ident, table.metadata)
        self.catalog.drop_table(ident)
        # Only files inside the table's own folder: metadata sent by a client may reference anything.
        purge_table_files(table.io, table.metadata, table.metadata_location, may_delete=inside_folder(table.location()))
        return 204, None

    def rename_table(self, principal: Principal, body: JSONBody) -> Reply:
        node = _object(body, "RenameTableRequest")
        src = request_identifier(identifier_from_json(node.get("source")))
        dst = request_identifier(identifier_from_json(node.get("destination")))
        require_grant(principal, src[:-1], "write")
        require_grant(principal, dst[:-1], "write")
        self.catalog.rename_table(src, dst)
        return 204, None

    def commit_transaction(self, principal: Principal, body: JSONBody) -> Reply:
        """Commit changes to several tables: every requirement is checked, then all tables are swapped
        in one catalog transaction (the SQL catalog's database transaction), or none is."""
        if not self.catalog.supports_multi_table_commits:
            raise UnsupportedError(f"Catalog {self.catalog.name} cannot commit several tables atomically")
        node = _object(body, "CommitTransactionRequest")
        changes = node.get("table-changes")
        if not isinstance(changes, list) or not changes:
            raise ValidationError("CommitTransactionRequest needs a non-empty 'table-changes' list")
        requests = [CommitTableRequest.from_json(c) for c in changes]
        idents: list[Identifier] = []
        for req in requests:
            if req.identifier is None:
                raise ValidationError("Every table change of a multi-table commit needs its 'identifier'")
            if any(isinstance(r, AssertCreate) for r in req.requirements):
                raise UnsupportedError("Creating tables in a multi-table commit is not supported by floe serve")
            ident = request_identifier(req.identifier)
            require_grant(principal, ident[:-1], "write")
            idents.append(ident)
        if len(set(idents)) != len(idents):
            raise ValidationError("A multi-table commit names the same table twice")
        planned = []
        for ident, req in zip(idents, requests):
            base, base_location = self.catalog.table_operations(ident).load()
            new = apply_commit(
                base, list(req.requirements), list(req.updates), name=identifier_to_string(ident),
                base_location=base_location,
            )
            planned.append((ident, base, base_location, new))
        with self._placing(any(_moves(base, new) for _, base, _, new in planned)):
            for ident, base, _, new in planned:
                self.guard(principal, ident, new, base=base)
            locations = self.catalog.commit_tables(planned)
        for (_, _, _, new), location in zip(planned, locations):
            self.policy.remember(location, new)
        return 204, None

    def report_metrics(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        require_grant(principal, ident[:-1], "read")
        _object(body, "ReportMetricsRequest")  # accepted and dropped: floe serve keeps no metrics
        return 204, None

    # -- views -----------------------------------------------------------------------------------
    def _views(self) -> ViewCatalog:
        if not isinstance(self.catalog, ViewCatalog):
            raise UnsupportedError(f"Catalog {self.catalog.name} stores no views")
        return self.catalog

    def _view_reply(self, metadata: ViewMetadata, location: str) -> Reply:
        return 200, {"metadata-location": location, "metadata": view_metadata_to_dict(metadata), "config": {}}

    def _guard_view(self, principal: Principal, ident: Identifier, metadata: ViewMetadata) -> None:
        """The location policy for a view's metadata, and the grants on the namespaces it touches."""
        self._authorize(principal, self.policy.check_view(ident, metadata))

    def list_views(self, principal: Principal, ns: Namespace, params: Mapping[str, str]) -> Reply:
        require_grant(principal, ns, "read")
        views = self.catalog.list_views(ns) if isinstance(self.catalog, ViewCatalog) else []
        if not views and not self.catalog.namespace_exists(ns):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace_to_string(ns)}")
        page, token = _page([identifier_to_json(tuple(i)) for i in views], params)
        return 200, {"identifiers": page, "next-page-token": token}

    def create_view(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        require_grant(principal, ns, "write")
        node = _object(body, "CreateViewRequest")
        ident = (*ns, request_name(str(node.get("name")), kind="view"))
        check_identifier_segments(ident, catalog=self.catalog.name)
        views = self._views()
        location = node.get("location") or self.catalog.default_table_location(ident)
        metadata = new_view_from_request(
            location=str(location), schema=schema_from_json(node.get("schema")),
            version=view_version_from_json(_object(node.get("view-version"), "view-version")),
            properties=string_map(node.get("properties"), "properties"),
        )
        with self._placing(True):
            self._guard_view(principal, ident, metadata)
            written = views.create_view(ident, metadata)
        self.policy.remember_view(written, metadata)
        return self._view_reply(metadata, written)

    def load_view(self, principal: Principal, ident: Identifier) -> Reply:
        require_grant(principal, ident[:-1], "read")
        metadata, location = self._views().load_view(ident)
        return self._view_reply(metadata, location)

    def view_exists(self, principal: Principal, ident: Identifier) -> Reply:
        require_grant(principal, ident[:-1], "read")
        exists = isinstance(self.catalog, ViewCatalog) and self.catalog.view_exists(ident)
        return (204, None) if exists else (404, None)

    def replace_view(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        require_grant(principal, ident[:-1], "write")
        node = _object(body, "CommitViewRequest")
        if node.get("identifier") is not None and request_identifier(identifier_from_json(node["identifier"])) != ident:
            raise ValidationError(
                f"Commit body names {identifier_to_string(identifier_from_json(node['identifier']))} but the route "
                f"{identifier_to_string(ident)}"
            )
        requirements = [view_requirement_from_json(r) for r in node.get("requirements") or []]
        updates = [view_update_from_json(u) for u in node.get("updates") or []]
        views = self._views()
        base, base_location = views.load_view(ident)
        new = apply_view_updates(base, requirements, updates)
        with self._placing(new.location != base.location):
            self._guard_view(principal, ident, new)
            written = views.replace_view(ident, base_location, new)
        self.policy.remember_view(written, new)
        return self._view_reply(new, written)

    def drop_view(self, principal: Principal, ident: Identifier) -> Reply:
        require_grant(principal, ident[:-1], "write")
        self._views().drop_view(ident)
        return 204, None

    def rename_view(self, principal: Principal, body: JSONBody) -> Reply:
        node = _object(body, "RenameTableRequest")
        src = request_identifier(identifier_from_json(node.get("source")))
        dst = request_identifier(identifier_from_json(node.get("destination")))
        require_grant(principal, src[:-1], "write")
        require_grant(principal, dst[:-1], "write")
        views = self._views()
        if not hasattr(views, "rename_view"):
            raise UnsupportedError(f"Catalog {self.catalog.name} cannot rename views")
        views.rename_view(src, dst)
        return 204, None

    # -- server-side scan planning ---------------------------------------------------------------
    def plan_scan(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        require_grant(principal, ident[:-1], "read")
        node = _object(body if body is not None else {}, "PlanTableScanRequest")
        subject = identifier_to_string(ident)

        def check_read(location: str, what: str) -> None:
            self.policy.check_location(location, what=what, subject=subject)

        return 200, self.plans.plan(principal.name, ident, self.catalog.load_table(ident), node, check_read)

    def planning_result(self, principal: Principal, ident: Identifier, plan_id: str) -> Reply:
        require_grant(principal, ident[:-1], "read")
        self.catalog.load_table(ident)  # 404 for a table that is gone
        return 200, self.plans.result(principal.name, ident, plan_id)

    def cancel_planning(self, principal: Principal, ident: Identifier, plan_id: str) -> Reply:
        require_grant(principal, ident[:-1], "read")
        self.plans.cancel(principal.name, ident, plan_id)
        return 204, None

    def scan_tasks(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        require_grant(principal, ident[:-1], "read")
        token = _object(body, "FetchScanTasksRequest").get("plan-task")
        if not isinstance(token, str):
            raise ValidationError("Invalid FetchScanTasksRequest: plan-task must be a string")
        self.catalog.load_table(ident)
        return 200, self.plans.tasks(principal.name, ident, token)
