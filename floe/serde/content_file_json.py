"""Data and delete files in the REST spec's JSON (``ContentFile``: what server-side scan planning returns).

Partition values are a list in the spec's field order, each in the spec's single-value JSON for its
type (a date as ``"2024-01-01"``); bounds are ``{"keys": [ids], "values": [single values]}``; binary
fields (``key-metadata``) are hex. Metrics maps are written for the columns asked for only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from floe.serde.json_types import JSON, default_to_json
from floe.serde.single_value import decode_bounds
from floe.spec.manifest import DataFile, FileContent
from floe.spec.schema import Schema
from floe.spec.types import StructType

__all__ = ["content_file_to_json"]

_CONTENT = {
    FileContent.DATA: "data",
    FileContent.POSITION_DELETES: "position-deletes",
    FileContent.EQUALITY_DELETES: "equality-deletes",
}


def _counts(values: Mapping[int, int] | None, columns: Collection[int]) -> dict[str, JSON] | None:
    if values is None:
        return None
    keys = sorted(k for k in values if k in columns)
    return {"keys": list(keys), "values": [values[k] for k in keys]} if keys else None


def _bounds(raw: Mapping[int, bytes] | None, schema: Schema, columns: Collection[int]) -> dict[str, JSON] | None:
    decoded = decode_bounds({k: v for k, v in (raw or {}).items() if k in columns}, schema)
    keys = sorted(decoded)
    if not keys:
        return None
    values: list[JSON] = []
    for k in keys:
        field = schema.find_field_or_none(k)
        assert field is not None  # decode_bounds keeps only the schema's columns
        values.append(default_to_json(field.field_type, decoded[k]))
    return {"keys": list(keys), "values": values}


def content_file_to_json(
    f: DataFile, partition_type: StructType, *, schema: Schema, stats_columns: Collection[int] = ()
) -> dict[str, JSON]:
    """One data or delete file as the spec's ``DataFile`` / ``PositionDeleteFile`` / ``EqualityDeleteFile``."""
    out: dict[str, Any] = {
        "spec-id": f.spec_id,
        "content": _CONTENT[f.content],
        "file-path": f.file_path,
        "file-format": f.file_format.value.lower(),
        "partition": [
            default_to_json(field.field_type, value) for field, value in zip(partition_type.fields, f.partition)
        ],
        "file-size-in-bytes": f.file_size_in_bytes,
        "record-count": f.record_count,
    }
    if f.key_metadata is not None:
        out["key-metadata"] = f.key_metadata.hex().upper()
    if f.split_offsets is not None:
        out["split-offsets"] = list(f.split_offsets)
    if f.sort_order_id is not None:
        out["sort-order-id"] = f.sort_order_id
    if f.content == FileContent.DATA:
        if f.first_row_id is not None:
            out["first-row-id"] = f.first_row_id
        for key, counts in (
            ("column-sizes", f.column_sizes), ("value-counts", f.value_counts),
            ("null-value-counts", f.null_value_counts), ("nan-value-counts", f.nan_value_counts),
        ):
            node = _counts(counts, stats_columns)
            if node is not None:
                out[key] = node
        for key, raw in (("lower-bounds", f.lower_bounds), ("upper-bounds", f.upper_bounds)):
            node = _bounds(raw, schema, stats_columns)
            if node is not None:
                out[key] = node
    elif f.content == FileContent.POSITION_DELETES:
        if f.referenced_data_file is not None:
            out["referenced-data-file"] = f.referenced_data_file
        if f.content_offset is not None:
            out["content-offset"] = f.content_offset
            out["content-size-in-bytes"] = f.content_size_in_bytes
    else:
        out["equality-ids"] = list(f.equality_ids or ())
    return out
