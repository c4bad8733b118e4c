"""Iceberg metadata tables as Arrow tables, with the column names and types Iceberg on Spark shows.

history, snapshots, refs, metadata_log_entries come from table metadata; manifests / all_manifests from
manifest lists; files, data_files, delete_files, entries, partitions and the ``all_`` file and entry
tables from manifests (of the chosen snapshot, or of every distinct manifest of every snapshot for the
``all_`` tables); position_deletes from the snapshot's position delete files and deletion vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.io.arrow_schema import type_to_arrow
from floe.io.manifest_group import ManifestGroup
from floe.io.manifest_reader import read_manifest_files
from floe.scan.arrow_read import ReadContext
from floe.scan.partition_struct import (
    arrow_value,
    partition_arrow_type,
    partition_column,
    partition_struct_type,
)
from floe.scan.position_deletes_table import position_deletes_table
from floe.scan.table_scan import TableLike
from floe.serde.single_value import decode_bounds
from floe.spec.manifest import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema, walk_fields
from floe.spec.snapshot import Snapshot
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import UUIDType

__all__ = ["METADATA_TABLES", "metadata_table", "partition_struct_type"]

_TS = pa.timestamp("us", tz="UTC")
_INT_LONG = pa.map_(pa.int32(), pa.int64())
_INT_BIN = pa.map_(pa.int32(), pa.binary())


def _ms_to_us(ms: int | None) -> int | None:
    return None if ms is None else ms * 1000


def _loc(table: TableLike) -> Callable[[str], str]:
    fn = getattr(table, "location_of", None) or getattr(table.io, "location_of", None)
    return fn if callable(fn) else (lambda s: s)


def _snapshot(md: TableMetadata, snapshot_id: int | None) -> Snapshot | None:
    if snapshot_id is None:
        return md.current_snapshot()
    s = md.snapshot_by_id(snapshot_id)
    if s is None:
        raise NoSuchSnapshotError(f"Table {md.location}: no snapshot with id {snapshot_id}")
    return s


# -- metadata-only tables -------------------------------------------------------------------------
def history(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    md = table.metadata
    current = md.current_snapshot_id
    ancestors = {s.snapshot_id for s in md.ancestors_of(current)} if current is not None else set()
    rows = [
        {
            "made_current_at": _ms_to_us(e.timestamp_ms),
            "snapshot_id": e.snapshot_id,
            "parent_id": getattr(md.snapshot_by_id(e.snapshot_id), "parent_snapshot_id", None),
            "is_current_ancestor": e.snapshot_id in ancestors,
        }
        for e in md.snapshot_log
    ]
    schema = pa.schema([
        pa.field("made_current_at", _TS, False), pa.field("snapshot_id", pa.int64(), False),
        pa.field("parent_id", pa.int64()), pa.field("is_current_ancestor", pa.bool_(), False),
    ])
    return pa.Table.from_pylist(rows, schema)


def snapshots(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    rows = [
        {
            "committed_at": _ms_to_us(s.timestamp_ms),
            "snapshot_id": s.snapshot_id,
            "parent_id": s.parent_snapshot_id,
            "operation": str(s.operation) if s.operation is not None else None,
            "manifest_list": s.manifest_list,
            "summary": [(k, v) for k, v in s.summary.items() if k != "operation"] if s.summary is not None else None,
        }
        for s in table.metadata.snapshots
    ]
    schema = pa.schema([
        pa.field("committed_at", _TS, False), pa.field("snapshot_id", pa.int64(), False),
        pa.field("parent_id", pa.int64()), pa.field("operation", pa.string()),
        pa.field("manifest_list", pa.string()), pa.field("summary", pa.map_(pa.string(), pa.string())),
    ])
    return pa.Table.from_pylist(rows, schema)


def refs(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    rows = [
        {
            "name": name,
            "type": "BRANCH" if r.is_branch else "TAG",
            "snapshot_id": r.snapshot_id,
            "max_reference_age_in_ms": r.max_ref_age_ms,
            "min_snapshots_to_keep": r.min_snapshots_to_keep,
            "max_snapshot_age_in_ms": r.max_snapshot_age_ms,
        }
        for name, r in table.metadata.refs.items()
    ]
    schema = pa.schema([
        pa.field("name", pa.string(), False), pa.field("type", pa.string(), False),
        pa.field("snapshot_id", pa.int64(), False), pa.field("max_reference_age_in_ms", pa.int64()),
        pa.field("min_snapshots_to_keep", pa.int32()), pa.field("max_snapshot_age_in_ms", pa.int64()),
    ])
    return pa.Table.from_pylist(rows, schema)


def metadata_log_entries(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Previous metadata files and the current one, with the snapshot/schema/sequence current at each time."""
    md = table.metadata
    entries = [(e.timestamp_ms, e.metadata_file) for e in md.metadata_log]
    current_file = getattr(table, "metadata_location", None)
    if current_file:
        entries.append((md.last_updated_ms, current_file))
    rows = []
    for ts, path in entries:
        snap_id = None
        for e in md.snapshot_log:
            if e.timestamp_ms <= ts:
                snap_id = e.snapshot_id
        snap = md.snapshot_by_id(snap_id) if snap_id is not None else None
        rows.append({
            "timestamp": _ms_to_us(ts),
            "file": path,
            "latest_snapshot_id": snap_id,
            "latest_schema_id": snap.schema_id if snap is not None else None,
            "latest_sequence_number": snap.sequence_number if snap is not None else None,
        })
    schema = pa.schema([
        pa.field("timestamp", _TS, False), pa.field("file", pa.string(), False),
        pa.field("latest_snapshot_id", pa.int64()), pa.field("latest_schema_id", pa.int32()),
        pa.field("latest_sequence_number", pa.int64()),
    ])
    return pa.Table.from_pylist(rows, schema)


