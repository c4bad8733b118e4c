"""``floe serve`` as a command: the configured catalog, the README's ``[server]`` table, ``--token``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from _rest import FLOE, floe_serve_command

import floe
from floe.catalog.rest_protocol import ForbiddenError, NotAuthorizedError
from floe.errors import ValidationError
from floe.server import ServerSettings

ROOT = Path(__file__).resolve().parents[2]


def readme_server_toml() -> str:
    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.DOTALL)
    return next(b for b in blocks if "[server]" in b)


def test_rest_cli_floe_serve_reads_config_and_tokens(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "floe.toml").write_text(readme_server_toml(), encoding="utf-8")
    settings = ServerSettings.from_config_file(home / "floe.toml")
    assert settings.clients["etl"][1].grants == {"*": "read", "sales": "write"}
    env = {**os.environ, "FLOE_HOME": str(home), "HOME": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith("FLOE_CATALOG__")}
    with floe_serve_command("--token", "admin-secret", env=env, cwd=tmp_path) as uri:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", uri) and not uri.endswith(":0")
        admin = floe.load_catalog("a", type="rest", uri=uri, token="admin-secret")
        admin.create_namespace("sales")
        etl = floe.load_catalog("e", type="rest", uri=uri, credential="etl:change-me")
        table = etl.create_table("sales.orders", pa.schema([pa.field("id", pa.int64())]))
        table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
        with pytest.raises(ForbiddenError):
            etl.create_namespace("other")
        with pytest.raises(NotAuthorizedError):
            floe.load_catalog("x", type="rest", uri=uri, token="wrong")
        # the served catalog is the embedded one in FLOE_HOME: the rows are there without the server
        local = floe.load_catalog("floe", type="sql", uri=f"sqlite:///{home}/catalog.db", warehouse=str(home / "warehouse"))
        assert local.load_table("sales.orders").scan().to_arrow().num_rows == 2


def test_rest_cli_floe_serve_refuses_open_non_loopback_and_bad_settings(tmp_path: Path) -> None:
    env = {**os.environ, "FLOE_HOME": str(tmp_path / "h"), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [str(FLOE), "serve", "--host", "0.0.0.0", "--port", "0"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 1
    assert "needs credentials" in proc.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for bad, message in ((str(port), f"cannot listen on 127.0.0.1:{port}"), ("65536", "--port must be 0-65535")):
            proc = subprocess.run(
                [str(FLOE), "serve", "--port", bad], env=env, cwd=tmp_path, capture_output=True, text=True,
                timeout=60, check=False,
            )
            assert proc.returncode == 1 and message in proc.stderr, proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    with pytest.raises(ValidationError, match="unknown key"):
        ServerSettings.from_mapping({"rate-limt": 3})
    with pytest.raises(ValidationError, match="not one of read, write, admin"):
        ServerSettings.from_mapping({"tokens": {"t": {"token": "x", "grants": {"*": "owner"}}}})
