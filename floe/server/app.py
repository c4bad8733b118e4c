"""The ASGI app of ``floe serve``: Iceberg's REST catalog routes over one Floe catalog (Starlette requests).

Routing works on the raw request path, one percent-decoded segment at a time, so a name holding ``/``
(``%2F``) stays one name and reaches the name checks (400) instead of changing the route.
Each request is, in order: size-checked (``Content-Length`` above ``max-body-bytes``: 413),
authenticated (401), rate-limited per principal or, before authentication and when serving anonymously,
per client address (429 with ``Retry-After``), routed (404 / 405, or 406 for spec routes Floe does not
serve), authorized on the namespace its URL names, or for routes that name namespaces only in the body on
having such a grant anywhere (403, before the body is read: a caller without access never learns whether
its body would parse), its URL names checked (:mod:`floe.server.names`, 400), its body read with the size
cap and a time limit (413, 408), parsed with a nesting limit and checked against the REST spec's types
(:mod:`floe.server.request_types`, 400), and the handler run in a worker thread (which authorizes what the
body names and what its locations touch).
Errors are the spec's ``{"error": {"message", "type", "code"}}``; an unexpected one is logged and
answered with 500 without details.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import logging
import secrets
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import request_response
from starlette.types import Receive, Scope, Send

from floe.catalog.base import Catalog
from floe.catalog.rest_protocol import (
    NotAuthorizedError,
    RestError,
    decode_segment,
    error_json,
    error_status,
)
from floe.errors import FloeError, ValidationError
from floe.server.handlers import Handlers, Reply, require_grant
from floe.server.location_policy import LocationPolicy
from floe.server.names import request_name, request_namespace, split_namespace
from floe.server.request_types import check_request, parse_json
from floe.server.scan_planning import ScanPlans
from floe.server.security import RateLimiter, TokenStore
from floe.server.settings import Principal, ServerSettings
from floe.server.ui import COOKIE, UiPages
from floe.table.identifiers import Namespace

__all__ = ["ANONYMOUS", "RestCatalogApp", "create_app"]

log = logging.getLogger("floe.server")
ANONYMOUS = Principal("anonymous", {"*": "admin"})
_MAX_MESSAGE = 2000  # error messages quote names, which may be 255 characters long


class _TooLarge(RestError):
    pass


def _error(code: int, kind: str, message: str, *, head: bool = False) -> Response:
    if head:
        return Response(status_code=code)
    return JSONResponse(error_json(message, kind, code), status_code=code)


class _Request:
    """What a handler needs from the HTTP request."""

    def __init__(self, principal: Principal, params: Mapping[str, str], body: Any) -> None:
        self.principal = principal
        self.params = params
        self.body = body


Action = Callable[[_Request], Reply]


def _nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)


@dataclass(frozen=True, slots=True)
class Route:
    """What a request does and what it needs before its body is read.

    ``level`` on ``namespace`` (None: some grant of ``level`` anywhere, the body names the namespaces;
    ``level`` None: any authenticated caller); ``table`` the table name of the URL; ``body`` the REST
    request type the body must have (None: no body).
    """

    action: Action
    level: str | None = None
    namespace: Namespace | None = None
    table: str | None = None
    body: str | None = None


class CatalogApp:
    """Routes, authentication and limits around :class:`Handlers`."""

    def __init__(self, catalog: Catalog, settings: ServerSettings, *, anonymous: bool) -> None:
        policy = LocationPolicy(catalog, settings.allowed_locations)
        self.handlers = Handlers(
            catalog, prefix=catalog.name, policy=policy, separator=settings.namespace_separator,
            plans=ScanPlans(batch_size=settings.scan_planning_batch_size),
        )
        self.settings = settings
        self.tokens = TokenStore(settings)
        self.limiter = RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst)
        self.anonymous = anonymous
        self.ui = UiPages(catalog, settings.namespace_separator)

    # -- routing ---------------------------------------------------------------------------------
    def route(self, method: str, segments: list[str]) -> Route | None | str:
        """The route of a request, None for no such route, ``"405"``/``"406"`` for a wrong method or a
        spec route Floe does not serve. Names are in NFC here and checked after authorization."""
        h = self.handlers
        if segments == ["v1", "config"]:
            return Route(lambda r: h.config(r.principal, r.params)) if method == "GET" else "405"
        if len(segments) < 3 or segments[0] != "v1" or segments[1] != h.prefix:
            return None
        rest = segments[2:]
        table: dict[str, Route] = {}
        if rest == ["namespaces"]:
            table = {
                "GET": Route(lambda r: h.list_namespaces(r.principal, r.params)),
                "POST": Route(lambda r: h.create_namespace(r.principal, r.body), "admin", body="CreateNamespaceRequest"),
            }
        elif rest == ["tables", "rename"]:
            table = {"POST": Route(lambda r: h.rename_table(r.principal, r.body), "write", body="RenameTableRequest")}
        elif rest == ["views", "rename"]:
            table = {"POST": Route(lambda r: h.rename_view(r.principal, r.body), "write", body="RenameTableRequest")}
        elif rest == ["transactions", "commit"]:
            table = {"POST": Route(
                lambda r: h.commit_transaction(r.principal, r.body), "write", body="CommitTransactionRequest"
            )}
        elif rest[0] == "namespaces" and len(rest) >= 2:
            ns = tuple(_nfc(level) for level in split_namespace(rest[1], self.settings.namespace_separator))
            tail = rest[2:]
            if not tail:
                table = {
                    "GET": Route(lambda r: h.load_namespace(r.principal, ns), "read", ns),
                    "HEAD": Route(lambda r: h.namespace_exists(r.principal, ns), "read", ns),
                    "DELETE": Route(lambda r: h.drop_namespace(r.principal, ns), "admin", ns),
                }
            elif tail == ["properties"]:
                table = {"POST": Route(
                    lambda r: h.update_namespace_properties(r.principal, ns, r.body), "admin", ns,
                    body="UpdateNamespacePropertiesRequest",
                )}
            elif tail == ["tables"]:
                table = {
                    "GET": Route(lambda r: h.list_tables(r.principal, ns, r.params), "read", ns),
                    "POST": Route(lambda r: h.create_table(r.principal, ns, r.body), "write", ns, body="CreateTableRequest"),
                }
            elif tail == ["register"]:
                table = {"POST": Route(
                    lambda r: h.register_table(r.principal, ns, r.body), "write", ns, body="RegisterTableRequest"
                )}
            elif tail[0] == "tables" and len(tail) == 2:
                name = _nfc(tail[1])
                ident = (*ns, name)
                table = {
                    "GET": Route(lambda r: h.load_table(r.principal, ident, r.params), "read", ns, name),
                    "HEAD": Route(lambda r: h.table_exists(r.principal, ident), "read", ns, name),
                    "POST": Route(lambda r: h.commit_table(r.principal, ident, r.body), "write", ns, name,
                                  body="CommitTableRequest"),
                    "DELETE": Route(lambda r: h.drop_table(r.principal, ident, r.params), "write", ns, name),
                }
            elif tail[0] == "tables" and len(tail) == 3 and tail[2] == "metrics":
                name = _nfc(tail[1])
                ident = (*ns, name)
                table = {"POST": Route(lambda r: h.report_metrics(r.principal, ident, r.body), "read", ns, name,
                                       body="ReportMetricsRequest")}
            elif tail == ["views"]:
                table = {
                    "GET": Route(lambda r: h.list_views(r.principal, ns, r.params), "read", ns),
                    "POST": Route(lambda r: h.create_view(r.principal, ns, r.body), "write", ns, body="CreateViewRequest"),
                }
            elif tail[0] == "views" and len(tail) == 2:
                name = _nfc(tail[1])
                ident = (*ns, name)
                table = {
                    "GET": Route(lambda r: h.load_view(r.principal, ident), "read", ns, name),
                    "HEAD": Route(lambda r: h.view_exists(r.principal, ident), "read", ns, name),
                    "POST": Route(lambda r: h.replace_view(r.principal, ident, r.body), "write", ns, name,
                                  body="CommitViewRequest"),
                    "DELETE": Route(lambda r: h.drop_view(r.principal, ident), "write", ns, name),
                }
            elif tail[0] == "tables" and len(tail) == 3 and tail[2] in ("plan", "tasks"):
                name = _nfc(tail[1])
                ident = (*ns, name)
                if tail[2] == "plan":
                    table = {"POST": Route(lambda r: h.plan_scan(r.principal, ident, r.body), "read", ns, name,
                                           body="PlanTableScanRequest")}
                else:
                    table = {"POST": Route(lambda r: h.scan_tasks(r.principal, ident, r.body), "read", ns, name,
                                           body="FetchScanTasksRequest")}
            elif tail[0] == "tables" and len(tail) == 4 and tail[2] == "plan":
                name, plan_id = _nfc(tail[1]), tail[3]
                ident = (*ns, name)
                table = {
                    "GET": Route(lambda r: h.planning_result(r.principal, ident, plan_id), "read", ns, name),
                    "DELETE": Route(lambda r: h.cancel_planning(r.principal, ident, plan_id), "read", ns, name),
                }
            elif tail == ["register-view"] or (tail[0] == "tables" and len(tail) >= 3):
                return "406"  # registering views, credentials, signing: in the spec, not served by Floe
        if not table:
            return None
        return table.get(method, "405")

    # -- the request -----------------------------------------------------------------------------
    async def endpoint(self, request: Request) -> Response:
        """Answer one request (the single Starlette route)."""
        head = request.method == "HEAD"
        try:
            return await self._handle(request)
        except Exception as e:  # the server boundary: every failure becomes the spec's error model
            if isinstance(e, OSError) and e.errno == errno.ENAMETOOLONG:
                # a (legal) name longer than the warehouse's file system allows: the client's to change
                return _error(400, "BadRequestException", "A name is too long for the warehouse's file system", head=head)
            code, kind = error_status(e)
            if code >= 500 and not isinstance(e, FloeError):
                log.exception("floe serve: %s %s failed", request.method, request.url.path[:200])
                return _error(500, "InternalServerError", "Internal server error", head=head)
            if code >= 500:
                log.warning("floe serve: %s %s: %s", request.method, request.url.path[:200], e)
            message = " ".join(str(e).splitlines())  # one line, whatever a name or value held
            if len(message) > _MAX_MESSAGE:
                message = message[:_MAX_MESSAGE] + "..."
            if code in (401, 403):  # the audit trail of a security boundary: who was refused what, and why
                log.info("floe serve: refused %s %s: %d %s: %s", request.method, request.url.path[:200], code, kind, message)
            return _error(code, kind, message, head=head)

    async def _handle(self, request: Request) -> Response:
        head = request.method == "HEAD"
        address = f"ip:{request.client.host if request.client else '?'}"
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.settings.max_body_bytes):
            return _error(413, "RequestTooLargeException", f"Request body exceeds {self.settings.max_body_bytes} bytes")
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        segments = [decode_segment(s) for s in raw_path.decode("latin-1").split("/")[1:]]
        if segments and segments[-1] == "":
            segments.pop()
        if segments[:1] == ["ui"]:
            return await self._ui(request, segments, address)
        if segments == ["v1", "oauth", "tokens"]:
            wait = self.limiter.allow(address)
            if wait:
                return self._too_many(address, wait)
            if request.method != "POST":
                return _error(405, "MethodNotAllowedException", "Use POST for /v1/oauth/tokens")
            return await self._oauth(request)
        principal: Principal | None = None
        auth_error: NotAuthorizedError | None = None
        if self.anonymous:
            principal = ANONYMOUS
        else:
            try:
                principal = self.tokens.authenticate(request.headers.get("authorization"))
            except NotAuthorizedError as e:
                auth_error = e
        # per credential once authenticated; per address before, and when serving anonymously
        key = address if principal is None or self.anonymous else f"principal:{principal.name}"
        wait = self.limiter.allow(key)
        if wait:
            return self._too_many(key, wait)
        if auth_error is not None or principal is None:
            raise auth_error or NotAuthorizedError("Not authorized", code=401, error_type="NotAuthorizedException")
        route = self.route(request.method, segments)
        if route is None:
            return _error(404, "NoSuchEndpointException", f"No route {request.method} {request.url.path[:200]}", head=head)
        if route == "405":
            return _error(405, "MethodNotAllowedException", f"Method {request.method} not allowed on {request.url.path[:200]}", head=head)
        if route == "406":
            return _error(406, "UnsupportedOperationException", f"{request.url.path[:200]} is not served by floe serve", head=head)
        assert isinstance(route, Route)
        self._authorize(principal, route)
        if route.namespace is not None:
            request_namespace(route.namespace)
        if route.table is not None:
            request_name(route.table, kind="table")
        body = None
        if route.body is not None:
            body = await self._json_body(request)
            check_request(body, route.body)
        status, payload = await run_in_threadpool(route.action, _Request(principal, dict(request.query_params), body))
        if status == 204 or payload is None or head:
            if status == 404:
                return _error(404, "NotFoundException", "Not found", head=head)
            return Response(status_code=status)
        return JSONResponse(payload, status_code=status)

    # -- /ui -------------------------------------------------------------------------------------------
    async def _ui(self, request: Request, segments: list[str], address: str) -> Response:
        """The health pages (floe.server.ui): the API's authentication, or its token in the /ui cookie."""
        nonce = secrets.token_urlsafe(16)
        headers = {
            "Content-Security-Policy": (
                f"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
            ),
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        }
        if segments == ["ui", "login"]:
            wait = self.limiter.allow(address)
            if wait:
                return self._too_many(address, wait)
            if request.method == "GET":
                return HTMLResponse(self.ui.login(nonce), headers=headers)
            if request.method != "POST":
                return _error(405, "MethodNotAllowedException", "Use GET or POST for /ui/login")
            form = dict(parse_qsl((await self._read_body(request)).decode("utf-8", "replace"), keep_blank_values=True))
            token = form.get("token", "").strip()
            try:
                self.tokens.authenticate(f"Bearer {token}")
            except NotAuthorizedError:
                log.info("floe serve: refused POST /ui/login: 401 invalid token")
                return HTMLResponse(self.ui.login(nonce, "That token is not valid."), status_code=401, headers=headers)
            done = RedirectResponse("/ui", status_code=303, headers=headers)
            done.set_cookie(COOKIE, token, path="/ui", httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
            return done
        if request.method not in ("GET", "HEAD"):
            return _error(405, "MethodNotAllowedException", f"Method {request.method} not allowed on /ui")
        principal = ANONYMOUS if self.anonymous else None
        if principal is None:
            header = request.headers.get("authorization")
            cookie = request.cookies.get(COOKIE)
            try:
                principal = self.tokens.authenticate(header or (f"Bearer {cookie}" if cookie else None))
            except NotAuthorizedError as e:
                wait = self.limiter.allow(address)
                if wait:
                    return self._too_many(address, wait)
                log.info("floe serve: refused GET %s: 401 %s", request.url.path[:200], e)
                return HTMLResponse(self.ui.login(nonce, str(e)), status_code=401, headers=headers)
        key = address if self.anonymous else f"principal:{principal.name}"
        wait = self.limiter.allow(key)
        if wait:
            return self._too_many(key, wait)
        if segments == ["ui"]:
            html = await run_in_threadpool(self.ui.index, principal, nonce)
        elif len(segments) == 4 and segments[1] == "tables":
            ns = tuple(_nfc(level) for level in split_namespace(segments[2], self.settings.namespace_separator))
            request_namespace(ns)
            name = _nfc(segments[3])
            request_name(name, kind="table")
            html = await run_in_threadpool(self.ui.table, principal, (*ns, name), nonce)
        else:
            return _error(404, "NoSuchEndpointException", f"No route {request.method} {request.url.path[:200]}")
        return HTMLResponse(html, headers=headers)

    @staticmethod
    def _authorize(principal: Principal, route: Route) -> None:
        """The grant a route needs, checked before its body is read."""
        if route.level is None:
            return
        if route.namespace is not None:
            require_grant(principal, route.namespace, route.level)
        elif not principal.may_somewhere(route.level):
            require_grant(principal, (), route.level)

    def _too_many(self, key: str, wait: float) -> Response:
        retry_after = max(1, int(wait + 0.999))
        log.info("floe serve: rate limit of %s reached: 429, Retry-After %d s", key, retry_after)
        resp = _error(429, "TooManyRequestsException", f"Rate limit exceeded; retry after {retry_after} s")
        resp.headers["Retry-After"] = str(retry_after)
        return resp

    async def _read_body(self, request: Request) -> bytes:
        limit = self.settings.max_body_bytes
        chunks: list[bytes] = []
        size = 0

        async def read() -> None:
            nonlocal size
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _TooLarge(f"Request body exceeds {limit} bytes", code=413, error_type="RequestTooLargeException")
                chunks.append(chunk)

        try:
            await asyncio.wait_for(read(), timeout=self.settings.body_timeout_s)
        except asyncio.TimeoutError:
            raise RestError(
                f"Request body not received within {self.settings.body_timeout_s:g} s (body-timeout-s)",
                code=408, error_type="RequestTimeoutException",
            ) from None
        return b"".join(chunks)

    async def _json_body(self, request: Request) -> Any:
        data = await self._read_body(request)
        if not data:
            return None
        return parse_json(data, max_depth=self.settings.max_json_depth)

    async def _oauth(self, request: Request) -> Response:
        """OAuth2 client credentials (RFC 6749 4.4), errors in OAuth2's own shape."""

        def oauth_error(code: int, error: str, description: str) -> Response:
            return JSONResponse({"error": error, "error_description": description}, status_code=code)

        try:
            form = dict(parse_qsl((await self._read_body(request)).decode("utf-8"), keep_blank_values=True))
        except (UnicodeDecodeError, ValueError):
            return oauth_error(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
        except _TooLarge as e:
            return oauth_error(413, "invalid_request", str(e))
        if form.get("grant_type") != "client_credentials":
            return oauth_error(400, "unsupported_grant_type", "only grant_type=client_credentials is supported")
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        basic = request.headers.get("authorization", "")
        if basic.lower().startswith("basic ") and not client_id:
            try:
                client_id, _, secret = base64.b64decode(basic[6:].strip()).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return oauth_error(400, "invalid_request", "malformed Basic authorization")
        try:
            issued = self.tokens.issue(client_id, secret)
        except NotAuthorizedError:
            return oauth_error(401, "invalid_client", "unknown client or wrong secret")
        return JSONResponse({
            "access_token": issued.access_token,
            "token_type": "bearer",
            "expires_in": issued.expires_in,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        })


class RestCatalogApp:
    """The ASGI app: every HTTP request goes to :meth:`CatalogApp.endpoint` (routing is ours, on the raw
    path: Starlette's router matches the decoded path, where ``%2F`` or ``%0A`` in a name would change or
    miss the route); lifespan events are acknowledged."""

    def __init__(self, handler: CatalogApp) -> None:
        self.handler = handler
        self._http = request_response(handler.endpoint)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        elif scope["type"] == "http":
            await self._http(scope, receive, send)


def create_app(catalog: Catalog, settings: ServerSettings | None = None, *, anonymous: bool = False) -> RestCatalogApp:
    """The ASGI app serving ``catalog``.

    Args:
        catalog: the catalog to serve (its name is the route prefix).
        settings: tokens, OAuth2 clients, grants and limits (default: none configured).
        anonymous: serve without authentication (every caller is admin); only for loopback use.

    Raises:
        ValidationError: no credential is configured and ``anonymous`` is not set.
    """
    settings = settings or ServerSettings()
    if not anonymous and not (settings.tokens or settings.clients):
        raise ValidationError(
            "floe serve needs credentials: pass --token, configure [server.clients.*] / [server.tokens.*] in "
            "floe.toml, or serve anonymously on a loopback address"
        )
    return RestCatalogApp(CatalogApp(catalog, settings, anonymous=anonymous))
