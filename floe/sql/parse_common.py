"""What every statement parser shares: sqlglot parsing with one-line errors, the "unsupported statement"
error, and Spark's ``('k'='v', ...)`` property lists.

floe.sql.parser dispatches a statement to the per-family parsers (parse_ddl, parse_dml, parse_view); they
all build on this module, which imports none of them.
"""

from __future__ import annotations

import logging

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel
from sqlglot.errors import ParseError as SqlglotParseError

from floe.errors import FloeError, ParseError, UnsupportedError
from floe.sql.lexer import Cursor

__all__ = ["parse_sqlglot", "property_list", "property_list_keys", "property_value", "short_sql", "unsupported"]


class _DropCommandFallbackWarnings(logging.Filter):
    """sqlglot logs a warning when it falls back to a raw Command; Floe reports its own error instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_DropCommandFallbackWarnings())

# sqlglot's Spark generator writes ``parse_json('{"a": 1}')`` back as the bare string (its dialect has no
# PARSE_JSON name): a VARIANT column then got the JSON text as one variant string. Spark 4 has the function.
Spark.Generator.PARSE_JSON_NAME = "PARSE_JSON"


def short_sql(sql: str, limit: int = 80) -> str:
    """The statement on one line, shortened for messages."""
    one = " ".join(sql.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def unsupported(sql: str) -> UnsupportedError:
    return UnsupportedError(f"Unsupported statement: {short_sql(sql)}")


def parse_sqlglot(sql: str) -> exp.Expression:
    """Parse one statement with sqlglot's Spark dialect, turning its errors into one-line ParseErrors."""
    try:
        node = sqlglot.parse_one(sql, read="spark", error_level=ErrorLevel.RAISE)
    except SqlglotParseError as e:
        err = e.errors[0] if e.errors else {}
        line, col = err.get("line"), err.get("col")
        highlight = err.get("highlight") or ""
        desc = err.get("description") or "invalid syntax"
        if line is not None and col is not None:
            start_col = max(1, int(col) - len(highlight) + 1)
            before = (err.get("start_context") or "").split()
            near = (
                f"{before[-1]} {highlight}"
                if before and highlight
                else highlight or (before[-1] if before else "")
            )
            raise ParseError(f"Syntax error at line {line}, col {start_col} near {near!r}: {desc}") from None
        raise ParseError(f"Syntax error: {desc} in {short_sql(sql)!r}") from None
    except FloeError:
        raise
    except Exception as e:  # noqa: BLE001 - sqlglot raises a few non-ParseError errors (TokenError, ValueError) on bad input
        raise ParseError(f"Syntax error: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if node is None:
        raise ParseError("Empty statement")
    if isinstance(node, exp.Command) or not isinstance(node, exp.Expression):
        raise unsupported(sql)
    return node


def property_list(cur: Cursor) -> dict[str, str]:
    """``('k'='v', k2 = 'v2', ...)`` as Spark's TBLPROPERTIES/DBPROPERTIES take it (values as text)."""
    cur.expect_type(TokenType.L_PAREN, "'('")
    out: dict[str, str] = {}
    while True:
        key = cur.string() if cur.at_type(TokenType.STRING) else ".".join(cur.name())
        cur.accept_type(TokenType.EQ)
        out[key] = property_value(cur)
        if not cur.accept_type(TokenType.COMMA):
            break
    cur.expect_type(TokenType.R_PAREN, "')' or ','")
    return out


def property_list_keys(cur: Cursor) -> list[str]:
    """``('k', k2, ...)`` of UNSET PROPERTIES."""
    cur.expect_type(TokenType.L_PAREN, "'('")
    keys: list[str] = []
    while True:
        keys.append(cur.string() if cur.at_type(TokenType.STRING) else ".".join(cur.name()))
        if not cur.accept_type(TokenType.COMMA):
            break
    cur.expect_type(TokenType.R_PAREN, "')' or ','")
    return keys


def property_value(cur: Cursor) -> str:
    tok = cur.peek()
    if tok is None:
        cur.fail("expected a property value")
    assert tok is not None
    if tok.token_type in (TokenType.STRING, TokenType.NUMBER):
        cur.pos += 1
        return tok.text
    if tok.token_type in (TokenType.TRUE, TokenType.FALSE):
        cur.pos += 1
        return tok.text.lower()
    if tok.token_type == TokenType.DASH and cur.peek(1) is not None:
        cur.pos += 2
        return "-" + cur.tokens[cur.pos - 1].text
    return ".".join(cur.name())
