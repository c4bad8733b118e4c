"""The delta writer: a changelog (rows with +I/-U/+U/-D) in, data files and delete files out (no Spark).

One delta writer serves one writing task whose rows were routed by key, so every change of a key passes
through the same writer, in order. Per change, as the user's notes on the write path (seed 000) and
Iceberg's Flink writer do it:

- ``+I`` / ``+U`` write the row to a data file and remember ``key -> (file, position)`` for this commit
  (a second insert of a key in the same commit position-deletes the first).
- ``-D`` / ``-U`` delete the key: if this commit wrote the key, by a position delete of that row (an
  equality delete would not reach it: equality deletes apply only to data files with a *smaller* data
  sequence number); otherwise by an equality delete of the key (projected key columns).
- Upsert mode turns every insert into delete-key + insert, so a key holds one row whatever came
  before, and ignores ``-U`` (its ``+U`` deletes the key anyway).

Files take the seed's names ``%05d-%d-<operation>-%05d[-deletes].parquet`` under the table's partition
path; delete files are partitioned as the rows they delete. Format v3 tables get deletion vectors (one
blob per data file of this commit in one Puffin file) instead of position delete files, as the spec
requires. :meth:`DeltaTaskWriter.abort` deletes everything the writer created.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import ValidationError
from floe.io.arrow_schema import schema_to_arrow
from floe.io.fileio import FileIO
from floe.io.puffin_write import PuffinBlob, encode_puffin
from floe.serde.deletion_vector import encode_deletion_vector
from floe.spec.manifest import (
    POSITION_DELETE_FILE_PATH_ID,
    POSITION_DELETE_POS_ID,
    DataFile,
    FileContent,
    FileFormat,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import LongType, NestedField, StringType
from floe.write.arrow_data import conform, partition_groups
from floe.write.locations import LocationProvider, data_file_name
from floe.write.parquet_files import ParquetFileWriter, ParquetSettings
from floe.write.task_writer import TaskWriter

__all__ = [
    "DELETES_SUFFIX",
    "POSITION_DELETE_SCHEMA",
    "ChangeKind",
    "DeltaTaskWriter",
    "change_kinds",
    "check_upsert_keys",
]

DELETES_SUFFIX = "deletes"
DELETION_VECTOR_V1 = "deletion-vector-v1"

POSITION_DELETE_SCHEMA = Schema(
    NestedField(POSITION_DELETE_FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(POSITION_DELETE_POS_ID, "pos", LongType(), required=True),
)


class ChangeKind(Enum):
    """A changelog row's kind, as Flink's RowKind names them."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"


# Spellings accepted in an operation column: Flink's RowKind short strings and names, and the
# ``_change_type`` values of Iceberg's changelog views (create_changelog_view).
_KIND_SPELLINGS: dict[str, ChangeKind] = {
    "+i": ChangeKind.INSERT, "insert": ChangeKind.INSERT, "i": ChangeKind.INSERT,
    "-u": ChangeKind.UPDATE_BEFORE, "update_before": ChangeKind.UPDATE_BEFORE,
    "update_preimage": ChangeKind.UPDATE_BEFORE,
    "+u": ChangeKind.UPDATE_AFTER, "update_after": ChangeKind.UPDATE_AFTER,
    "update_postimage": ChangeKind.UPDATE_AFTER, "u": ChangeKind.UPDATE_AFTER,
    "-d": ChangeKind.DELETE, "delete": ChangeKind.DELETE, "d": ChangeKind.DELETE,
}
_KIND_CODES = {ChangeKind.INSERT: 0, ChangeKind.UPDATE_BEFORE: 1, ChangeKind.UPDATE_AFTER: 2, ChangeKind.DELETE: 3}


