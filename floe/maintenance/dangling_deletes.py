"""Delete files that can no longer apply to any row (Java's ``RemoveDanglingDeletesSparkAction``).

A position delete applies to data files of its partition with a data sequence number <= its own, an
equality delete to those with a smaller one, a deletion vector to the one file it names. So a delete file
is dangling when its partition holds no live data file it could apply to, or (a DV) when its data file is
gone. ``rewrite_data_files`` with ``remove-dangling-deletes`` removes them in one more ``replace`` commit.
"""

from __future__ import annotations

from typing import Any

from floe.io.manifest_group import ManifestGroup
from floe.spec.manifest import FileContent, FileFormat, ManifestEntry
from floe.spec.snapshot import Snapshot
from floe.table.table import Table

__all__ = ["dangling_delete_files", "live_entries", "remove_dangling_deletes"]


def live_entries(table: Table, snapshot: Snapshot) -> list[ManifestEntry]:
    """The live (ADDED or EXISTING) entries of every manifest of ``snapshot``, data and deletes."""
    group = ManifestGroup.of_snapshot(table.io, snapshot).with_metadata(table.metadata).plan_with(8)
    return list(group.ignore_deleted().entries())


def dangling_delete_files(table: Table, entries: list[ManifestEntry]) -> list[ManifestEntry]:
    """The live delete entries among ``entries`` that apply to no live data file (pure over entries)."""
    meta = table.metadata
    if len(meta.partition_specs) == 1 and not meta.spec().is_partitioned:
        # Java skips this case: every commit already drops deletes older than all data (table-wide).
        return []
    min_seq: dict[tuple[int, tuple[Any, ...]], int] = {}
    data_paths: set[str] = set()
    for e in entries:
        if e.data_file.content == FileContent.DATA:
            data_paths.add(e.data_file.file_path)
            key = (e.data_file.spec_id, e.data_file.partition)
            seq = e.sequence_number or 0
            min_seq[key] = min(seq, min_seq.get(key, seq))
    out = []
    for e in entries:
        f = e.data_file
        if f.content == FileContent.DATA:
            continue
        if f.file_format == FileFormat.PUFFIN:
            if f.referenced_data_file not in data_paths:
                out.append(e)
            continue
        lowest = min_seq.get((f.spec_id, f.partition))
        seq = e.sequence_number or 0
        if (
            lowest is None
            or (f.content == FileContent.POSITION_DELETES and seq < lowest)
            or (f.content == FileContent.EQUALITY_DELETES and seq <= lowest)
        ):
            out.append(e)
    return out


def remove_dangling_deletes(table: Table) -> int:
    """Remove ``table``'s dangling delete files in one ``replace`` commit; returns how many (0: no commit)."""
    snap = table.metadata.current_snapshot()
    if snap is None:
        return 0
    doomed = dangling_delete_files(table, live_entries(table, snap))
    if not doomed:
        return 0
    op = table.new_rewrite()
    op.validate_from_snapshot(snap.snapshot_id)
    for e in doomed:
        op.delete_file(e.data_file)
    op.commit()
    return len(doomed)
