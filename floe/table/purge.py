"""Delete every file a table's metadata references (``drop_table(purge=True)``; Java ``dropTableData``)."""

from __future__ import annotations

from collections.abc import Callable

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
    io: FileIO,
    metadata: TableMetadata,
    metadata_location: str | None,
    *,
    may_delete: Callable[[str], bool] | None = None,
) -> int:
    """Delete data and delete files, manifests, manifest lists, statistics and metadata files.

    Missing files are skipped (a purge may be re-run after a partial failure).

    Args:
        may_delete: delete only the locations this accepts (``floe serve`` passes "strictly inside the
            table's location, symlinks resolved": a remote client must not make the server delete files
            its metadata merely references).

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
    if may_delete is not None:
        doomed = [location for location in doomed if may_delete(location)]
    io.delete_many(doomed)
    return len(doomed)
