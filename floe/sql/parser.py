"""Parse Spark SQL (with Iceberg's extensions) into Floe command objects, one statement at a time.

Standard statements (CREATE TABLE, INSERT, DELETE, UPDATE, MERGE, SELECT) go through sqlglot's Spark
dialect; the forms sqlglot does not model (SHOW ..., CREATE NAMESPACE, CALL, Iceberg's ALTER TABLE
extensions, EXPLAIN) are parsed by a small hand-written grammar over sqlglot's tokens. This module
dispatches each statement to its family's parser (floe.sql.parse_ddl, parse_dml, parse_view) and parses
the namespace, SHOW, USE/SET/RESET, DESCRIBE and EXPLAIN forms itself; floe.sql.parse_common holds what
they all share.

Errors are one line: ``Syntax error at line 1, col 15 near 'FROMM': ...`` (lines and columns counted
in the script) or ``Unsupported statement: GRANT ...``.
"""

from __future__ import annotations

import copy
import functools
import re

from sqlglot import TokenType

from floe.errors import FloeError, ParseError, UnsupportedError, ValidationError
from floe.sql import commands as c
from floe.sql import parse_ddl, parse_dml
from floe.sql.lexer import Cursor, split_statements
from floe.sql.parse_common import property_list, property_list_keys, short_sql, unsupported
from floe.sql.parse_view import is_view_statement, parse_view_statement

__all__ = ["parse_script", "parse_statement"]


_POSITION = re.compile(r"at line (\d+), col (\d+)")

# Statements kept parsed, by text: a pipeline or a dashboard sends the same statements again and again, and
# every ``spark.sql`` call of a Floe-aware session is parsed here first (a SELECT of one table, warm: 2.7 ms
# to parse, 0.4 ms to copy). Longer texts (INSERT ... VALUES of many rows) are parsed each time.
_PARSED_MAX = 256
_PARSED_TEXT_MAX = 16_384


def _shift(error: FloeError, line: int, col: int) -> FloeError:
    """Re-anchor a statement-relative position to the script."""
    if line == 1 and col == 1:
        return error

    def fix(m: re.Match[str]) -> str:
        ln, cl = int(m.group(1)), int(m.group(2))
        return f"at line {ln + line - 1}, col {cl + col - 1 if ln == 1 else cl}"

    return type(error)(_POSITION.sub(fix, str(error)))


def parse_statement(sql: str, *, line: int = 1, col: int = 1) -> c.Statement:
    """Parse one statement (a trailing ``;`` is allowed).

    Args:
        sql: the statement.
        line: line of the statement's start in its script (for error positions).
        col: column of the statement's start in its script.

    Raises:
        ParseError: invalid syntax (one line with position and the offending text).
        UnsupportedError: a valid statement Floe does not support, naming it.
    """
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise ParseError("Empty statement")
    try:
        return _parse_kept(text)
    except (ParseError, UnsupportedError) as e:
        raise _shift(e, line, col) from None


def _parse_kept(text: str) -> c.Statement:
    """``_dispatch(text)``, kept for the next time the same text comes: each caller gets its own deep copy
    (a statement holds sqlglot trees, which its handler may change). Failures are not kept."""
    if len(text) > _PARSED_TEXT_MAX:
        return _dispatch(text)
    return copy.deepcopy(_dispatch_kept(text))


@functools.lru_cache(maxsize=_PARSED_MAX)
def _dispatch_kept(text: str) -> c.Statement:
    return _dispatch(text)


def parse_script(script: str) -> list[c.Statement]:
    """Parse every statement of a script (split on ``;`` outside strings and comments)."""
    return [parse_statement(s.sql, line=s.line, col=s.col) for s in split_statements(script)]


