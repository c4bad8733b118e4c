"""``floe serve``: an Iceberg REST catalog server over any Floe catalog (Starlette app, uvicorn server).

``floe.server.background_server(catalog)`` serves one in a thread (tests, notebooks);
``floe.server.create_app`` is the ASGI app for other servers.
"""

from __future__ import annotations

from floe.server.app import create_app
from floe.server.run import BackgroundServer, background_server, serve
from floe.server.settings import Principal, ServerSettings

__all__ = ["BackgroundServer", "Principal", "ServerSettings", "background_server", "create_app", "serve"]
