"""``floe serve`` settings: who may do what, and the limits, from the ``[server]`` table of floe.toml.

```toml
[server]
token-ttl-s = 3600               # lifetime of OAuth2 tokens issued by /v1/oauth/tokens
max-body-bytes = 10485760        # larger request bodies get 413
max-json-depth = 128             # request bodies nested deeper get 400
rate-limit-per-s = 1000          # sustained requests per second per credential (per address before
rate-limit-burst = 2000          # authentication); the token bucket's size; 429 + Retry-After when empty
allowed-locations = []           # folders tables and registered metadata may live in; [] = the warehouse,
                                 # ["*"] = anywhere (a client could make the server write anywhere)
header-timeout-s = 10            # a request's headers must arrive within this, else the connection closes
body-timeout-s = 30              # ... and its body within this (408)
keep-alive-timeout-s = 5         # idle connections close after this
max-connections = 1000           # beyond it, the connection waiting longest for its headers is closed
namespace-separator = "\u001f"   # joins namespace levels in URLs, advertised in /v1/config ("." as
                                 # Iceberg's REST test server); 0x1F is always accepted as well
scan-planning-batch-size = 1000  # server-side scan planning: file scan tasks per answer; the rest are
                                 # fetched batch by batch with plan-task tokens

[server.clients.etl]             # an OAuth2 client (client credentials grant)
secret = "change-me"
grants = { "*" = "read", "sales" = "write" }

[server.tokens.dashboard]        # a static bearer token
token = "t0k3n"
grants = { "reports" = "read" }
```

A grant names a namespace (``a.b``; it covers its children) or ``*`` (everything) and a level: ``read``
(list, load, exists, metrics), ``write`` (create, register, commit, drop, rename tables and views), ``admin``
(create, drop namespaces and change their properties). ``--token`` tokens get ``admin`` on ``*``.
"""

from __future__ import annotations

import dataclasses
import sys
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from floe.errors import ValidationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["LEVELS", "Grants", "Principal", "ServerSettings"]

