"""``floe serve`` under load an attacker controls: idle connections and request rates (issue 34, 8 and 10)."""

from __future__ import annotations

import logging
import resource
import selectors
import socket
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from _rest import assert_error, prefix, request, served_catalog

from floe.server import ServerSettings
from floe.server.security import RateLimiter

IDLE_CONNECTIONS = 1600  # above the usual 1,024 file descriptors, and above max-connections


def _open_files() -> int:
    return len(list(Path("/proc/self/fd").iterdir()))


# 8 ------------------------------------------------------------------------------------------------
def test_rest_security_idle_connections_cannot_starve_a_request(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * IDLE_CONNECTIONS + 512  # both ends of every connection live in this process
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"needs {needed} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    settings = ServerSettings.from_mapping({"header-timeout-s": 2, "max-connections": 1000})
    with served_catalog(tmp_path, settings) as served:
        victim = served.client()
        victim.create_namespace("db")
        victim.create_table("db.v", pa.schema([pa.field("id", pa.int64())])).append(
            pa.table({"id": pa.array([1, 2, 3], pa.int64())})
        )
        host, port = served.server.host, served.server.port
        baseline = _open_files()
        idle = []
        for _ in range(IDLE_CONNECTIONS):  # a request line and half a header, never finished
            sock = socket.create_connection((host, port))
            sock.sendall(b"GET /v1/config HTTP/1.1\r\nHost: floe\r\nX-Slow: ")
            idle.append(sock)
        started = time.monotonic()
        resp = httpx.get(f"{served.uri}/v1/config", timeout=10)
        elapsed = time.monotonic() - started
        assert resp.status_code == 200
        # seconds at most even on a loaded machine; starved, it would time out (10 s)
        assert elapsed < 5.0, f"a normal request took {elapsed:.2f} s beside {IDLE_CONNECTIONS} idle connections"
        # the cap closed the oldest at once; the header timeout closes the rest two seconds after they opened
        closed = 0
        with selectors.DefaultSelector() as waiting:  # epoll: more sockets than select() can watch
            for sock in idle:
                sock.setblocking(False)
                waiting.register(sock, selectors.EVENT_READ)
            deadline = time.monotonic() + 8
            while closed < IDLE_CONNECTIONS and time.monotonic() < deadline:
                for key, _ in waiting.select(timeout=0.5):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        assert sock.recv(1) == b""  # the server never answers these: readable means closed
                    except ConnectionResetError:
                        pass
                    waiting.unregister(sock)
                    sock.close()
                    closed += 1
        assert closed == IDLE_CONNECTIONS
        assert _open_files() <= baseline + 16  # the server holds no file descriptor for them any more
        # a client that trickles its headers is closed on time too, however often it sends a byte
        slow = socket.create_connection((host, port))
        slow.sendall(b"GET /v1/config HTTP/1.1\r\n")
        started = time.monotonic()
        slow.settimeout(0.4)
        while True:
            try:
                if slow.recv(1) == b"":
                    break
            except ConnectionResetError:  # closed while a byte of ours was unread: the kernel resets instead
                break
            except TimeoutError:
                try:
                    slow.sendall(b"X")
                except (BrokenPipeError, ConnectionResetError):  # closed since the last byte
                    break
            assert time.monotonic() - started < 6, "a trickling client was not closed"
        assert time.monotonic() - started >= 1.5  # not before the header timeout either
        slow.close()
        assert served.client().load_table("db.v").scan().to_arrow().column("id").to_pylist() == [1, 2, 3]


# 10 -----------------------------------------------------------------------------------------------
def test_rest_security_rate_limit_is_per_credential_with_retry_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="floe.server")
    settings = ServerSettings.from_mapping({
        "rate-limit-per-s": 0.5, "rate-limit-burst": 5,  # a request every 2 s once the burst is spent
        "tokens": {"a": {"token": "token-a", "grants": {"*": "admin"}}, "b": {"token": "token-b", "grants": {"*": "admin"}}},
    })
    with served_catalog(tmp_path, settings) as s:
        s.backing.create_namespace("db")
        s.backing.create_table("db.v", pa.schema([pa.field("id", pa.int64())])).append(
            pa.table({"id": pa.array([1, 2], pa.int64())})
        )
        codes = []
        while not codes or codes[-1] != 429:  # until credential a's bucket is empty (a loaded machine refills)
            resp = request(s, "POST", f"{prefix(s)}/namespaces", token="token-a", json={"namespace": []})
            codes.append(resp.status_code)
            assert len(codes) < 50, codes
        assert codes[:5] == [400] * 5  # the burst (the root namespace is refused), then 429
        assert "Rate limit exceeded" in assert_error(resp, 429, "TooManyRequestsException")
        assert int(resp.headers["Retry-After"]) >= 1
        # the same address with another credential has its own bucket
        assert request(s, "GET", "/v1/config", token="token-b").status_code == 200
        assert s.backing.list_namespaces() == [("db",)]
        # Floe's client waits as Retry-After says and sends again (a bounded number of times)
        caplog.clear()
        s.client(token="token-a").create_namespace("after-wait")
        assert any("principal:a reached: 429" in r.getMessage() for r in caplog.records)
        assert s.backing.list_namespaces() == [("after-wait",), ("db",)]
        assert s.client(token="token-b").load_table("db.v").scan().to_arrow().num_rows == 2
        # 429 carries Retry-After on the token endpoint too (limited per address before authentication)
        codes = [httpx.post(f"{s.uri}/v1/oauth/tokens", data={"grant_type": "client_credentials"}) for _ in range(8)]
        assert all("Retry-After" in r.headers for r in codes if r.status_code == 429)
        assert any(r.status_code == 429 for r in codes)


def test_rest_security_default_rate_limit_admits_bursts_beyond_the_old_400() -> None:
    """The defaults admit 2,000 requests of one credential at once and 1,000/s after: PyIceberg 0.12 does not
    retry a 429, and its integration suite sent bursts the old 200/s, burst 400 refused 122 times."""
    defaults = ServerSettings()
    limiter = RateLimiter(defaults.rate_limit_per_s, defaults.rate_limit_burst)
    started = time.monotonic()
    waits = [limiter.allow("principal:pyiceberg") for _ in range(3000)]
    elapsed = time.monotonic() - started
    admitted = waits.index(next(w for w in waits if w > 0)) if any(waits) else len(waits)
    assert admitted >= 2000  # the whole burst at once (the old bucket held 400)
    assert admitted <= 2000 + 1000 * elapsed + 1  # then 1,000/s
    assert 0 < max(waits) <= 0.0011  # a refused request is told to wait about a millisecond
    assert limiter.allow("principal:other") == 0.0  # every credential has its own bucket
