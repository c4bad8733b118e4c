"""SQL catalogs opened on one database server share one connection pool in a process.

A program that loads tables by name opens a catalog for each; before, every catalog made its own pool and
held a server connection for as long as its tables lived (20 tables: 20 PostgreSQL connections).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _helpers import catalog_props

import floe
from floe.spec.schema import Schema

TABLES = 20


def _connections_to(port: int) -> int:
    """This process's established TCP connections to ``port`` (Linux /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_catalogs_on_one_server_share_its_connections(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, schema: Schema
) -> None:
    props = catalog_props(kind, tmp_path, request)
    name = props.pop("name")
    port = urlsplit(props["uri"]).port
    assert port is not None
    first = floe.load_catalog(name, **props)
    first.create_namespace("pool")
    first.create_table(("pool", "t"), schema)
    before = _connections_to(port)
    assert before >= 1  # the first catalog's pool keeps its connection

    tables = [floe.load_catalog(name, **props).load_table(("pool", "t")) for _ in range(TABLES)]

    assert len(tables) == TABLES
    assert _connections_to(port) <= before + 1, f"{TABLES} catalogs on one server opened their own connections"
    first.drop_table(("pool", "t"))
    first.drop_namespace("pool")


def test_sqlite_catalogs_keep_their_own_engine(tmp_path: Path) -> None:
    """A SQLite file deleted and made again under the same name is not reached through an old connection."""
    db = tmp_path / "catalog.db"
    props = {"type": "sql", "uri": f"sqlite:///{db}", "warehouse": str(tmp_path / "wh")}
    first = floe.load_catalog("one", **props)
    first.create_namespace("gone")
    first.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)

    again = floe.load_catalog("one", **props)

    assert again.list_namespaces() == []


def test_forked_child_opens_its_own_pool(postgres_url: str) -> None:
    """A child forked after the parent opened a catalog uses new connections, never the parent's."""
    script = textwrap.dedent(f"""
        import os, sys
        import floe
        from floe.catalog import sql
        props = {{"type": "sql", "uri": {postgres_url!r}, "warehouse": "/nonexistent"}}
        parent = floe.load_catalog("forked", **props)
        parent.list_namespaces()
        pid = os.fork()
        if pid == 0:
            child = floe.load_catalog("forked", **props)
            child.list_namespaces()
            os._exit(0 if child.engine is not parent.engine else 3)
        _, status = os.waitpid(pid, 0)
        parent.list_namespaces()  # the parent's pooled connection still works
        sys.exit(os.waitstatus_to_exitcode(status))
    """)
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
