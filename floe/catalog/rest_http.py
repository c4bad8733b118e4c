"""HTTP for the REST catalog client: one httpx session with bearer auth and OAuth2 client credentials.

Authentication as Iceberg's REST clients configure it: ``token`` is sent as a bearer token; ``credential``
(``client_id:client_secret``, or a secret alone) is exchanged for a token with the OAuth2
client-credentials grant at ``oauth2-server-uri`` (default ``<uri>/v1/oauth/tokens``), with ``scope``
(default ``catalog``). A token from a credential is fetched again shortly before it expires and once more
when the server answers 401. ``header.<Name>`` properties become request headers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from floe.catalog.rest_protocol import NotAuthorizedError, error_from_response
from floe.errors import FloeError, TableAlreadyExistsError, ValidationError

__all__ = ["RestSession"]

CREDENTIAL = "credential"
TOKEN = "token"
SCOPE = "scope"
OAUTH2_SERVER_URI = "oauth2-server-uri"
HEADER_PREFIX = "header."
CONNECT_TIMEOUT_MS = "rest.client.connection-timeout-ms"
SOCKET_TIMEOUT_MS = "rest.client.socket-timeout-ms"
_DEFAULT_SCOPE = "catalog"
_MAX_THROTTLED = 6  # 429/503 answers waited out per request (Retry-After, else exponential from 0.1 s)


def _retry_after(resp: httpx.Response, attempt: int) -> float:
    """Seconds to wait before sending again: ``Retry-After`` (seconds or an HTTP date, RFC 9110 10.2.3),
    else exponential from 0.1 s; at most 30 s."""
    raw = resp.headers.get("retry-after", "").strip()
    wait = 0.1 * 2 ** (attempt - 1)
    if raw.replace(".", "", 1).isdigit():
        wait = float(raw)
    elif raw:
        try:
            wait = max(0.0, (parsedate_to_datetime(raw) - datetime.now(timezone.utc)).total_seconds())
        except (TypeError, ValueError):
            pass
    return float(min(wait, 30.0))


def _timeout(properties: Mapping[str, str]) -> httpx.Timeout:
    def ms(key: str, default: int) -> float:
        raw = properties.get(key, str(default))
        try:
            return int(raw) / 1000.0
        except ValueError:
            raise ValidationError(f"REST catalog property {key} must be milliseconds, got {raw!r}") from None

    return httpx.Timeout(ms(SOCKET_TIMEOUT_MS, 120_000), connect=ms(CONNECT_TIMEOUT_MS, 10_000))


class RestSession:
    """Requests to one REST catalog server, authenticated as the catalog's properties say."""

    def __init__(self, uri: str, properties: Mapping[str, str], *, catalog: str) -> None:
        """Prepare the session (no request is made until the first call).

        Raises:
            ValidationError: ``uri`` is not http(s) or a timeout is malformed.
        """
        if not uri.startswith(("http://", "https://")):
            raise ValidationError(f"REST catalog {catalog!r} needs an http(s) 'uri', got {uri!r}")
        self.uri = uri.rstrip("/")
        self.catalog = catalog
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=_timeout(properties), follow_redirects=False)
        self._token: str | None = properties.get(TOKEN) or None
        self._token_expires: float | None = None
        self._credential = properties.get(CREDENTIAL) or None
        self._scope = properties.get(SCOPE, _DEFAULT_SCOPE)
        self._token_uri = properties.get(OAUTH2_SERVER_URI) or f"{self.uri}/v1/oauth/tokens"
        self.headers: dict[str, str] = {}
        self.configure(properties)

    def configure(self, properties: Mapping[str, str]) -> None:
        """Take ``header.*`` properties (again, after the server's configuration was merged)."""
        self.headers = {k[len(HEADER_PREFIX) :]: v for k, v in properties.items() if k.startswith(HEADER_PREFIX)}

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    # -- tokens --------------------------------------------------------------------------------------
    def _fetch_token(self) -> None:
        assert self._credential is not None
        client_id, sep, secret = self._credential.partition(":")
        form = {"grant_type": "client_credentials", "scope": self._scope}
        if sep:
            form["client_id"], form["client_secret"] = client_id, secret
        else:
            form["client_secret"] = client_id
        throttled = 0
        while True:
            try:
                resp = self._client.post(self._token_uri, data=form)
            except httpx.HTTPError as e:
                raise FloeError(f"REST catalog {self.catalog}: cannot reach {self._token_uri}: {e}") from e
            if resp.status_code not in (429, 503) or throttled >= _MAX_THROTTLED:
                break
            throttled += 1  # refused before any work: wait as the server says and ask again
            time.sleep(_retry_after(resp, throttled))
        body = _json(resp)
        if resp.status_code != 200 or not isinstance(body, Mapping) or not body.get("access_token"):
            err = error_from_response(
                resp.status_code if resp.status_code != 200 else 401, body,
                fallback=f"OAuth2 token request to {self._token_uri} failed",
            )
            if isinstance(err, ValidationError):  # OAuth2 answers bad credentials with 400 invalid_client
                raise NotAuthorizedError(str(err), code=resp.status_code, error_type="NotAuthorizedException")
            raise err
        self._token = str(body["access_token"])
        expires_in = body.get("expires_in")
        self._token_expires = time.monotonic() + float(expires_in) if isinstance(expires_in, (int, float)) else None

    def _auth_header(self, *, refresh: bool) -> dict[str, str]:
        with self._lock:
            if self._credential is not None:
                soon = self._token_expires is not None and time.monotonic() > self._token_expires - 30
                if refresh or self._token is None or soon:
                    self._fetch_token()
            return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    # -- requests ------------------------------------------------------------------------------------
    def send(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """Send one request (``path`` below the uri, already encoded); retried once after a 401 when a
        credential can fetch a fresh token, and after 429/503 (up to 6 times, honouring Retry-After).

        Raises:
            httpx.HTTPError: the request could not be sent or answered (timeouts, refused connections).
        """
        url = f"{self.uri}{path}"
        refresh = False
        throttled = 0
        while True:
            headers = {**self.headers, **self._auth_header(refresh=refresh)}
            resp = self._client.request(method, url, json=json, params=params, headers=headers)
            if resp.status_code == 401 and self._credential is not None and not refresh:
                refresh = True
                continue
            if resp.status_code in (429, 503) and throttled < _MAX_THROTTLED:
                # refused before any work was done: waiting and sending again is safe, commits included
                throttled += 1
                time.sleep(_retry_after(resp, throttled))
                continue
            return resp

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        what: str,
        already_exists: type[FloeError] = TableAlreadyExistsError,
    ) -> Any:
        """Send a request and return its JSON body (None for 204); errors become Floe errors.

        Raises:
            FloeError: the server's error (NoSuch*, AlreadyExists, CommitFailed, NotAuthorized ...) or an
                unreachable server (message names the request).
        """
        try:
            resp = self.send(method, path, json=json, params=params)
        except httpx.HTTPError as e:
            raise FloeError(f"REST catalog {self.catalog}: {what} failed: {type(e).__name__}: {e}") from e
        if resp.status_code >= 400:
            raise error_from_response(
                resp.status_code, _json(resp), fallback=f"{what} failed", already_exists=already_exists
            )
        if resp.status_code == 204 or not resp.content:
            return None
        return _json(resp)


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None
