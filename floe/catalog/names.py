"""One rule for turning a table name string into (catalog, identifier), shared by every entry point.

``spark.read.format("iceberg").load(name)``, ``df.write.format("iceberg").save(name)``,
``floe.spark.read(spark, name)`` and the SQL layer's final lookup all name tables the same way:

* a location (contains ``/`` or ``\\``, e.g. ``/dw/db/t``, ``file:/dw/db/t``, ``s3://bucket/db/t``, or a
  ``*.metadata.json`` file) opens the table at that location, without a catalog;
* ``catalog.ns.t`` (three or more parts) whose first part names a configured catalog
  (:class:`floe.config.FloeConfig`, case-insensitively) resolves in that catalog, the rest being the
  (possibly nested) namespace and the table;
* anything else is ``ns.t`` / ``ns1.ns2.t`` in the default catalog. A two-part name is always
  namespace + table, so a namespace that shares a catalog's name still works as ``ns.t``.

Parts may be back-quoted to hold dots (```my.db`.t``), as in Spark SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from floe.catalog.loader import open_catalog
from floe.config import FloeConfig
from floe.errors import NoSuchTableError, ValidationError
from floe.serde.metadata_names import is_metadata_file

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["is_location", "load_table_by_name", "resolve_table_identifier", "split_name", "unknown_catalog_hint"]


def is_location(name: str) -> bool:
    """Whether ``name`` is a table location (path or URI) rather than a catalog identifier."""
    return "/" in name or "\\" in name or is_metadata_file(name)


def split_name(name: str) -> tuple[str, ...]:
    """The parts of a dotted name; back-quoted parts keep their dots (```` `` ```` escapes a quote).

    Raises:
        ValidationError: an empty part or an unclosed back-quote (names the input).
    """
    parts: list[str] = []
    buf: list[str] = []
    i, n = 0, len(name)
    quoted_part = False
    while i < n:
        ch = name[i]
        if ch == "`":
            close = i + 1
            while True:
                close = name.find("`", close)
                if close < 0:
                    raise ValidationError(f"Invalid table name {name!r}: unclosed back-quote")
                if close + 1 < n and name[close + 1] == "`":
                    close += 2
                    continue
                break
            buf.append(name[i + 1 : close].replace("``", "`"))
            quoted_part = True
            i = close + 1
        elif ch == ".":
            parts.append("".join(buf))
            if not parts[-1] and not quoted_part:
                raise ValidationError(f"Invalid table name {name!r}: empty name part")
            buf, quoted_part = [], False
            i += 1
        else:
            buf.append(ch)
            i += 1
    parts.append("".join(buf))
    if not parts[-1] and not quoted_part:
        raise ValidationError(f"Invalid table name {name!r}: empty name part")
    return tuple(parts)


def _catalog_named(part: str, catalogs: dict[str, dict[str, str]]) -> str | None:
    if part in catalogs:
        return part
    lowered = {c.lower(): c for c in catalogs}
    return lowered.get(part.lower())


def resolve_table_identifier(name: str, *, config: FloeConfig | None = None) -> tuple[str, tuple[str, ...]]:
    """The catalog and identifier a table name means (rules in the module docstring).

    Args:
        name: ``catalog.ns.t``, ``ns.t`` or ``ns1.ns2.t`` (not a location).
        config: the configuration to resolve catalog names with (default: :meth:`FloeConfig.load`).

    Returns:
        ``(catalog_name, identifier)``, the identifier being namespace parts plus the table name.

    Raises:
        ValidationError: ``name`` is a location, empty, has a single part, or is malformed.
    """
    if is_location(name):
        raise ValidationError(f"{name!r} is a table location, not an identifier: open it with load_table_by_name")
    parts = split_name(name.strip())
    if len(parts) < 2:
        raise ValidationError(f"Table name {name!r} needs a namespace: write <namespace>.<table>")
    cfg = config if config is not None else FloeConfig.load()
    if len(parts) >= 3:
        catalog = _catalog_named(parts[0], cfg.catalogs)
        if catalog is not None:
            return catalog, parts[1:]
    return cfg.default_catalog, parts


def load_table_by_name(name: str, *, config: FloeConfig | None = None) -> Table:
    """Load a table by location or by name (see :func:`resolve_table_identifier`).

    Args:
        name: a location (folder, metadata JSON file, URI) or ``[catalog.]ns.t``.
        config: the configuration to resolve catalog names with (default: :meth:`FloeConfig.load`).

    Raises:
        ValidationError: the name is malformed.
        NoSuchTableError: no table there (the message names the catalog and identifier).
    """
    if is_location(name):
        from floe.catalog.location import load_table  # the table layer loads on first use

        return load_table(name)
    cfg = config if config is not None else FloeConfig.load()
    catalog_name, identifier = resolve_table_identifier(name, config=cfg)
    catalog = open_catalog(catalog_name, cfg.catalog_properties(catalog_name))
    try:
        return catalog.load_table(identifier)
    except NoSuchTableError:
        raise NoSuchTableError(
            f"Table not found: {'.'.join(identifier)} in catalog {catalog_name} (from {name!r})"
            f"{unknown_catalog_hint(identifier, cfg.catalogs)}"
        ) from None


def unknown_catalog_hint(identifier: tuple[str, ...], catalogs: Iterable[str]) -> str:
    """For a missing table whose name starts like ``catalog.ns.t``: say that no such catalog is configured.

    A three-part name whose first part is no catalog is read as a nested namespace in the default catalog;
    when that table is missing too, the likelier mistake is the catalog, so the message names both.
    """
    if len(identifier) < 3:
        return ""
    known = sorted(catalogs)
    if _catalog_named(identifier[0], {c: {} for c in known}) is not None:
        return ""
    return f"; no catalog named {identifier[0]!r} is configured (catalogs: {', '.join(known)})"
