"""``floe serve`` in a thread for the REST tests: a served SQLite catalog plus the client properties."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import floe
from floe.catalog.base import Catalog
from floe.server import BackgroundServer, ServerSettings, background_server


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
