"""The Spark Connect server fixture for tests/connect (the server itself: _connect_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _connect_server import ConnectServer, running_server


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """The Spark Connect server of this test process, stopped when the process ends."""
    with running_server(tmp_path_factory.mktemp("connect-server")) as server:
        yield server
