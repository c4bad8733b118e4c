"""Which delete files apply to which data file (spec "Scan Planning", delete file rules).

A deletion vector (v3: a blob in a Puffin file) applies to the data file named by its
``referenced_data_file`` when the data file's data sequence number is less than or equal to the vector's;
when one applies, position delete files do not (writers fold them into the vector), and a snapshot holds
at most one vector per data file. Otherwise a position delete file applies to a data file when the data
file's data sequence number is less than or equal to the delete's, and either the delete names that file
(``referenced_data_file``) or both share a partition (spec id and values) and the delete's ``file_path``
bounds (reserved field 2147483546) admit the data file's path. An equality delete file applies when the
data sequence number is strictly less than the delete's and both share a partition, or the delete was
written with an unpartitioned spec (a global delete).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from floe.errors import InvalidMetadataError
from floe.spec.manifest import POSITION_DELETE_FILE_PATH_ID, FileContent, FileFormat, ManifestEntry
from floe.spec.partitioning import PartitionSpec

__all__ = ["DeleteFileIndex", "is_deletion_vector"]



def is_deletion_vector(entry: ManifestEntry) -> bool:
    """Whether a delete entry is a v3 deletion vector (a blob in a Puffin file)."""
    f = entry.data_file
    return f.content == FileContent.POSITION_DELETES and (
        f.file_format == FileFormat.PUFFIN or f.content_offset is not None
    )


@dataclass(slots=True)
class _SeqSorted:
    """Delete entries sorted by data sequence number, for ``bisect`` lookups."""

    seqs: list[int] = field(default_factory=list)
    entries: list[ManifestEntry] = field(default_factory=list)

    def add(self, seq: int, entry: ManifestEntry) -> None:
        self.seqs.append(seq)
        self.entries.append(entry)

    def freeze(self) -> None:
        order = sorted(range(len(self.seqs)), key=self.seqs.__getitem__)
        self.seqs = [self.seqs[i] for i in order]
        self.entries = [self.entries[i] for i in order]

    def at_least(self, seq: int) -> list[ManifestEntry]:
        return self.entries[bisect_left(self.seqs, seq) :]

    def greater_than(self, seq: int) -> list[ManifestEntry]:
        return self.entries[bisect_right(self.seqs, seq) :]


def _seq(entry: ManifestEntry) -> int:
    return entry.sequence_number if entry.sequence_number is not None else 0


def _path_bounds(entry: ManifestEntry) -> tuple[str, str] | None:
    f = entry.data_file
    lo = (f.lower_bounds or {}).get(POSITION_DELETE_FILE_PATH_ID)
    hi = (f.upper_bounds or {}).get(POSITION_DELETE_FILE_PATH_ID)
    if lo is None or hi is None:
        return None
    try:
        return lo.decode("utf-8"), hi.decode("utf-8")
    except UnicodeDecodeError:
        return None


class DeleteFileIndex:
    """Index of live delete entries answering ``for_data_file`` quickly (bisect per partition).

    Args:
        entries: live delete manifest entries (sequence numbers already inherited).
        specs_by_id: the table's partition specs (an unpartitioned equality delete is global).
        table_name: for error messages.

    Raises:
        InvalidMetadataError: two deletion vectors name the same data file.
    """

    def __init__(
        self, entries: Iterable[ManifestEntry], specs_by_id: Mapping[int, PartitionSpec], table_name: str = ""
    ) -> None:
        self._global_eq = _SeqSorted()
        self._eq_by_partition: dict[tuple[int, tuple[object, ...]], _SeqSorted] = {}
        self._pos_by_partition: dict[tuple[int, tuple[object, ...]], _SeqSorted] = {}
        self._pos_by_path: dict[str, _SeqSorted] = {}
        self._dv_by_path: dict[str, ManifestEntry] = {}
        self._bounds: dict[int, tuple[str, str]] = {}
        self._count = 0
        for e in entries:
            self._count += 1
            f = e.data_file
            seq = _seq(e)
            if f.content == FileContent.EQUALITY_DELETES:
                spec = specs_by_id.get(f.spec_id)
                if spec is None or spec.is_unpartitioned:
                    self._global_eq.add(seq, e)
                else:
                    self._eq_by_partition.setdefault((f.spec_id, f.partition), _SeqSorted()).add(seq, e)
            elif f.content == FileContent.POSITION_DELETES:
                if is_deletion_vector(e):
                    self._add_deletion_vector(e, table_name)
                elif f.referenced_data_file is not None:
                    self._pos_by_path.setdefault(f.referenced_data_file, _SeqSorted()).add(seq, e)
                else:
                    b = _path_bounds(e)
                    if b is not None and b[0] == b[1]:
                        # Every row of this file deletes from one data file: index it by that path.
                        self._pos_by_path.setdefault(b[0], _SeqSorted()).add(seq, e)
                        continue
                    if b is not None:
                        self._bounds[id(e)] = b
                    self._pos_by_partition.setdefault((f.spec_id, f.partition), _SeqSorted()).add(seq, e)
        for s in (
            self._global_eq,
            *self._eq_by_partition.values(),
            *self._pos_by_partition.values(),
            *self._pos_by_path.values(),
        ):
            s.freeze()

    def _add_deletion_vector(self, entry: ManifestEntry, table_name: str) -> None:
        path = entry.data_file.referenced_data_file
        if path is None:
            raise InvalidMetadataError(
                f"Table {table_name}: deletion vector in {entry.data_file.file_path} "
                "has no referenced_data_file"
            )
        other = self._dv_by_path.setdefault(path, entry)
        if other is not entry:
            raise InvalidMetadataError(
                f"Table {table_name}: data file {path} has two deletion vectors "
                f"({other.data_file.file_path}, {entry.data_file.file_path}); a snapshot may hold only one"
            )

    def __len__(self) -> int:
        return self._count

    @property
    def is_empty(self) -> bool:
        return self._count == 0

    def for_data_file(
        self, data_sequence_number: int, spec_id: int, partition: tuple[object, ...], file_path: str
    ) -> tuple[ManifestEntry, ...]:
        """The delete entries that apply to one data file, position deletes (or its vector) first."""
        if self._count == 0:
            return ()
        out: list[ManifestEntry] = []
        key = (spec_id, partition)
        dv = self._dv_by_path.get(file_path)
        if dv is not None and data_sequence_number <= _seq(dv):
            out.append(dv)  # the vector holds every position delete of the file: delete files are skipped
        else:
            by_path = self._pos_by_path.get(file_path)
            if by_path is not None:
                out.extend(by_path.at_least(data_sequence_number))
            part = self._pos_by_partition.get(key)
            if part is not None:
                for e in part.at_least(data_sequence_number):
                    b = self._bounds.get(id(e))
                    if b is None or b[0] <= file_path <= b[1]:
                        out.append(e)
        eq = self._eq_by_partition.get(key)
        if eq is not None:
            out.extend(eq.greater_than(data_sequence_number))
        if self._global_eq.seqs:
            out.extend(self._global_eq.greater_than(data_sequence_number))
        return tuple(out)