# -- manifest tables ------------------------------------------------------------------------------
_SUMMARY = pa.struct([
    pa.field("contains_null", pa.bool_(), False), pa.field("contains_nan", pa.bool_()),
    pa.field("lower_bound", pa.string()), pa.field("upper_bound", pa.string()),
])


def _human_summaries(spec: PartitionSpec | None, md: TableMetadata, m: ManifestFile) -> list[dict[str, Any]] | None:
    from floe.serde.single_value import decoder_for

    if m.partitions is None:
        return None
    out = []
    try:
        # Across schema history: a spec whose source column was dropped still has a type.
        ptype = md.partition_type(spec.spec_id) if spec is not None else None
    except ValidationError:
        ptype = None
    for i, s in enumerate(m.partitions):
        lo = hi = None
        if spec is not None and ptype is not None and i < len(spec.fields):
            f, t = spec.fields[i], ptype.fields[i].field_type
            try:
                dec = decoder_for(t)
                lo = None if s.lower_bound is None else f.transform.to_human_string(t, dec(s.lower_bound))
                hi = None if s.upper_bound is None else f.transform.to_human_string(t, dec(s.upper_bound))
            except Exception:  # noqa: BLE001 - an undecodable bound shows as null, as Java shows unknown types
                lo = hi = None
        out.append({"contains_null": s.contains_null, "contains_nan": s.contains_nan, "lower_bound": lo, "upper_bound": hi})
    return out


def _manifest_row(md: TableMetadata, m: ManifestFile) -> dict[str, Any]:
    is_data = m.content == ManifestContent.DATA
    counts = (m.added_files_count or 0, m.existing_files_count or 0, m.deleted_files_count or 0)
    zero = (0, 0, 0)
    data_c, del_c = (counts, zero) if is_data else (zero, counts)
    return {
        "content": int(m.content),
        "path": m.manifest_path,
        "length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "added_snapshot_id": m.added_snapshot_id,
        "added_data_files_count": data_c[0],
        "existing_data_files_count": data_c[1],
        "deleted_data_files_count": data_c[2],
        "added_delete_files_count": del_c[0],
        "existing_delete_files_count": del_c[1],
        "deleted_delete_files_count": del_c[2],
        "partition_summaries": _human_summaries(md.spec_by_id(m.partition_spec_id), md, m),
    }


_MANIFEST_FIELDS = [
    pa.field("content", pa.int32(), False), pa.field("path", pa.string(), False),
    pa.field("length", pa.int64(), False), pa.field("partition_spec_id", pa.int32(), False),
    pa.field("added_snapshot_id", pa.int64(), False), pa.field("added_data_files_count", pa.int32(), False),
    pa.field("existing_data_files_count", pa.int32(), False), pa.field("deleted_data_files_count", pa.int32(), False),
    pa.field("added_delete_files_count", pa.int32(), False),
    pa.field("existing_delete_files_count", pa.int32(), False),
    pa.field("deleted_delete_files_count", pa.int32(), False),
    pa.field("partition_summaries", pa.list_(pa.field("element", _SUMMARY, False))),
]