def change_kinds(ops: pa.Array | pa.ChunkedArray, *, table_name: str, column: str) -> np.ndarray:
    """Codes 0..3 (+I, -U, +U, -D) for an operation column; one unknown or null value fails the batch."""
    if isinstance(ops, pa.ChunkedArray):
        ops = ops.combine_chunks()
    encoded = pc.dictionary_encode(ops)
    codes = []
    for value in encoded.dictionary.to_pylist():
        kind = _KIND_SPELLINGS.get(str(value).strip().lower()) if value is not None else None
        if kind is None:
            raise ValidationError(
                f"Changes for table {table_name}: operation column {column!r} holds {value!r}; expected one of "
                "+I, -U, +U, -D (or insert, update_before, update_after, delete)"
            )
        codes.append(_KIND_CODES[kind])
    if encoded.indices.null_count:
        raise ValidationError(f"Changes for table {table_name}: operation column {column!r} holds NULL")
    lookup = np.asarray(codes, dtype=np.int8)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    return lookup[indices] if len(lookup) else np.zeros(0, dtype=np.int8)


def check_upsert_keys(schema: Schema, spec: PartitionSpec, key_ids: Iterable[int], *, table_name: str) -> None:
    """Upsert deletes a key only in the partition of its new row: every partition source must be a key."""
    keys = set(key_ids)
    missing = [schema.find_column_name(pf.source_id) for pf in spec.fields
               if not pf.transform.is_void and pf.source_id not in keys]
    if missing:
        raise ValidationError(
            f"Upsert into table {table_name}: partition source column(s) {', '.join(map(str, missing))} must be "
            "identifier fields (an upsert deletes a key only in the partition of its new row)"
        )


@dataclass
class _DeleteFiles:
    """One open delete file per partition tuple."""

    writers: dict[tuple[Any, ...], ParquetFileWriter] = field(default_factory=dict)


