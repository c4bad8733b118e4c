"""``floe serve`` in a thread for the REST tests: a served SQLite catalog plus the client properties, and
what the security tests send and check (raw requests, the error model, snapshots of files)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

import floe
from floe.catalog.base import Catalog
from floe.server import BackgroundServer, ServerSettings, background_server
from tests.conftest import announced

FLOE = Path(sys.executable).parent / "floe"  # the command of the environment running the tests


@contextmanager
def floe_serve_command(*args: str, env: dict[str, str], cwd: Path, timeout_s: float = 60) -> Iterator[str]:
    """``floe serve --port 0 <args>`` as a process; yields the URL from its first line, interrupts it after.

    Port 0 lets the server bind a free port itself (a port picked here and released first could be taken by
    another process before the server binds it). A thread drains the output, so request logs never fill the pipe.
    """
    proc = subprocess.Popen(
        [str(FLOE), "serve", "--port", "0", *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert proc.stdout is not None
        match, seen = announced(proc.stdout, re.compile(r"^floe serve: (http://\S+)"), timeout_s)
        assert match is not None, f"floe serve did not start in {timeout_s} s (exit status {proc.poll()}): {seen!r}"
        yield match.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Served:
    """A running server, the catalog it serves, and where its warehouse is."""

    server: BackgroundServer
    backing: Catalog
    warehouse: Path

    @property
    def uri(self) -> str:
        return self.server.uri

    def client(self, **props: str) -> Catalog:
        """Floe's REST client against this server (a unique catalog name per call)."""
        return floe.load_catalog(f"r{uuid.uuid4().hex[:10]}", type="rest", uri=self.uri, **props)


@contextmanager
def served_catalog(tmp_path: Path, settings: ServerSettings | None = None) -> Iterator[Served]:
    """Serve a fresh SQLite catalog (warehouse ``<tmp>/warehouse``) on 127.0.0.1 at a free port."""
    warehouse = tmp_path / "warehouse"
    backing = floe.load_catalog(
        f"srv{uuid.uuid4().hex[:8]}", type="sql", uri=f"sqlite:///{tmp_path}/served.db", warehouse=str(warehouse)
    )
    with background_server(backing, settings) as server:
        yield Served(server, backing, warehouse)


def request(s: Served, method: str, path: str, *, token: str | None, **kwargs: Any) -> httpx.Response:
    """One raw HTTP request to the server (``Authorization: Bearer <token>`` unless ``token`` is None)."""
    headers = dict(kwargs.pop("headers", {}))
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.request(method, f"{s.uri}{path}", headers=headers, timeout=30, **kwargs)


def assert_error(resp: httpx.Response, code: int, kind: str) -> str:
    """Check the spec's error model (status, type, a one-line message) and return the message."""
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "code"}
    assert body["error"]["code"] == code
    assert body["error"]["type"] == kind
    message = str(body["error"]["message"])
    assert "\n" not in message
    return message


def prefix(s: Served) -> str:
    """The catalog's route prefix, ``/v1/<catalog>``."""
    return f"/v1/{s.backing.name}"


def file_digests(root: Path, *, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file under ``root`` (symlinks recorded, not followed; ``skip`` folders and the catalog database
    left out) with a digest of its bytes: equal digests mean nothing was created, changed or deleted."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skip]
        for name in [*files, *(d for d in dirs if (here / d).is_symlink())]:
            path = here / name
            if path.is_symlink():
                out[str(path)] = f"-> {os.readlink(path)}"
            elif not name.startswith("served.db"):
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
