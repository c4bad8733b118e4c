"""Manifest and manifest-list Avro files <-> floe.spec.manifest values (spec "Manifests", "Manifest Lists").

Reading resolves every field by its Iceberg field id in the file's own writer schema, so files written
with older field names (``added_data_files_count``), extra vendor fields or missing header keys (files
re-written by other tools) decode alike. Inheritance of snapshot ids, sequence numbers and first row ids
follows the spec's "Sequence Number Inheritance" and "First Row ID Inheritance" rules. No IO beyond the
file objects the caller passes in.
"""

from __future__ import annotations

import datetime as _dt
import functools
import gc
import io
import json
import struct
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, BinaryIO

from floe.errors import FloeError, InvalidMetadataError, ValidationError
from floe.serde.avro_decoder import (
    InflatedContainer,
    Plan,
    Reader,
    compile_plan,
    compile_reader,
    native_reader,
    read_container,
    read_records,
)
from floe.serde.avro_encoder import ContainerWriter
from floe.serde.avro_schemas import manifest_list_schema
from floe.serde.manifest_writer import ManifestWriter
from floe.spec.manifest import (
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
    new_data_file,
    new_manifest_entry,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.types import (
    DecimalType,
    NestedField,
    UUIDType,
)

try:
    from floe.serde import _entries_native
except ImportError:  # built at install where a C compiler is present (setup.py)
    _entries_native = None  # type: ignore[assignment]

__all__ = [
    "IdentityKey",
    "ManifestWriter",
    "iter_manifest",
    "read_manifest",
    "read_manifest_header",
    "read_manifest_list",
    "write_manifest_list",
]

Source = bytes | bytearray | memoryview | BinaryIO

_EPOCH_DATE_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_ONE_MICRO = _dt.timedelta(microseconds=1)
_STATUS = tuple(ManifestEntryStatus)
_CONTENT = tuple(FileContent)
_FORMATS: dict[str, FileFormat] = {f.value: f for f in FileFormat} | {f.value.lower(): f for f in FileFormat}


# -- writer-schema helpers ----------------------------------------------------------------------------
def _open(data: Source) -> BinaryIO:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(data))
    return data


def _describe(fo: Any) -> str:
    return str(getattr(fo, "name", "") or "<in-memory Avro>")


def _unwrap(avro_type: Any) -> Any:
    """The non-null branch of an optional union."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        return branches[0] if len(branches) == 1 else avro_type
    return avro_type


def _names_by_id(record: dict[str, Any]) -> dict[int, str]:
    return {int(f["field-id"]): f["name"] for f in record.get("fields", ()) if "field-id" in f}


def _field_by_id(record: dict[str, Any], field_id: int) -> dict[str, Any] | None:
    fields: list[dict[str, Any]] = record.get("fields", [])
    return next((f for f in fields if f.get("field-id") == field_id), None)


def _map_reader(field: dict[str, Any] | None) -> Callable[[Any], dict[int, Any] | None] | None:
    """How to turn the decoded metrics map into ``dict[int, ...]``; None when the decoder already did."""
    if field is None:
        return None
    arr = _unwrap(field["type"])
    if isinstance(arr, dict) and arr.get("type") == "map":

        def from_avro_map(raw: Any) -> dict[int, Any] | None:  # string keys (non-Java writers)
            return None if raw is None else {int(k): v for k, v in raw.items()}

        return from_avro_map
    if isinstance(arr, dict) and arr.get("type") == "array" and arr.get("logicalType") != "map":

        def from_kv_list(raw: Any) -> dict[int, Any] | None:  # array of (key, value) records, no map hint
            return None if raw is None else {kv[0]: kv[1] for kv in raw}

        return from_kv_list
    return None


# -- partition values ---------------------------------------------------------------------------------
def _to_uuid(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return uuid.UUID(bytes=bytes(v))
    if isinstance(v, str):
        return uuid.UUID(v)
    return v


def _bytes_to_decimal(scale: int) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, (bytes, bytearray)):
            return Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
        return v

    return conv


def _iceberg_converter(field: NestedField | None, avro_type: Any) -> Callable[[Any], Any] | None:
    """Fix-ups when the Avro schema lacks a logical type the table's partition type implies."""
    t = _unwrap(avro_type)
    if field is None or (isinstance(t, dict) and "logicalType" in t):
        return None
    if isinstance(field.field_type, UUIDType):
        return _to_uuid
    if isinstance(field.field_type, DecimalType):
        return _bytes_to_decimal(field.field_type.scale)
    return None


