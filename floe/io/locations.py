"""Location strings: schemes, ``file:`` URIs, joining, parents and comparison keys. Pure string work, no IO.

Iceberg stores file locations as opaque strings and compares them byte for byte (manifests, position
deletes, orphan removal), so Floe never rewrites a location it did not create. The helpers here only
*interpret* locations (to open them) or normalise foreign forms (Spark's ``_metadata.file_path``) back
to the form that metadata uses.
"""

from __future__ import annotations

import posixpath
import re
from typing import Literal
from urllib.parse import unquote

from floe.errors import ValidationError

__all__ = [
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
    "FileUriStyle",
    "basename",
    "comparison_key",
    "file_uri_style",
    "is_local",
    "join",
    "normalize_spark_file_path",
    "parent",
    "render_local",
    "scheme_of",
    "split_bucket",
    "to_local_path",
]

LOCAL_SCHEMES = frozenset({"", "file"})
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

# How a local location is spelled: a bare path, ``file:/p`` (Hadoop/Java Iceberg) or ``file:///p`` (RFC 8089).
FileUriStyle = Literal["path", "file:/", "file:///"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def scheme_of(location: str) -> str:
    """The lower-cased URI scheme (``s3``, ``file``, ``hdfs``), or ``""`` for a plain path."""
    if _WINDOWS_DRIVE.match(location):
        return ""
    m = _SCHEME.match(location)
    return m.group(1).lower() if m else ""


def is_local(location: str) -> bool:
    """Whether the location is on the local file system (plain path or ``file:`` URI)."""
    return scheme_of(location) in LOCAL_SCHEMES


def to_local_path(location: str) -> str:
    """The local file-system path of a plain path or ``file:`` URI (``file:/p``, ``file:///p``, ``file://localhost/p``).

    The path is returned verbatim (no percent-decoding): metadata written by Iceberg stores local
    locations unencoded (``file:/tmp/a b/x.parquet``), so decoding would corrupt names containing ``%``.

    Raises:
        ValidationError: the location is not local, or names a remote host.
    """
    scheme = scheme_of(location)
    if scheme == "":
        return location
    if scheme != "file":
        raise ValidationError(f"Not a local location: {location!r}")
    rest = location[len("file:") :]
    if rest.startswith("//"):
        host, sep, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            raise ValidationError(f"file: URI with a remote host is not supported: {location!r}")
        return "/" + path if sep else "/"
    return rest


def split_bucket(location: str) -> tuple[str, str, str]:
    """Split ``scheme://bucket/key`` into (scheme, bucket, key).

    Raises:
        ValidationError: the location has no ``//authority`` part.
    """
    scheme = scheme_of(location)
    rest = location[len(scheme) + 1 :]
    if not scheme or not rest.startswith("//"):
        raise ValidationError(f"Expected a location like scheme://bucket/key, got {location!r}")
    bucket, _, key = rest[2:].partition("/")
    if not bucket:
        raise ValidationError(f"Location has no bucket or host: {location!r}")
    return scheme, bucket, key


def join(base: str, *parts: str) -> str:
    """Join location parts with single slashes, keeping the base's scheme and spelling."""
    out = base
    for p in parts:
        if not p:
            continue
        out = out.rstrip("/") + "/" + p.lstrip("/")
    return out


def parent(location: str) -> str:
    """The enclosing directory of a location, keeping its scheme (``s3://b/a/x`` -> ``s3://b/a``)."""
    stripped = location.rstrip("/")
    scheme = scheme_of(stripped)
    head = ""
    if scheme:
        rest = stripped[len(scheme) + 1 :]
        if rest.startswith("//"):
            authority, _, path = rest[2:].partition("/")
            head, stripped = f"{scheme}://{authority}", "/" + path
        else:
            head, stripped = f"{scheme}:", rest
    parent_path = posixpath.dirname(stripped)
    return head + parent_path


def basename(location: str) -> str:
    """The last path component of a location."""
    return location.rstrip("/").rsplit("/", 1)[-1]


def file_uri_style(location: str) -> FileUriStyle:
    """How a local location is spelled, so new locations can be written the same way."""
    if location.startswith(("file:///", "file://localhost/")):
        return "file:///"
    if location.startswith("file:"):
        return "file:/"
    return "path"


def render_local(path: str, style: FileUriStyle) -> str:
    """Spell an absolute local path in the given style."""
    if style == "path":
        return path
    if style == "file:/":
        return "file:" + path
    return "file://" + path


def normalize_spark_file_path(uri: str, *, like: str | None = None) -> str:
    """Map Spark's ``_metadata.file_path`` back to the location as metadata stores it.

    Spark reports paths as URL-encoded URIs (``file:/tmp/a%20b/x.parquet``, ``s3a://b/k%3D1/x``): this
    decodes them and, for local files, re-spells them like ``like`` (any location from the same table,
    e.g. the table location or a manifest's data file path). Object-store schemes are kept as reported
    except that the scheme is taken from ``like`` when both are S3 aliases (``s3a`` vs ``s3``).

    Args:
        uri: the value of ``_metadata.file_path``.
        like: a location written the way the result should be written; default: a bare local path.
    """
    decoded = unquote(uri)
    scheme = scheme_of(decoded)
    if scheme in LOCAL_SCHEMES:
        path = to_local_path(decoded)
        return render_local(path, file_uri_style(like) if like is not None and is_local(like) else "path")
    if like is not None:
        like_scheme = scheme_of(like)
        if scheme in S3_SCHEMES and like_scheme in S3_SCHEMES and like_scheme != scheme:
            return like_scheme + decoded[len(scheme) :]
    return decoded


def comparison_key(location: str) -> str:
    """A key under which two spellings of the same file compare equal.

    Local paths lose ``file:`` prefixes; S3 aliases collapse to ``s3``; percent-encoding is NOT undone
    (call :func:`normalize_spark_file_path` first for Spark URIs). Use for joins between sources that
    spell locations differently, never to rewrite stored locations.
    """
    scheme = scheme_of(location)
    if scheme in LOCAL_SCHEMES:
        return posixpath.normpath(to_local_path(location))
    if scheme in S3_SCHEMES:
        return "s3" + location[len(scheme) :]
    return location