def _dispatch(sql: str) -> c.Statement:
    cur = Cursor(sql)
    w0, w1 = cur.word(0), cur.word(1)
    if is_view_statement(cur):
        return parse_view_statement(cur)
    if w0 == "USE":
        return _use(cur)
    if w0 == "SET":
        return _set(cur)
    if w0 == "RESET":
        cur.expect("RESET")
        key = cur.rest_text().strip().strip("`") or None
        return c.ResetConf(sql=cur.sql, key=key)
    if w0 == "SHOW":
        return _show(cur)
    if w0 == "CREATE" and _namespace_word(cur):
        return _create_namespace(cur)
    if w0 == "DROP" and _namespace_word(cur):
        return _drop_namespace(cur)
    if w0 in ("DESC", "DESCRIBE") and cur.word(1) in ("NAMESPACE", "DATABASE", "SCHEMA"):
        return _describe_namespace(cur)
    if w0 == "ALTER" and _namespace_word(cur):
        return _alter_namespace(cur)
    if w0 in ("DESC", "DESCRIBE"):
        return _describe(cur)
    if w0 == "EXPLAIN":
        return _explain(cur)
    if w0 == "CREATE" or (w0 == "REPLACE" and w1 == "TABLE"):
        return parse_ddl.parse_create(cur)
    if w0 == "DROP" and w1 == "TABLE":
        return parse_ddl.parse_drop_table(cur)
    if w0 == "ALTER" and w1 == "TABLE":
        return parse_ddl.parse_alter(cur)
    if w0 == "CALL":
        return parse_dml.parse_call(cur)
    if w0 == "INSERT":
        return parse_dml.parse_insert(sql)
    if w0 == "DELETE":
        return parse_dml.parse_delete(sql)
    if w0 == "UPDATE":
        return parse_dml.parse_update(sql)
    if w0 == "MERGE":
        return parse_dml.parse_merge(sql)
    if w0 in ("SELECT", "WITH", "VALUES", "FROM", "TABLE") or cur.at_type(TokenType.L_PAREN):
        return parse_dml.parse_select(sql)
    if w0 not in _SPARK_STATEMENT_WORDS:
        cur.fail("expected a statement (SELECT, INSERT, CREATE, ALTER, ...)")
    raise unsupported(sql)


# First words of Spark statements Floe does not run (GRANT, CACHE, ...): unsupported, not a syntax error.
_SPARK_STATEMENT_WORDS = frozenset(
    [
        "ADD",
        "ALTER",
        "ANALYZE",
        "BEGIN",
        "CACHE",
        "CALL",
        "CLEAR",
        "COMMENT",
        "COMMIT",
        "CREATE",
        "DECLARE",
        "DELETE",
        "DESC",
        "DESCRIBE",
        "DROP",
        "EXECUTE",
        "EXPLAIN",
        "FROM",
        "GRANT",
        "INSERT",
        "LIST",
        "LOAD",
        "LOCK",
        "MERGE",
        "MSCK",
        "REFRESH",
        "REPAIR",
        "REPLACE",
        "RESET",
        "REVOKE",
        "ROLLBACK",
        "SELECT",
        "SET",
        "SHOW",
        "TABLE",
        "TRUNCATE",
        "UNCACHE",
        "UNLOCK",
        "UNSET",
        "UPDATE",
        "USE",
        "VALUES",
        "WITH",
    ]
)


def _namespace_word(cur: Cursor) -> bool:
    return cur.word(1) in ("NAMESPACE", "DATABASE", "SCHEMA")


def _use(cur: Cursor) -> c.UseStmt:
    cur.expect("USE")
    target: str | None = None
    if cur.word() in ("NAMESPACE", "DATABASE", "SCHEMA") and cur.peek(1) is not None:
        cur.pos += 1
        target = "namespace"
    elif cur.word() == "CATALOG" and cur.peek(1) is not None:
        cur.pos += 1
        target = "catalog"
    name = cur.name()
    cur.end()
    return c.UseStmt(sql=cur.sql, name=name, target=target)


def _set(cur: Cursor) -> c.SetConf:
    cur.expect("SET")
    if cur.done:
        return c.SetConf(sql=cur.sql)
    # Spark treats everything up to '=' as the key and the rest, trimmed, as the value.
    raw = cur.rest_text()
    key, eq, value = raw.partition("=")
    key = key.strip().strip("`")
    if not key:
        cur.fail("expected a configuration key")
    if not eq:
        return c.SetConf(sql=cur.sql, key=key)
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return c.SetConf(sql=cur.sql, key=key, value=value)


def _like_pattern(cur: Cursor) -> str | None:
    if cur.accept("LIKE"):
        return cur.string()
    if cur.at_type(TokenType.STRING):
        return cur.string()
    return None


def _show(cur: Cursor) -> c.Statement:
    cur.expect("SHOW")
    if cur.accept("CREATE", "TABLE"):
        name = cur.name()
        cur.accept("AS", "SERDE")
        cur.end()
        return c.ShowCreateTable(sql=cur.sql, name=name)
    if cur.accept("TBLPROPERTIES"):
        name = cur.name()
        key = None
        if cur.accept_type(TokenType.L_PAREN):
            key = cur.string() if cur.at_type(TokenType.STRING) else ".".join(cur.name())
            cur.expect_type(TokenType.R_PAREN, "')'")
        cur.end()
        return c.ShowTblProperties(sql=cur.sql, name=name, key=key)
    if cur.word() in ("NAMESPACES", "DATABASES", "SCHEMAS"):
        cur.pos += 1
        parent = cur.name() if cur.accept("IN") or cur.accept("FROM") else None
        pattern = _like_pattern(cur)
        cur.end()
        return c.ShowNamespaces(sql=cur.sql, parent=parent, pattern=pattern)
    if cur.accept("TABLES"):
        ns = cur.name() if cur.accept("IN") or cur.accept("FROM") else None
        pattern = _like_pattern(cur)
        cur.end()
        return c.ShowTables(sql=cur.sql, namespace=ns, pattern=pattern)
    if cur.accept("CURRENT", "NAMESPACE") or cur.accept("CURRENT", "DATABASE") or cur.accept("CURRENT", "SCHEMA"):
        cur.end()
        return c.ShowCurrentNamespace(sql=cur.sql)
    if cur.accept("CATALOGS"):
        pattern = _like_pattern(cur)
        cur.end()
        return c.ShowCatalogs(sql=cur.sql, pattern=pattern)
    raise unsupported(cur.sql)


