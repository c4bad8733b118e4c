"""One exception hierarchy for Floe: every error Floe raises derives from FloeError."""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "CommitConflictError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "FileAlreadyExistsError",
    "FloeError",
    "InvalidMetadataError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchFileError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
    "NotFoundError",
    "ParseError",
    "ReadError",
    "TableAlreadyExistsError",
    "UnsupportedError",
    "ValidationError",
]


class FloeError(Exception):
    """Root of every error Floe raises."""


class ValidationError(FloeError, ValueError):
    """Input violates the Iceberg spec or a table's schema (message names the value)."""


class InvalidMetadataError(ValidationError):
    """A metadata file, manifest or manifest list is malformed."""


class UnsupportedError(FloeError, NotImplementedError):
    """A valid request Floe does not support (yet); the message names the feature."""


class ReadError(FloeError):
    """A read cannot return correct rows (e.g. a delete it cannot apply): it fails instead of returning wrong ones."""


class ParseError(ValidationError):
    """A filter expression or SQL statement could not be parsed."""


class NotFoundError(FloeError, LookupError):
    """Something named does not exist."""


class NoSuchNamespaceError(NotFoundError):
    """The namespace does not exist."""


class NoSuchTableError(NotFoundError):
    """The table does not exist."""


class NoSuchViewError(NotFoundError):
    """The view does not exist."""


class NoSuchSnapshotError(NotFoundError):
    """The snapshot, branch or tag does not exist."""


class NoSuchFileError(NotFoundError, FileNotFoundError):
    """A file referenced by metadata is missing."""


class AlreadyExistsError(FloeError):
    """Something with that name already exists."""


class NamespaceAlreadyExistsError(AlreadyExistsError):
    """The namespace already exists."""


class FileAlreadyExistsError(AlreadyExistsError, FileExistsError):
    """A file that must be created exclusively already exists (e.g. a lost race on v<N>.metadata.json)."""


class TableAlreadyExistsError(AlreadyExistsError):
    """The table already exists."""


class NamespaceNotEmptyError(FloeError):
    """The namespace still contains tables."""


class CommitFailedError(FloeError):
    """The commit lost a race (the base changed); retryable after refreshing."""


class CommitConflictError(CommitFailedError):
    """A concurrent commit changed data this commit depends on; not retryable by replay."""


class CommitStateUnknownError(FloeError):
    """The commit may or may not have succeeded; never clean up the files it wrote."""
