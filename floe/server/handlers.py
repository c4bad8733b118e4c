"""What each REST catalog route does to the served catalog (synchronous; the app runs them in threads).

Every handler gets the catalog, the caller's principal, the route's decoded names, query parameters and
the parsed JSON body, checks the caller's grant on the namespaces it touches before anything else (so a
caller without access learns nothing, not even whether a name exists), and returns ``(status, body)``.
Names reach the catalog unchanged: every catalog refuses names that cannot be path segments
(:mod:`floe.catalog.path_segments`) with a ValidationError, which the app answers with 400.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from floe.catalog.base import WAREHOUSE, Catalog
from floe.catalog.path_segments import check_identifier_segments, require_inside
from floe.catalog.rest_protocol import (
    SERVER_ENDPOINTS,
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
from floe.errors import CommitFailedError, UnsupportedError, ValidationError
from floe.serde.metadata_json import table_metadata_to_dict
from floe.server.settings import LEVELS, Principal
from floe.spec.metadata_builder import apply_updates
from floe.spec.updates import AssertCreate, SetLocation, TableUpdate, validate_requirements
from floe.table.identifiers import (
    Identifier,
    Namespace,
    identifier_to_string,
    namespace_to_string,
    to_namespace,
)
from floe.table.purge import purge_table_files, require_gc_enabled
from floe.table.transaction import apply_commit

__all__ = ["Handlers", "Reply"]

Reply = tuple[int, Any]
TRANSACTIONS = "POST /v1/{prefix}/transactions/commit"
JSONBody = Any


def _require(principal: Principal, namespace: Namespace, level: str) -> None:
    if principal.level_for(namespace) < LEVELS[level]:
        where = namespace_to_string(namespace) or "the catalog root"
        raise ForbiddenError(
            f"{principal.name} may not {level} in namespace {where}", code=403, error_type="ForbiddenException"
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


@dataclass
class Handlers:
    """The routes of one served catalog.

    ``allowed_locations``: folders that table locations and registered metadata files must lie in (None:
    anywhere). By default only the catalog's warehouse: a remote client must not make the server write
    metadata into, or read files from, arbitrary folders of the server's machine.
    """

    catalog: Catalog
    prefix: str
    allowed_locations: tuple[str, ...] | None = ()

    def _check_location(self, location: str, what: str) -> None:
        allowed = self.allowed_locations
        if allowed is None:
            return
        roots = allowed or tuple(r for r in (self.catalog.properties.get(WAREHOUSE),) if r)
        io = self.catalog.io(location)
        fs, path = io.resolve(location)
        path = posixpath.normpath(path)
        for root in roots:
            root_fs, root_path = io.resolve(root)
            if root_fs.type_name == fs.type_name and path.startswith(posixpath.normpath(root_path).rstrip("/") + "/"):
                return
        raise ForbiddenError(
            f"{what} {location} is outside the locations this server allows ({', '.join(roots) or 'none'}); "
            "see allowed-locations in the [server] settings",
            code=403, error_type="ForbiddenException",
        )

    def _check_updates(self, updates: Sequence[TableUpdate]) -> None:
        for u in updates:
            if isinstance(u, SetLocation):
                self._check_location(u.location, "Table location")

    # -- configuration ---------------------------------------------------------------------------
    def config(self, principal: Principal, params: Mapping[str, str]) -> Reply:
        wanted = params.get(WAREHOUSE)
        served = {self.catalog.name, self.catalog.properties.get(WAREHOUSE, "")}
        if wanted and wanted not in served:
            raise ValidationError(
                f"This server serves catalog {self.catalog.name!r}; warehouse {wanted!r} is not served here"
            )
        endpoints = [e for e in SERVER_ENDPOINTS if e != TRANSACTIONS or self.catalog.supports_multi_table_commits]
        return 200, {"defaults": {}, "overrides": {"prefix": self.prefix}, "endpoints": endpoints}

    # -- namespaces ------------------------------------------------------------------------------
    def list_namespaces(self, principal: Principal, params: Mapping[str, str]) -> Reply:
        raw = params.get("parent") or ""
        parent = to_namespace(tuple(raw.split("\x1f"))) if raw else ()
        if parent:
            _require(principal, parent, "read")
        visible = [ns for ns in self.catalog.list_namespaces(parent) if principal.sees(ns)]
        page, token = _page([list(ns) for ns in visible], params)
        return 200, {"namespaces": page, "next-page-token": token}

    def create_namespace(self, principal: Principal, body: JSONBody) -> Reply:
        node = _object(body, "CreateNamespaceRequest")
        ns = namespace_from_json(node.get("namespace"))
        if not ns:
            raise ValidationError("Cannot create the root namespace")
        _require(principal, ns, "admin")
        props = string_map(node.get("properties"), "properties")
        self.catalog.create_namespace(ns, props)
        return 200, {"namespace": list(ns), "properties": self.catalog.load_namespace_properties(ns)}

    def load_namespace(self, principal: Principal, ns: Namespace) -> Reply:
        _require(principal, ns, "read")
        return 200, {"namespace": list(ns), "properties": self.catalog.load_namespace_properties(ns)}

    def namespace_exists(self, principal: Principal, ns: Namespace) -> Reply:
        _require(principal, ns, "read")
        return (204, None) if self.catalog.namespace_exists(ns) else (404, None)

    def drop_namespace(self, principal: Principal, ns: Namespace) -> Reply:
        _require(principal, ns, "admin")
        self.catalog.drop_namespace(ns)
        return 204, None

    def update_namespace_properties(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        _require(principal, ns, "admin")
        node = _object(body, "UpdateNamespacePropertiesRequest")
        removals = node.get("removals") or []
        if not isinstance(removals, list) or not all(isinstance(r, str) for r in removals):
            raise ValidationError("removals must be a list of strings")
        updates = string_map(node.get("updates"), "updates")
        both = sorted(set(removals) & set(updates))
        if both:
            raise RestError(
                f"Properties both removed and updated: {both}", code=422, error_type="UnprocessableEntityException"
            )
        summary = self.catalog.update_namespace_properties(ns, removals, updates)
        return 200, {"updated": summary.updated, "removed": summary.removed, "missing": summary.missing or None}

    # -- tables ----------------------------------------------------------------------------------
    def list_tables(self, principal: Principal, ns: Namespace, params: Mapping[str, str]) -> Reply:
        _require(principal, ns, "read")
        page, token = _page([identifier_to_json(i) for i in self.catalog.list_tables(ns)], params)
        return 200, {"identifiers": page, "next-page-token": token}

    def create_table(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        _require(principal, ns, "write")
        req = CreateTableRequest.from_json(body)
        if req.location:
            self._check_location(req.location, "Table location")
        ident = (*ns, req.name)
        kwargs: dict[str, Any] = {
            "location": req.location, "partition_spec": req.partition_spec, "sort_order": req.write_order,
            "properties": req.properties,
        }
        if req.stage_create:
            txn = self.catalog.create_table_transaction(ident, req.schema, **kwargs)
            return 200, LoadTableResult(txn.table_metadata, None).to_json()
        table = self.catalog.create_table(ident, req.schema, **kwargs)
        return 200, LoadTableResult(table.metadata, table.metadata_location).to_json()

    def register_table(self, principal: Principal, ns: Namespace, body: JSONBody) -> Reply:
        _require(principal, ns, "write")
        node = _object(body, "RegisterTableRequest")
        name, location = node.get("name"), node.get("metadata-location")
        if not isinstance(name, str) or not isinstance(location, str) or not location:
            raise ValidationError("RegisterTableRequest needs 'name' and 'metadata-location' strings")
        if node.get("overwrite"):
            raise UnsupportedError("register_table with overwrite=true is not supported by floe serve")
        self._check_location(location, "Metadata file")
        table = self.catalog.register_table((*ns, name), location)
        return 200, LoadTableResult(table.metadata, table.metadata_location).to_json()

    def load_table(self, principal: Principal, ident: Identifier, params: Mapping[str, str]) -> Reply:
        _require(principal, ident[:-1], "read")
        if params.get("snapshots") not in (None, "all", "refs"):
            raise ValidationError(f"snapshots must be 'all' or 'refs', got {params.get('snapshots')!r}")
        # 'refs' allows the server to leave unreferenced snapshots out; sending all of them is also valid.
        table = self.catalog.load_table(ident)
        return 200, LoadTableResult(table.metadata, table.metadata_location).to_json()

    def table_exists(self, principal: Principal, ident: Identifier) -> Reply:
        _require(principal, ident[:-1], "read")
        return (204, None) if self.catalog.table_exists(ident) else (404, None)

    def commit_table(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        _require(principal, ident[:-1], "write")
        req = CommitTableRequest.from_json(body)
        if req.identifier is not None and tuple(req.identifier) != tuple(ident):
            raise ValidationError(
                f"Commit body names {identifier_to_string(req.identifier)} but the route {identifier_to_string(ident)}"
            )
        self._check_updates(req.updates)
        if any(isinstance(r, AssertCreate) for r in req.requirements):
            return self._create_by_commit(ident, req)
        table = self.catalog.commit_table(ident, req.requirements, req.updates)
        return 200, {"metadata-location": table.metadata_location, "metadata": table_metadata_to_dict(table.metadata)}

    def _create_by_commit(self, ident: Identifier, req: CommitTableRequest) -> Reply:
        """A staged create (``stage-create`` then a commit with ``assert-create``): build from nothing."""
        check_identifier_segments(ident, catalog=self.catalog.name)
        self.catalog._check_namespace(ident[:-1])
        if self.catalog.table_exists(ident):
            raise CommitFailedError(f"Requirement failed: table {identifier_to_string(ident)} already exists")
        validate_requirements(None, req.requirements)
        new = apply_updates(None, req.updates)
        ops = self.catalog.table_operations(ident)
        location = ops.commit(None, None, new)
        return 200, {"metadata-location": location, "metadata": table_metadata_to_dict(new)}

    def drop_table(self, principal: Principal, ident: Identifier, params: Mapping[str, str]) -> Reply:
        _require(principal, ident[:-1], "write")
        purge = (params.get("purgeRequested") or "false").lower()
        if purge not in ("true", "false"):
            raise ValidationError(f"purgeRequested must be true or false, got {purge!r}")
        if purge == "false":
            self.catalog.drop_table(ident)
            return 204, None
        table = self.catalog.load_table(ident)
        name = identifier_to_string(ident)
        require_gc_enabled(table.metadata, name)
        warehouse = self.catalog.properties.get(WAREHOUSE)
        if not warehouse:
            raise UnsupportedError(f"Cannot purge {name}: the served catalog has no warehouse to confine deletes to")
        io = table.io
        require_inside(io.resolve(table.location())[1], io.resolve(warehouse)[1], what=f"purge table {name}")
        self.catalog.drop_table(ident)
        # Only files inside the table's own folder: metadata sent by a client may reference anything.
        purge_table_files(io, table.metadata, table.metadata_location, inside=table.location())
        return 204, None

    def rename_table(self, principal: Principal, body: JSONBody) -> Reply:
        node = _object(body, "RenameTableRequest")
        src, dst = identifier_from_json(node.get("source")), identifier_from_json(node.get("destination"))
        _require(principal, src[:-1], "write")
        _require(principal, dst[:-1], "write")
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
            _require(principal, req.identifier[:-1], "write")
            self._check_updates(req.updates)
            idents.append(tuple(req.identifier))
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
        self.catalog.commit_tables(planned)
        return 204, None

    def report_metrics(self, principal: Principal, ident: Identifier, body: JSONBody) -> Reply:
        _require(principal, ident[:-1], "read")
        _object(body, "ReportMetricsRequest")  # accepted and dropped: floe serve keeps no metrics
        return 204, None
