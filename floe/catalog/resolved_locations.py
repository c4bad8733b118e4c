"""Where a location really is, for "is this inside that folder" decisions that guard writes and deletes.

Lexical comparison is not enough on a local file system: a symlink inside the warehouse may point anywhere,
so local paths are resolved with ``os.path.realpath`` (every existing component, the missing tail kept).
Object stores have no symlinks but keep ``.`` and ``..`` as literal key segments that other engines may
normalise away, so such locations are refused rather than interpreted. Relative local paths are refused too:
they would mean whatever the current directory of the process is.

:func:`inside_folder` builds the predicate that confines deletes (a commit's old metadata files, a purge).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from floe.errors import ValidationError
from floe.io.locations import LOCAL_SCHEMES, S3_SCHEMES, scheme_of, split_bucket, to_local_path

__all__ = ["ResolvedLocation", "inside_folder", "resolve_location"]


@dataclass(frozen=True, slots=True)
class ResolvedLocation:
    """A location reduced to its store (``file``, ``s3://bucket``, ``hdfs://namenode``) and an absolute path."""

    store: str
    path: str  # absolute, "/"-separated, no trailing "/" except for the root itself

    def is_inside(self, folder: ResolvedLocation, *, strictly: bool = False) -> bool:
        """Whether this location is ``folder`` or lies below it (only below it with ``strictly``)."""
        if self.store != folder.store:
            return False
        if self.path == folder.path:
            return not strictly
        prefix = folder.path if folder.path.endswith("/") else folder.path + "/"
        return self.path.startswith(prefix)

    def overlaps(self, other: ResolvedLocation) -> bool:
        """Whether either location contains the other (equal locations overlap)."""
        return self.is_inside(other) or other.is_inside(self)

    def __str__(self) -> str:
        return self.path if self.store == "file" else self.store + self.path


def resolve_location(location: str) -> ResolvedLocation:
    """Resolve a location for containment checks (symlinks followed on the local file system).

    Raises:
        ValidationError: a relative local path, a ``file:`` URI naming another host, an object-store or
            HDFS location with ``.`` or ``..`` segments or without a bucket (the message names the problem).
    """
    scheme = scheme_of(location)
    if scheme in LOCAL_SCHEMES:
        path = to_local_path(location)
        if not os.path.isabs(path):
            raise ValidationError(f"{location!r} is a relative path; locations must be absolute")
        return ResolvedLocation("file", os.path.realpath(path))
    _, authority, key = split_bucket(location)
    segments = key.split("/")
    if any(s in (".", "..") for s in segments):
        raise ValidationError(f"{location!r} has '.' or '..' segments, which object stores keep literally")
    store = f"s3://{authority}" if scheme in S3_SCHEMES else f"{scheme}://{authority}"
    return ResolvedLocation(store, "/" + key.rstrip("/"))


def inside_folder(folder: str) -> Callable[[str], bool]:
    """A predicate: whether a location lies strictly inside ``folder``, both resolved.

    Locations that cannot be resolved (relative, dot segments) are outside. A folder that cannot be
    resolved contains nothing.
    """
    try:
        root = resolve_location(folder)
    except ValidationError:
        return lambda _location: False

    def inside(location: str) -> bool:
        try:
            return resolve_location(location).is_inside(root, strictly=True)
        except ValidationError:
            return False

    return inside
