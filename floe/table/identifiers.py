"""Namespace and table identifiers: tuples of name levels, accepted as dotted strings or sequences."""

from __future__ import annotations

from collections.abc import Sequence

from floe.errors import NoSuchTableError, ValidationError

__all__ = [
    "Identifier",
    "IdentifierLike",
    "Namespace",
    "identifier_to_string",
    "namespace_to_string",
    "table_name",
    "table_namespace",
    "to_identifier",
    "to_namespace",
]

Identifier = tuple[str, ...]
Namespace = tuple[str, ...]
IdentifierLike = str | Sequence[str]


def _levels(value: IdentifierLike) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value.split(".")) if value else ()
    return tuple(value)


def to_namespace(namespace: IdentifierLike) -> Namespace:
    """A namespace as a tuple of levels (``"a.b"`` -> ``("a", "b")``).

    Raises:
        ValidationError: a level is empty.
    """
    levels = _levels(namespace)
    if any(not level for level in levels):
        raise ValidationError(f"Invalid namespace {namespace!r}: empty level")
    return levels


def to_identifier(identifier: IdentifierLike) -> Identifier:
    """A table identifier as (namespace levels..., table name).

    Raises:
        NoSuchTableError: the identifier has no namespace (Iceberg catalogs need one).
        ValidationError: a level is empty.
    """
    levels = _levels(identifier)
    if len(levels) < 2:
        raise NoSuchTableError(f"Invalid table identifier {identifier!r}: expected namespace.table")
    if any(not level for level in levels):
        raise ValidationError(f"Invalid table identifier {identifier!r}: empty level")
    return levels


def table_namespace(identifier: Identifier) -> Namespace:
    """The namespace part of a table identifier."""
    return identifier[:-1]


def table_name(identifier: Identifier) -> str:
    """The table name part of a table identifier."""
    return identifier[-1]


def namespace_to_string(namespace: Namespace) -> str:
    """Levels joined with dots, as the JDBC catalog stores namespaces."""
    return ".".join(namespace)


def identifier_to_string(identifier: Identifier) -> str:
    """``ns.table`` for messages."""
    return ".".join(identifier)
