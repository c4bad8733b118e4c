"""INSERT, DELETE, UPDATE, MERGE, SELECT (with time travel and metadata tables) and CALL."""

from __future__ import annotations

from sqlglot import TokenType, exp

from floe.errors import ParseError, UnsupportedError
from floe.sql import commands as c
from floe.sql.lexer import Cursor, tokenize
from floe.sql.literals import evaluate
from floe.sql.parse_common import parse_sqlglot, short_sql, unsupported
from floe.sql.queries import make_expr, make_query
from floe.sql.query_tables import table_name

__all__ = [
    "normalize_time_travel",
    "parse_call",
    "parse_delete",
    "parse_insert",
    "parse_merge",
    "parse_select",
    "parse_update",
]

_VERSION_WORDS = {
    "SYSTEM_VERSION": "VERSION",
    "VERSION": "VERSION",
    "SYSTEM_TIME": "TIMESTAMP",
    "TIMESTAMP": "TIMESTAMP",
}


def normalize_time_travel(sql: str) -> str:
    """Rewrite Spark's time-travel spellings to the two sqlglot parses.

    Spark accepts ``[FOR] (SYSTEM_VERSION | VERSION) AS OF v`` and ``[FOR] (SYSTEM_TIME | TIMESTAMP) AS
    OF t``; sqlglot's Spark dialect rejects ``FOR SYSTEM_VERSION``, so every form becomes ``VERSION AS
    OF`` / ``TIMESTAMP AS OF``. Works on tokens, so strings and comments are never touched.
    """
    toks = tokenize(sql)
    edits: list[tuple[int, int, str]] = []
    for i, tok in enumerate(toks):
        word = tok.text.upper() if tok.token_type not in (TokenType.STRING, TokenType.IDENTIFIER) else ""
        if word not in _VERSION_WORDS or i + 2 >= len(toks):
            continue
        if toks[i + 1].text.upper() != "AS" or toks[i + 2].text.upper() != "OF":
            continue
        start = tok.start
        if i > 0 and toks[i - 1].text.upper() == "FOR" and toks[i - 1].token_type != TokenType.STRING:
            start = toks[i - 1].start
        edits.append((start, toks[i + 2].end + 1, f"{_VERSION_WORDS[word]} AS OF"))
    for start, end, text in reversed(edits):
        sql = sql[:start] + text + sql[end:]
    return sql


def _target(node: exp.Expression, sql: str) -> tuple[c.Name, str | None]:
    if not isinstance(node, exp.Table):
        raise ParseError(f"Expected a table name in {short_sql(sql)!r}")
    return table_name(node), (node.alias or None)


def _column_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    return node.name if isinstance(node, exp.Identifier) else node.sql(dialect="spark")


# -- INSERT ----------------------------------------------------------------------------------------------


def parse_insert(sql: str) -> c.Insert:
    node = parse_sqlglot(normalize_time_travel(sql))
    if not isinstance(node, exp.Insert):
        raise unsupported(sql)
    target = node.this
    columns: tuple[str, ...] | None = None
    if isinstance(target, exp.Schema):
        columns = tuple(_column_name(e) for e in target.expressions)
        target = target.this
    if not isinstance(target, exp.Table):
        raise unsupported(sql)  # INSERT OVERWRITE DIRECTORY and friends
    partition: dict[str, object] = {}
    part = target.args.get("partition")
    if isinstance(part, exp.Partition):
        for e in part.expressions:
            if isinstance(e, exp.EQ):
                partition[_column_name(e.this)] = evaluate(e.expression)
            else:
                partition[_column_name(e)] = None
    source = node.expression
    if source is None and isinstance(node.args.get("source"), exp.Table):
        source = exp.select("*").from_(node.args["source"].copy())  # INSERT INTO t TABLE src
    values = None
    query = None
    if isinstance(source, exp.Values) and not source.alias:
        values = tuple(
            tuple(make_expr(v) for v in (row.expressions if isinstance(row, exp.Tuple) else [row]))
            for row in source.expressions
        )
    elif source is not None:
        query = make_query(source)
    else:
        raise ParseError(f"INSERT needs VALUES or a query: {short_sql(sql)!r}")
    return c.Insert(
        sql=sql,
        table=table_name(target),
        overwrite=bool(node.args.get("overwrite")),
        partition=partition,
        columns=columns,
        by_name=bool(node.args.get("by_name")),
        values=values,
        query=query,
    )


# -- DELETE / UPDATE / MERGE -----------------------------------------------------------------------------


def _where(node: exp.Expression) -> c.SqlExpr | None:
    where = node.args.get("where")
    return make_expr(where.this) if isinstance(where, exp.Where) else None


def parse_delete(sql: str) -> c.Delete:
    node = parse_sqlglot(sql)
    if not isinstance(node, exp.Delete) or node.args.get("using"):
        raise unsupported(sql)
    name, alias = _target(node.this, sql)
    return c.Delete(sql=sql, table=name, alias=alias, where=_where(node))


def _assignments(items: list[exp.Expression], sql: str) -> tuple[c.Assignment, ...]:
    out = []
    for e in items:
        if not isinstance(e, exp.EQ):
            raise ParseError(f"Expected column = value in {short_sql(sql)!r}, got {e.sql(dialect='spark')}")
        out.append(c.Assignment(column=_column_name(e.this), value=make_expr(e.expression)))
    return tuple(out)