def _partition_reader(
    partition_record: dict[str, Any], spec: PartitionSpec | None, schema: Schema | None
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]] | None:
    """How to turn the decoded partition record (a tuple in Avro field order) into the spec-ordered
    partition tuple; None when it already is one."""
    avro_fields = list(partition_record.get("fields", ()))
    by_id = {f.get("field-id"): i for i, f in enumerate(avro_fields)}
    target_ids: list[int] | None = None
    iceberg_fields: dict[int, NestedField] = {}
    if spec is not None:
        target_ids = [pf.field_id for pf in spec.fields]
        if schema is not None:
            try:
                iceberg_fields = {f.field_id: f for f in spec.partition_type(schema).fields}
            except FloeError:  # a spec whose source columns were dropped: the Avro types suffice
                iceberg_fields = {}
    positions: list[int | None]
    if target_ids is not None and all(i in by_id for i in target_ids):
        positions = [by_id[i] for i in target_ids]
    elif target_ids is not None and len(target_ids) == len(avro_fields):
        positions = list(range(len(avro_fields)))  # ids differ (re-written files): match by position
    else:
        positions = list(range(len(avro_fields)))
        if target_ids is not None:
            positions += [None] * max(0, len(target_ids) - len(avro_fields))
    convs: list[Callable[[Any], Any] | None] = []
    for i, pos in enumerate(positions):
        # The decoder already yields Floe's representation for Avro logical types; only Avro schemas
        # missing a logical type the partition type implies (uuid/decimal as plain bytes) need fixing.
        conv = None
        if pos is not None and target_ids is not None and i < len(target_ids):
            conv = _iceberg_converter(iceberg_fields.get(target_ids[i]), avro_fields[pos]["type"])
        convs.append(conv)

    if all(c is None for c in convs) and positions == list(range(len(avro_fields))):
        return None  # the decoded tuple already holds the values in spec order

    plan = list(zip(positions, convs))

    def read(rec: tuple[Any, ...]) -> tuple[Any, ...]:
        out = []
        for pos, conv in plan:
            v = rec[pos] if pos is not None else None
            out.append(v if conv is None or v is None else conv(v))
        return tuple(out)

    return read


# -- manifest lists -----------------------------------------------------------------------------------
def _summary(rec: dict[str, Any], names: dict[int, str]) -> PartitionFieldSummary:
    g = rec.get
    return PartitionFieldSummary(
        contains_null=bool(g(names.get(509, ""), False)),
        contains_nan=g(names.get(518, "")),
        lower_bound=g(names.get(510, "")),
        upper_bound=g(names.get(511, "")),
    )


