"""Authentication (bearer tokens, OAuth2 client credentials) and per-client rate limits for ``floe serve``.

Issued tokens are random (``secrets.token_urlsafe``), live in memory only (a restart signs everyone out)
and expire after ``token-ttl-s``. Secrets and tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from floe.catalog.rest_protocol import NotAuthorizedError
from floe.server.settings import Principal, ServerSettings

__all__ = ["IssuedToken", "RateLimiter", "TokenStore"]


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """An OAuth2 access token handed out by the server."""

    access_token: str
    expires_in: int
    principal: Principal


class TokenStore:
    """Static tokens from the settings plus the tokens issued to OAuth2 clients."""

    def __init__(self, settings: ServerSettings) -> None:
        self._settings = settings
        self._issued: dict[str, tuple[Principal, float]] = {}
        self._lock = threading.Lock()

    def issue(self, client_id: str, client_secret: str) -> IssuedToken:
        """A new token for an OAuth2 client.

        Raises:
            NotAuthorizedError: unknown client or wrong secret (the same message for both).
        """
        known = self._settings.clients.get(client_id)
        if known is None or not hmac.compare_digest(known[0].encode(), client_secret.encode()):
            raise NotAuthorizedError("invalid client credentials", code=401, error_type="invalid_client")
        token = secrets.token_urlsafe(32)
        ttl = self._settings.token_ttl_s
        with self._lock:
            now = time.monotonic()
            # forget tokens expired for a while (until then a client hears "expired", not "invalid")
            self._issued = {t: v for t, v in self._issued.items() if v[1] > now - max(ttl, 60.0)}
            self._issued[token] = (known[1], now + ttl)
        return IssuedToken(token, max(1, int(ttl)), known[1])

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an ``Authorization: Bearer <token>`` header.

        Raises:
            NotAuthorizedError: no header, not a bearer token, unknown or expired token.
        """
        if not authorization:
            raise NotAuthorizedError("Authentication required: send Authorization: Bearer <token>",
                                     code=401, error_type="NotAuthorizedException")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise NotAuthorizedError("Authorization must be a bearer token", code=401, error_type="NotAuthorizedException")
        for static, principal in self._settings.tokens.items():
            if hmac.compare_digest(static.encode(), token.encode()):
                return principal
        with self._lock:
            entry = self._issued.get(token)
        if entry is not None:
            if entry[1] > time.monotonic():
                return entry[0]
            raise NotAuthorizedError("Token expired: request a new one", code=401, error_type="NotAuthorizedException")
        raise NotAuthorizedError("Invalid token", code=401, error_type="NotAuthorizedException")


class RateLimiter:
    """A token bucket per client key: ``rate`` requests per second sustained, ``burst`` at once."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def allow(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0.0 when allowed, else the seconds until it would be."""
        with self._lock:
            now = time.monotonic()
            tokens, last = self._buckets.get(key, (self._burst, now))
            tokens = min(self._burst, tokens + (now - last) * self._rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            if len(self._buckets) > 100_000:  # bound memory: drop buckets that have refilled
                full = [k for k, (t, at) in self._buckets.items() if t + (now - at) * self._rate >= self._burst]
                for k in full:
                    del self._buckets[k]
            return (1.0 - tokens) / self._rate