def parse_update(sql: str) -> c.Update:
    node = parse_sqlglot(sql)
    if not isinstance(node, exp.Update) or node.args.get("from"):
        raise unsupported(sql)
    name, alias = _target(node.this, sql)
    return c.Update(
        sql=sql,
        table=name,
        alias=alias,
        assignments=_assignments(list(node.expressions), sql),
        where=_where(node),
    )


def _merge_clause(when: exp.When, sql: str) -> c.MergeClause:
    if when.args.get("matched"):
        match = "matched"
    elif when.args.get("source"):
        match = "not_matched_by_source"
    else:
        match = "not_matched"
    cond = when.args.get("condition")
    condition = make_expr(cond) if cond is not None else None
    then = when.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        return c.MergeClause(match=match, action="delete", condition=condition)
    if isinstance(then, exp.Update):
        items = list(then.expressions)
        if len(items) == 1 and isinstance(items[0], exp.Star):
            return c.MergeClause(match=match, action="update", condition=condition, star=True)
        return c.MergeClause(
            match=match, action="update", condition=condition, assignments=_assignments(items, sql)
        )
    if isinstance(then, exp.Insert):
        if isinstance(then.this, exp.Star):
            return c.MergeClause(match=match, action="insert", condition=condition, star=True)
        cols = (
            tuple(_column_name(e) for e in then.this.expressions) if isinstance(then.this, exp.Tuple) else ()
        )
        vals_node = then.expression
        vals = tuple(make_expr(v) for v in vals_node.expressions) if isinstance(vals_node, exp.Tuple) else ()
        return c.MergeClause(
            match=match, action="insert", condition=condition, insert_columns=cols, insert_values=vals
        )
    raise UnsupportedError(f"Unsupported MERGE clause: {when.sql(dialect='spark')}")


def parse_merge(sql: str) -> c.Merge:
    node = parse_sqlglot(normalize_time_travel(sql))
    if not isinstance(node, exp.Merge):
        raise unsupported(sql)
    target, target_alias = _target(node.this, sql)
    using = node.args.get("using")
    source_table: c.TableRef | None = None
    if isinstance(using, exp.Table):
        source_alias = using.alias or None
        bare = using.copy()
        bare.set("alias", None)
        source_query = make_query(exp.select("*").from_(bare))
        source_table = source_query.tables[0] if source_query.tables else None  # none: parquet.`/path`
    elif isinstance(using, exp.Subquery):
        source_alias = using.alias or None
        source_query = make_query(using.this)
    else:
        raise ParseError(f"Expected a table or subquery after USING in {short_sql(sql)!r}")
    whens = node.args.get("whens")
    clauses = tuple(_merge_clause(w, sql) for w in (whens.expressions if whens is not None else ()))
    on = node.args.get("on")
    if on is None:
        raise ParseError(f"MERGE needs an ON condition: {short_sql(sql)!r}")
    return c.Merge(
        sql=sql,
        target=target,
        target_alias=target_alias,
        source=source_query,
        source_alias=source_alias,
        source_table=source_table,
        on=make_expr(on),
        clauses=clauses,
    )


# -- SELECT ----------------------------------------------------------------------------------------------


def parse_select(sql: str) -> c.Select:
    text = normalize_time_travel(sql)
    cur = Cursor(text)
    if cur.at("TABLE") and cur.peek(1) is not None:  # Spark's `TABLE t` == SELECT * FROM t
        text = "SELECT * FROM " + text[cur.peek(1).start :]  # type: ignore[union-attr]
    node = parse_sqlglot(text)
    if not isinstance(node, exp.Query) and not isinstance(node, exp.Values):
        raise unsupported(sql)
    return c.Select(sql=sql, query=make_query(node))


# -- CALL ------------------------------------------------------------------------------------------------


def parse_call(cur: Cursor) -> c.Call:
    """``CALL cat.system.proc(arg, name => arg, ...)``; each argument must be a constant."""
    cur.expect("CALL")
    proc = cur.name()
    cur.expect_type(TokenType.L_PAREN, "'('")
    args: list[c.ProcedureArg] = []
    if not cur.accept_type(TokenType.R_PAREN):
        while True:
            name = None
            nxt = cur.peek(1)
            if nxt is not None and nxt.token_type == TokenType.FARROW:
                name = cur.name_part().lower()
                cur.pos += 1
            start = cur.pos
            depth = 0
            while not cur.done:
                tt = cur.peek().token_type  # type: ignore[union-attr]
                if depth == 0 and tt in (TokenType.COMMA, TokenType.R_PAREN):
                    break
                depth += 1 if tt == TokenType.L_PAREN else -1 if tt == TokenType.R_PAREN else 0
                cur.pos += 1
            text = cur.text_between(start, cur.pos)
            if not text:
                cur.fail("expected an argument")
            node = parse_sqlglot(text)
            try:
                value = evaluate(node)
            except UnsupportedError:
                raise UnsupportedError(
                    f"CALL {'.'.join(proc)}: argument {text!r} is not a constant (use literals)"
                ) from None
            args.append(c.ProcedureArg(name=name, value=value, sql=node.sql(dialect="spark")))
            if cur.accept_type(TokenType.R_PAREN):
                break
            cur.expect_type(TokenType.COMMA, "',' or ')'")
    cur.end()
    if len({a.name for a in args if a.name}) != len([a for a in args if a.name]):
        raise ParseError(f"CALL {'.'.join(proc)}: an argument name is given twice")
    if any(a.name is None for a in args[next((i for i, a in enumerate(args) if a.name), len(args)) :]):
        raise ParseError(f"CALL {'.'.join(proc)}: positional arguments must come before named ones")
    return c.Call(sql=cur.sql, procedure=proc, args=tuple(args))
