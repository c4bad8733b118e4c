"""The catalog tables a query tree reads: find them in source order, and write the query with each one
replaced by another name (the view the engine registers for it).

Works on sqlglot trees alone; floe.sql.queries builds the :class:`~floe.sql.commands.TableRef` values
(names, aliases, time travel) from the tables found here, and :meth:`floe.sql.commands.Query.rewrite`
uses :func:`rewrite_tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sqlglot import exp

if TYPE_CHECKING:
    from floe.sql.commands import TableRef

__all__ = ["catalog_tables", "rewrite_tables", "spark_sql", "table_name"]


def _is_not_null(e: exp.Expression) -> exp.Expression:
    if isinstance(e, exp.Not) and isinstance(e.this, exp.Is) and isinstance(e.this.expression, exp.Null):
        return exp.Is(this=e.this.this, expression=exp.Not(this=exp.Null()))
    return e


def spark_sql(node: exp.Expression) -> str:
    """Spark SQL text of a parsed tree, keeping ``x IS NOT NULL`` as written: Spark names result columns
    after the expression text, and sqlglot would write ``NOT x IS NULL``."""
    return node.transform(_is_not_null).sql(dialect="spark")


def table_name(table: exp.Table) -> tuple[str, ...]:
    """The parts of a table node's name (``cat.db.t.history`` -> 4 parts)."""
    return tuple(p.name for p in table.parts)


def _cte_names(node: exp.Expression) -> set[str]:
    return {cte.alias_or_name.lower() for cte in node.find_all(exp.CTE)}


# Spark's built-in file sources, which ``<source>.`<path>``` reads directly (spark.sql.runSQLOnFiles).
_FILE_SOURCES = frozenset({"parquet", "orc", "json", "csv", "text", "avro", "binaryfile"})


def _is_file_query(table: exp.Table) -> bool:
    parts = table.parts
    return (
        len(parts) == 2
        and parts[0].name.lower() in _FILE_SOURCES
        and isinstance(parts[1], exp.Identifier)
        and bool(parts[1].args.get("quoted"))
    )


def catalog_tables(node: exp.Expression) -> list[exp.Table]:
    """The catalog tables ``node`` reads, in source order (CTE names, table functions and files excluded)."""
    ctes = _cte_names(node)
    out = []
    for t in node.find_all(exp.Table, bfs=False):
        if not isinstance(t.this, (exp.Identifier, exp.Dot)):
            continue  # table-valued function such as range(10)
        parts = table_name(t)
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        if _is_file_query(t):
            continue  # parquet.`/path`: Spark's SQL on files, Spark reads it
        out.append(t)
    # find_all walks the tree, not the text (a WITH clause is visited after FROM): order by position.
    return sorted(out, key=_position)


def _position(table: exp.Table) -> int:
    parts = table.parts
    start = parts[0].meta.get("start") if parts else None
    return int(start) if start is not None else 1 << 62


def rewrite_tables(node: exp.Expression, refs: Sequence[TableRef], replace: Callable[[TableRef], str]) -> str:
    """Spark SQL for ``node`` with table reference ``i`` replaced by ``replace(refs[i])``."""
    copy = node.copy()
    tables = catalog_tables(copy)
    for ref, t in zip(refs, tables):
        view = exp.Table(this=exp.to_identifier(replace(ref)))
        alias = t.args.get("alias")
        if alias is not None:
            view.set("alias", alias.copy())
        else:
            # keep `t.col` / `db.t.col` style qualifiers working: alias the view with the table's own name
            view.set("alias", exp.TableAlias(this=exp.to_identifier(ref.name[-1])))
        t.replace(view)
    return spark_sql(copy)
