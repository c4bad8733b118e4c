"""``floe serve``: the configured catalog over Iceberg's REST catalog protocol."""

from __future__ import annotations

from floe.catalog.loader import open_catalog
from floe.config import FloeConfig
from floe.errors import ValidationError

__all__ = ["run_serve"]


def run_serve(config: FloeConfig, *, host: str, port: int, catalog: str | None, tokens: list[str]) -> int:
    """Serve ``catalog`` (default: the default catalog) until interrupted; returns the exit status.

    Port 0 takes a free port; either way the first line on stdout names the URL served, once it listens.

    Settings (OAuth2 clients, tokens with grants, limits) come from the ``[server]`` table of the
    configuration file (see :mod:`floe.server.settings`); ``--token`` adds admin tokens.

    Raises:
        ValidationError: an unknown catalog, a bad port, or no credentials on a non-loopback address.
    """
    from floe.catalog.base import Catalog
    from floe.server import ServerSettings, serve

    if not 0 <= port < 65536:
        raise ValidationError(f"--port must be 0-65535 (0: any free port), got {port}")
    name = catalog or config.default_catalog
    served = open_catalog(name, config.catalog_properties(name))
    assert isinstance(served, Catalog)
    from floe.catalog.rest import RestCatalog

    if isinstance(served, RestCatalog):
        raise ValidationError(f"Catalog {name!r} is itself a REST catalog; serve a SQL or Hadoop catalog")
    settings = ServerSettings.from_config_file(config.config_file).with_admin_tokens(tokens)
    serve(served, settings, host=host, port=port, on_listening=lambda uri: print(f"floe serve: {uri}", flush=True))
    return 0
