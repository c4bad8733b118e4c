"""Committing written data files as ONE snapshot (append, filter overwrite, dynamic partition overwrite).

Shared by the Arrow writer, the Spark writer and the Spark data source. If the commit fails for a known
reason every written data file is deleted; after :class:`CommitStateUnknownError` nothing is deleted,
because the commit may have succeeded and then references them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

from floe.errors import CommitStateUnknownError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.spec.manifest import DataFile
from floe.spec.schema import Schema
from floe.write.schema_check import SchemaChanges

if TYPE_CHECKING:
    from floe.io.fileio import FileIO
    from floe.table.producers import _MergingProducer
    from floe.table.table import Table

__all__ = ["WriteMode", "apply_schema_changes", "commit_files", "deleted_on_failure"]

WriteMode = Literal["append", "overwrite", "dynamic"]


def apply_schema_changes(table: Table, changes: SchemaChanges) -> Schema:
    """Add columns / widen types on the table (merge-schema writes); returns the new current schema."""
    if changes.empty:
        return table.schema()
    update = table.update_schema()
    for name, t in changes.add:
        update.add_column(tuple(name.split(".")), t)
    for name, t in changes.widen:
        update.update_column(name, field_type=t)
    update.commit()
    return table.schema()


@contextmanager
def deleted_on_failure(io: FileIO, files: Sequence[DataFile]) -> Iterator[None]:
    """Delete ``files`` (written for a commit) if the block fails - except when the commit's outcome is
    unknown: it may have succeeded, and then the files are live table data."""
    try:
        yield
    except CommitStateUnknownError:
        raise
    except BaseException:
        if files:
            io.delete_many([f.file_path for f in files])
        raise


def commit_files(
    table: Table,
    files: Sequence[DataFile],
    *,
    mode: WriteMode = "append",
    overwrite_filter: BooleanExpression | str | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    branch: str | None = None,
) -> Table:
    """Commit ``files`` as one snapshot; delete them if the commit fails (unless its outcome is unknown).

    Args:
        table: the table (refreshed in place by the commit).
        files: the data files written.
        mode: ``append``; ``overwrite`` (delete rows matching ``overwrite_filter``, all rows when None);
            ``dynamic`` (replace every partition the files touch).
        overwrite_filter: for ``overwrite``.
        snapshot_properties: extra snapshot summary properties.
        branch: target branch (default main).

    Raises:
        ValidationError: an unknown mode, or a filter with ``dynamic``.
        CommitFailedError / CommitConflictError: the commit lost (files deleted).
        CommitStateUnknownError: the outcome is unknown (files kept).
    """
    with deleted_on_failure(table.io, files):
        op: _MergingProducer
        if mode == "append":
            op = table.new_append(branch=branch).append_files(files)
        elif mode == "overwrite":
            overwrite = table.new_overwrite(branch=branch).overwrite_by_filter(
                overwrite_filter if overwrite_filter is not None else "true"
            )
            for f in files:
                overwrite.add_file(f)
            op = overwrite
        elif mode == "dynamic":
            if overwrite_filter is not None:
                raise ValidationError("A dynamic partition overwrite takes no filter")
            replace = table.new_replace_partitions(branch=branch)
            for f in files:
                replace.add_file(f)
            op = replace
        else:
            raise ValidationError(f"Unknown write mode {mode!r}: expected append, overwrite or dynamic")
        for k, v in (snapshot_properties or {}).items():
            op.set(k, v)
        op.commit()
    return table