class DeltaTaskWriter:
    """Applies one task's ordered changes as data files, equality deletes and position deletes."""

    def __init__(
        self,
        *,
        schema: Schema,
        spec: PartitionSpec,
        key_field_ids: tuple[int, ...],
        upsert: bool,
        properties: Mapping[str, str],
        locations: LocationProvider,
        io: FileIO,
        format_version: int,
        table_name: str = "",
        partition_id: int = 0,
        task_id: int = 0,
        operation_id: str | None = None,
    ) -> None:
        if not key_field_ids:
            raise ValidationError(
                f"Table {table_name} has no identifier fields: set them (ALTER TABLE ... SET IDENTIFIER FIELDS) "
                "before applying changes"
            )
        if upsert:
            check_upsert_keys(schema, spec, key_field_ids, table_name=table_name)
        self.schema, self.spec, self.key_field_ids, self.upsert = schema, spec, key_field_ids, upsert
        self.properties, self.locations, self.io = properties, locations, io
        self.format_version, self.table_name = format_version, table_name
        self.partition_id, self.task_id = partition_id, task_id
        self.operation_id = operation_id or str(uuid.uuid4())
        self.arrow_schema = schema_to_arrow(schema)
        self.key_schema = schema.select([schema.find_column_name(i) or "" for i in key_field_ids])
        self.key_arrow_schema = schema_to_arrow(self.key_schema)
        self.settings = ParquetSettings.from_properties(properties, table_name=table_name, deletes=True)
        self._data = TaskWriter(
            schema=schema, spec=spec, properties=properties, locations=locations, io=io, table_name=table_name,
            partition_id=partition_id, task_id=task_id, operation_id=self.operation_id,
        )
        # key -> (partition, ordinal of the row among the rows this writer sent to that partition)
        self._inserted: dict[tuple[Any, ...], tuple[tuple[Any, ...], int]] = {}
        self._next_ordinal: dict[tuple[Any, ...], int] = {}
        self._deleted_ordinals: dict[tuple[Any, ...], list[int]] = {}
        self._equality = _DeleteFiles()
        self._file_count = 0
        self._created: list[str] = []
        self.rows_inserted = 0
        self.keys_deleted = 0

    # -- writing ---------------------------------------------------------------------------------
    def write(self, rows: pa.Table | pa.RecordBatch, kinds: np.ndarray) -> None:
        """Apply changes in order: ``rows`` laid out by name as the table schema, ``kinds`` their codes."""
        if rows.num_rows == 0:
            return
        table = conform(rows, self.arrow_schema, self.schema, table_name=self.table_name)
        partition_of = self._partitions(table)
        keys = self._keys(table)
        inserts: dict[tuple[Any, ...], list[int]] = {}
        equality: dict[tuple[Any, ...], list[int]] = {}
        insert_kinds = (0, 2)
        for i, (kind, key) in enumerate(zip(kinds.tolist(), keys, strict=True)):
            part = partition_of[i]
            if kind in insert_kinds:
                if self.upsert:
                    self._delete_key(key, part, i, equality)
                else:
                    earlier = self._inserted.pop(key, None)
                    if earlier is not None:  # inserted twice in one commit: the later row wins
                        self._deleted_ordinals.setdefault(earlier[0], []).append(earlier[1])
                ordinal = self._next_ordinal.get(part, 0)
                self._next_ordinal[part] = ordinal + 1
                self._inserted[key] = (part, ordinal)
                inserts.setdefault(part, []).append(i)
            elif kind == 1 and self.upsert:
                continue  # upsert: the +U that follows deletes the key
            else:
                self._delete_key(key, part, i, equality)
        for part, idx in inserts.items():
            self._data.write_partition(part, table.take(pa.array(idx, pa.int64())))
            self.rows_inserted += len(idx)
        if equality:
            key_rows = table.select([f.name for f in self.key_schema.fields])
            for part, idx in equality.items():
                self._equality_writer(part).write(
                    conform(key_rows.take(pa.array(idx, pa.int64())), self.key_arrow_schema, self.key_schema,
                            table_name=self.table_name)
                )

    def _delete_key(self, key: tuple[Any, ...], part: tuple[Any, ...], row: int,
                    equality: dict[tuple[Any, ...], list[int]]) -> None:
        self.keys_deleted += 1
        earlier = self._inserted.pop(key, None)
        if earlier is not None:
            self._deleted_ordinals.setdefault(earlier[0], []).append(earlier[1])
        else:
            equality.setdefault(part, []).append(row)

    def _partitions(self, table: pa.Table) -> list[tuple[Any, ...]]:
        groups = partition_groups(table, self.spec, self.schema)
        if len(groups) == 1 and groups[0].indices is None:
            return [groups[0].partition] * table.num_rows
        out: list[tuple[Any, ...]] = [()] * table.num_rows
        for g in groups:
            assert g.indices is not None
            for i in g.indices.tolist():
                out[i] = g.partition
        return out

    def _keys(self, table: pa.Table) -> list[tuple[Any, ...]]:
        columns = []
        for fid in self.key_field_ids:
            first, *rest = (self.schema.find_field(i).name for i in self.schema.accessor_path(fid))
            col: Any = table.column(first)
            for name in rest:
                col = pc.struct_field(col, name)
            columns.append(col.to_pylist())
        return list(zip(*columns, strict=True))

    def _equality_writer(self, part: tuple[Any, ...]) -> ParquetFileWriter:
        writer = self._equality.writers.get(part)
        if writer is None:
            writer = self._new_file(self.key_arrow_schema, self.key_schema, part)
            self._equality.writers[part] = writer
        return writer

    def _new_file(self, arrow_schema: pa.Schema, schema: Schema, part: tuple[Any, ...]) -> ParquetFileWriter:
        self._file_count += 1
        name = data_file_name(self.partition_id, self.task_id, self.operation_id, self._file_count,
                              suffix=DELETES_SUFFIX)
        location = self.locations.new_location(name, self._partition_path(part))
        self._created.append(location)
        return ParquetFileWriter(
            self.io, location, arrow_schema, self.settings, schema=schema, properties=self.properties,
            partition=part, spec_id=self.spec.spec_id, count_nans=False,
        )

    def _partition_path(self, part: tuple[Any, ...]) -> str:
        return self.spec.partition_path(part, self.schema) if self.spec.fields else ""

    # -- finishing -------------------------------------------------------------------------------
    def close(self) -> list[DataFile]:
        """Close every file; the data files, then equality deletes, then position deletes (or vectors)."""
        try:
            data = self._data.close()
            equality = [
                w.close().with_changes(content=FileContent.EQUALITY_DELETES, equality_ids=self.key_field_ids,
                                       sort_order_id=None, split_offsets=None)
                for w in self._equality.writers.values()
            ]
            self._equality.writers.clear()
            positions = self._position_deletes(data)
            self._inserted.clear()
            return data + equality + positions
        except BaseException:
            self.abort()
            raise

    def _position_deletes(self, data: list[DataFile]) -> list[DataFile]:
        """Resolve deleted ordinals to (file, position) and write them sorted by path, then position."""
        if not any(self._deleted_ordinals.values()):
            return []
        per_file: dict[str, tuple[DataFile, list[int]]] = {}
        for part, ordinals in self._deleted_ordinals.items():
            files = [f for f in data if f.partition == part]  # in creation order: a partition's files roll
            starts = np.cumsum([0] + [f.record_count for f in files])
            for ordinal in ordinals:
                k = int(np.searchsorted(starts, ordinal, side="right")) - 1
                f = files[k]
                per_file.setdefault(f.file_path, (f, []))[1].append(ordinal - int(starts[k]))
        self._deleted_ordinals.clear()
        if self.format_version >= 3:
            return self._deletion_vectors(per_file)
        out: list[DataFile] = []
        by_partition: dict[tuple[Any, ...], list[tuple[str, list[int]]]] = {}
        for path, (f, positions) in sorted(per_file.items()):
            by_partition.setdefault(f.partition, []).append((path, sorted(positions)))
        arrow_schema = schema_to_arrow(POSITION_DELETE_SCHEMA)
        for part, entries in by_partition.items():
            writer = self._new_file(arrow_schema, POSITION_DELETE_SCHEMA, part)
            paths = [p for p, positions in entries for _ in positions]
            pos = [x for _, positions in entries for x in positions]
            writer.write(pa.table([pa.array(paths, pa.string()), pa.array(pos, pa.int64())], schema=arrow_schema))
            written = writer.close().with_changes(
                content=FileContent.POSITION_DELETES, sort_order_id=None, split_offsets=None,
                referenced_data_file=entries[0][0] if len(entries) == 1 else None,
            )
            out.append(written)
        return out

    def _deletion_vectors(self, per_file: dict[str, tuple[DataFile, list[int]]]) -> list[DataFile]:
        owners = sorted(per_file.items())
        blobs = [
            PuffinBlob(
                type=DELETION_VECTOR_V1, fields=(POSITION_DELETE_POS_ID,), snapshot_id=-1, sequence_number=-1,
                data=encode_deletion_vector(np.unique(np.asarray(positions, dtype=np.int64))),
                properties={"referenced-data-file": path, "cardinality": str(len(set(positions)))},
            )
            for path, (_, positions) in owners
        ]
        payload, _, metas = encode_puffin(blobs, properties={"created-by": "Floe"})
        self._file_count += 1
        name = data_file_name(self.partition_id, self.task_id, self.operation_id, self._file_count,
                              suffix=DELETES_SUFFIX).removesuffix(".parquet") + ".puffin"
        location = self.locations.new_location(name)
        self._created.append(location)
        self.io.new_output(location).write_bytes(payload)
        return [
            DataFile(
                content=FileContent.POSITION_DELETES, file_path=location, file_format=FileFormat.PUFFIN,
                partition=f.partition, spec_id=f.spec_id, record_count=int(blob.properties["cardinality"]),
                file_size_in_bytes=len(payload), referenced_data_file=path, content_offset=meta.offset,
                content_size_in_bytes=meta.length,
            )
            for (path, (f, _)), blob, meta in zip(owners, blobs, metas, strict=True)
        ]

    def abort(self) -> None:
        """Delete every file this writer created (best effort)."""
        self._data.abort()
        for w in self._equality.writers.values():
            w.abort()
        self._equality.writers.clear()
        if self._created:
            self.io.delete_many(self._created)
        self._created.clear()

    @property
    def created_locations(self) -> list[str]:
        return self._data.opened_locations + list(self._created)
