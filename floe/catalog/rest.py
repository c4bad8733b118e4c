"""REST catalog client (``type=rest``): Iceberg's REST catalog protocol over HTTP.

Properties as Iceberg names them: ``uri``, ``warehouse`` (sent to ``GET /v1/config``), ``credential``,
``token``, ``scope``, ``oauth2-server-uri``, ``header.<Name>``, ``rest.client.*-timeout-ms``,
``rest-page-size`` and FileIO properties (``s3.*``). The server's ``defaults`` < these < its ``overrides``;
its ``prefix`` goes into every route and its ``endpoints`` say what it offers.

Table commits go as requirements + updates (``POST .../tables/{table}``), as the transaction layer hands
them to :meth:`RestTableOperations.commit_changes`: 409 is a :class:`CommitFailedError` (the transaction
refreshes and retries), a 5xx, a timeout or a lost connection a :class:`CommitStateUnknownError` (nothing
is cleaned up). Data and manifest files are written by the client through its FileIO, metadata files by
the server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from floe.catalog.base import WAREHOUSE, Catalog, PropertiesUpdateSummary
from floe.catalog.rest_http import RestSession
from floe.catalog.rest_protocol import (
    DEFAULT_ENDPOINTS,
    CommitTableRequest,
    CreateTableRequest,
    LoadTableResult,
    RestError,
    encode_namespace,
    error_from_response,
    identifier_from_json,
    identifier_to_json,
    namespace_from_json,
    string_map,
)
from floe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    FloeError,
    NamespaceAlreadyExistsError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedError,
    ValidationError,
)
from floe.io.fileio import FileIO
from floe.serde.json_types import schema_to_json
from floe.serde.view_json import view_metadata_from_dict, view_version_to_json
from floe.serde.view_updates_json import view_update_to_json
from floe.spec.table_metadata import TableMetadata
from floe.spec.updates import AssertCreate, TableRequirement, TableUpdate
from floe.spec.view_metadata import ViewMetadata
from floe.spec.view_updates import view_updates_between
from floe.table.create import creation_updates, to_schema
from floe.table.identifiers import (
    Identifier,
    IdentifierLike,
    Namespace,
    identifier_to_string,
    to_identifier,
    to_namespace,
)
from floe.table.operations import TableOperations

if TYPE_CHECKING:
    import pyarrow as pa

    from floe.spec.partitioning import PartitionSpec
    from floe.spec.schema import Schema
    from floe.spec.sort_order import SortOrder
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["SERVER_PLACED", "RestCatalog", "RestTableOperations"]

# The location of a view's first metadata when the server is to choose it (never sent).
SERVER_PLACED = "rest:server-placed"

PREFIX = "prefix"
PAGE_SIZE = "rest-page-size"
# Iceberg REST client options Floe does not implement: refused rather than ignored.
_UNSUPPORTED = {  # key -> (values that are fine, what other values would ask for)
    "rest.sigv4-enabled": (("false",), "AWS SigV4 request signing"),
    "rest.auth.type": (("oauth2", "none"), "authentication managers other than OAuth2/bearer tokens"),
    "token-exchange-enabled": (("false",), "OAuth2 token exchange"),
}
_COMMIT_UNKNOWN_STATUSES = range(500, 600)


class RestCatalog(Catalog):
    """A catalog served over Iceberg's REST protocol (``floe serve``, or any REST catalog server)."""

    def __init__(self, name: str, **properties: str) -> None:
        """Read the server's configuration (``GET /v1/config``) and merge it with ``properties``.

        Raises:
            ValidationError: ``uri`` is missing or not http(s), or an option is malformed.
            UnsupportedError: an Iceberg REST option Floe does not implement is set.
            NotAuthorizedError: the credentials were refused.
        """
        super().__init__(name, **properties)
        for key, (allowed, what) in _UNSUPPORTED.items():
            value = self.properties.get(key)
            if value is not None and value.lower() not in allowed:
                raise UnsupportedError(f"REST catalog {name!r}: {key}={value} ({what}) is not supported by Floe")
        uri = self.properties.get("uri")
        if not uri:
            raise ValidationError(f"REST catalog {name!r} needs a 'uri' property (the server's base URL)")
        self._session = RestSession(uri, self.properties, catalog=name)
        params = {WAREHOUSE: self.properties[WAREHOUSE]} if self.properties.get(WAREHOUSE) else None
        config = self._session.call("GET", "/v1/config", params=params, what="GET /v1/config") or {}
        defaults = string_map(config.get("defaults"), "config defaults")
        overrides = string_map(config.get("overrides"), "config overrides")
        self.properties = {**defaults, **self.properties, **overrides}
        self._session.configure(self.properties)
        endpoints = config.get("endpoints")
        self.endpoints = frozenset(str(e) for e in endpoints) if isinstance(endpoints, list) else DEFAULT_ENDPOINTS
        prefix = self.properties.get(PREFIX, "").strip("/")
        self._base = f"/v1/{prefix}" if prefix else "/v1"

    def close(self) -> None:
        """Close the HTTP connections."""
        self._session.close()

    # -- plumbing ------------------------------------------------------------------------------------
    def supports(self, endpoint: str) -> bool:
        """Whether the server offers ``endpoint`` (``"POST /v1/{prefix}/transactions/commit"``)."""
        return endpoint in self.endpoints

    def _ns_path(self, namespace: Namespace) -> str:
        return f"{self._base}/namespaces/{encode_namespace(namespace)}"

    def _table_path(self, identifier: Identifier) -> str:
        return f"{self._ns_path(identifier[:-1])}/tables/{quote(identifier[-1], safe='')}"

    def _call(self, method: str, path: str, *, what: str, **kwargs: Any) -> Any:
        return self._session.call(method, path, what=f"{what} (catalog {self.name})", **kwargs)

    def _paged(self, path: str, key: str, params: Mapping[str, str], *, what: str) -> list[Any]:
        out: list[Any] = []
        query = dict(params)
        if self.properties.get(PAGE_SIZE):
            query["pageSize"] = self.properties[PAGE_SIZE]
        while True:
            body = self._call("GET", path, params=query, what=what) or {}
            out += list(body.get(key) or [])
            token = body.get("next-page-token")
            if not token:
                return out
            query["pageToken"] = str(token)

    def _table_io(self, location: str, config: Mapping[str, str]) -> FileIO:
        return FileIO.for_location(location, {**self.properties, **config})

    def _table(self, identifier: Identifier, result: LoadTableResult) -> Table:
        from floe.table.table import Table

        io = self._table_io(result.metadata.location, result.config)
        ops = RestTableOperations(self, identifier, io)
        return Table(identifier, result.metadata, result.metadata_location, ops, catalog=self)

    # -- namespaces ----------------------------------------------------------------------------------
    def create_namespace(self, namespace: IdentifierLike, properties: Mapping[str, str] | None = None) -> None:
        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("Cannot create the root namespace")
        self._call(
            "POST", f"{self._base}/namespaces", json={"namespace": list(ns), "properties": dict(properties or {})},
            what=f"create namespace {'.'.join(ns)}", already_exists=NamespaceAlreadyExistsError,
        )

    def list_namespaces(self, namespace: IdentifierLike = ()) -> list[Namespace]:
        parent = to_namespace(namespace)
        params = {"parent": "\x1f".join(parent)} if parent else {}
        found = self._paged(f"{self._base}/namespaces", "namespaces", params, what="list namespaces")
        return sorted(namespace_from_json(n) for n in found)

    def load_namespace_properties(self, namespace: IdentifierLike) -> dict[str, str]:
        ns = to_namespace(namespace)
        body = self._call("GET", self._ns_path(ns), what=f"load namespace {'.'.join(ns)}") or {}
        return string_map(body.get("properties"), "namespace properties")

    def namespace_exists(self, namespace: IdentifierLike) -> bool:
        ns = to_namespace(namespace)
        if not self.supports("HEAD /v1/{prefix}/namespaces/{namespace}"):
            return super().namespace_exists(ns)
        return self._exists(self._ns_path(ns), what=f"namespace {'.'.join(ns)} exists")

    def _exists(self, path: str, *, what: str) -> bool:
        try:
            resp = self._session.send("HEAD", path)
        except httpx.HTTPError as e:
            raise FloeError(f"REST catalog {self.name}: {what} failed: {type(e).__name__}: {e}") from e
        if resp.status_code in (200, 204):
            return True
        if resp.status_code == 404:
            return False
        raise error_from_response(resp.status_code, None, fallback=f"{what} failed")

    def update_namespace_properties(
        self,
        namespace: IdentifierLike,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        ns = to_namespace(namespace)
        body = self._call(
            "POST", f"{self._ns_path(ns)}/properties",
            json={"removals": list(removals or []), "updates": dict(updates or {})},
            what=f"update properties of namespace {'.'.join(ns)}",
        ) or {}
        return PropertiesUpdateSummary(
            removed=list(body.get("removed") or []),
            updated=list(body.get("updated") or []),
            missing=list(body.get("missing") or []),
        )

    def drop_namespace(self, namespace: IdentifierLike) -> None:
        ns = to_namespace(namespace)
        self._call("DELETE", self._ns_path(ns), what=f"drop namespace {'.'.join(ns)}")

    # -- tables --------------------------------------------------------------------------------------
    def list_tables(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        found = self._paged(f"{self._ns_path(ns)}/tables", "identifiers", {}, what=f"list tables of {'.'.join(ns)}")
        return sorted(identifier_from_json(i) for i in found)

    def table_operations(self, identifier: Identifier) -> TableOperations:
        return RestTableOperations(self, identifier, self.io())

    def default_table_location(self, identifier: Identifier) -> str:
        raise UnsupportedError(
            f"REST catalog {self.name}: the server chooses where {identifier_to_string(identifier)} goes; "
            "create the table (or a create transaction) to learn its location"
        )

    def load_table(self, identifier: IdentifierLike) -> Table:
        ident = to_identifier(identifier)
        body = self._call("GET", self._table_path(ident), what=f"load table {identifier_to_string(ident)}")
        return self._table(ident, LoadTableResult.from_json(body))

    def table_exists(self, identifier: IdentifierLike) -> bool:
        ident = to_identifier(identifier)
        if not self.supports("HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"):
            return super().table_exists(ident)
        return self._exists(self._table_path(ident), what=f"table {identifier_to_string(ident)} exists")

    def _create(
        self,
        ident: Identifier,
        schema: Schema | pa.Schema,
        *,
        location: str | None,
        partition_spec: PartitionSpec | None,
        sort_order: SortOrder | None,
        properties: Mapping[str, str] | None,
        stage: bool,
    ) -> LoadTableResult:
        request = CreateTableRequest(
            name=ident[-1], schema=to_schema(schema), location=location, partition_spec=partition_spec,
            write_order=sort_order, stage_create=stage, properties=dict(properties or {}),
        )
        body = self._call(
            "POST", f"{self._ns_path(ident[:-1])}/tables", json=request.to_json(),
            what=f"create table {identifier_to_string(ident)}",
        )
        return LoadTableResult.from_json(body)

    def create_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        ident = to_identifier(identifier)
        result = self._create(
            ident, schema, location=location, partition_spec=partition_spec, sort_order=sort_order,
            properties=properties, stage=False,
        )
        return self._table(ident, result)

    def create_table_transaction(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        *,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """A create transaction: the server stages the table's first metadata (``stage-create``) and the
        commit sends the creation and every staged change with ``assert-create``."""
        from floe.table.transaction import Transaction

        ident = to_identifier(identifier)
        result = self._create(
            ident, schema, location=location, partition_spec=partition_spec, sort_order=sort_order,
            properties=properties, stage=True,
        )
        return Transaction.create(self._table(ident, result))

    def commit_table(
        self,
        identifier: IdentifierLike,
        requirements: Iterable[TableRequirement],
        updates: Iterable[TableUpdate],
    ) -> Table:
        ident = to_identifier(identifier)
        ops = RestTableOperations(self, ident, self.io())
        metadata, location = ops.send_commit(list(requirements), list(updates), creating=False)
        return self._table(ident, LoadTableResult(metadata, location))

    def drop_table(self, identifier: IdentifierLike, *, purge: bool = False) -> None:
        ident = to_identifier(identifier)
        params = {"purgeRequested": "true"} if purge else None
        self._call("DELETE", self._table_path(ident), params=params, what=f"drop table {identifier_to_string(ident)}")

    def _remove_table_entry(self, identifier: Identifier) -> None:
        self.drop_table(identifier, purge=False)

    def rename_table(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> Table:
        src, dst = to_identifier(from_identifier), to_identifier(to_identifier_)
        self._call(
            "POST", f"{self._base}/tables/rename",
            json={"source": identifier_to_json(src), "destination": identifier_to_json(dst)},
            what=f"rename table {identifier_to_string(src)} to {identifier_to_string(dst)}",
        )
        return self.load_table(dst)

    def register_table(self, identifier: IdentifierLike, metadata_location: str) -> Table:
        ident = to_identifier(identifier)
        body = self._call(
            "POST", f"{self._ns_path(ident[:-1])}/register",
            json={"name": ident[-1], "metadata-location": metadata_location},
            what=f"register table {identifier_to_string(ident)}",
        )
        return self._table(ident, LoadTableResult.from_json(body))

    def commit_transaction(self, commits: Sequence[tuple[IdentifierLike, Sequence[TableRequirement], Sequence[TableUpdate]]]) -> None:
        """Commit changes to several tables atomically (``POST /v1/{prefix}/transactions/commit``).

        Args:
            commits: ``(identifier, requirements, updates)`` per table.

        Raises:
            UnsupportedError: the server does not offer multi-table transactions.
            CommitFailedError: a requirement failed; no table was changed.
            CommitStateUnknownError: the server failed or could not be reached; some, all or none of the
                tables may have changed.
        """
        endpoint = "POST /v1/{prefix}/transactions/commit"
        if not self.supports(endpoint):
            raise UnsupportedError(f"REST catalog {self.name}: the server does not offer {endpoint}")
        changes = [
            CommitTableRequest(to_identifier(i), tuple(r), tuple(u)).to_json() for i, r, u in commits
        ]
        _send_commit(self, f"{self._base}/transactions/commit", {"table-changes": changes}, what="multi-table commit")


    def commit_transactions(self, transactions: Sequence[Transaction]) -> list[Table]:
        """Commit Floe transactions on several tables atomically, all or none (no replay on conflict).

        Returns:
            The tables, loaded after the commit.

        Raises:
            UnsupportedError: the server does not offer multi-table transactions.
            CommitFailedError: a table changed since its transaction began; nothing was committed and
                the transactions' files were deleted.
            CommitStateUnknownError: the outcome is unknown; nothing was deleted.
        """
        commits = [(t.table.identifier, *t.staged_commit()) for t in transactions]
        try:
            self.commit_transaction(commits)
        except CommitStateUnknownError:
            raise
        except BaseException:
            for t in transactions:
                t.settle(committed=False)
            raise
        for t in transactions:
            t.settle(committed=True)
        return [self.load_table(t.table.identifier) for t in transactions]


    # -- views -------------------------------------------------------------------------------------
    def _view_path(self, identifier: Identifier) -> str:
        return f"{self._ns_path(identifier[:-1])}/views/{quote(identifier[-1], safe='')}"

    def _need_views(self, endpoint: str, what: str) -> None:
        if not self.supports(endpoint):
            raise UnsupportedError(f"REST catalog {self.name}: the server does not offer views ({what})")

    @staticmethod
    def _view_result(body: Any) -> tuple[ViewMetadata, str]:
        if not isinstance(body, Mapping) or not isinstance(body.get("metadata"), Mapping) or not body.get(
            "metadata-location"
        ):
            raise ValidationError("REST answer has no view 'metadata' and 'metadata-location'")
        return view_metadata_from_dict(body["metadata"]), str(body["metadata-location"])

    def view_exists(self, identifier: IdentifierLike) -> bool:
        ident = to_identifier(identifier)
        if not self.supports("HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}"):
            if not self.supports("GET /v1/{prefix}/namespaces/{namespace}/views/{view}"):
                return False
            try:
                self.load_view(ident)
                return True
            except NoSuchViewError:
                return False
        return self._exists(self._view_path(ident), what=f"view {identifier_to_string(ident)} exists")

    def list_views(self, namespace: IdentifierLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        if not self.supports("GET /v1/{prefix}/namespaces/{namespace}/views"):
            return []
        found = self._paged(f"{self._ns_path(ns)}/views", "identifiers", {}, what=f"list views of {'.'.join(ns)}")
        return sorted(identifier_from_json(i) for i in found)

    def load_view(self, identifier: IdentifierLike) -> tuple[ViewMetadata, str]:
        ident = to_identifier(identifier)
        self._need_views("GET /v1/{prefix}/namespaces/{namespace}/views/{view}", "load view")
        return self._view_result(self._call("GET", self._view_path(ident), what=f"load view {identifier_to_string(ident)}"))

    def create_view(self, identifier: IdentifierLike, metadata: ViewMetadata) -> str:
        """Create a view from its first metadata (the server writes it; an empty ``metadata.location`` is
        not sent, so the server places the view)."""
        ident = to_identifier(identifier)
        self._need_views("POST /v1/{prefix}/namespaces/{namespace}/views", "create view")
        version = metadata.current_version()
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": schema_to_json(metadata.schema()),
            "view-version": view_version_to_json(version),
            "properties": dict(metadata.properties),
        }
        if metadata.location != SERVER_PLACED:
            body["location"] = metadata.location
        answer = self._call(
            "POST", f"{self._ns_path(ident[:-1])}/views", json=body, what=f"create view {identifier_to_string(ident)}",
        )
        return self._view_result(answer)[1]

    def replace_view(self, identifier: IdentifierLike, base_location: str, metadata: ViewMetadata) -> str:
        """Send the changes from the view at ``base_location`` to ``metadata`` (409 if it changed since)."""
        ident = to_identifier(identifier)
        self._need_views("POST /v1/{prefix}/namespaces/{namespace}/views/{view}", "replace view")
        base, current = self.load_view(ident)
        if current != base_location:
            raise CommitFailedError(f"View {identifier_to_string(ident)} changed concurrently; retry")
        body = {
            "identifier": identifier_to_json(ident),
            "requirements": [{"type": "assert-view-uuid", "uuid": str(base.view_uuid)}],
            "updates": [view_update_to_json(u) for u in view_updates_between(base, metadata)],
        }
        answer = self._call("POST", self._view_path(ident), json=body, what=f"replace view {identifier_to_string(ident)}")
        return self._view_result(answer)[1]

    def drop_view(self, identifier: IdentifierLike) -> None:
        ident = to_identifier(identifier)
        self._need_views("DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}", "drop view")
        self._call("DELETE", self._view_path(ident), what=f"drop view {identifier_to_string(ident)}")

    def rename_view(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> None:
        src, dst = to_identifier(from_identifier), to_identifier(to_identifier_)
        self._need_views("POST /v1/{prefix}/views/rename", "rename view")
        self._call(
            "POST", f"{self._base}/views/rename",
            json={"source": identifier_to_json(src), "destination": identifier_to_json(dst)},
            what=f"rename view {identifier_to_string(src)} to {identifier_to_string(dst)}",
        )


def _send_commit(catalog: RestCatalog, path: str, body: dict[str, Any], *, what: str) -> Any:
    """POST a commit: 409 -> CommitFailedError, 5xx / no answer -> CommitStateUnknownError."""
    try:
        resp = catalog._session.send("POST", path, json=body)
    except httpx.HTTPError as e:
        raise CommitStateUnknownError(
            f"REST catalog {catalog.name}: {what} has an unknown outcome: {type(e).__name__}: {e}"
        ) from e
    if resp.status_code in _COMMIT_UNKNOWN_STATUSES:
        err = error_from_response(resp.status_code, _safe_json(resp), fallback=f"{what} failed")
        raise CommitStateUnknownError(f"REST catalog {catalog.name}: {what} has an unknown outcome: {err}") from err
    if resp.status_code >= 400:
        err = error_from_response(resp.status_code, _safe_json(resp), fallback=f"{what} failed")
        if resp.status_code == 409 and not isinstance(err, CommitFailedError):
            raise CommitFailedError(str(err)) from err
        raise err
    return _safe_json(resp) if resp.content else None


def _safe_json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


class RestTableOperations(TableOperations):
    """Load and commit one table of a :class:`RestCatalog`: commits go as requirements + updates."""

    def __init__(self, catalog: RestCatalog, identifier: Identifier, io: FileIO) -> None:
        super().__init__(identifier, io)
        self.catalog = catalog

    def load(self) -> tuple[TableMetadata, str]:
        body = self.catalog._call("GET", self.catalog._table_path(self.identifier), what=f"load table {self.name}")
        result = LoadTableResult.from_json(body)
        if result.metadata_location is None:
            raise RestError(f"Server answered load table {self.name} without a metadata-location", code=200, error_type="RESTException")
        return result.metadata, result.metadata_location

    def send_commit(
        self, requirements: list[TableRequirement], updates: list[TableUpdate], *, creating: bool
    ) -> tuple[TableMetadata, str]:
        """POST the commit; returns the metadata the server stored and its location.

        Raises:
            CommitFailedError: 409, a requirement failed (retryable after a refresh).
            TableAlreadyExistsError: ``creating`` and the table exists.
            CommitStateUnknownError: a 5xx answer, a timeout or a lost connection.
        """
        request = CommitTableRequest(self.identifier, tuple(requirements), tuple(updates))
        try:
            body = _send_commit(self.catalog, self.catalog._table_path(self.identifier), request.to_json(), what=f"commit to table {self.name}")
        except CommitFailedError as e:
            if creating:
                raise TableAlreadyExistsError(f"Table already exists: {self.name} ({e})") from e
            raise
        result = LoadTableResult.from_json(body)
        if result.metadata_location is None:
            raise CommitStateUnknownError(f"Server answered the commit to {self.name} without a metadata-location")
        return result.metadata, result.metadata_location

    def commit_changes(
        self,
        base: TableMetadata | None,
        base_location: str | None,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
        new: TableMetadata,
    ) -> tuple[TableMetadata, str]:
        creating = base is None
        reqs = list(requirements)
        if creating and not any(isinstance(r, AssertCreate) for r in reqs):
            reqs.insert(0, AssertCreate())
        return self.send_commit(reqs, list(updates), creating=creating)

    def commit(self, base: TableMetadata | None, base_location: str | None, new: TableMetadata) -> str:
        """Only a new table's whole metadata can be sent (as its creation updates); other changes must
        come as updates (:meth:`commit_changes`, which transactions use)."""
        if base is not None:
            raise UnsupportedError(
                f"REST catalog {self.catalog.name}: table {self.name} commits go as requirements and updates; "
                "commit through a transaction or Catalog.commit_table"
            )
        return self.send_commit([AssertCreate()], creation_updates(new), creating=True)[1]

    def reload_location(self) -> str | None:
        try:
            return self.load()[1]
        except FloeError:
            return None
