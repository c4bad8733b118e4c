"""Writing manifests (spec "Manifests"): entries -> Avro, with counts and partition field summaries."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from typing import Any, BinaryIO

from floe.errors import UnsupportedError, ValidationError
from floe.serde.avro_encoder import ContainerWriter
from floe.serde.avro_schemas import V1_BLOCK_SIZE_IN_BYTES, manifest_entry_schema
from floe.serde.json_types import partition_fields_to_json, schema_to_json
from floe.serde.single_value import encoder_for, unscaled_decimal
from floe.spec.manifest import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import (
    DecimalType,
    DoubleType,
    FloatType,
    NestedField,
    StructType,
    UUIDType,
    decimal_required_bytes,
)

__all__ = ["ManifestWriter"]


def _partition_writer(partition_type: StructType) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    plan: list[tuple[str, Callable[[Any], Any] | None]] = []
    for f in partition_type.fields:
        t = f.field_type
        conv: Callable[[Any], Any] | None = None
        if isinstance(t, UUIDType):
            conv = lambda v: v.bytes if isinstance(v, uuid.UUID) else bytes(v)
        elif isinstance(t, DecimalType):
            size = decimal_required_bytes(t.precision)

            def conv(v: Any, _scale: int = t.scale, _size: int = size) -> bytes:
                return unscaled_decimal(v, _scale).to_bytes(_size, "big", signed=True)

        plan.append((f.name, conv))

    def write(values: tuple[Any, ...]) -> dict[str, Any]:
        if len(values) != len(plan):
            raise ValidationError(
                f"partition tuple {values!r} does not match partition type {partition_type}"
            )
        return {name: (v if conv is None or v is None else conv(v)) for (name, conv), v in zip(plan, values)}

    return write


class _FieldSummary:
    """Running partition-field summary (spec "Manifest Lists": field_summary)."""

    __slots__ = ("contains_nan", "contains_null", "encode", "is_float", "lower", "upper")

    def __init__(self, field: NestedField) -> None:
        try:
            self.encode: Callable[[Any], bytes] | None = encoder_for(field.field_type)
        except UnsupportedError:  # v3 unknown: always null, no bounds
            self.encode = None
        self.is_float = isinstance(field.field_type, (FloatType, DoubleType))
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def update(self, value: Any) -> None:
        if value is None:
            self.contains_null = True
        elif self.is_float and math.isnan(value):
            self.contains_nan = True
        else:
            if self.lower is None or value < self.lower:
                self.lower = value
            if self.upper is None or value > self.upper:
                self.upper = value

    def to_summary(self) -> PartitionFieldSummary:
        return PartitionFieldSummary(
            contains_null=self.contains_null,
            contains_nan=self.contains_nan,
            lower_bound=None if self.lower is None or self.encode is None else self.encode(self.lower),
            upper_bound=None if self.upper is None or self.encode is None else self.encode(self.upper),
        )


class ManifestWriter:
    """Streams manifest entries into an Avro manifest and summarises them into a ManifestFile.

    New files are written ``ADDED`` with null sequence numbers (inherited from the manifest list at read
    time, spec "Sequence Number Inheritance"); ``existing`` keeps the numbers a file already has.
    """

    def __init__(
        self,
        out: BinaryIO,
        *,
        spec: PartitionSpec,
        schema: Schema,
        format_version: int,
        snapshot_id: int,
        content: ManifestContent = ManifestContent.DATA,
        manifest_path: str = "",
        compression: str = "deflate",
        partition_type: StructType | None = None,
    ) -> None:
        """Start a manifest.

        Args:
            out: binary file object receiving the Avro bytes.
            spec: the partition spec every entry's partition tuple follows.
            schema: the table schema (written to the header; types the partition fields).
            format_version: 1, 2 or 3.
            snapshot_id: the snapshot adding this manifest.
            content: DATA or DELETES (delete manifests need v2+).
            manifest_path: the manifest's location, recorded in the returned ManifestFile.
            compression: Avro codec.
            partition_type: ``spec``'s partition type; default ``spec.partition_type(schema)``. Pass
                ``TableMetadata.partition_type(spec_id)`` when rewriting manifests of an old spec whose
                source column was dropped.

        Raises:
            ValidationError: delete manifests in v1.
        """
        if format_version == 1 and content != ManifestContent.DATA:
            raise ValidationError("v1 tables cannot have delete manifests")
        self._out = out
        self._start = out.tell()
        self._spec = spec
        self._format_version = format_version
        self._snapshot_id = snapshot_id
        self._content = ManifestContent(content)
        self._path = manifest_path
        if partition_type is None:
            partition_type = spec.partition_type(schema)
        self._write_partition = _partition_writer(partition_type)
        self._summaries = [_FieldSummary(f) for f in partition_type.fields]
        meta = {
            "schema": json.dumps(schema_to_json(schema), separators=(",", ":")),
            "schema-id": str(schema.schema_id),
            "partition-spec": json.dumps(partition_fields_to_json(spec), separators=(",", ":")),
            "partition-spec-id": str(spec.spec_id),
            "format-version": str(format_version),
        }
        if format_version >= 2:
            meta["content"] = "data" if self._content == ManifestContent.DATA else "deletes"
        self._writer = ContainerWriter(
            out, manifest_entry_schema(format_version, partition_type), metadata=meta, codec=compression
        )
        self._counts = {s: [0, 0] for s in ManifestEntryStatus}
        self._min_seq: int | None = None
        self._closed: ManifestFile | None = None

    # -- entry kinds ------------------------------------------------------------------------------
    def add(
        self, data_file: DataFile | ManifestEntry, *, data_sequence_number: int | None = None
    ) -> ManifestWriter:
        """Record a file added by this snapshot (sequence numbers inherited unless given)."""
        f = data_file.data_file if isinstance(data_file, ManifestEntry) else data_file
        self._write(
            ManifestEntry(ManifestEntryStatus.ADDED, self._snapshot_id, data_sequence_number, None, f)
        )
        return self

    def existing(
        self,
        data_file: DataFile | ManifestEntry,
        *,
        snapshot_id: int | None = None,
        data_sequence_number: int | None = None,
        file_sequence_number: int | None = None,
    ) -> ManifestWriter:
        """Record a file carried over from an earlier snapshot, keeping its snapshot and sequence numbers."""
        if isinstance(data_file, ManifestEntry):
            e = data_file
            snapshot_id = e.snapshot_id if snapshot_id is None else snapshot_id
            data_sequence_number = e.sequence_number if data_sequence_number is None else data_sequence_number
            file_sequence_number = (
                e.file_sequence_number if file_sequence_number is None else file_sequence_number
            )
            data_file = e.data_file
        self._write(
            ManifestEntry(
                ManifestEntryStatus.EXISTING,
                snapshot_id,
                data_sequence_number,
                file_sequence_number,
                data_file,
            )
        )
        return self

    def delete(
        self,
        data_file: DataFile | ManifestEntry,
        *,
        data_sequence_number: int | None = None,
        file_sequence_number: int | None = None,
    ) -> ManifestWriter:
        """Record a file removed by this snapshot (informational; keeps its sequence numbers)."""
        if isinstance(data_file, ManifestEntry):
            e = data_file
            data_sequence_number = e.sequence_number if data_sequence_number is None else data_sequence_number
            file_sequence_number = (
                e.file_sequence_number if file_sequence_number is None else file_sequence_number
            )
            data_file = e.data_file
        self._write(
            ManifestEntry(
                ManifestEntryStatus.DELETED,
                self._snapshot_id,
                data_sequence_number,
                file_sequence_number,
                data_file,
            )
        )
        return self

    def add_entry(self, entry: ManifestEntry) -> ManifestWriter:
        """Write an entry exactly as given."""
        self._write(entry)
        return self

    # -- internals --------------------------------------------------------------------------------
    def _write(self, entry: ManifestEntry) -> None:
        if self._closed is not None:
            raise ValidationError(f"manifest {self._path or '<stream>'} is already closed")
        f = entry.data_file
        is_data = f.content == FileContent.DATA
        if is_data != (self._content == ManifestContent.DATA):
            kind = "data" if self._content == ManifestContent.DATA else "delete"
            raise ValidationError(f"cannot write {f.content.name} file {f.file_path} to a {kind} manifest")
        for summary, value in zip(self._summaries, f.partition):
            summary.update(value)
        counts = self._counts[entry.status]
        counts[0] += 1
        counts[1] += f.record_count
        if entry.sequence_number is not None and (
            self._min_seq is None or entry.sequence_number < self._min_seq
        ):
            self._min_seq = entry.sequence_number
        self._writer.write(self._record(entry))

    def _record(self, e: ManifestEntry) -> dict[str, Any]:
        f = e.data_file
        v = self._format_version
        data_file: dict[str, Any] = {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": f.file_format.value,
            "partition": self._write_partition(f.partition),
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "column_sizes": f.column_sizes,
            "value_counts": f.value_counts,
            "null_value_counts": f.null_value_counts,
            "nan_value_counts": f.nan_value_counts,
            "lower_bounds": f.lower_bounds,
            "upper_bounds": f.upper_bounds,
            "key_metadata": f.key_metadata,
            "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
            "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
            "sort_order_id": f.sort_order_id,
            "first_row_id": f.first_row_id,
            "referenced_data_file": f.referenced_data_file,
            "content_offset": f.content_offset,
            "content_size_in_bytes": f.content_size_in_bytes,
        }
        if v == 1:
            data_file["block_size_in_bytes"] = V1_BLOCK_SIZE_IN_BYTES
            snapshot_id = e.snapshot_id if e.snapshot_id is not None else self._snapshot_id
            return {"status": int(e.status), "snapshot_id": snapshot_id, "data_file": data_file}
        return {
            "status": int(e.status),
            "snapshot_id": e.snapshot_id,
            "sequence_number": e.sequence_number,
            "file_sequence_number": e.file_sequence_number,
            "data_file": data_file,
        }

    # -- finish -----------------------------------------------------------------------------------
    def close(self) -> ManifestFile:
        """Flush the Avro file and describe it for the manifest list (counts, partition summaries)."""
        if self._closed is not None:
            return self._closed
        self._writer.flush()
        length = self._out.tell() - self._start
        added, existing, deleted = (
            self._counts[ManifestEntryStatus.ADDED],
            self._counts[ManifestEntryStatus.EXISTING],
            self._counts[ManifestEntryStatus.DELETED],
        )
        v1 = self._format_version == 1
        self._closed = ManifestFile(
            manifest_path=self._path,
            manifest_length=length,
            partition_spec_id=self._spec.spec_id,
            content=self._content,
            sequence_number=0 if v1 else None,
            min_sequence_number=0 if v1 else self._min_seq,
            added_snapshot_id=self._snapshot_id,
            added_files_count=added[0],
            existing_files_count=existing[0],
            deleted_files_count=deleted[0],
            added_rows_count=added[1],
            existing_rows_count=existing[1],
            deleted_rows_count=deleted[1],
            partitions=tuple(s.to_summary() for s in self._summaries),
            key_metadata=None,
            first_row_id=None,
        )
        return self._closed

    def __enter__(self) -> ManifestWriter:  # noqa: PYI034 - Python 3.10 has no typing.Self
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
