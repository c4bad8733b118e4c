"""``floe health TABLE`` and ``floe health --all NAMESPACE``: table health from metadata alone, no Spark.

TABLE resolves as for ``floe describe`` (an identifier or a location). ``--format table`` prints the
score, the counts and each finding with its statement; ``json`` the whole report; ``csv`` the findings.
``--all`` ranks every table of a namespace, worst score first. ``--record`` appends each report's summary
row to an Iceberg table (default ``<namespace>.floe_health_history``; see :mod:`floe.health.history`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from floe.cli.inspect import _load_catalog, is_location, resolve
from floe.cli.output import print_result
from floe.config import FloeConfig
from floe.errors import NoSuchNamespaceError, ValidationError
from floe.health.check import analyze
from floe.health.files import human_bytes
from floe.health.report import HealthReport
from floe.sql.identifiers import resolve_namespace
from floe.sql.result import ResultSet
from floe.table.identifiers import to_identifier

__all__ = ["HealthTarget", "health_reports", "namespace_reports", "render_text", "run_health"]


@dataclass(frozen=True, slots=True)
class HealthTarget:
    """Where a report came from: the catalog (empty for a location) and the table's identifier."""

    catalog: str
    identifier: tuple[str, ...]


def _age(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = ms / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def health_reports(
    config: FloeConfig, text: str, *, orphans: bool = False
) -> tuple[HealthReport, HealthTarget]:
    """The report of one TABLE argument, and where the table lives."""
    if is_location(text):
        from floe.catalog.location import location_operations

        ops = location_operations(text)
        metadata, location = ops.load()
        report = analyze(metadata, ops.io, table=text, metadata_location=location, orphans=orphans)
        return report, HealthTarget("", ())
    ref = resolve(config, text)
    if ref.metadata_table is not None:
        raise ValidationError(f"{text!r} names the {ref.metadata_table} metadata table; give the table itself")
    catalog = _load_catalog(config, ref.catalog)
    # The table's operations, as the inspection commands use: no Table handle, no scan layer.
    ops = catalog.table_operations(to_identifier(ref.identifier))  # type: ignore[attr-defined]
    metadata, location = ops.load()
    name = ".".join(ref.identifier)
    report = analyze(metadata, ops.io, table=name, catalog=ref.catalog, metadata_location=location, orphans=orphans)
    return report, HealthTarget(ref.catalog, tuple(ref.identifier))


def namespace_reports(
    config: FloeConfig, namespace: str, *, orphans: bool = False
) -> tuple[list[HealthReport], str, tuple[str, ...]]:
    """Reports of every table directly in a namespace, worst score first; and (catalog, namespace)."""
    catalog_name, ns = resolve_namespace(
        tuple(namespace.split(".")), current_catalog=config.default_catalog, catalogs=config.catalogs
    )
    catalog = _load_catalog(config, catalog_name)
    if not catalog.namespace_exists(ns):  # type: ignore[attr-defined]
        raise NoSuchNamespaceError(f"Namespace {'.'.join(ns)} does not exist in catalog {catalog_name}")
    reports = []
    for ident in catalog.list_tables(ns):  # type: ignore[attr-defined]
        ops = catalog.table_operations(tuple(ident))  # type: ignore[attr-defined]
        metadata, location = ops.load()
        reports.append(
            analyze(
                metadata,
                ops.io,
                table=".".join(ident),
                catalog=catalog_name,
                metadata_location=location,
                orphans=orphans,
            )
        )
    reports.sort(key=lambda r: (r.score, r.table))
    return reports, catalog_name, tuple(ns)


def render_text(report: HealthReport) -> str:
    """The human-readable report: summary lines, then each finding with its statement."""
    p, d, m, s = report.score_parts, report.deletes, report.manifests, report.snapshots
    lines = [
        (f"{report.qualified_name}: score {report.score}/100 "
        f"(file sizes {p.file_size:.2f}, equality deletes {p.equality_deletes:.2f}, "
        f"position deletes {p.position_deletes:.2f}, manifests {p.manifests:.2f}, snapshots {p.snapshots:.2f})"),
        (f"  data files   {report.data_files} ({human_bytes(report.data_bytes)}, {report.data_rows} rows) in "
        f"{len(report.partitions)} partition(s); {report.small_files} small (< {human_bytes(report.small_file_bytes)}"
        f" = 75% of the {human_bytes(report.target_file_size_bytes)} target)"),
        (f"  deletes      position {d.position_delete_files} files / {d.position_delete_rows} rows, vectors "
        f"{d.dv_count} / {d.dv_rows} rows, equality {d.equality_delete_files} files / {d.equality_delete_rows} rows"),
        (f"  manifests    {m.count} (median {human_bytes(m.median_bytes)}, max {human_bytes(m.max_bytes)}; "
        f"{m.ideal_count} after rewrite_manifests)"),
        (f"  snapshots    {s.count} (oldest {_age(s.oldest_age_ms)} ago; {s.past_retention} past retention), "
        f"refs {len(report.refs)}"),
        (f"  skew         largest partition {report.skew.largest_partition or '-'}: "
        f"{report.skew.rows_ratio:.1f}x the median rows, {report.skew.bytes_ratio:.1f}x the median bytes"),
    ]
    if report.recent_writers:
        writers = ", ".join(
            f"{w.writer} ({'/'.join(w.operations)}, {w.snapshots})" for w in report.recent_writers
        )
        lines.append(f"  writers      in the last {report.recent_window_ms // 60000} min: {writers}")
    if report.orphan_candidates is not None:
        lines.append(f"  orphans      {report.orphan_candidates} unreferenced file(s) under the location")
    if not report.findings:
        lines.append("no findings")
    for f in report.findings:
        lines += [
            "",
            f"[{f.severity}] {f.code}: {f.message}",
            (f"  {f.metric}: {f.files_before} -> {f.files_after}; safe now: {'yes' if f.safe_now else 'no'} "
            f"({f.safe_reason})"),
            f"  {f.statement};",
        ]
    return "\n".join(lines)


def _findings_result(reports: Sequence[HealthReport]) -> ResultSet:
    rows: list[tuple[object, ...]] = [
        (r.qualified_name, f.code, f.severity, f.files_before, f.files_after, f.safe_now, f.statement)
        for r in reports
        for f in r.findings
    ]
    return ResultSet(
        columns=["table", "code", "severity", "before", "after", "safe_now", "statement"], rows=rows
    )


def _ranking(reports: Sequence[HealthReport]) -> ResultSet:
    rows: list[tuple[object, ...]] = [
        (
            r.qualified_name,
            r.score,
            r.data_files,
            r.small_files,
            r.deletes.position_delete_files + r.deletes.dv_count,
            r.deletes.equality_delete_files,
            r.manifests.count,
            r.snapshots.count,
            ",".join(f.code for f in r.findings),
        )
        for r in reports
    ]
    return ResultSet(
        columns=[
            "table",
            "score",
            "data_files",
            "small_files",
            "position_deletes",
            "equality_deletes",
            "manifests",
            "snapshots",
            "findings",
        ],
        rows=rows,
    )


def _record(config: FloeConfig, catalog_name: str, namespace: tuple[str, ...], target: str | None,
            reports: Sequence[HealthReport]) -> str:
    from floe.catalog.loader import open_catalog
    from floe.health.history import HISTORY_TABLE, record

    if not catalog_name:
        raise ValidationError("--record needs a table of a catalog (a table opened by its location has none)")
    ident = tuple(target.split(".")) if target else (*namespace, HISTORY_TABLE)
    catalog = open_catalog(catalog_name, config.catalog_properties(catalog_name))
    record(catalog, ident, reports)
    return f"{catalog_name}.{'.'.join(ident)}"


def run_health(
    config: FloeConfig,
    *,
    table: str | None,
    namespace: str | None,
    fmt: str,
    orphans: bool,
    record_to: str | None,
    record: bool,
) -> int:
    """Run ``floe health``; returns the exit status."""
    if (table is None) == (namespace is None):
        raise ValidationError("floe health takes a TABLE or --all NAMESPACE")
    if namespace is not None:
        reports, catalog_name, ns = namespace_reports(config, namespace, orphans=orphans)
    else:
        assert table is not None
        report, where = health_reports(config, table, orphans=orphans)
        reports, catalog_name, ns = [report], where.catalog, where.identifier[:-1]
    recorded = _record(config, catalog_name, ns, record_to, reports) if (record or record_to) else None
    if fmt == "json":
        body: object = [r.to_dict() for r in reports] if namespace is not None else reports[0].to_dict()
        sys.stdout.write(json.dumps(body) + "\n")
    elif namespace is not None:
        print_result(_ranking(reports), fmt)
    elif fmt == "csv":
        print_result(_findings_result(reports), fmt)
    else:
        sys.stdout.write(render_text(reports[0]) + "\n")
    if recorded:
        from floe.cli.output import print_note

        print_note(f"recorded {len(reports)} report(s) in {recorded}")
    return 0
