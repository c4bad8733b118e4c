"""Parse the view statements: CREATE [OR REPLACE] [TEMPORARY] VIEW, DROP VIEW, ALTER VIEW ... TBLPROPERTIES,
SHOW VIEWS (Spark's grammar, for Iceberg views in a catalog and for Spark's temporary views)."""

from __future__ import annotations

from sqlglot import TokenType

from floe.sql import commands as c
from floe.sql.lexer import Cursor
from floe.sql.parse_common import property_list, property_list_keys
from floe.sql.parse_dml import parse_select

__all__ = ["is_view_statement", "parse_view_statement"]


def _create_view_words(cur: Cursor) -> int | None:
    """How many words ``CREATE [OR REPLACE] [GLOBAL] [TEMP|TEMPORARY] VIEW`` takes here, or None."""
    i = 1
    if cur.word(i) == "OR" and cur.word(i + 1) == "REPLACE":
        i += 2
    if cur.word(i) == "GLOBAL":
        i += 1
    if cur.word(i) in ("TEMP", "TEMPORARY"):
        i += 1
    return i + 1 if cur.word(i) == "VIEW" else None


def is_view_statement(cur: Cursor) -> bool:
    """Whether the statement at ``cur`` is one of this module's."""
    w0, w1 = cur.word(0), cur.word(1)
    if w0 == "CREATE":
        return _create_view_words(cur) is not None
    return (w0 in ("DROP", "ALTER") and w1 == "VIEW") or (w0 == "SHOW" and w1 == "VIEWS")


def parse_view_statement(cur: Cursor) -> c.Statement:
    """The view statement at ``cur`` (:func:`is_view_statement` is true)."""
    sql = cur.sql
    w0 = cur.word(0)
    if w0 == "SHOW":
        cur.pos += 2
        ns = tuple(cur.name()) if cur.accept("IN") or cur.accept("FROM") else None
        pattern = cur.string() if cur.accept("LIKE") or cur.at_type(TokenType.STRING) else None
        cur.end()
        return c.ShowViews(sql=sql, namespace=ns, pattern=pattern)
    if w0 == "DROP":
        cur.pos += 2
        if_exists = cur.accept("IF", "EXISTS")
        name = cur.name()
        cur.end()
        return c.DropView(sql=sql, name=name, if_exists=if_exists)
    if w0 == "ALTER":
        cur.pos += 2
        name = cur.name()
        if cur.accept("SET", "TBLPROPERTIES"):
            updates = property_list(cur)
            cur.end()
            return c.AlterViewProperties(sql=sql, name=name, updates=updates)
        if cur.accept("UNSET", "TBLPROPERTIES"):
            cur.accept("IF", "EXISTS")
            removals = tuple(property_list_keys(cur))
            cur.end()
            return c.AlterViewProperties(sql=sql, name=name, removals=removals)
        cur.fail("expected SET TBLPROPERTIES or UNSET TBLPROPERTIES")
    words = _create_view_words(cur)
    assert words is not None
    header = " ".join(cur.word(i) for i in range(words))
    cur.pos += words
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    name = cur.name()
    columns: list[c.ViewColumn] = []
    if cur.accept_type(TokenType.L_PAREN):
        while True:
            col = cur.name_part()
            doc = cur.string() if cur.accept("COMMENT") else None
            columns.append(c.ViewColumn(name=col, comment=doc))
            if not cur.accept_type(TokenType.COMMA):
                break
        cur.expect_type(TokenType.R_PAREN, "')' or ','")
    comment: str | None = None
    properties: dict[str, str] = {}
    while not cur.accept("AS"):
        if cur.accept("COMMENT"):
            comment = cur.string()
        elif cur.accept("TBLPROPERTIES"):
            properties.update(property_list(cur))
        else:
            cur.fail("expected COMMENT, TBLPROPERTIES or AS")
    query_text = cur.rest_text()
    if not query_text:
        cur.fail("expected the view's query after AS")
    return c.CreateView(
        sql=sql, name=name, select=parse_select(query_text), query_text=query_text, columns=tuple(columns),
        comment=comment, properties=properties, replace="REPLACE" in header.split(),
        if_not_exists=if_not_exists, temporary="TEMP" in header.split() or "TEMPORARY" in header.split(),
    )