def read_manifest_list(data: Source) -> list[ManifestFile]:
    """Decode a manifest list (any format version) into ManifestFile values.

    v1 lists have no sequence numbers or content: they read as 0 and DATA (spec Appendix E).

    Raises:
        InvalidMetadataError: the bytes are not a manifest list.
    """
    fo = _open(data)
    try:
        metadata, blocks = read_container(fo)
        schema = json.loads(metadata["avro.schema"])
        read = compile_reader(schema)
        records = [rec for block, count in blocks for rec in read_records(read, block, count)]
    except (ValueError, KeyError, EOFError, TypeError, IndexError, struct.error) as exc:
        raise InvalidMetadataError(f"cannot read manifest list {_describe(fo)}: {exc}") from exc
    n = _names_by_id(schema)
    if 500 not in n:
        raise InvalidMetadataError(f"{_describe(fo)} is not a manifest list (no manifest_path field 500)")
    part_field = _field_by_id(schema, 507)
    summary_names: dict[int, str] = {}
    if part_field is not None:
        arr = _unwrap(part_field["type"])
        if isinstance(arr, dict) and isinstance(arr.get("items"), dict):
            summary_names = _names_by_id(arr["items"])
    has_seq = 515 in n
    out = []
    for rec in records:
        g = rec.get
        parts = g(n.get(507, ""))
        content = g(n.get(517, ""))
        out.append(
            ManifestFile(
                manifest_path=rec[n[500]],
                manifest_length=g(n.get(501, "")),
                partition_spec_id=g(n.get(502, "")) or 0,
                content=ManifestContent(content or 0),
                sequence_number=g(n[515]) if has_seq else 0,
                min_sequence_number=g(n.get(516, "")) if has_seq else 0,
                added_snapshot_id=g(n.get(503, "")),
                added_files_count=g(n.get(504, "")),
                existing_files_count=g(n.get(505, "")),
                deleted_files_count=g(n.get(506, "")),
                added_rows_count=g(n.get(512, "")),
                existing_rows_count=g(n.get(513, "")),
                deleted_rows_count=g(n.get(514, "")),
                partitions=None if parts is None else tuple(_summary(p, summary_names) for p in parts),
                key_metadata=g(n.get(519, "")),
                first_row_id=g(n.get(520, "")),
            )
        )
    return out


def _summary_record(s: PartitionFieldSummary) -> dict[str, Any]:
    return {
        "contains_null": bool(s.contains_null),
        "contains_nan": s.contains_nan,
        "lower_bound": s.lower_bound,
        "upper_bound": s.upper_bound,
    }


