"""Inline SVG plots of a health report (server-rendered: no JavaScript, no fonts or files fetched).

Every text that reaches the markup (partition values, labels) goes through :func:`html.escape`; numbers
are formatted here. Each plot is one ``<svg>`` element with a stable ``id`` so pages and tests can find it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from html import escape

from floe.health.files import human_bytes
from floe.health.report import HealthReport, PartitionHealth, SnapshotPoint

__all__ = [
    "HISTORY_PLOT_ID",
    "PLOT_IDS",
    "delete_heatmap",
    "file_size_histogram",
    "manifest_growth",
    "score_history",
    "snapshot_timeline",
]

PLOT_IDS = ("plot-size-histogram", "plot-delete-heatmap", "plot-snapshot-timeline", "plot-manifest-growth")
HISTORY_PLOT_ID = "plot-score-history"
_W, _H = 720, 260
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 56, 16, 28, 64
_FONT = 'font-family="sans-serif" font-size="11"'
_MAX_HEAT_ROWS = 30
_MAX_TIMELINE_COLUMNS = 240


def _svg(plot_id: str, title: str, body: list[str], height: int = _H) -> str:
    return (
        f'<svg id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" role="img" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title>'
        f'<text x="{_PAD_L}" y="16" {_FONT} font-weight="bold">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _empty(plot_id: str, title: str, why: str) -> str:
    return _svg(plot_id, title, [f'<text x="{_PAD_L}" y="60" {_FONT} fill="#666">{escape(why)}</text>'], 90)


def _y_axis(top: float, label: str) -> list[str]:
    bottom = _H - _PAD_B
    return [
        f'<line x1="{_PAD_L}" y1="{_PAD_T}" x2="{_PAD_L}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{_PAD_L}" y1="{bottom}" x2="{_W - _PAD_R}" y2="{bottom}" stroke="#999"/>',
        f'<text x="{_PAD_L - 4}" y="{_PAD_T + 4}" {_FONT} text-anchor="end">{escape(_num(top))}</text>',
        f'<text x="{_PAD_L - 4}" y="{bottom}" {_FONT} text-anchor="end">0</text>',
        (f'<text x="12" y="{(_PAD_T + bottom) / 2}" {_FONT} transform="rotate(-90 12 {(_PAD_T + bottom) / 2})" '
        f'text-anchor="middle">{escape(label)}</text>'),
    ]


def _num(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def file_size_histogram(report: HealthReport) -> str:
    """Data files per size bin; bins below the small-file threshold are orange."""
    counts = report.size_histogram
    title = f"Data file sizes (target {human_bytes(report.target_file_size_bytes)})"
    if not any(counts):
        return _empty(PLOT_IDS[0], title, "no data files")
    top = max(counts)
    inner_w = _W - _PAD_L - _PAD_R
    inner_h = _H - _PAD_T - _PAD_B
    step = inner_w / len(counts)
    body = _y_axis(top, "files")
    for i, (b, n) in enumerate(zip(report.size_bins, counts)):
        h = inner_h * n / top
        x = _PAD_L + i * step
        small = b.high_bytes is not None and b.high_bytes <= report.small_file_bytes
        color = "#e8822a" if small else "#3b7dd8"
        label = escape(b.label)
        body.append(
            f'<rect class="bar" x="{x + 2:.1f}" y="{_H - _PAD_B - h:.1f}" width="{step - 4:.1f}" height="{h:.1f}" '
            f'fill="{color}"><title>{label}: {n} files</title></rect>'
        )
        if n:
            body.append(f'<text x="{x + step / 2:.1f}" y="{_H - _PAD_B - h - 3:.1f}" {_FONT} text-anchor="middle">{n}</text>')
        body.append(
            f'<text x="{x + step / 2:.1f}" y="{_H - _PAD_B + 12}" {_FONT} text-anchor="end" '
            f'transform="rotate(-35 {x + step / 2:.1f} {_H - _PAD_B + 12})">{label}</text>'
        )
    return _svg(PLOT_IDS[0], title, body)


def _heat(value: float) -> str:
    # white -> red
    v = max(0.0, min(1.0, value))
    g = int(255 - 200 * v)
    return f"rgb(255,{g},{g})"


def delete_heatmap(partitions: Sequence[PartitionHealth]) -> str:
    """Partitions (rows, those with the most deletes first) by delete measure (columns), darker = more."""
    title = "Deletes per partition"
    rows = sorted(
        (p for p in partitions if p.delete_files),
        key=lambda p: (-(p.position_delete_ratio + p.equality_delete_ratio), -p.delete_files, p.partition),
    )[:_MAX_HEAT_ROWS]
    if not rows:
        return _empty(PLOT_IDS[1], title, "no delete files")
    columns: list[tuple[str, list[float], list[str]]] = [
        ("position files", [float(p.position_delete_files) for p in rows], [str(p.position_delete_files) for p in rows]),
        ("vectors", [float(p.dv_count) for p in rows], [str(p.dv_count) for p in rows]),
        ("equality files", [float(p.equality_delete_files) for p in rows], [str(p.equality_delete_files) for p in rows]),
        ("deleted rows %", [p.position_delete_ratio for p in rows], [f"{p.position_delete_ratio:.0%}" for p in rows]),
        ("eq. delete rows %", [p.equality_delete_ratio for p in rows], [f"{p.equality_delete_ratio:.0%}" for p in rows]),
    ]
    label_w, cell_w, cell_h, top = 220, 90, 18, 44
    height = top + cell_h * len(rows) + 12
    body = []
    for j, (name, _, _) in enumerate(columns):
        body.append(
            f'<text x="{label_w + j * cell_w + cell_w / 2}" y="{top - 6}" {_FONT} text-anchor="middle">{escape(name)}</text>'
        )
    for j, (name, values, texts) in enumerate(columns):
        peak = max(values) or 1.0
        scale = 1.0 if name.endswith("%") else peak
        for i, (v, t) in enumerate(zip(values, texts)):
            x, y = label_w + j * cell_w, top + i * cell_h
            body.append(
                f'<rect class="cell" x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                f'fill="{_heat(v / scale)}" stroke="#ddd"><title>{escape(rows[i].partition)}: {escape(name)} '
                f"{escape(t)}</title></rect>"
                f'<text x="{x + cell_w / 2}" y="{y + 12}" {_FONT} text-anchor="middle">{escape(t)}</text>'
            )
    for i, p in enumerate(rows):
        text = p.partition if len(p.partition) <= 34 else p.partition[:33] + "\u2026"
        body.append(f'<text x="{label_w - 6}" y="{top + i * cell_h + 12}" {_FONT} text-anchor="end">{escape(text)}</text>')
    return _svg(PLOT_IDS[1], title, body, height)


def _columns(points: Sequence[SnapshotPoint]) -> list[list[SnapshotPoint]]:
    if len(points) <= _MAX_TIMELINE_COLUMNS:
        return [[p] for p in points]
    size = -(-len(points) // _MAX_TIMELINE_COLUMNS)
    return [list(points[i : i + size]) for i in range(0, len(points), size)]


def snapshot_timeline(points: Sequence[SnapshotPoint]) -> str:
    """Files added (up, green bars) and removed (down, red bars) per snapshot, rows added and deleted as
    lines on their own scale (up, dark green; down, dark red); several snapshots share a column past 240."""
    title = f"Snapshot timeline ({len(points)} snapshots: files and rows added / removed)"
    if not points:
        return _empty(PLOT_IDS[2], title, "no snapshots")
    cols = _columns(points)
    added = [sum(p.added_files + p.added_delete_files for p in c) for c in cols]
    removed = [sum(p.removed_files for p in c) for c in cols]
    top = max(max(added), max(removed), 1)
    inner_w = _W - _PAD_L - _PAD_R
    mid = _PAD_T + (_H - _PAD_T - _PAD_B) / 2
    half = (_H - _PAD_T - _PAD_B) / 2
    step = inner_w / len(cols)
    body = [
        f'<line x1="{_PAD_L}" y1="{mid}" x2="{_W - _PAD_R}" y2="{mid}" stroke="#999"/>',
        f'<text x="{_PAD_L - 4}" y="{_PAD_T + 4}" {_FONT} text-anchor="end">+{escape(_num(top))}</text>',
        f'<text x="{_PAD_L - 4}" y="{_H - _PAD_B}" {_FONT} text-anchor="end">-{escape(_num(top))}</text>',
    ]
    for i, c in enumerate(cols):
        x = _PAD_L + i * step
        rows_in = sum(p.added_rows for p in c)
        rows_out = sum(p.deleted_rows for p in c)
        ops = ", ".join(sorted({p.operation for p in c}))
        tip = escape(f"{len(c)} snapshot(s) ({ops}): +{added[i]} / -{removed[i]} files, +{rows_in} / -{rows_out} rows")
        h_up, h_down = half * added[i] / top, half * removed[i] / top
        w = max(step - 1, 0.5)
        body.append(
            f'<rect class="added" x="{x:.2f}" y="{mid - h_up:.2f}" width="{w:.2f}" height="{h_up:.2f}" fill="#3a9a4a">'
            f"<title>{tip}</title></rect>"
        )
        if h_down:
            body.append(
                f'<rect class="removed" x="{x:.2f}" y="{mid:.2f}" width="{w:.2f}" height="{h_down:.2f}" fill="#c9412e">'
                f"<title>{tip}</title></rect>"
            )
    rows_up = [sum(p.added_rows for p in c) for c in cols]
    rows_down = [sum(p.deleted_rows for p in c) for c in cols]
    row_top = max(max(rows_up), max(rows_down), 1)
    for cls, values, sign, color in (("rows-added", rows_up, -1, "#14532d"), ("rows-deleted", rows_down, 1, "#7f1d1d")):
        if not any(values):
            continue
        coords = " ".join(
            f"{_PAD_L + (i + 0.5) * step:.2f},{mid + sign * half * v / row_top:.2f}" for i, v in enumerate(values)
        )
        body.append(f'<polyline class="{cls}" fill="none" stroke="{color}" stroke-width="1.5" points="{coords}"/>')
    body.append(
        f'<text x="{(_PAD_L + _W - _PAD_R) / 2}" y="{_H - _PAD_B + 16}" {_FONT} text-anchor="middle">'
        f"bars: files (max {escape(_num(top))}); "
        f"lines: rows (max {escape(_num(row_top))})</text>"
    )
    body.append(f'<text x="{_PAD_L}" y="{_H - _PAD_B + 16}" {_FONT}>oldest</text>')
    body.append(f'<text x="{_W - _PAD_R}" y="{_H - _PAD_B + 16}" {_FONT} text-anchor="end">newest</text>')
    return _svg(PLOT_IDS[2], title, body)


def manifest_growth(report: HealthReport) -> str:
    """Manifests per snapshot over the current branch's history (sampled)."""
    points = report.manifest_growth
    title = "Manifests per snapshot (current branch, sampled)"
    if not points:
        return _empty(PLOT_IDS[3], title, "no snapshots")
    top = max(p.manifests for p in points) or 1
    inner_w = _W - _PAD_L - _PAD_R
    inner_h = _H - _PAD_T - _PAD_B
    step = inner_w / max(1, len(points) - 1)
    coords = [
        (_PAD_L + i * step if len(points) > 1 else _PAD_L + inner_w / 2, _H - _PAD_B - inner_h * p.manifests / top)
        for i, p in enumerate(points)
    ]
    body = _y_axis(top, "manifests")
    body.append(
        '<polyline fill="none" stroke="#7a4fc2" stroke-width="2" points="'
        + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        + '"/>'
    )
    for (x, y), p in zip(coords, points):
        tip = escape(f"snapshot {p.snapshot_id}: {p.manifests} manifests, {human_bytes(p.total_bytes)}")
        body.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#7a4fc2"><title>{tip}</title></circle>')
    return _svg(PLOT_IDS[3], title, body)


def score_history(points: Sequence[tuple[int, int]]) -> str:
    """Recorded scores over time (``floe health --record``), on a 0-100 axis, evenly spaced by record."""
    title = f"Score history ({len(points)} recorded report(s))"
    if not points:
        return _empty(HISTORY_PLOT_ID, title, "nothing recorded: floe health TABLE --record")
    inner_w = _W - _PAD_L - _PAD_R
    inner_h = _H - _PAD_T - _PAD_B
    step = inner_w / max(1, len(points) - 1)
    coords = [
        (_PAD_L + i * step if len(points) > 1 else _PAD_L + inner_w / 2, _H - _PAD_B - inner_h * score / 100)
        for i, (_, score) in enumerate(points)
    ]
    body = _y_axis(100, "score")
    body.append(
        '<polyline fill="none" stroke="#3b7dd8" stroke-width="2" points="'
        + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        + '"/>'
    )
    for (x, y), (ms, score) in zip(coords, points):
        when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        body.append(
            f'<circle class="record" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#3b7dd8"><title>{when}: score '
            f"{score}</title></circle>"
        )
    return _svg(HISTORY_PLOT_ID, title, body)
