"""What a parsed statement names: tables, namespaces, procedures, catalogs and Iceberg functions (no IO).

Transparent mode routes a statement to Floe when a name is in a Floe catalog; ``floe sql`` routes one
whose names all lie in Spark's ``spark_catalog`` to Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields, is_dataclass

from floe.sql import commands as c
from floe.sql.functions import iceberg_calls
from floe.sql.identifiers import Name

__all__ = ["statement_names"]


def statement_names(stmt: object) -> Iterator[tuple[str, Name]]:
    """(kind, name) of everything a statement names: ``table``, ``namespace``, ``procedure``, ``catalog``."""
    if isinstance(stmt, (c.CreateNamespace, c.DropNamespace, c.AlterNamespaceProperties, c.DescribeNamespace)):
        yield "namespace", stmt.namespace
        return
    if isinstance(stmt, c.ShowNamespaces):
        if stmt.parent is not None:  # a catalog, or a namespace whose children are listed
            yield ("catalog" if len(stmt.parent) == 1 else "namespace"), stmt.parent
        return
    if isinstance(stmt, (c.ShowTables, c.ShowViews)):
        if stmt.namespace is not None:
            yield "namespace", stmt.namespace
        return
    if isinstance(stmt, c.Call):
        yield "procedure", stmt.procedure
        return
    if not is_dataclass(stmt):
        return
    for f in fields(stmt):
        value = getattr(stmt, f.name)
        if isinstance(value, (c.Query, c.SqlExpr)):
            for call in iceberg_calls(value.node, lambda _: True):
                yield "function", (call.catalog, "system", call.name) if call.catalog else ("system", call.name)
        if isinstance(value, c.Query):
            for ref in value.tables:
                yield "table", ref.name
        elif isinstance(value, c.TableRef):
            yield "table", value.name
        elif isinstance(value, c.Statement):
            yield from statement_names(value)
        elif f.name in ("name", "table", "target", "like", "new_name") and isinstance(value, tuple) and value and all(
            isinstance(p, str) for p in value
        ):
            yield "table", value
        elif isinstance(value, tuple) and value and all(isinstance(v, c.Statement) for v in value):
            for v in value:
                yield from statement_names(v)