def write_manifest_list(
    out: BinaryIO,
    manifests: Iterable[ManifestFile],
    *,
    format_version: int,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    first_row_id: int | None = None,
    compression: str = "deflate",
) -> list[ManifestFile]:
    """Write a manifest list for a snapshot.

    Manifests with no sequence number yet (written for this snapshot) get ``sequence_number``; in v3,
    data manifests without a first row id get consecutive ranges starting at ``first_row_id``.

    Args:
        out: binary file object to write to.
        manifests: the snapshot's manifests.
        format_version: table format version (1, 2 or 3).
        snapshot_id: the snapshot the list belongs to.
        parent_snapshot_id: its parent, or None.
        sequence_number: the snapshot's sequence number (ignored in v1).
        first_row_id: the snapshot's first row id (v3).
        compression: Avro codec, ``deflate`` (the Java default) or ``null``.

    Returns:
        The ManifestFile values as written (with assigned sequence numbers and first row ids).

    Raises:
        ValidationError: a v1 list given delete manifests, or a v3 list without ``first_row_id``.
    """
    schema = manifest_list_schema(format_version)
    meta = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "format-version": str(format_version),
    }
    if format_version >= 2:
        meta["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        if first_row_id is None:
            raise ValidationError(f"v3 manifest list of snapshot {snapshot_id} needs a first-row-id")
        meta["first-row-id"] = str(first_row_id)
    next_row_id = first_row_id
    written: list[ManifestFile] = []
    records: list[dict[str, Any]] = []
    for m in manifests:
        if format_version == 1 and m.content != ManifestContent.DATA:
            raise ValidationError(f"v1 manifest list cannot hold delete manifest {m.manifest_path}")
        if format_version == 1:
            m = m.with_changes(sequence_number=0, min_sequence_number=0)
        if format_version < 3 and m.first_row_id is not None:
            m = m.with_changes(first_row_id=None)  # not part of v1/v2 manifest lists
        if format_version >= 2:
            seq = sequence_number if m.sequence_number is None or m.sequence_number < 0 else m.sequence_number
            min_seq = (
                seq if m.min_sequence_number is None or m.min_sequence_number < 0 else m.min_sequence_number
            )
            m = m.with_changes(sequence_number=seq, min_sequence_number=min_seq)
        if format_version >= 3 and m.content == ManifestContent.DATA and m.first_row_id is None:
            assert next_row_id is not None
            m = m.with_changes(first_row_id=next_row_id)
            next_row_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        written.append(m)
        rec: dict[str, Any] = {
            "manifest_path": m.manifest_path,
            "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id,
            "content": int(m.content),
            "sequence_number": m.sequence_number,
            "min_sequence_number": m.min_sequence_number,
            "added_snapshot_id": m.added_snapshot_id if m.added_snapshot_id is not None else snapshot_id,
            "added_files_count": m.added_files_count or 0,
            "existing_files_count": m.existing_files_count or 0,
            "deleted_files_count": m.deleted_files_count or 0,
            "added_rows_count": m.added_rows_count or 0,
            "existing_rows_count": m.existing_rows_count or 0,
            "deleted_rows_count": m.deleted_rows_count or 0,
            "partitions": None if m.partitions is None else [_summary_record(s) for s in m.partitions],
            "key_metadata": m.key_metadata,
            "first_row_id": m.first_row_id,
        }
        records.append(rec)
    writer = ContainerWriter(out, schema, metadata=meta, codec=compression)
    for rec in records:
        writer.write(rec)
    writer.flush()
    return written


# -- manifests: reading ---------------------------------------------------------------------------------
def read_manifest_header(data: Source) -> dict[str, str]:
    """The key/value metadata of a manifest's Avro header (``schema``, ``partition-spec`` ...)."""
    fo = _open(data)
    try:
        metadata, _ = read_container(fo)
    except (ValueError, EOFError) as exc:
        raise InvalidMetadataError(f"cannot read Avro header of {_describe(fo)}: {exc}") from exc
    return metadata


def iter_manifest(
    data: Source,
    *,
    manifest_file: ManifestFile | None = None,
    partition_spec: PartitionSpec | None = None,
    schema: Schema | None = None,
    stats_columns: Collection[int] | None = None,
) -> Iterator[ManifestEntry]:
    """Stream the entries of a manifest, applying inheritance from ``manifest_file`` when given.

    Args:
        data: the manifest's bytes or a binary file object.
        manifest_file: its manifest-list entry (source of inherited snapshot id, sequence numbers,
            first row ids and spec id).
        partition_spec: the spec the manifest was written with (orders the partition tuple and types
            partition values whose Avro schema lacks a logical type).
        schema: the table schema (with ``partition_spec``, gives the partition field types).
        stats_columns: None (the default) decodes every column metric. A collection of field ids keeps
            the six metrics maps (sizes, value/null/NaN counts, bounds) for those columns only; empty, the
            maps are skipped without decoding and read as None ("not loaded"). Scan planning uses this:
            pruning needs the filter's columns only, and the maps are most of a manifest's decode time.

    Raises:
        InvalidMetadataError: the bytes are not a manifest.
    """
    for block in _entry_blocks(data, manifest_file, partition_spec, schema, stats_columns, pause_gc_per_block=True):
        yield from block


def read_manifest(
    data: Source | InflatedContainer,
    *,
    manifest_file: ManifestFile | None = None,
    partition_spec: PartitionSpec | None = None,
    schema: Schema | None = None,
    stats_columns: Collection[int] | None = None,
    prefilter: tuple[Any, ...] | None = None,
    dropped: Callable[[int], None] | None = None,
) -> list[ManifestEntry]:
    """Decode all entries of a manifest (see iter_manifest for the arguments).

    ``prefilter`` (InclusiveMetricsEvaluator.prefilter) lets the C decoder leave out live entries whose
    metrics prove it cannot match; their number goes to ``dropped``. Without the C decoder nothing is left out.
    """
    out: list[ManifestEntry] = []
    with _gc_paused():
        for block in _entry_blocks(
            data, manifest_file, partition_spec, schema, stats_columns, pause_gc_per_block=False,
            prefilter=prefilter, dropped=dropped,
        ):
            out += block  # a block at a time: a generator step per entry shows at a million entries
    return out


# Field ids of data_file's metrics maps (spec "Manifests": 108, 109, 110, 137, 125, 128).
_STATS_FIELD_IDS = (108, 109, 110, 137, 125, 128)


@functools.lru_cache(maxsize=64)
def _compiled(
    schema_text: str, stats_columns: frozenset[int] | None, prefilter: tuple[Any, ...] | None = None
) -> Reader:
    """Parse and compile a manifest writer schema once per (schema, projection, prefilter): a table's
    manifests share a handful of schemas, and compiling costs milliseconds."""
    writer_schema = json.loads(schema_text)
    projection = None
    if stats_columns is not None:
        keep = stats_columns or None  # nothing to keep: skip the maps entirely
        projection = {fid: keep for fid in _STATS_FIELD_IDS}
    if prefilter is not None:
        plan = compile_plan(writer_schema, projection=projection, as_tuples=True)
        positions = _prefilter_positions(writer_schema)
        native = native_reader(plan, prefilter=prefilter, positions=positions, probe=_probe_plan(plan, positions))
        if native is not None:
            return native
    return compile_reader(writer_schema, projection=projection, as_tuples=True)


# The positions the C prefilter reads (floe/serde/_avro_native.c, P_STATUS ... P_UPPER): entry fields
# status and data_file, then data_file's record_count, value/null/NaN counts, lower and upper bounds.
_PREFILTER_ENTRY_IDS = (0, 2)
_PREFILTER_FILE_IDS = (103, 109, 110, 137, 125, 128)


def _prefilter_positions(writer_schema: dict[str, Any]) -> tuple[int, ...]:
    top = _positions_by_id(writer_schema)
    df_field = _field_by_id(writer_schema, 2)
    d = _positions_by_id(_unwrap(df_field["type"])) if df_field is not None else {}
    return tuple(top.get(i, -1) for i in _PREFILTER_ENTRY_IDS) + tuple(d.get(i, -1) for i in _PREFILTER_FILE_IDS)


def _skipped(plan: Plan) -> Plan:
    return plan if plan[0] == "skip" else ("skip", plan)


def _probe_plan(plan: Plan, positions: tuple[int, ...]) -> Plan | None:
    """The entry plan with every field the prefilter does not read skipped (same positions; None when the
    entry is not the record of tuples the prefilter expects)."""
    status, data_file, *file_fields = positions
    if plan[0] != "record" or not plan[3] or not 0 <= data_file < len(plan[2]):
        return None
    df_plan = plan[2][data_file]
    if df_plan[0] != "record":
        return None
    kept = {p for p in file_fields if p >= 0}
    df_fields = tuple(f if i in kept else _skipped(f) for i, f in enumerate(df_plan[2]))
    fields = tuple(
        ("record", df_plan[1], df_fields, df_plan[3]) if i == data_file else f if i == status else _skipped(f)
        for i, f in enumerate(plan[2])
    )
    return ("record", plan[1], fields, plan[3])


def _entry_blocks(
    data: Source | InflatedContainer,
    manifest_file: ManifestFile | None,
    partition_spec: PartitionSpec | None,
    schema: Schema | None,
    stats_columns: Collection[int] | None,
    *,
    pause_gc_per_block: bool,
    prefilter: tuple[Any, ...] | None = None,
    dropped: Callable[[int], None] | None = None,
) -> Iterator[list[ManifestEntry]]:
    """The manifest's entries, one list per Avro block."""
    fo = _open(b"" if isinstance(data, InflatedContainer) else data)
    try:
        if isinstance(data, InflatedContainer):  # read and decompressed ahead by a prefetch thread
            metadata, blocks = data.metadata, iter(data.blocks)
        else:
            metadata, blocks = read_container(fo)
        keep = None if stats_columns is None else frozenset(stats_columns)
        schema_text = metadata["avro.schema"]
        read = _compiled(schema_text, keep, prefilter)
    except (ValueError, KeyError, EOFError) as exc:
        raise InvalidMetadataError(f"cannot read manifest {_describe(fo)}: {exc}") from exc
    build = _entry_builder(schema_text, metadata, manifest_file, partition_spec, schema, _describe(fo))
    try:
        for block, count in blocks:
            if pause_gc_per_block:
                with _gc_paused():
                    records = read_records(read, block, count)
                    entries = build(records)
            else:
                records = read_records(read, block, count)
                entries = build(records)
            if dropped is not None and len(records) < count:
                dropped(count - len(records))
            yield entries
    except (ValueError, EOFError, TypeError, IndexError, KeyError, struct.error) as exc:
        raise InvalidMetadataError(f"corrupt manifest {_describe(fo)}: {exc}") from exc


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Decoding allocates many small containers and none form reference cycles: the cyclic collector
    # would repeatedly scan them for nothing (measured: ~20% of decode time on a 100k-entry manifest).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _positions_by_id(record: dict[str, Any]) -> dict[int, int]:
    return {int(f["field-id"]): i for i, f in enumerate(record.get("fields", ())) if "field-id" in f}


def _entry_builder(
    schema_text: str,
    header: dict[str, Any],
    manifest_file: ManifestFile | None,
    spec: PartitionSpec | None,
    schema: Schema | None,
    where: str,
) -> BlockBuilder:
    """A function from a block's decoded manifest_entry records (tuples in writer-schema field order) to
    ManifestEntries of this manifest: the cached code for its writer schema, bound to its inherited values."""
    try:
        make_build = _entry_builder_factory(schema_text, IdentityKey(spec), IdentityKey(schema))
    except _NotAManifestError as exc:
        raise InvalidMetadataError(f"{where}{exc}") from None
    spec_id_text = header.get("partition-spec-id")
    if manifest_file is not None:
        spec_id = manifest_file.partition_spec_id
    elif spec_id_text is not None:
        spec_id = int(spec_id_text)
    else:
        spec_id = spec.spec_id if spec is not None else 0
    if manifest_file is None:
        return make_build(spec_id, None, None, [None])
    return make_build(
        spec_id, manifest_file.added_snapshot_id, manifest_file.sequence_number, [manifest_file.first_row_id]
    )


class _NotAManifestError(Exception):
    """A writer schema without a manifest entry's required fields (the caller names the file)."""


class IdentityKey:
    """A cache key comparing its object by identity; it holds the object, so the id stays unique while cached.

    A table's manifests are decoded with the same spec and schema objects, and hashing a wide schema per
    manifest would cost more than the lookup saves."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdentityKey) and other.obj is self.obj


# A block's decoded records -> its entries.
BlockBuilder = Callable[[list[tuple[Any, ...]]], list[ManifestEntry]]
# (spec id, inherited snapshot id, manifest sequence number, [next first row id]) -> a BlockBuilder
MakeBlockBuilder = Callable[[int, int | None, int | None, list[int | None]], BlockBuilder]

# The record positions floe/serde/_entries_native.c reads (its L_* order): manifest_entry fields by id,
# then data_file fields by id.
_NATIVE_ENTRY_IDS = (0, 2, 1, 3, 4)
_NATIVE_FILE_IDS = (134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 142, 143, 144, 145)


@functools.lru_cache(maxsize=64)
def _entry_builder_factory(schema_text: str, spec_key: IdentityKey, schema_key: IdentityKey) -> MakeBlockBuilder:
    """Make, once per (writer schema, spec, table schema), what turns records into entries: the C builder
    (floe/serde/_entries_native.c) when it was built and the maps need no conversion, else Python code
    generated for the schema (generating and compiling it costs ~0.5 ms, as much as decoding a small
    manifest). The result takes the manifest's own values: spec id, inherited snapshot id and sequence
    number, and a one-element list holding the next first row id to inherit (advanced as entries are built)."""
    spec: PartitionSpec | None = spec_key.obj  # type: ignore[assignment]
    schema: Schema | None = schema_key.obj  # type: ignore[assignment]
    writer_schema = json.loads(schema_text)
    top = _positions_by_id(writer_schema)
    df_field = _field_by_id(writer_schema, 2)
    if df_field is None or 0 not in top:
        raise _NotAManifestError(" is not a manifest (no status/data_file fields)")
    df_schema = _unwrap(df_field["type"])
    d = _positions_by_id(df_schema)
    missing = [i for i in (100, 101, 103, 104) if i not in d]
    if missing:
        raise _NotAManifestError(f": data_file lacks required field ids {missing}")
    part_field = _field_by_id(df_schema, 102)
    part_record = _unwrap(part_field["type"]) if part_field is not None else {"fields": []}
    read_partition = _partition_reader(part_record, spec, schema)

    ns: dict[str, Any] = {
        # by code: a damaged code is a KeyError, where a tuple would take -1 as the last member
        "status_of": dict(enumerate(_STATUS)),
        "content_of": dict(enumerate(_CONTENT)),
        "formats": _FORMATS,
        "file_format": FileFormat,
        "DATA": FileContent.DATA,
        "added": ManifestEntryStatus.ADDED,
        "new_df": new_data_file,
        "new_entry": new_manifest_entry,
        "read_partition": read_partition,
    }

    converted = [fid for fid in _STATS_FIELD_IDS if fid in d and _map_reader(_field_by_id(df_schema, fid))]
    if _entries_native is not None and not converted:
        layout = tuple(top.get(i, -1) for i in _NATIVE_ENTRY_IDS) + tuple(d.get(i, -1) for i in _NATIVE_FILE_IDS)
        native = _entries_native.Builder(
            layout, _STATUS, _CONTENT, FileContent.DATA, ManifestEntryStatus.ADDED, _FORMATS, FileFormat,
            read_partition, new_data_file, new_manifest_entry,
        )

        def make_native(
            spec_id: int, inherited_snapshot: int | None, manifest_seq: int | None, next_row_id: list[int | None]
        ) -> BlockBuilder:
            return lambda records: native.build(records, spec_id, inherited_snapshot, manifest_seq, next_row_id)

        return make_native

    def fx(fid: int) -> str:  # data_file field by id
        return f"f[{d[fid]}]" if fid in d else "None"

    def tx(fid: int) -> str:  # manifest_entry field by id
        return f"rec[{top[fid]}]" if fid in top else "None"

    def mx(fid: int) -> str:  # a metrics map, converted when the writer did not use Iceberg's map arrays
        conv = _map_reader(_field_by_id(df_schema, fid))
        if conv is None or fid not in d:
            return fx(fid)
        ns[f"map{fid}"] = conv
        return f"map{fid}({fx(fid)})"

    if 102 not in d:
        part = "()"
    elif read_partition is None:
        part = fx(102)
    else:
        part = f"read_partition({fx(102)})"
    content = f"content_of[{fx(134)} or 0]" if 134 in d else "DATA"
    # Attribute lookups by position, no per-entry branching on the schema; the manifest's own values are
    # closure variables of the returned build function.
    src = f"""
def make_build(spec_id, inherited_snapshot, manifest_seq, next_row_id):
    def build(rec):
        f = rec[{top[2]}]
        status = status_of[rec[{top[0]}]]
        content = {content}
        fmt_text = f[{d[101]}]
        fmt = formats.get(fmt_text) or file_format(fmt_text)
        record_count = f[{d[103]}]
        split = {fx(132)}
        eq = {fx(135)}
        first_row_id = {fx(142)}
        if first_row_id is None and next_row_id[0] is not None and content is DATA:
            first_row_id = next_row_id[0]
            next_row_id[0] += record_count
        snap = {tx(1)}
        if snap is None:
            snap = inherited_snapshot
        seq = {tx(3)}
        fseq = {tx(4)}
        if manifest_seq is not None and (status is added or manifest_seq == 0):
            # Spec: null sequence numbers of ADDED entries inherit the manifest's; v1 manifests (0) too.
            if seq is None:
                seq = manifest_seq
            if fseq is None:
                fseq = manifest_seq
        data_file = new_df(
            content, f[{d[100]}], fmt, {part}, record_count, f[{d[104]}],
            {mx(108)}, {mx(109)}, {mx(110)}, {mx(137)}, {mx(125)}, {mx(128)},
            {fx(131)}, None if split is None else tuple(split), None if eq is None else tuple(eq), {fx(140)},
            spec_id, first_row_id, {fx(143)}, {fx(144)}, {fx(145)},
        )
        return new_entry(status, snap, seq, fseq, data_file)
    def build_block(records):
        return [build(rec) for rec in records]
    return build_block
"""
    exec(src, ns)  # noqa: S102 - source built above from fixed templates and integer positions only
    make_build: MakeBlockBuilder = ns["make_build"]
    return make_build
