"""Names that become path segments: a namespace level or table name never leads outside its parent folder.

Catalogs derive default locations from names (``<warehouse>/<ns...>/<table>``; the Hadoop catalog's
namespaces *are* folders), so a name is refused before it becomes a path segment when it could step out of
its parent or split into several segments: empty, ``.``, ``..``, containing ``/`` or ``\\`` (a separator on
some file system or object store), or containing control characters (NUL ends a path in C APIs).
Iceberg Java joins the levels unchecked (``warehouse + "/" + levels...``); Floe does not.

Dots inside a name stay legal (``a.b`` as one level, back-quoted in SQL; ``...``), as in Iceberg: only
``.`` and ``..`` exactly mean something to a file system. A user-given table ``location`` is not a name
and is not checked here.

:func:`require_inside` is the second line of defence for anything that deletes a folder derived from a
name (the Hadoop catalog's drops): the resolved path must lie strictly below the warehouse.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Sequence

from floe.errors import ValidationError

__all__ = ["check_identifier_segments", "check_namespace_segments", "check_path_segment", "require_inside"]


def _problem(name: str) -> str | None:
    """Why ``name`` cannot be a path segment, or None when it can."""
    if not name:
        return "a name cannot be empty"
    if name in (".", ".."):
        return "a name cannot be '.' or '..'"
    if "/" in name or "\\" in name:
        return "a name cannot contain '/' or '\\'"
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        return "a name cannot contain control characters"
    return None


def check_path_segment(name: str, *, kind: str, catalog: str) -> None:
    """Refuse a name that cannot safely be one path segment below its parent folder.

    Args:
        name: one namespace level or a table name.
        kind: what the name is, for the message (``"namespace"`` or ``"table"``).
        catalog: the catalog's name, for the message.

    Raises:
        ValidationError: the name is empty, ``.`` or ``..``, or contains ``/``, ``\\`` or a control
            character (one line naming the name, the catalog and the rule).
    """
    problem = _problem(name)
    if problem is not None:
        raise ValidationError(f"Invalid {kind} name {name!r} in catalog {catalog!r}: {problem}")


def check_namespace_segments(namespace: Sequence[str], *, catalog: str) -> None:
    """Check every level of a namespace with :func:`check_path_segment`.

    Raises:
        ValidationError: a level cannot be a path segment (the message names the level).
    """
    for level in namespace:
        check_path_segment(level, kind="namespace", catalog=catalog)


def check_identifier_segments(identifier: Sequence[str], *, catalog: str) -> None:
    """Check the namespace levels and the table name of a table identifier.

    Raises:
        ValidationError: a level or the table name cannot be a path segment (the message names it).
    """
    check_namespace_segments(identifier[:-1], catalog=catalog)
    if identifier:
        check_path_segment(identifier[-1], kind="table", catalog=catalog)


def _normalized(path: str) -> str:
    normalized = posixpath.normpath(path.replace("\\", "/"))
    return "/" if normalized == "//" else normalized


def require_inside(path: str, parent: str, *, what: str) -> None:
    """Refuse to act on ``path`` unless it lies strictly below ``parent`` once ``.``/``..`` are resolved.

    Both are paths in one file system (as :meth:`floe.io.fileio.FileIO.resolve` returns them); the
    comparison is lexical, so a symlinked namespace folder inside the warehouse still counts as inside.

    Args:
        path: the folder about to be changed or deleted.
        parent: the folder it must stay below (the warehouse).
        what: what is being done, for the message (``"drop table db.t in catalog 'c'"``).

    Raises:
        ValidationError: ``path`` is ``parent`` itself or lies outside it.
    """
    inner, outer = _normalized(path), _normalized(parent)
    prefix = outer if outer.endswith("/") else outer + "/"
    if not inner.startswith(prefix) or inner == outer:
        raise ValidationError(f"Refusing to {what}: {path} is not inside the warehouse {parent}")
