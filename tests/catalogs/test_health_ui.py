"""``/ui`` of ``floe serve`` over HTTP: the ranking, a table's page, escaping, and the REST API's auth and grants.

The real-browser check (DOM and screenshot in headless chromium) is tests/catalogs/test_health_ui_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from floe.health.svg import PLOT_IDS
from floe.server import ServerSettings, background_server
from floe.server.settings import Principal
from floe.server.ui import COOKIE
from floe.spec.manifest import FileContent
from tests.unit._health_tables import create, data_file, deletes_table, streaming_table
from tests.unit._table_testing import sql_catalog

EVIL = "<script>alert(1)</script>"
TOKENS = {
    "admin-token": Principal("admin", {"*": "admin"}),
    "db-reader": Principal("reader", {"db": "read"}),
}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cat = sql_catalog(tmp_path_factory.mktemp("health_ui"))
    deletes_table(cat, "db.del")
    stream = streaming_table(cat, "db.stream", appends=12, days=("a", EVIL))
    stream.new_row_delta().add_deletes(  # so the evil partition value is also a heat-map row label
        data_file(stream, "pos.parquet", EVIL, rows=1, content=FileContent.POSITION_DELETES)
    ).commit()
    cat.create_namespace("other")
    create(cat, "other.hidden").append(pa.table({"id": pa.array([1], pa.int64()), "dt": ["x"]}))
    create(cat, 'db.we"ird<b>')
    return cat


@pytest.fixture(scope="module")
def open_server(catalog: Any) -> Iterator[str]:
    with background_server(catalog) as server:  # no credentials: anonymous on loopback
        yield server.uri


@pytest.fixture(scope="module")
def secured(catalog: Any) -> Iterator[str]:
    with background_server(catalog, ServerSettings(tokens=TOKENS)) as server:
        yield server.uri


def test_health_ui_ranking_worst_first_with_links(open_server: str) -> None:
    page = httpx.get(f"{open_server}/ui")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'nonce-" in page.headers["content-security-policy"]
    html = page.text
    assert html.count('class="table-row"') == 4
    assert html.index("unit.db.stream") < html.index("unit.other.hidden")  # 12 tiny files rank below one
    assert 'href="/ui/tables/db/stream"' in html
    assert "unit.db.we&quot;ird&lt;b&gt;" in html and 'we"ird<b>' not in html
    assert 'href="/ui/tables/db/we%22ird%3Cb%3E"' in html


def test_health_ui_table_page_plots_findings_and_escaping(open_server: str) -> None:
    html = httpx.get(f"{open_server}/ui/tables/db/stream").text
    for plot in PLOT_IDS:
        assert f'<svg id="{plot}"' in html
    assert 'id="finding-SMALL_FILES"' in html
    assert EVIL not in html  # the partition value is shown escaped, never as markup
    escaped = "dt=&lt;script&gt;alert(1)&lt;/script&gt;"
    assert html.count(escaped) >= 2  # the skew line and the heat map's row label (and its tooltips)
    assert 'class="rows-added"' in html
    assert html.count("<script") == 1  # the page's own copy script, under the response's nonce
    nonce = html.split('<script nonce="', 1)[1].split('"', 1)[0]
    deletes = httpx.get(f"{open_server}/ui/tables/db/del")
    assert f"'nonce-{nonce}'" not in deletes.headers["content-security-policy"]  # a fresh nonce per response
    text = deletes.text
    for code in ("EQUALITY_DELETES", "DELETED_ROWS", "POSITION_DELETE_FILES"):
        assert f'id="finding-{code}"' in text
    assert "CALL unit.system.rewrite_equality_deletes(table =&gt; &#x27;db.del&#x27;, where =&gt; " in text
    assert 'class="cell"' in text  # the heat map has cells for partition a
    assert text.count('class="partition-row"') == 2
    assert text.index("<td>dt=a</td>") < text.index("<td>dt=b</td>")  # the partition with deletes first


def test_health_ui_unknown_table_and_methods(open_server: str) -> None:
    assert httpx.get(f"{open_server}/ui/tables/db/nope").status_code == 404
    assert httpx.post(f"{open_server}/ui").status_code == 405
    assert httpx.get(f"{open_server}/ui/elsewhere").status_code == 404


def test_health_ui_needs_the_api_credentials(secured: str) -> None:
    refused = httpx.get(f"{secured}/ui")
    assert refused.status_code == 401
    assert 'action="/ui/login"' in refused.text
    assert httpx.get(f"{secured}/ui", headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = httpx.get(f"{secured}/ui", headers={"Authorization": "Bearer admin-token"})
    assert ok.status_code == 200 and "unit.other.hidden" in ok.text


def test_health_ui_login_cookie_is_for_ui_pages_only(secured: str) -> None:
    bad = httpx.post(f"{secured}/ui/login", data={"token": "wrong"})
    assert bad.status_code == 401
    login = httpx.post(f"{secured}/ui/login", data={"token": "db-reader"})
    assert login.status_code == 303 and login.headers["location"] == "/ui"
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    jar = {COOKIE: "db-reader"}
    assert httpx.get(f"{secured}/ui", cookies=jar).status_code == 200
    assert httpx.get(f"{secured}/v1/config", cookies=jar).status_code == 401  # never a REST credential


def test_health_ui_shows_only_readable_namespaces(secured: str) -> None:
    reader = {"Authorization": "Bearer db-reader"}
    html = httpx.get(f"{secured}/ui", headers=reader).text
    assert "unit.db.del" in html and "unit.other.hidden" not in html
    assert httpx.get(f"{secured}/ui/tables/other/hidden", headers=reader).status_code == 403
    assert httpx.get(f"{secured}/ui/tables/db/del", headers=reader).status_code == 200


def test_health_ui_table_path_round_trips_odd_names(open_server: str, tmp_path: Path) -> None:
    from floe.server.ui import table_path

    path = table_path(("db", 'we"ird<b>'), "\x1f")
    page = httpx.get(f"{open_server}{path}")
    assert page.status_code == 200
    assert "<h1>unit.db.we&quot;ird&lt;b&gt;</h1>" in page.text


def test_health_ui_plots_the_recorded_score_history(tmp_path: Path) -> None:
    import floe
    from floe.health.history import HISTORY_TABLE, record
    from floe.health.svg import HISTORY_PLOT_ID

    cat = sql_catalog(tmp_path)
    table = streaming_table(cat, "db.trend", appends=6)
    first = floe.health(table)
    table.append(pa.table({"id": pa.array([99], pa.int64()), "dt": ["a"]}))
    second = floe.health(table.refresh())
    record(cat, ("db", HISTORY_TABLE), [first])
    record(cat, ("db", HISTORY_TABLE), [second, floe.health(deletes_table(cat, "db.other"))])
    with background_server(cat) as server:
        html = httpx.get(f"{server.uri}/ui/tables/db/trend").text
        assert f'<svg id="{HISTORY_PLOT_ID}"' in html
        assert html.count('class="record"') == 2  # the other table's row is not this table's trend
        assert f"score {first.score}</title>" in html and f"score {second.score}</title>" in html
        without = httpx.get(f"{server.uri}/ui/tables/db/floe_health_history").text
        assert 'id="plot-score-history"' in without  # its own page: nothing recorded for it
        assert "nothing recorded" in without
