"""Queries kept as SQL: find the catalog tables a query reads, and rewrite them to engine view names.

Spark cannot resolve Floe's tables by itself (they are not Spark catalog tables), nor Iceberg's
metadata-table names or time travel on a Python data source, so the engine registers one view per
:class:`~floe.sql.commands.TableRef` and runs the rewritten SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from floe.errors import UnsupportedError
from floe.sql.commands import Query, SqlExpr, TableRef, TimeTravel
from floe.sql.literals import evaluate

__all__ = ["make_expr", "make_query", "rewrite_tables", "spark_sql", "table_name", "table_refs"]


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


def _catalog_tables(node: exp.Expression) -> list[exp.Table]:
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


def _time_travel(table: exp.Table) -> TimeTravel | None:
    version = table.args.get("version")
    if not isinstance(version, exp.Version):
        return None
    kind = "timestamp" if str(version.this).upper() == "TIMESTAMP" else "version"
    expr = version.expression
    sql = expr.sql(dialect="spark")
    try:
        value: object = evaluate(expr)
    except UnsupportedError:
        value = None
    if kind == "version" and isinstance(value, str) and value.isdigit():
        value = int(value)
    return TimeTravel(kind=kind, value=value, sql=sql)


def table_refs(node: exp.Expression) -> tuple[TableRef, ...]:
    """Every catalog table reference in ``node``, in source order, with alias and time travel."""
    return tuple(
        TableRef(name=table_name(t), alias=t.alias or None, time_travel=_time_travel(t), index=i)
        for i, t in enumerate(_catalog_tables(node))
    )


def make_query(node: exp.Expression) -> Query:
    """A :class:`Query` for a parsed query tree."""
    return Query(sql=spark_sql(node), tables=table_refs(node), node=node)


def make_expr(node: exp.Expression) -> SqlExpr:
    return SqlExpr(sql=spark_sql(node), node=node)


def rewrite_tables(node: exp.Expression, refs: Sequence[TableRef], replace: Callable[[TableRef], str]) -> str:
    """Spark SQL for ``node`` with table reference ``i`` replaced by ``replace(refs[i])``."""
    copy = node.copy()
    tables = _catalog_tables(copy)
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
