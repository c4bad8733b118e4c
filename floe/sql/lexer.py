"""Tokens for the SQL front end: statement splitting and a cursor for the hand-written grammar parts.

sqlglot's Spark tokenizer is used with its "command" shortcut disabled (it would otherwise swallow
``CALL``/``SHOW``/``EXPLAIN`` statements as one string), so strings, back-quoted names and comments are
handled exactly as Spark does and a ``;`` inside them never ends a statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sqlglot import Token, TokenType
from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError

from floe.errors import ParseError

__all__ = ["Cursor", "StatementText", "is_complete", "split_statements", "tokenize"]


class _Tokenizer(Spark.Tokenizer):
    COMMANDS: ClassVar[set[TokenType]] = set()


@dataclass(frozen=True, slots=True)
class StatementText:
    """One statement of a script: its text (no trailing ``;``) and where it starts (1-based)."""

    sql: str
    line: int
    col: int


def tokenize(sql: str) -> list[Token]:
    """All tokens of ``sql``.

    Raises:
        ParseError: unterminated string, quoted name or comment (names the line).
    """
    try:
        return _Tokenizer().tokenize(sql)
    except TokenError:
        raise ParseError(
            f"Syntax error: unterminated string, quoted name or comment in {_short(sql)!r}"
        ) from None


def split_statements(script: str) -> list[StatementText]:
    """Split a script on ``;`` outside strings, quoted names and comments; empty statements are dropped.

    Raises:
        ParseError: the script cannot be tokenized (unterminated string or comment).
    """
    out: list[StatementText] = []
    current: list[Token] = []
    tokens: list[Token | None] = [*tokenize(script), None]
    for tok in tokens:
        if tok is None or tok.token_type == TokenType.SEMICOLON:
            if current:
                start, end = current[0], current[-1]
                begin = start.start  # for quoted tokens this is the opening quote
                out.append(StatementText(script[begin : end.end + 1], *_line_col(script, begin)))
            current = []
        else:
            current.append(tok)
    return out


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def is_complete(buffer: str) -> bool:
    """Whether an interactive buffer ends a statement (its last token is ``;``) — the shell's test."""
    try:
        toks = tokenize(buffer)
    except ParseError:
        return False  # an open string or comment continues on the next line
    return bool(toks) and toks[-1].token_type == TokenType.SEMICOLON


class Cursor:
    """A position in one statement's tokens with the small helpers the hand-written grammar needs."""

    def __init__(self, sql: str, tokens: list[Token] | None = None) -> None:
        self.sql = sql
        self.tokens = tokens if tokens is not None else tokenize(sql)
        self.pos = 0

    # -- looking -------------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.pos >= len(self.tokens)

    def peek(self, ahead: int = 0) -> Token | None:
        i = self.pos + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def word(self, ahead: int = 0) -> str:
        """Upper-cased text of a token that could be a keyword ('' for strings, punctuation, the end)."""
        tok = self.peek(ahead)
        if tok is None or tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER, TokenType.NUMBER):
            return ""
        return tok.text.upper()

    def at(self, *words: str) -> bool:
        """Whether the next tokens are these keywords (case-insensitive)."""
        return all(self.word(i) == w for i, w in enumerate(words))

    def at_type(self, token_type: TokenType) -> bool:
        tok = self.peek()
        return tok is not None and tok.token_type == token_type

    # -- consuming -----------------------------------------------------------------------------------
    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected {' '.join(words)}")

    def accept_type(self, token_type: TokenType) -> Token | None:
        if self.at_type(token_type):
            tok = self.tokens[self.pos]
            self.pos += 1
            return tok
        return None

    def expect_type(self, token_type: TokenType, what: str) -> Token:
        tok = self.accept_type(token_type)
        if tok is None:
            self.fail(f"expected {what}")
        return tok  # type: ignore[return-value]

    def name_part(self) -> str:
        """One identifier: a plain word, a keyword used as a name, or a `back-quoted` name."""
        tok = self.peek()
        if tok is None or tok.token_type in _NOT_NAMES:
            self.fail("expected a name")
        self.pos += 1
        return tok.text  # type: ignore[union-attr]

    def name(self) -> tuple[str, ...]:
        """A dotted multi-part name."""
        parts = [self.name_part()]
        while self.accept_type(TokenType.DOT):
            parts.append(self.name_part())
        return tuple(parts)

    def string(self) -> str:
        return self.expect_type(TokenType.STRING, "a quoted string").text

    def integer(self) -> int:
        tok = self.expect_type(TokenType.NUMBER, "a number")
        try:
            return int(tok.text.rstrip("lL"))
        except ValueError:
            self.fail("expected an integer")
            raise  # unreachable: fail raises

    def rest_text(self) -> str:
        """The statement text from the current token to the end."""
        tok = self.peek()
        return "" if tok is None else self.sql[tok.start :].strip()

    def text_between(self, start: int, end: int) -> str:
        """Source text of tokens[start:end]."""
        if start >= end:
            return ""
        return self.sql[self.tokens[start].start : self.tokens[end - 1].end + 1]

    def end(self) -> None:
        if not self.done:
            self.fail("unexpected text")

    def fail(self, what: str) -> None:
        """Raise a ParseError pointing at the current token."""
        tok = self.peek()
        if tok is None:
            raise ParseError(f"Syntax error at end of statement: {what} in {_short(self.sql)!r}")
        line, col = _line_col(self.sql, tok.start)
        near = self.sql[tok.start : tok.end + 1]
        raise ParseError(f"Syntax error at line {line}, col {col} near {near!r}: {what}")


_NOT_NAMES = frozenset(
    {
        TokenType.STRING,
        TokenType.NUMBER,
        TokenType.L_PAREN,
        TokenType.R_PAREN,
        TokenType.COMMA,
        TokenType.DOT,
        TokenType.SEMICOLON,
        TokenType.EQ,
        TokenType.STAR,
        TokenType.FARROW,
    }
)


def _short(sql: str) -> str:
    one = " ".join(sql.split())
    return one if len(one) <= 80 else one[:77] + "..."