def _create_namespace(cur: Cursor) -> c.CreateNamespace:
    cur.expect("CREATE")
    cur.pos += 1  # NAMESPACE | DATABASE | SCHEMA
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    ns = cur.name()
    props: dict[str, str] = {}
    while not cur.done:
        if cur.accept("COMMENT"):
            props["comment"] = cur.string()
        elif cur.accept("LOCATION"):
            props["location"] = cur.string()
        elif cur.accept("WITH", "DBPROPERTIES") or cur.accept("WITH", "PROPERTIES"):
            props.update(_namespace_properties(cur))
        else:
            cur.fail("expected COMMENT, LOCATION or WITH PROPERTIES")
    return c.CreateNamespace(sql=cur.sql, namespace=ns, if_not_exists=if_not_exists, properties=props)


# Spark reserves these namespace properties for the COMMENT and LOCATION clauses and the current user.
_RESERVED_NAMESPACE_PROPERTIES = {
    "comment": "please use the COMMENT clause to specify it",
    "location": "please use the LOCATION clause to specify it",
    "owner": "it will be set to the current user",
}


def _namespace_properties(cur: Cursor) -> dict[str, str]:
    props = property_list(cur)
    for key in props:
        reason = _RESERVED_NAMESPACE_PROPERTIES.get(key.lower())
        if reason is not None:
            raise ValidationError(f"{key} is a reserved namespace property, {reason} (in {short_sql(cur.sql)})")
    return props


def _alter_namespace(cur: Cursor) -> c.AlterNamespaceProperties:
    cur.expect("ALTER")
    cur.pos += 1  # NAMESPACE | DATABASE | SCHEMA
    ns = cur.name()
    if cur.accept("SET", "DBPROPERTIES") or cur.accept("SET", "PROPERTIES"):
        updates = _namespace_properties(cur)
        cur.end()
        return c.AlterNamespaceProperties(sql=cur.sql, namespace=ns, updates=updates)
    if cur.accept("UNSET", "DBPROPERTIES") or cur.accept("UNSET", "PROPERTIES"):
        cur.accept("IF", "EXISTS")
        removals = tuple(property_list_keys(cur))
        cur.end()
        return c.AlterNamespaceProperties(sql=cur.sql, namespace=ns, removals=removals)
    raise unsupported(cur.sql)


def _describe_namespace(cur: Cursor) -> c.DescribeNamespace:
    cur.pos += 2  # DESCRIBE NAMESPACE
    extended = cur.accept("EXTENDED")
    ns = cur.name()
    cur.end()
    return c.DescribeNamespace(sql=cur.sql, namespace=ns, extended=extended)


def _drop_namespace(cur: Cursor) -> c.DropNamespace:
    cur.expect("DROP")
    cur.pos += 1
    if_exists = cur.accept("IF", "EXISTS")
    ns = cur.name()
    cascade = cur.accept("CASCADE")
    if not cascade:
        cur.accept("RESTRICT")
    cur.end()
    return c.DropNamespace(sql=cur.sql, namespace=ns, if_exists=if_exists, cascade=cascade)


def _describe(cur: Cursor) -> c.Statement:
    cur.pos += 1  # DESC | DESCRIBE
    if cur.word() in ("NAMESPACE", "DATABASE", "SCHEMA", "FUNCTION", "QUERY", "CATALOG"):
        raise unsupported(cur.sql)
    cur.accept("TABLE")
    mode = None
    if cur.word() in ("EXTENDED", "FORMATTED") and cur.peek(1) is not None:
        mode = cur.word().lower()
        cur.pos += 1
    name = cur.name()
    column = ".".join(cur.name()) if not cur.done else None
    cur.end()
    return c.DescribeTable(sql=cur.sql, name=name, mode=mode, column=column)


def _explain(cur: Cursor) -> c.Explain:
    cur.expect("EXPLAIN")
    mode = None
    if cur.word() in ("EXTENDED", "FORMATTED", "CODEGEN", "COST", "LOGICAL"):
        mode = cur.word().lower()
        cur.pos += 1
    inner_sql = cur.rest_text()
    if not inner_sql:
        cur.fail("expected a statement to explain")
    inner = _dispatch(inner_sql)
    return c.Explain(sql=cur.sql, statement=inner, mode=mode)
