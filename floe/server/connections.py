"""Connection limits of ``floe serve``: a header read timeout and a cap on open connections, on uvicorn.

uvicorn 0.54 closes a connection that stays idle after a response (``timeout_keep_alive``) and can answer
503 once N connections are open (``limit_concurrency``), but nothing closes a connection whose request
headers never complete, and ``limit_concurrency`` counts such connections too: 2,000 clients that send
half a request line hold 2,000 file descriptors forever, and every real request then gets 503 or no
socket at all. :func:`guarded_h11_protocol` subclasses uvicorn's h11 protocol with two rules:

- **Header timeout**: a request's headers must be complete within ``header_timeout_s`` of the
  connection opening, or of the first byte of a request on a kept-alive connection; else the connection
  is closed. (The idle time between requests stays uvicorn's keep-alive timeout.)
- **Connection cap**: when a new connection makes more than ``max_connections`` open, the connection that
  has waited longest for its request headers (new or idle keep-alive) is closed to make room; a request
  in progress is never interrupted (when every connection is busy the new one is closed instead).

:func:`connection_budget` raises the process's soft file-descriptor limit (or, when the hard limit is
short, lowers the cap and the listen backlog) so the cap, not ``EMFILE``, is what binds.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections import OrderedDict

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["connection_budget", "guarded_h11_protocol"]

log = logging.getLogger("floe.server")
_RESERVED_FDS = 256  # database connections, metadata files, the listening socket, logging


def connection_budget(max_connections: int, backlog: int = 2048) -> tuple[int, int]:
    """The connection cap and listen backlog this process can honour.

    asyncio accepts up to ``backlog`` connections in one go before any of them runs, so the cap closes the
    surplus only after up to ``backlog`` extra descriptors are open: running out there makes asyncio stop
    accepting for a second, which is what a flood wants. The soft ``RLIMIT_NOFILE`` is raised towards the
    hard limit to make room for ``max_connections + backlog``; when even the hard limit is short, the
    backlog and then the cap shrink (with a warning).

    Returns:
        ``(max_connections, backlog)`` to use.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + backlog + _RESERVED_FDS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return max_connections, backlog
    available = max(64, soft - _RESERVED_FDS)
    backlog = max(16, min(backlog, available // 4))
    capped = min(max_connections, available - backlog)
    log.warning("floe serve: %d open files allowed, so at most %d connections (not %d) and a backlog of %d",
                soft, capped, max_connections, backlog)
    return capped, backlog


def guarded_h11_protocol(*, header_timeout_s: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the header timeout and the connection cap of the module docstring
    (one class per server: the connections waiting for headers are shared by its instances)."""
    waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()  # oldest first
    evicted: set[GuardedH11Protocol] = set()  # closed by the cap, not yet lost

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_headers(timed=True)
            if len(self.connections) - len(evicted) > max_connections:
                victim = next(iter(waiting))  # self is the newest: it is chosen only when nothing else waits
                self._evict(victim)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.transport.is_closing():
                return
            if self.conn.their_state is h11.IDLE:
                self._await_headers(timed=self._header_timer is None)
            else:
                self._headers_done()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_headers(timed=False)  # idle keep-alive: uvicorn's keep-alive timer runs

        def connection_lost(self, exc: Exception | None) -> None:
            self._headers_done()
            evicted.discard(self)
            super().connection_lost(exc)

        def _await_headers(self, *, timed: bool) -> None:
            waiting[self] = None
            if timed:
                if self._header_timer is not None:
                    self._header_timer.cancel()
                self._header_timer = self.loop.call_later(header_timeout_s, self._header_timeout)

        def _headers_done(self) -> None:
            waiting.pop(self, None)
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._headers_done()
                self.transport.close()

        def _evict(self, victim: GuardedH11Protocol) -> None:
            victim._headers_done()
            evicted.add(victim)
            victim.transport.close()

    return GuardedH11Protocol
