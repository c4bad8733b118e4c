"""``/ui`` of ``floe serve``: the served catalog's tables ranked by health, and a page per table.

Server-rendered HTML with inline SVG plots (:mod:`floe.health.svg`): no build step, nothing fetched from
elsewhere. Every name, partition value, message and statement is HTML-escaped. Pages are read-only and
show only namespaces the caller may read (the REST API's grants). The one script on a page copies a
statement to the clipboard; it runs under a per-response nonce (``Content-Security-Policy``), so nothing
injected into the markup could run even if escaping failed.

Routes (``GET``): ``/ui`` (ranking), ``/ui/tables/<namespace>/<table>`` (levels joined by the server's
namespace separator, each segment percent-encoded), ``/ui/login`` (a form that stores a bearer token in an
``HttpOnly``, ``SameSite=Strict`` cookie scoped to ``/ui``; ``POST`` sets it). The cookie is accepted on
``GET /ui`` pages only, never by the REST API, so it cannot be used to change anything.

Nothing is cached: every page load reads the current manifests of each table it shows (``MAX_TABLES`` at
most on the ranking), so the pages are as fresh as the catalog and cost what ``floe health --all`` costs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

from floe.catalog.base import Catalog
from floe.errors import NoSuchTableError
from floe.health.check import analyze
from floe.health.files import human_bytes
from floe.health.history import HISTORY_TABLE, read_scores
from floe.health.report import HealthReport
from floe.health.svg import (
    delete_heatmap,
    file_size_histogram,
    manifest_growth,
    score_history,
    snapshot_timeline,
)
from floe.server.handlers import require_grant
from floe.server.settings import LEVELS, Principal
from floe.table.identifiers import Identifier, Namespace

__all__ = ["COOKIE", "MAX_PARTITION_ROWS", "MAX_TABLES", "UiPages", "table_path"]

COOKIE = "floe_ui_token"
MAX_TABLES = 500  # tables ranked on one page (each costs a manifest read)
MAX_PARTITION_ROWS = 100

_STYLE = """
body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left;font-size:13px}
.score{display:inline-block;min-width:34px;padding:2px 6px;border-radius:4px;color:#fff;font-weight:bold}
.good{background:#3a9a4a}.fair{background:#d89b2a}.poor{background:#c9412e}
.finding{border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:10px 0}
.sev{font-weight:bold;text-transform:uppercase;font-size:11px;margin-right:6px}
pre{background:#f4f4f4;padding:8px;white-space:pre-wrap;word-break:break-all;user-select:all}
.muted{color:#666;font-size:12px}svg{display:block;margin:8px 0 18px 0;border:1px solid #eee}
"""
_COPY_SCRIPT = (
    "document.querySelectorAll('button.copy').forEach(function(b){b.addEventListener('click',function(){"
    "var t=document.getElementById(b.dataset.target).textContent;navigator.clipboard.writeText(t);"
    "b.textContent='copied';});});"
)


def table_path(identifier: Identifier, separator: str) -> str:
    """The URL path of a table's page (segments percent-encoded, ``/`` included)."""
    ns = separator.join(identifier[:-1])
    return f"/ui/tables/{quote(ns, safe='')}/{quote(identifier[-1], safe='')}"


def _score_class(score: int) -> str:
    return "good" if score >= 80 else "fair" if score >= 50 else "poor"


def _page(title: str, body: str, nonce: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>{body}"
        f'<script nonce="{escape(nonce)}">{_COPY_SCRIPT}</script></body></html>'
    )


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _partitions_table(r: HealthReport) -> str:
    """Partitions with the most to fix first (small files and delete files), at most MAX_PARTITION_ROWS."""
    ranked = sorted(r.partitions, key=lambda p: (-(p.small_files + p.delete_files), p.partition))
    rows = "".join(
        f'<tr class="partition-row"><td>{escape(p.partition)}</td><td>{p.data_files}</td><td>{p.small_files}</td>'
        f"<td>{escape(human_bytes(p.data_bytes))}</td><td>{p.data_rows}</td>"
        f"<td>{p.position_delete_files}</td><td>{p.dv_count}</td><td>{p.equality_delete_files}</td>"
        f"<td>{p.position_delete_ratio:.0%}</td><td>{p.equality_delete_ratio:.0%}</td></tr>"
        for p in ranked[:MAX_PARTITION_ROWS]
    )
    more = len(ranked) - MAX_PARTITION_ROWS
    note = f'<p class="muted">{more} more partition(s) in the JSON report (floe health --format json)</p>' if more > 0 else ""
    return (
        f"<h2>Partitions ({len(ranked)})</h2>"
        '<table id="partitions"><tr><th>partition</th><th>data files</th><th>small</th><th>bytes</th><th>rows</th>'
        "<th>position deletes</th><th>vectors</th><th>equality deletes</th><th>deleted rows</th>"
        f"<th>eq. delete rows</th></tr>{rows}</table>{note}"
    )


@dataclass(frozen=True, slots=True)
class UiPages:
    """Renders the pages of one served catalog."""

    catalog: Catalog
    separator: str

    def _readable_tables(self, principal: Principal) -> Iterator[Identifier]:
        def walk(ns: Namespace) -> Iterator[Identifier]:
            if ns and principal.level_for(ns) >= LEVELS["read"]:
                yield from self.catalog.list_tables(ns)
            for child in self.catalog.list_namespaces(ns):
                if principal.sees(tuple(child)):
                    yield from walk(tuple(child))

        yield from walk(())

    def _report(self, ident: Identifier) -> HealthReport:
        ops = self.catalog.table_operations(ident)
        metadata, location = ops.load()
        return analyze(
            metadata, ops.io, table=".".join(ident), catalog=self.catalog.name, metadata_location=location
        )

    def index(self, principal: Principal, nonce: str) -> str:
        """Every readable table, worst score first; a table whose metadata cannot be read is listed apart."""
        reports: list[tuple[HealthReport, Identifier]] = []
        failed: list[tuple[Identifier, str]] = []
        for ident in self._readable_tables(principal):
            if len(reports) + len(failed) >= MAX_TABLES:
                break
            try:
                reports.append((self._report(ident), ident))
            except (OSError, ValueError) as e:  # a missing or unreadable file: show the table, not a 500
                failed.append((ident, f"{type(e).__name__}: {e}"))
        reports.sort(key=lambda pair: (pair[0].score, pair[0].table))
        rows = []
        for rank, (r, ident) in enumerate(reports, 1):
            link = escape(table_path(ident, self.separator), quote=True)
            codes = ", ".join(f.code for f in r.findings) or "-"
            rows.append(
                f'<tr class="table-row"><td>{rank}</td><td><a href="{link}">{escape(r.qualified_name)}</a></td>'
                f'<td><span class="score {_score_class(r.score)}">{r.score}</span></td>'
                f"<td>{r.data_files}</td><td>{r.small_files}</td>"
                f"<td>{r.deletes.position_delete_files + r.deletes.dv_count}</td>"
                f"<td>{r.deletes.equality_delete_files}</td><td>{r.manifests.count}</td>"
                f"<td>{r.snapshots.count}</td><td>{escape(codes)}</td></tr>"
            )
        for ident, error in failed:
            rows.append(
                f'<tr class="table-row"><td>-</td><td>{escape(".".join(ident))}</td>'
                f'<td colspan="8" class="muted">{escape(error)}</td></tr>'
            )
        body = (
            f"<h1>Table health: catalog {escape(self.catalog.name)}</h1>"
            f'<p class="muted">{len(reports)} table(s), worst score first; score = 90% Amoro\'s (40 file sizes, '
            "40 equality deletes, 20 position deletes) + 5 manifests + 5 snapshots (see floe.health.score)</p>"
            '<table id="ranking"><tr><th>#</th><th>table</th><th>score</th><th>data files</th><th>small</th>'
            "<th>position deletes</th><th>equality deletes</th><th>manifests</th><th>snapshots</th>"
            "<th>findings</th></tr>" + "".join(rows) + "</table>"
        )
        return _page(f"Table health: {self.catalog.name}", body, nonce)

    def table(self, principal: Principal, ident: Identifier, nonce: str) -> str:
        """One table's report: summary, plots, findings with their statements.

        Raises:
            ForbiddenError: the caller may not read the table's namespace.
            NoSuchTableError: no such table.
        """
        require_grant(principal, tuple(ident[:-1]), "read")
        r = self._report(ident)
        d, m, s = r.deletes, r.manifests, r.snapshots
        findings = []
        for i, f in enumerate(r.findings):
            sid = f"statement-{i}"
            safe = "safe to run now" if f.safe_now else "not safe to run now"
            findings.append(
                f'<div class="finding" id="finding-{escape(f.code, quote=True)}" data-code="{escape(f.code, quote=True)}">'
                f'<span class="sev">{escape(f.severity)}</span><b>{escape(f.code)}</b>: {escape(f.message)}'
                f'<div class="muted">{escape(f.metric)}: {f.files_before} &rarr; {f.files_after}; '
                f"{safe} ({escape(f.safe_reason)})</div>"
                f'<pre id="{sid}">{escape(f.statement)};</pre>'
                f'<button class="copy" data-target="{sid}">copy</button></div>'
            )
        summary = (
            f'<table id="summary">'
            f"<tr><th>score</th><td><span class=\"score {_score_class(r.score)}\">{r.score}</span> "
            f"(file sizes {r.score_parts.file_size:.2f}, equality deletes {r.score_parts.equality_deletes:.2f}, "
            f"position deletes {r.score_parts.position_deletes:.2f}, manifests {r.score_parts.manifests:.2f}, "
            f"snapshots {r.score_parts.snapshots:.2f})</td></tr>"
            f"<tr><th>data files</th><td>{r.data_files} ({escape(human_bytes(r.data_bytes))}, {r.data_rows} rows), "
            f"{r.small_files} small (&lt; {escape(human_bytes(r.small_file_bytes))}) in {len(r.partitions)} partition(s)"
            "</td></tr>"
            f"<tr><th>deletes</th><td>position {d.position_delete_files} files / {d.position_delete_rows} rows; "
            f"vectors {d.dv_count} / {d.dv_rows} rows (coverage {d.dv_coverage:.0%}); equality "
            f"{d.equality_delete_files} files / {d.equality_delete_rows} rows</td></tr>"
            f"<tr><th>manifests</th><td>{m.count} (min {escape(human_bytes(m.min_bytes))}, median "
            f"{escape(human_bytes(m.median_bytes))}, max {escape(human_bytes(m.max_bytes))})</td></tr>"
            f"<tr><th>snapshots</th><td>{s.count}, {s.past_retention} past retention; refs "
            f"{escape(', '.join(ref.name for ref in r.refs) or '-')}</td></tr>"
            f"<tr><th>skew</th><td>largest partition {escape(r.skew.largest_partition or '-')}: "
            f"{r.skew.rows_ratio:.1f}x the median rows</td></tr>"
            f"<tr><th>checked</th><td>{escape(_when(r.generated_at_ms))}</td></tr></table>"
        )
        body = (
            f'<p><a href="/ui">&larr; all tables</a></p><h1>{escape(r.qualified_name)}</h1>{summary}'
            f"<h2>Findings ({len(r.findings)})</h2>"
            + ("".join(findings) or '<p id="no-findings">No findings.</p>')
            + "<h2>Plots</h2>"
            + file_size_histogram(r)
            + delete_heatmap(r.partitions)
            + snapshot_timeline(r.timeline)
            + manifest_growth(r)
            + self._history(ident, r.table)
            + _partitions_table(r)
        )
        return _page(f"Table health: {r.qualified_name}", body, nonce)

    def _history(self, ident: Identifier, name: str) -> str:
        """The score trend from ``<namespace>.floe_health_history`` when that table exists ("" otherwise)."""
        try:
            history = self.catalog.load_table((*ident[:-1], HISTORY_TABLE))
        except NoSuchTableError:
            return ""
        return score_history(read_scores(history, name))

    @staticmethod
    def login(nonce: str, message: str = "") -> str:
        """The token form (the cookie it sets is accepted by /ui pages only)."""
        note = f'<p class="muted">{escape(message)}</p>' if message else ""
        body = (
            f"<h1>Table health: sign in</h1>{note}"
            '<form method="post" action="/ui/login"><label>Bearer token '
            '<input type="password" name="token" autocomplete="off"></label> '
            '<button type="submit">sign in</button></form>'
        )
        return _page("Table health: sign in", body, nonce)
