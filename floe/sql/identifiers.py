"""Multi-part SQL names and their resolution to (catalog, namespace, table, metadata table).

Resolution follows Spark with Iceberg's SparkCatalog:

* a first part naming a known catalog selects it (``hadoop_catalog.db.sensordata``); otherwise the
  session's current catalog is used (``db.sensordata`` after ``USE hadoop_catalog``);
* of the remaining parts, the last is the table and the rest the namespace; a single remaining part
  takes the current namespace;
* a last part naming a metadata table (``history``, ``snapshots``, ``files`` ...) or a selector
  (``branch_<b>``, ``tag_<t>``, ``snapshot_id_<id>``, ``at_timestamp_<ms>``) applies to the table
  named by the parts before it, when there are at least two. ``db.history`` is ambiguous (table
  ``history`` in ``db``, or the history of table ``db``): pass ``table_exists`` to prefer a real table
  (and the plain reading when neither table exists, so ``CREATE TABLE db.refs`` creates it); without it
  the metadata reading wins, as in Iceberg's SparkCatalog when no such table exists.
* a single part containing ``/`` is a table location (path-based table).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from floe.errors import ValidationError

__all__ = [
    "METADATA_TABLES",
    "Name",
    "ResolvedTable",
    "format_name",
    "resolve_namespace",
    "resolve_table",
    "resolve_use",
]

Name = tuple[str, ...]
"""An unresolved dotted name, one element per part (quotes removed)."""

METADATA_TABLES: frozenset[str] = frozenset(
    {
        "entries",
        "files",
        "data_files",
        "delete_files",
        "history",
        "metadata_log_entries",
        "snapshots",
        "refs",
        "manifests",
        "partitions",
        "all_data_files",
        "all_delete_files",
        "all_files",
        "all_manifests",
        "all_entries",
        "position_deletes",
        "changes",  # the change log (Spark rows, floe.spark.streaming.changelog), as Iceberg on Spark exposes it
    }
)

_SELECTOR_PREFIXES = ("branch_", "tag_", "snapshot_id_", "at_timestamp_")


def format_name(name: Name) -> str:
    """Dotted form of a name, back-quoting parts that are not plain identifiers."""
    return ".".join(
        p if p and (p.replace("_", "a").isalnum() and not p[0].isdigit()) else f"`{p}`" for p in name
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedTable:
    """A fully resolved table reference.

    ``metadata_table`` is set for ``t.history`` etc.; ``branch``/``tag``/``snapshot_id``/
    ``as_of_timestamp_ms`` for the ``branch_x``/``tag_x``/``snapshot_id_n``/``at_timestamp_ms`` selectors.
    ``location`` is set (and ``name`` empty) for a path-based table.
    """

    catalog: str
    namespace: Name
    name: str
    metadata_table: str | None = None
    branch: str | None = None
    tag: str | None = None
    snapshot_id: int | None = None
    as_of_timestamp_ms: int | None = None
    location: str | None = None

    @property
    def identifier(self) -> Name:
        """Namespace parts plus table name, as a catalog's load_table takes it."""
        return (*self.namespace, self.name)

    def __str__(self) -> str:
        if self.location is not None:
            return self.location
        base = format_name((self.catalog, *self.namespace, self.name))
        return f"{base}.{self.metadata_table}" if self.metadata_table else base


def _split_catalog(name: Name, current_catalog: str, catalogs: Collection[str]) -> tuple[str, Name]:
    if len(name) >= 2 and name[0] in catalogs:
        return name[0], name[1:]
    if len(name) >= 2:
        lowered = {c.lower(): c for c in catalogs}
        if name[0].lower() in lowered:
            return lowered[name[0].lower()], name[1:]
    return current_catalog, name


def _selector(part: str) -> dict[str, object] | None:
    low = part.lower()
    if low in METADATA_TABLES:
        return {"metadata_table": low}
    for prefix in _SELECTOR_PREFIXES:
        if low.startswith(prefix) and len(part) > len(prefix):
            rest = part[len(prefix) :]
            if prefix == "branch_":
                return {"branch": rest}
            if prefix == "tag_":
                return {"tag": rest}
            if rest.isdigit():
                key = "snapshot_id" if prefix == "snapshot_id_" else "as_of_timestamp_ms"
                return {key: int(rest)}
    return None


def resolve_table(
    name: Name,
    *,
    current_catalog: str,
    current_namespace: Name,
    catalogs: Collection[str],
    table_exists: Callable[[str, Name, str], bool] | None = None,
) -> ResolvedTable:
    """Resolve a table name (see the module docstring for the rules).

    Args:
        name: the parts as written.
        current_catalog: the session's catalog.
        current_namespace: the session's namespace in that catalog (may be empty).
        catalogs: names of the configured catalogs.
        table_exists: optional ``(catalog, namespace, table) -> bool`` used to disambiguate ``a.history``.

    Raises:
        ValidationError: the name is empty or has no table part.
    """
    if not name or any(p == "" for p in name):
        raise ValidationError(f"Invalid table name {format_name(name)!r}")
    if len(name) == 1 and "/" in name[0]:
        return ResolvedTable(catalog=current_catalog, namespace=(), name="", location=name[0])
    catalog, rest = _split_catalog(name, current_catalog, catalogs)
    if len(rest) >= 2 and (sel := _selector(rest[-1])) is not None:
        plain = _plain(catalog, rest, current_namespace)
        base = _plain(catalog, rest[:-1], current_namespace)
        if len(rest) == 2 and "/" in rest[0]:
            base = ResolvedTable(catalog=catalog, namespace=(), name="", location=rest[0])
        if table_exists is not None and (
            table_exists(plain.catalog, plain.namespace, plain.name)
            or (base.location is None and not table_exists(base.catalog, base.namespace, base.name))
        ):
            # A real table of that name wins (Iceberg's SparkCatalog loads it first); when neither it nor
            # the base table exists, the plain reading lets CREATE TABLE db.refs create it and a missing
            # table be reported by the name as written.
            return plain
        return ResolvedTable(
            catalog=base.catalog,
            namespace=base.namespace,
            name=base.name,
            location=base.location,
            **sel,  # type: ignore[arg-type]
        )
    return _plain(catalog, rest, current_namespace)


def _plain(catalog: str, rest: Name, current_namespace: Name) -> ResolvedTable:
    if len(rest) == 1:
        return ResolvedTable(catalog=catalog, namespace=tuple(current_namespace), name=rest[0])
    return ResolvedTable(catalog=catalog, namespace=tuple(rest[:-1]), name=rest[-1])


def resolve_namespace(name: Name, *, current_catalog: str, catalogs: Collection[str]) -> tuple[str, Name]:
    """Resolve a namespace name to (catalog, namespace); a leading known catalog name selects it.

    Raises:
        ValidationError: the name is empty.
    """
    if not name:
        raise ValidationError("Empty namespace name")
    return _split_catalog(name, current_catalog, catalogs)


def resolve_use(
    name: Name, *, target: str | None, current_catalog: str, catalogs: Collection[str]
) -> tuple[str, Name | None]:
    """Resolve ``USE`` to (catalog, namespace); namespace None means "the catalog's default namespace".

    ``USE x``: a known catalog ``x`` wins over a namespace ``x`` (Spark's rule).
    """
    if target == "catalog":
        if len(name) != 1:
            raise ValidationError(f"USE CATALOG takes one name, got {format_name(name)!r}")
        return name[0], None
    if target is None and len(name) == 1 and name[0] in catalogs:
        return name[0], None
    catalog, ns = _split_catalog(name, current_catalog, catalogs)
    return catalog, ns