def manifests(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    snap = _snapshot(table.metadata, snapshot_id)
    ms = read_manifest_files(table.io, snap, _loc(table)) if snap is not None else []
    return pa.Table.from_pylist([_manifest_row(table.metadata, m) for m in ms], pa.schema(_MANIFEST_FIELDS))


def all_manifests(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Manifests of every snapshot, one row per (snapshot, manifest) (Java's ``all_manifests``)."""
    if snapshot_id is not None:
        raise UnsupportedError(f"Cannot select snapshot {snapshot_id} in metadata table all_manifests of {table.metadata.location}")
    rows = []
    for s in table.metadata.snapshots:
        for m in read_manifest_files(table.io, s, _loc(table)):
            rows.append({**_manifest_row(table.metadata, m), "reference_snapshot_id": s.snapshot_id})
    return pa.Table.from_pylist(rows, pa.schema([*_MANIFEST_FIELDS, pa.field("reference_snapshot_id", pa.int64(), False)]))


# -- file tables ---------------------------------------------------------------------------------
def _maps(m: dict[int, Any] | None) -> list[tuple[int, Any]] | None:
    return None if m is None else list(m.items())


def _file_columns(md: TableMetadata, files: list[DataFile]) -> dict[str, pa.Array]:
    ptype = partition_struct_type(md)
    return {
        "content": pa.array([int(f.content) for f in files], pa.int32()),
        "file_path": pa.array([f.file_path for f in files], pa.string()),
        "file_format": pa.array([str(f.file_format) for f in files], pa.string()),
        "spec_id": pa.array([f.spec_id for f in files], pa.int32()),
        "partition": partition_column(md, ptype, files),
        "record_count": pa.array([f.record_count for f in files], pa.int64()),
        "file_size_in_bytes": pa.array([f.file_size_in_bytes for f in files], pa.int64()),
        "column_sizes": pa.array([_maps(f.column_sizes) for f in files], _INT_LONG),
        "value_counts": pa.array([_maps(f.value_counts) for f in files], _INT_LONG),
        "null_value_counts": pa.array([_maps(f.null_value_counts) for f in files], _INT_LONG),
        "nan_value_counts": pa.array([_maps(f.nan_value_counts) for f in files], _INT_LONG),
        "lower_bounds": pa.array([_maps(f.lower_bounds) for f in files], _INT_BIN),
        "upper_bounds": pa.array([_maps(f.upper_bounds) for f in files], _INT_BIN),
        "key_metadata": pa.array([f.key_metadata for f in files], pa.binary()),
        "split_offsets": pa.array([None if f.split_offsets is None else list(f.split_offsets) for f in files], pa.list_(pa.int64())),
        "equality_ids": pa.array([None if f.equality_ids is None else list(f.equality_ids) for f in files], pa.list_(pa.int32())),
        "sort_order_id": pa.array([f.sort_order_id for f in files], pa.int32()),
        "first_row_id": pa.array([f.first_row_id for f in files], pa.int64()),
        "referenced_data_file": pa.array([f.referenced_data_file for f in files], pa.string()),
        "content_offset": pa.array([f.content_offset for f in files], pa.int64()),
        "content_size_in_bytes": pa.array([f.content_size_in_bytes for f in files], pa.int64()),
    }


def _readable_metrics(schema: Schema, files: list[DataFile]) -> pa.Array:
    """Per primitive column: sizes, counts and decoded bounds (Java's ``readable_metrics``)."""
    leaves = [(n, f) for n, f in walk_fields(schema.as_struct()) if f.field_type.is_primitive]
    lows = [decode_bounds(f.lower_bounds, schema) for f in files]
    highs = [decode_bounds(f.upper_bounds, schema) for f in files]
    children, fields = [], []
    for name, leaf in leaves:
        fid = leaf.field_id
        try:
            vt = pa.binary(16) if isinstance(leaf.field_type, UUIDType) else type_to_arrow(leaf.field_type)
        except UnsupportedError:  # types without an Arrow form (variant, geometry) are left out
            continue
        sub = [
            pa.array([(f.column_sizes or {}).get(fid) for f in files], pa.int64()),
            pa.array([(f.value_counts or {}).get(fid) for f in files], pa.int64()),
            pa.array([(f.null_value_counts or {}).get(fid) for f in files], pa.int64()),
            pa.array([(f.nan_value_counts or {}).get(fid) for f in files], pa.int64()),
            pa.array([arrow_value(lo.get(fid), leaf.field_type) for lo in lows], vt),
            pa.array([arrow_value(hi.get(fid), leaf.field_type) for hi in highs], vt),
        ]
        names = ["column_size", "value_count", "null_value_count", "nan_value_count", "lower_bound", "upper_bound"]
        children.append(pa.StructArray.from_arrays(sub, names=names))
        fields.append(name)
    if not children:
        return pa.array([{}] * len(files), type=pa.struct([]))
    return pa.StructArray.from_arrays(children, names=fields)


def _group(table: TableLike, manifest_files: Iterable[ManifestFile]) -> ManifestGroup:
    """Every entry of the manifests, decoded with the table's specs and current schema, all metrics."""
    return ManifestGroup.of(table.io, manifest_files, location_of=_loc(table)).with_metadata(table.metadata)


def _files_table(md: TableMetadata, files: list[DataFile]) -> pa.Table:
    cols = _file_columns(md, files)
    cols["readable_metrics"] = _readable_metrics(md.schema(), files)
    return pa.table(cols)


def _live_files(table: TableLike, snapshot_id: int | None, content: ManifestContent | None) -> list[DataFile]:
    snap = _snapshot(table.metadata, snapshot_id)
    group = ManifestGroup.of_snapshot(table.io, snap, location_of=_loc(table)).with_metadata(table.metadata)
    return [e.data_file for e in group.with_content(content).ignore_deleted().entries()]


def files(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    return _files_table(table.metadata, _live_files(table, snapshot_id, None))


def data_files(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    return _files_table(table.metadata, _live_files(table, snapshot_id, ManifestContent.DATA))


def delete_files(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    return _files_table(table.metadata, _live_files(table, snapshot_id, ManifestContent.DELETES))


def _reachable_manifests(table: TableLike, snapshot_id: int | None, name: str) -> list[ManifestFile]:
    """Distinct manifests (by path) of every snapshot; the ``all_`` tables cannot time travel (Java's
    BaseAllMetadataTableScan refuses a snapshot)."""
    if snapshot_id is not None:
        raise UnsupportedError(f"Cannot select snapshot {snapshot_id} in metadata table {name} of {table.metadata.location}")
    return list(ManifestGroup.of_snapshots(table.io, table.metadata.snapshots, location_of=_loc(table)).manifests)


def _all_files(table: TableLike, snapshot_id: int | None, content: ManifestContent | None, name: str) -> pa.Table:
    # One row per live entry of each distinct manifest: a file kept by a rewritten manifest shows once per
    # manifest holding it, as in Java (no dedup by file path).
    group = _group(table, _reachable_manifests(table, snapshot_id, name)).with_content(content)
    return _files_table(table.metadata, [e.data_file for e in group.ignore_deleted().entries()])


def all_data_files(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Data files of every manifest reachable from any snapshot (Java's ``all_data_files``)."""
    return _all_files(table, snapshot_id, ManifestContent.DATA, "all_data_files")


def all_delete_files(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Delete files of every manifest reachable from any snapshot (Java's ``all_delete_files``)."""
    return _all_files(table, snapshot_id, ManifestContent.DELETES, "all_delete_files")


def all_files(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Data and delete files of every manifest reachable from any snapshot (Java's ``all_files``)."""
    return _all_files(table, snapshot_id, None, "all_files")


def _entries_table(md: TableMetadata, es: list[ManifestEntry]) -> pa.Table:
    dfs = [e.data_file for e in es]
    cols = _file_columns(md, dfs)
    data_file = pa.StructArray.from_arrays(list(cols.values()), names=list(cols.keys())) if es else pa.array(
        [], pa.struct([pa.field(k, v.type) for k, v in cols.items()])
    )
    return pa.table({
        "status": pa.array([int(e.status) for e in es], pa.int32()),
        "snapshot_id": pa.array([e.snapshot_id for e in es], pa.int64()),
        "sequence_number": pa.array([e.sequence_number for e in es], pa.int64()),
        "file_sequence_number": pa.array([e.file_sequence_number for e in es], pa.int64()),
        "data_file": data_file,
        "readable_metrics": _readable_metrics(md.schema(), dfs),
    })


def all_entries(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Every entry (deleted ones too) of every manifest reachable from any snapshot (``all_entries``)."""
    group = _group(table, _reachable_manifests(table, snapshot_id, "all_entries"))
    return _entries_table(table.metadata, list(group.entries()))


def position_deletes(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Deleted positions of the snapshot's live position delete files and deletion vectors."""
    md = table.metadata
    snap = _snapshot(md, snapshot_id)
    group = ManifestGroup.of_snapshot(table.io, snap, location_of=_loc(table)).with_metadata(md)
    live = list(group.deletes_only().ignore_deleted().entries())
    schema = md.schema()
    ctx = ReadContext(io=table.io, table_schema=schema, projection=schema, name_mapping=None, location_of=_loc(table),
                      table_name=str(md.location))
    return position_deletes_table(md, live, ctx)


def entries(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """Every entry (deleted ones too) of the snapshot's manifests."""
    snap = _snapshot(table.metadata, snapshot_id)
    group = ManifestGroup.of_snapshot(table.io, snap, location_of=_loc(table)).with_metadata(table.metadata)
    return _entries_table(table.metadata, list(group.entries()))


def partitions(table: TableLike, snapshot_id: int | None = None) -> pa.Table:
    """One row per partition (coerced into the union partition type) with file and record counts."""
    md = table.metadata
    snap = _snapshot(md, snapshot_id)
    ptype = partition_struct_type(md)
    specs = md.specs_by_id()
    stats: dict[tuple[object, ...], dict[str, Any]] = {}
    reps: dict[tuple[object, ...], DataFile] = {}
    live = ManifestGroup.of_snapshot(table.io, snap, location_of=_loc(table)).with_metadata(md).ignore_deleted()
    for e in live.entries():
        f = e.data_file
        spec = specs.get(f.spec_id)
        by_id = {pf.field_id: f.partition[i] for i, pf in enumerate(spec.fields)} if spec is not None else {}
        key = tuple(by_id.get(pf.field_id) for pf in ptype.fields)
        s = stats.setdefault(key, {
            "spec_id": f.spec_id, "record_count": 0, "file_count": 0, "total_data_file_size_in_bytes": 0,
            "position_delete_record_count": 0, "position_delete_file_count": 0,
            "equality_delete_record_count": 0, "equality_delete_file_count": 0,
            "last_updated_at": None, "last_updated_snapshot_id": None,
        })
        reps.setdefault(key, f)
        snapshot = md.snapshot_by_id(e.snapshot_id) if e.snapshot_id is not None else None
        if snapshot is not None:
            at = snapshot.timestamp_ms * 1000
            if s["last_updated_at"] is None or at > s["last_updated_at"]:
                s["last_updated_at"], s["last_updated_snapshot_id"] = at, snapshot.snapshot_id
        s["spec_id"] = f.spec_id
        if f.content == FileContent.DATA:
            s["record_count"] += f.record_count
            s["file_count"] += 1
            s["total_data_file_size_in_bytes"] += f.file_size_in_bytes
        elif f.content == FileContent.POSITION_DELETES:
            s["position_delete_record_count"] += f.record_count
            s["position_delete_file_count"] += 1
        else:
            s["equality_delete_record_count"] += f.record_count
            s["equality_delete_file_count"] += 1
    keys = list(stats)
    counts = pa.Table.from_pylist([stats[k] for k in keys], pa.schema([
        pa.field("spec_id", pa.int32(), False), pa.field("record_count", pa.int64(), False),
        pa.field("file_count", pa.int32(), False), pa.field("total_data_file_size_in_bytes", pa.int64(), False),
        pa.field("position_delete_record_count", pa.int64(), False),
        pa.field("position_delete_file_count", pa.int32(), False),
        pa.field("equality_delete_record_count", pa.int64(), False),
        pa.field("equality_delete_file_count", pa.int32(), False),
        pa.field("last_updated_at", _TS), pa.field("last_updated_snapshot_id", pa.int64()),
    ]))
    if not ptype.fields:
        return counts.drop_columns(["spec_id"])
    at = partition_arrow_type(ptype)
    part = pa.StructArray.from_arrays(
        [pa.array([arrow_value(k[i], f.field_type) for k in keys], at.field(f.name).type) for i, f in enumerate(ptype.fields)],
        fields=list(at),
    ) if keys else pa.array([], at)
    return counts.add_column(0, "partition", part)


METADATA_TABLES: dict[str, Callable[[TableLike, int | None], pa.Table]] = {
    "history": history,
    "snapshots": snapshots,
    "files": files,
    "data_files": data_files,
    "delete_files": delete_files,
    "manifests": manifests,
    "entries": entries,
    "partitions": partitions,
    "refs": refs,
    "metadata_log_entries": metadata_log_entries,
    "all_data_files": all_data_files,
    "all_delete_files": all_delete_files,
    "all_files": all_files,
    "all_entries": all_entries,
    "all_manifests": all_manifests,
    "position_deletes": position_deletes,
}


def metadata_table(table: TableLike, name: str, *, snapshot_id: int | None = None) -> pa.Table:
    """The metadata table ``name`` (``history``, ``snapshots``, ``files`` ...) of ``table`` as Arrow.

    Raises:
        ValidationError: unknown metadata table name.
    """
    fn = METADATA_TABLES.get(name.lower())
    if fn is None:
        raise ValidationError(f"Unknown metadata table {name!r}; known: {', '.join(METADATA_TABLES)}")
    return fn(table, snapshot_id)

