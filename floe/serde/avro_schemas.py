"""Avro schemas of manifests and manifest lists, v1/v2/v3 (spec "Manifests", "Manifest Lists", Appendix A).

Every field carries its Iceberg ``field-id``; arrays carry ``element-id``; Iceberg maps with int keys are
written as arrays of ``k<key-id>_v<value-id>`` records with ``logicalType: map``, and record names follow
the ``r<field-id>`` convention, as Iceberg Java writes them.
"""

from __future__ import annotations

from typing import Any

from floe.errors import UnsupportedError, ValidationError
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    decimal_required_bytes,
)

__all__ = [
    "V1_BLOCK_SIZE_IN_BYTES",
    "AvroSchema",
    "PartitionTypeBuilder",
    "manifest_entry_schema",
    "manifest_list_schema",
    "partition_record_schema",
]

AvroSchema = dict[str, Any]


# v1 data_file.block_size_in_bytes (field 105) is required; Java writes this constant.
V1_BLOCK_SIZE_IN_BYTES = 64 * 1024 * 1024

_SIMPLE: dict[type, Any] = {
    BooleanType: "boolean",
    IntegerType: "int",
    LongType: "long",
    FloatType: "float",
    DoubleType: "double",
    StringType: "string",
    BinaryType: "bytes",
    DateType: {"type": "int", "logicalType": "date"},
    TimeType: {"type": "long", "logicalType": "time-micros"},
    TimestampType: {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
    TimestamptzType: {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
    TimestampNanoType: {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False},
    TimestamptzNanoType: {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True},
}


class PartitionTypeBuilder:
    """Maps Iceberg primitive types to Avro, emitting each named fixed type once (Avro forbids redefinition)."""

    def __init__(self) -> None:
        self._defined: set[str] = set()

    def _named(self, schema: AvroSchema) -> AvroSchema | str:
        name: str = schema["name"]
        if name in self._defined:
            return name
        self._defined.add(name)
        return schema

    def avro_type(self, iceberg_type: IcebergType) -> Any:
        """The Avro type of a partition value of ``iceberg_type`` (spec Appendix A)."""
        simple = _SIMPLE.get(type(iceberg_type))
        if simple is not None:
            return dict(simple) if isinstance(simple, dict) else simple
        if isinstance(iceberg_type, DecimalType):
            p, s = iceberg_type.precision, iceberg_type.scale
            return self._named(
                {
                    "type": "fixed",
                    "name": f"decimal_{p}_{s}",
                    "size": decimal_required_bytes(p),
                    "logicalType": "decimal",
                    "precision": p,
                    "scale": s,
                }
            )
        if isinstance(iceberg_type, UUIDType):
            return self._named({"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"})
        if isinstance(iceberg_type, FixedType):
            return self._named(
                {"type": "fixed", "name": f"fixed_{iceberg_type.length}", "size": iceberg_type.length}
            )
        raise UnsupportedError(f"partition values of type {iceberg_type} have no Avro form")


def partition_record_schema(partition_type: StructType) -> AvroSchema:
    """The ``r102`` record holding a file's partition tuple; every field optional with its partition field id."""
    builder = PartitionTypeBuilder()
    fields = []
    for f in partition_type.fields:
        if not f.field_type.is_primitive:
            raise ValidationError(f"partition field {f.name!r} has non-primitive type {f.field_type}")
        # v3 ``unknown`` (a void field whose source column was dropped) is always null.
        avro_type = (
            "null" if isinstance(f.field_type, UnknownType) else ["null", builder.avro_type(f.field_type)]
        )
        fields.append(
            {
                "name": f.name,
                "type": avro_type,
                "default": None,
                "field-id": f.field_id,
            }
        )
    return {"type": "record", "name": "r102", "fields": fields}


def _req(name: str, avro_type: Any, field_id: int) -> dict[str, Any]:
    return {"name": name, "type": avro_type, "field-id": field_id}


def _opt(name: str, avro_type: Any, field_id: int) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}


def _int_map(name: str, field_id: int, key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    # Iceberg maps with non-string keys are Avro arrays of key/value records (Appendix A).
    record = {
        "type": "record",
        "name": f"k{key_id}_v{value_id}",
        "fields": [_req("key", "int", key_id), _req("value", value_type, value_id)],
    }
    return _opt(name, {"type": "array", "items": record, "logicalType": "map"}, field_id)


def _list(name: str, field_id: int, element_id: int, element_type: str) -> dict[str, Any]:
    return _opt(name, {"type": "array", "items": element_type, "element-id": element_id}, field_id)


def _data_file_schema(format_version: int, partition_type: StructType) -> AvroSchema:
    fields: list[dict[str, Any]] = []
    if format_version >= 2:
        fields.append(_req("content", "int", 134))
    fields += [
        _req("file_path", "string", 100),
        _req("file_format", "string", 101),
        _req("partition", partition_record_schema(partition_type), 102),
        _req("record_count", "long", 103),
        _req("file_size_in_bytes", "long", 104),
    ]
    if format_version == 1:
        fields.append(_req("block_size_in_bytes", "long", 105))
    fields += [
        _int_map("column_sizes", 108, 117, 118, "long"),
        _int_map("value_counts", 109, 119, 120, "long"),
        _int_map("null_value_counts", 110, 121, 122, "long"),
        _int_map("nan_value_counts", 137, 138, 139, "long"),
        _int_map("lower_bounds", 125, 126, 127, "bytes"),
        _int_map("upper_bounds", 128, 129, 130, "bytes"),
        _opt("key_metadata", "bytes", 131),
        _list("split_offsets", 132, 133, "long"),
    ]
    if format_version >= 2:
        fields.append(_list("equality_ids", 135, 136, "int"))
    fields.append(_opt("sort_order_id", "int", 140))
    if format_version >= 3:
        fields.append(_opt("first_row_id", "long", 142))
    if format_version >= 2:
        fields.append(_opt("referenced_data_file", "string", 143))
    if format_version >= 3:
        fields += [_opt("content_offset", "long", 144), _opt("content_size_in_bytes", "long", 145)]
    return {"type": "record", "name": "r2", "fields": fields}


def manifest_entry_schema(format_version: int, partition_type: StructType) -> AvroSchema:
    """The Avro schema of a manifest file's rows (``manifest_entry``) for a format version.

    Raises:
        UnsupportedError: the format version is not 1, 2 or 3.
    """
    _check_version(format_version)
    fields = [_req("status", "int", 0)]
    if format_version == 1:
        fields.append(_req("snapshot_id", "long", 1))
    else:
        fields += [
            _opt("snapshot_id", "long", 1),
            _opt("sequence_number", "long", 3),
            _opt("file_sequence_number", "long", 4),
        ]
    fields.append(_req("data_file", _data_file_schema(format_version, partition_type), 2))
    return {"type": "record", "name": "manifest_entry", "fields": fields}


def _summary_schema() -> AvroSchema:
    return {
        "type": "record",
        "name": "r508",
        "fields": [
            _req("contains_null", "boolean", 509),
            _opt("contains_nan", "boolean", 518),
            _opt("lower_bound", "bytes", 510),
            _opt("upper_bound", "bytes", 511),
        ],
    }


def manifest_list_schema(format_version: int) -> AvroSchema:
    """The Avro schema of a manifest list's rows (``manifest_file``) for a format version.

    Raises:
        UnsupportedError: the format version is not 1, 2 or 3.
    """
    _check_version(format_version)
    partitions = _opt("partitions", {"type": "array", "items": _summary_schema(), "element-id": 508}, 507)
    fields = [
        _req("manifest_path", "string", 500),
        _req("manifest_length", "long", 501),
        _req("partition_spec_id", "int", 502),
    ]
    if format_version == 1:
        fields += [
            _req("added_snapshot_id", "long", 503),
            _opt("added_files_count", "int", 504),
            _opt("existing_files_count", "int", 505),
            _opt("deleted_files_count", "int", 506),
            partitions,
            _opt("added_rows_count", "long", 512),
            _opt("existing_rows_count", "long", 513),
            _opt("deleted_rows_count", "long", 514),
            _opt("key_metadata", "bytes", 519),
        ]
        return {"type": "record", "name": "manifest_file", "fields": fields}
    fields += [
        _req("content", "int", 517),
        _req("sequence_number", "long", 515),
        _req("min_sequence_number", "long", 516),
        _req("added_snapshot_id", "long", 503),
        _req("added_files_count", "int", 504),
        _req("existing_files_count", "int", 505),
        _req("deleted_files_count", "int", 506),
        _req("added_rows_count", "long", 512),
        _req("existing_rows_count", "long", 513),
        _req("deleted_rows_count", "long", 514),
        partitions,
        _opt("key_metadata", "bytes", 519),
    ]
    if format_version >= 3:
        fields.append(_opt("first_row_id", "long", 520))
    return {"type": "record", "name": "manifest_file", "fields": fields}


def _check_version(format_version: int) -> None:
    if format_version not in (1, 2, 3):
        raise UnsupportedError(f"manifest format version {format_version} is not supported (1, 2 or 3)")
