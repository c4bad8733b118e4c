"""Running ``floe serve``: uvicorn in the foreground, or in a background thread (tests, notebooks).

Without configured credentials the server is anonymous (every caller is admin), which is only allowed
on a loopback address: anything reachable from other machines must authenticate. Connections go through
:mod:`floe.server.connections` (header timeout, connection cap) with uvicorn's keep-alive timeout.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from floe.catalog.base import Catalog
from floe.errors import FloeError, ValidationError
from floe.server.app import create_app
from floe.server.connections import connection_budget, guarded_h11_protocol
from floe.server.settings import ServerSettings

__all__ = ["BackgroundServer", "background_server", "serve"]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before uvicorn starts so that port 0 (any free port) names its port at once.

    Raises:
        ValidationError: the address cannot be bound (in use, or not this machine's).
    """
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it every response waits ~40 ms for the client's delayed ACK (Nagle)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ValidationError(f"floe serve cannot listen on {host}:{port}: {e.strerror or e}") from e
    return sock


def _uri(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _config(
    catalog: Catalog, settings: ServerSettings, host: str, port: int, log_level: str, *, access_log: bool = False
) -> uvicorn.Config:
    """uvicorn's settings (``port`` only names the server in logs: it serves the socket it is handed)."""
    anonymous = not (settings.tokens or settings.clients)
    if anonymous and not _is_loopback(host):
        raise ValidationError(
            f"floe serve on {host} needs credentials (--token, or [server.clients.*] / [server.tokens.*] in "
            "floe.toml); without them it serves only a loopback address such as 127.0.0.1"
        )
    app = create_app(catalog, settings, anonymous=anonymous)
    max_connections, backlog = connection_budget(settings.max_connections)
    protocol = guarded_h11_protocol(header_timeout_s=settings.header_timeout_s, max_connections=max_connections)
    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level, access_log=access_log, lifespan="off", http=protocol,
        timeout_keep_alive=max(1, round(settings.keep_alive_timeout_s)), backlog=backlog,
    )


def serve(
    catalog: Catalog,
    settings: ServerSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 8181,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve ``catalog`` until interrupted (``floe serve``); port 0 takes a free port.

    ``on_listening`` gets the base URL (with the bound port) once the socket listens, before requests are served.

    Raises:
        ValidationError: no credentials on a non-loopback address, or the address cannot be bound.
    """
    server = uvicorn.Server(_config(catalog, settings, host, port, "info", access_log=True))
    sock = _bind(host, port)
    try:
        bound = int(sock.getsockname()[1])
        if on_listening is not None:
            on_listening(_uri(host, bound))
        server.run(sockets=[sock])
    finally:
        sock.close()


class BackgroundServer:
    """A ``floe serve`` running in a thread of this process; ``uri`` is its base URL."""

    def __init__(self, catalog: Catalog, settings: ServerSettings, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = uvicorn.Server(_config(catalog, settings, host, port, "warning"))
        self._sock = _bind(host, port)
        self.host, self.port = host, int(self._sock.getsockname()[1])
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="floe-serve", daemon=True
        )

    @property
    def uri(self) -> str:
        """``http://host:port``."""
        return _uri(self.host, self.port)

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        """Start serving and wait until the server accepts requests.

        Raises:
            FloeError: it did not start in time.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise FloeError(f"floe serve on {self.uri} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()


@contextmanager
def background_server(
    catalog: Catalog, settings: ServerSettings | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[BackgroundServer]:
    """``with background_server(catalog) as server:`` serve ``catalog`` at ``server.uri`` (a free port)."""
    server = BackgroundServer(catalog, settings or ServerSettings(), host=host, port=port).start()
    try:
        yield server
    finally:
        server.stop()
