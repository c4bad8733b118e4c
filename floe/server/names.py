"""Namespace and table names as ``floe serve`` takes them from URLs, query parameters and bodies.

One rule for every name a request carries, applied before a handler sees it:

- Unicode NFC: ``café`` typed as one code point or as ``e`` + combining accent is the same name (macOS file
  dialogs produce NFD, most keyboards NFC); two namespaces that look identical would be a trap.
- No control characters and no bidirectional formatting characters (U+202A-U+202E, U+2066-U+2069,
  U+200E, U+200F, U+061C): they make a name display as another one ("Trojan Source").
- At most 255 characters per namespace level and table name: what file systems allow for one path
  segment and the SQL catalog's columns hold. Longer names are refused, not looked up.

Refusals are ValidationError (400), one line naming the rule.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from floe.errors import ValidationError
from floe.table.identifiers import Identifier, Namespace

__all__ = ["MAX_NAME_CHARS", "request_identifier", "request_name", "request_namespace", "split_namespace"]

MAX_NAME_CHARS = 255
_BIDI_FORMATTING = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def _shown(name: str) -> str:
    return ascii(name[:60] + ("..." if len(name) > 60 else ""))


def request_name(name: str, *, kind: str) -> str:
    """One namespace level or table name of a request, in NFC.

    Args:
        kind: ``"namespace"`` or ``"table"``, for the message.

    Raises:
        ValidationError: longer than 255 characters, or a control or bidirectional formatting character.
    """
    name = unicodedata.normalize("NFC", name)
    if len(name) > MAX_NAME_CHARS:
        raise ValidationError(
            f"Invalid {kind} name {_shown(name)} ({len(name)} characters): names are limited to "
            f"{MAX_NAME_CHARS} characters"
        )
    if any(ch in _BIDI_FORMATTING for ch in name):
        raise ValidationError(
            f"Invalid {kind} name {_shown(name)}: bidirectional formatting characters are not allowed in names"
        )
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise ValidationError(f"Invalid {kind} name {_shown(name)}: control characters are not allowed in names")
    return name


def request_namespace(levels: Sequence[str]) -> Namespace:
    """A namespace of a request with every level checked and in NFC (see :func:`request_name`)."""
    return tuple(request_name(level, kind="namespace") for level in levels)


def request_identifier(identifier: Sequence[str]) -> Identifier:
    """A table identifier of a request with every part checked and in NFC."""
    return (*request_namespace(identifier[:-1]), request_name(identifier[-1], kind="table"))


def split_namespace(text: str, separator: str) -> tuple[str, ...]:
    """The levels of a decoded namespace path segment or ``parent`` parameter: split on 0x1F when it holds
    one (what older clients and Floe's send), else on the server's advertised separator (as the spec asks)."""
    if not text:
        return ()
    return tuple(text.split("\x1f" if "\x1f" in text else separator))
