"""``/ui`` in a real browser: ``floe serve`` as a command, Debian's headless chromium loading its pages.

Checks the DOM chromium builds (each plot's ``<svg>`` and each finding) and takes a screenshot of a table's
page. ``FLOE_HEALTH_SCREENSHOT=docs/images/health.png`` also copies the screenshot there (how the README's
image is made). Without chromium the test is skipped, or fails under ``FLOE_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import floe
from floe.catalog.loader import open_catalog
from floe.config import FloeConfig
from floe.health.history import HISTORY_TABLE, record
from floe.health.svg import HISTORY_PLOT_ID, PLOT_IDS
from floe.spec.manifest import FileContent
from tests.catalogs._rest import floe_serve_command
from tests.conftest import _unavailable
from tests.unit._health_tables import data_file, streaming_table

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
DAYS = ("2026-11-24", "2026-11-25", "2026-11-26", "2026-11-27")


def _chromium() -> str:
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found is None:
        _unavailable(f"Debian's chromium not found at {CHROMIUM} (apt-get install chromium)")
    assert found is not None
    return found


def _events_table(catalog: Any) -> None:
    """A streaming table (tiny files over four days) that also took merge-on-read and CDC deletes; its
    health is recorded after the appends, after the deletes and at the end (the score-history plot)."""
    table = streaming_table(catalog, "db.events", appends=160, days=DAYS)
    record(catalog, ("db", HISTORY_TABLE), [floe.health(table)])
    for i in range(10):
        delta = table.new_row_delta()
        delta.add_deletes(
            data_file(table, f"pos-{i}.parquet", DAYS[i % 2], size=1500, rows=4, content=FileContent.POSITION_DELETES)
        )
        delta.commit()
    for i in range(3):
        table.new_row_delta().add_deletes(
            data_file(table, f"eq-{i}.parquet", DAYS[2], size=900, rows=3, content=FileContent.EQUALITY_DELETES,
                      equality_ids=(1,))
        ).commit()
    record(catalog, ("db", HISTORY_TABLE), [floe.health(table.refresh())])
    table.set_properties({"history.expire.max-snapshot-age-ms": "1000"})  # so the history is past retention
    record(catalog, ("db", HISTORY_TABLE), [floe.health(table.refresh())])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``floe serve`` (the command, anonymous on loopback) over an embedded catalog with degraded tables."""
    home = tmp_path_factory.mktemp("health_browser")
    config = FloeConfig.load(environ={"FLOE_HOME": str(home), "HOME": str(home)}, cwd=home)
    catalog: Any = open_catalog("floe", config.catalogs["floe"])
    catalog.create_namespace(("db",))
    _events_table(catalog)
    streaming_table(catalog, "db.clicks", appends=30, days=DAYS[:2])
    catalog.close()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    environ.update(PYTHONPATH=str(REPO), FLOE_HOME=str(home))
    with floe_serve_command(env=environ, cwd=home) as uri:
        yield uri


def _browse(*args: str, tmp: Path) -> str:
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp / 'profile'}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_health_ui_in_chromium_dom_and_screenshot(served: str, tmp_path: Path) -> None:
    ranking = _browse("--dump-dom", f"{served}/ui", tmp=tmp_path)
    assert ranking.count('class="table-row"') == 3  # the history table is a table too
    assert ranking.index("floe.db.events") < ranking.index("floe.db.clicks")  # worst score first
    page_url = f"{served}/ui/tables/db/events"
    dom = _browse("--dump-dom", page_url, tmp=tmp_path)
    for plot in (*PLOT_IDS, HISTORY_PLOT_ID):
        assert f'<svg id="{plot}"' in dom, plot
    assert dom.count('class="record"') == 3
    assert dom.count('class="bar"') == 10 and dom.count('class="cell"') >= 10
    assert dom.count('class="added"') == 160 + 10 + 3 and 'class="point"' in dom
    assert 'class="rows-added"' in dom  # rows on their own scale, next to the file bars
    for code in ("SMALL_FILES", "EQUALITY_DELETES", "DELETED_ROWS", "POSITION_DELETE_FILES", "SNAPSHOTS_PAST_RETENTION"):
        assert f'id="finding-{code}"' in dom, code
    assert "CALL floe.system.rewrite_data_files(table =&gt; 'db.events', where =&gt; " in dom
    shot = tmp_path / "health.png"
    _browse(f"--screenshot={shot}", "--window-size=1100,3000", page_url, tmp=tmp_path)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    target = os.environ.get("FLOE_HEALTH_SCREENSHOT")
    if target:
        shutil.copyfile(shot, REPO / target)
