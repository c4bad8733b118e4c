"""Delete every file a table's metadata references (``drop_table(purge=True)``; Java ``dropTableData``)."""

from __future__ import annotations

import posixpath

from floe.errors import ValidationError
from floe.io.fileio import FileIO
from floe.io.manifest_group import ManifestGroup
from floe.spec import properties as P
from floe.spec.table_metadata import TableMetadata

__all__ = ["purge_table_files", "require_gc_enabled"]


def require_gc_enabled(metadata: TableMetadata, table_name: str) -> None:
    """Refuse to purge a table whose ``gc.enabled`` is false (its files may be shared with other tables).

    Raises:
        ValidationError: ``gc.enabled`` is false.
    """
    if not P.property_bool(metadata.properties, P.GC_ENABLED, P.GC_ENABLED_DEFAULT):
        raise ValidationError(
            f"Cannot purge table {table_name}: gc.enabled is false (deleting its files may corrupt other tables)"
        )


def purge_table_files(
    io: FileIO, metadata: TableMetadata, metadata_location: str | None, *, inside: str | None = None
) -> int:
    """Delete data and delete files, manifests, manifest lists, statistics and metadata files.

    Missing files are skipped (a purge may be re-run after a partial failure).

    Args:
        inside: delete only files strictly below this folder (``floe serve`` passes the table's location:
            a remote client must not make the server delete files its metadata merely references).

    Returns:
        How many locations were deleted or already absent.
    """
    lists = {s.manifest_list for s in metadata.snapshots if s.manifest_list}
    # Whatever is already gone (a re-run after a partial failure) has nothing left to find.
    group = ManifestGroup.of_snapshots(io, metadata.snapshots, missing_ok=True).skip_missing().select_stats(())
    content = {e.data_file.file_path for e in group.entries()}
    doomed = list(content) + [m.manifest_path for m in group.manifests] + sorted(lists)
    doomed += [f.statistics_path for f in metadata.statistics]
    doomed += [f.statistics_path for f in metadata.partition_statistics]
    doomed += [e.metadata_file for e in metadata.metadata_log]
    if metadata_location:
        doomed.append(metadata_location)
    if inside is not None:
        fs, root = io.resolve(inside)
        root = posixpath.normpath(root) + "/"
        kept = []
        for location in doomed:
            other, path = io.resolve(location)
            if other.type_name == fs.type_name and posixpath.normpath(path).startswith(root):
                kept.append(location)
        doomed = kept
    io.delete_many(doomed)
    return len(doomed)