LEVELS = {"read": 1, "write": 2, "admin": 3}
Grants = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Principal:
    """Someone the server knows: a name and grants (namespace or ``*`` -> level)."""

    name: str
    grants: Grants

    def level_for(self, namespace: tuple[str, ...]) -> int:
        """The highest level granted on ``namespace`` (by ``*``, itself or an ancestor); 0 for none."""
        best = LEVELS.get(self.grants.get("*", ""), 0)
        for i in range(1, len(namespace) + 1):
            best = max(best, LEVELS.get(self.grants.get(".".join(namespace[:i]), ""), 0))
        return best

    def may_somewhere(self, level: str) -> bool:
        """Whether some grant reaches ``level`` (a request naming its namespaces only in the body needs one)."""
        return any(LEVELS.get(v, 0) >= LEVELS[level] for v in self.grants.values())

    def sees(self, namespace: tuple[str, ...]) -> bool:
        """Whether listing may show ``namespace``: readable, or on the way to a granted namespace."""
        if self.level_for(namespace) >= LEVELS["read"]:
            return True
        prefix = ".".join(namespace) + "."
        return any(k.startswith(prefix) for k in self.grants)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Authentication, authorization and limits of one ``floe serve``."""

    tokens: Mapping[str, Principal] = field(default_factory=dict)  # static bearer token -> principal
    clients: Mapping[str, tuple[str, Principal]] = field(default_factory=dict)  # client id -> (secret, principal)
    token_ttl_s: float = 3600.0
    max_body_bytes: int = 10 * 1024 * 1024
    max_json_depth: int = 128
    rate_limit_per_s: float = 1000.0
    rate_limit_burst: int = 2000
    allowed_locations: tuple[str, ...] | None = ()  # () = the served catalog's warehouse, None = anywhere
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_timeout_s: float = 5.0
    max_connections: int = 1000
    # how clients join namespace levels in URLs (advertised in /v1/config); 0x1F is always accepted too
    namespace_separator: str = "\x1f"
    scan_planning_batch_size: int = 1000  # file scan tasks per answer of server-side planning

    def with_admin_tokens(self, tokens: list[str]) -> ServerSettings:
        """These settings plus static tokens with ``admin`` on everything (``floe serve --token``)."""
        extra = {t: Principal(f"token-{i + 1}", {"*": "admin"}) for i, t in enumerate(tokens)}
        return dataclasses.replace(self, tokens={**self.tokens, **extra})

    @staticmethod
    def from_mapping(table: Mapping[str, Any], *, source: str = "[server]") -> ServerSettings:
        """Settings from a ``[server]`` table (see the module docstring).

        Raises:
            ValidationError: an unknown key, a malformed value or grant (one line naming it).
        """
        known = {
            "token-ttl-s", "max-body-bytes", "max-json-depth", "rate-limit-per-s", "rate-limit-burst", "clients",
            "tokens", "allowed-locations", "header-timeout-s", "body-timeout-s", "keep-alive-timeout-s",
            "max-connections", "namespace-separator", "scan-planning-batch-size",
        }
        unknown = sorted(set(table) - known)
        if unknown:
            raise ValidationError(f"{source}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")

        def number(key: str, default: float, *, integer: bool = False) -> Any:
            value = table.get(key, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValidationError(f"{source}: {key} must be a positive number, got {value!r}")
            return int(value) if integer else float(value)

        tokens: dict[str, Principal] = {}
        for name, entry in _tables(table.get("tokens"), f"{source}.tokens").items():
            token = entry.get("token")
            if not isinstance(token, str) or not token:
                raise ValidationError(f"{source}.tokens.{name}: 'token' must be a non-empty string")
            tokens[token] = Principal(name, _grants(entry.get("grants"), f"{source}.tokens.{name}"))
        clients: dict[str, tuple[str, Principal]] = {}
        for name, entry in _tables(table.get("clients"), f"{source}.clients").items():
            secret = entry.get("secret")
            if not isinstance(secret, str) or not secret:
                raise ValidationError(f"{source}.clients.{name}: 'secret' must be a non-empty string")
            clients[name] = (secret, Principal(name, _grants(entry.get("grants"), f"{source}.clients.{name}")))
        locations = table.get("allowed-locations", [])
        if not isinstance(locations, list) or not all(isinstance(x, str) and x for x in locations):
            raise ValidationError(f"{source}: allowed-locations must be a list of folders (or [\"*\"])")
        separator = table.get("namespace-separator", "\x1f")
        if not isinstance(separator, str) or len(separator) != 1 or separator in "/%" or separator.isalnum():
            raise ValidationError(
                f"{source}: namespace-separator must be one character other than '/', '%', a letter or a digit, "
                f"got {separator!r}"
            )
        return ServerSettings(
            namespace_separator=separator,
            allowed_locations=None if "*" in locations else tuple(locations),
            tokens=tokens,
            clients=clients,
            token_ttl_s=number("token-ttl-s", 3600.0),
            max_body_bytes=number("max-body-bytes", 10 * 1024 * 1024, integer=True),
            max_json_depth=number("max-json-depth", 128, integer=True),
            rate_limit_per_s=number("rate-limit-per-s", 1000.0),
            rate_limit_burst=number("rate-limit-burst", 2000, integer=True),
            header_timeout_s=number("header-timeout-s", 10.0),
            body_timeout_s=number("body-timeout-s", 30.0),
            keep_alive_timeout_s=number("keep-alive-timeout-s", 5.0),
            max_connections=number("max-connections", 1000, integer=True),
            scan_planning_batch_size=number("scan-planning-batch-size", 1000, integer=True),
        )

    @staticmethod
    def from_config_file(path: Path | None) -> ServerSettings:
        """The ``[server]`` table of a floe.toml (defaults when there is no file or no table).

        Raises:
            ValidationError: the file is not valid TOML or the table is malformed.
        """
        if path is None:
            return ServerSettings()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ValidationError(f"Invalid config file {path}: {e}") from None
        table = data.get("server") or {}
        if not isinstance(table, Mapping):
            raise ValidationError(f"Config file {path}: [server] must be a table")
        return ServerSettings.from_mapping(table, source=f"{path} [server]")


def _tables(node: Any, source: str) -> dict[str, Mapping[str, Any]]:
    if node is None:
        return {}
    if not isinstance(node, Mapping) or not all(isinstance(v, Mapping) for v in node.values()):
        raise ValidationError(f"{source} must hold tables ([{source.split(' ')[-1]}.<name>])")
    return {str(k): v for k, v in node.items()}


def _grants(node: Any, source: str) -> dict[str, str]:
    if not isinstance(node, Mapping) or not node:
        raise ValidationError(f"{source}: 'grants' must be a table of namespace = \"read|write|admin\"")
    out: dict[str, str] = {}
    for ns, level in node.items():
        if level not in LEVELS:
            raise ValidationError(f"{source}: grant {ns!r} = {level!r} is not one of read, write, admin")
        out[unicodedata.normalize("NFC", str(ns))] = str(level)  # names in requests are NFC (floe.server.names)
    return out
