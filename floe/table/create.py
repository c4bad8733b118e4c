"""Metadata for new and replaced tables: fresh ids for a new table, id reuse for a replacement."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from floe.errors import ValidationError
from floe.io.arrow_schema import arrow_to_schema
from floe.spec import properties as props
from floe.spec.metadata_builder import MetadataBuilder, new_table_metadata
from floe.spec.parquet_columns import check_column_properties
from floe.spec.partitioning import UNPARTITIONED_SPEC, PartitionField, PartitionSpec
from floe.spec.refs import MAIN_BRANCH
from floe.spec.schema import Schema, assign_fresh_ids, walk_fields
from floe.spec.sort_order import UNSORTED_SORT_ORDER, SortField, SortOrder
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import IcebergType, ListType, MapType, NestedField, StructType
from floe.spec.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    AssignUUID,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    TableUpdate,
    UpgradeFormatVersion,
)

__all__ = [
    "create_table_metadata", "creation_updates", "replacement_updates", "to_schema", "validate_writer_properties",
]


def to_schema(schema: Schema | pa.Schema) -> Schema:
    """A Floe schema from a Floe or pyarrow schema (pyarrow fields without ids get fresh ones)."""
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, pa.Schema):
        return arrow_to_schema(schema)
    raise TypeError(f"Expected a floe Schema or a pyarrow.Schema, got {type(schema).__name__}")


def validate_writer_properties(
    schema: Schema, properties: Mapping[str, str], table_name: str, *, changed: Mapping[str, str] | None = None
) -> None:
    """Refuse properties Floe could not use later: values of the wrong kind (``changed``, default all of them),
    a compression level the codec cannot take (of data or delete files), a Bloom filter or statistics setting on
    a column the schema lacks.

    Raises:
        ValidationError: names the table, the property and the value.
    """
    changed = properties if changed is None else changed
    for key in (props.DEFAULT_FILE_FORMAT, props.DELETE_DEFAULT_FILE_FORMAT):
        if key in changed:
            props.check_written_format(changed, key, table_name)  # here with the table's name
    if props.WRITE_LOCATION_PROVIDER_IMPL in changed:
        props.check_location_provider(changed, table_name)
    props.validate_property_values(dict(changed))
    if props.PARQUET_COMPRESSION in changed or props.PARQUET_COMPRESSION_LEVEL in changed:
        props.validate_compression(properties)
    if {props.DELETE_PARQUET_COMPRESSION, props.DELETE_PARQUET_COMPRESSION_LEVEL} & changed.keys():
        props.validate_compression(properties, deletes=True)
    check_column_properties(schema, changed, table_name)


def create_table_metadata(
    schema: Schema | pa.Schema,
    *,
    location: str,
    partition_spec: PartitionSpec | None = None,
    sort_order: SortOrder | None = None,
    properties: Mapping[str, str] | None = None,
) -> TableMetadata:
    """The first metadata of a new table (``format-version`` property picks the version, default 2).

    Raises:
        ValidationError: a property value Floe could not use later (see properties.validate_property_values).
    """
    checked = to_schema(schema)
    validate_writer_properties(checked, dict(properties or {}), location)
    return new_table_metadata(
        checked,
        partition_spec or UNPARTITIONED_SPEC,
        sort_order or UNSORTED_SORT_ORDER,
        location,
        properties,
    )


def creation_updates(metadata: TableMetadata) -> list[TableUpdate]:
    """The updates that build a new table's first ``metadata`` from nothing (a REST create commit).

    Applying them to no base (``apply_updates(None, ...)``) gives the same table: uuid, format version,
    location, its schema, partition spec and sort order (with their ids) as current, and its properties.

    Raises:
        ValidationError: ``metadata`` is not a new table (it has snapshots or several schemas/specs/orders).
    """
    md = metadata
    if md.snapshots or len(md.schemas) != 1 or len(md.partition_specs) != 1 or len(md.sort_orders) != 1:
        raise ValidationError(f"Table metadata at {md.location} is not a new table; cannot describe its creation")
    out: list[TableUpdate] = [UpgradeFormatVersion(md.format_version)]
    if md.table_uuid is not None:
        out.append(AssignUUID(md.table_uuid))
    out += [
        SetLocation(md.location),
        AddSchema(md.schema(), md.last_column_id),
        SetCurrentSchema(LAST_ADDED),
        AddPartitionSpec(md.spec()),
        SetDefaultSpec(LAST_ADDED),
        AddSortOrder(md.sort_orders[0]),
        SetDefaultSortOrder(LAST_ADDED),
    ]
    if md.properties:
        out.append(SetProperties(dict(md.properties)))
    return out


def _reuse_ids(schema: Schema, base: Schema, last_column_id: int) -> Schema:
    """``schema`` with ids of same-named (dotted) fields taken from ``base`` and new ids after ``last_column_id``.

    Java's ``buildReplacement`` does the same so that old data files still map onto the new schema.
    """
    counter = [last_column_id]
    by_name = {n: base.find_field(n).field_id for n in _names(base)}

    def next_id(name: str) -> int:
        known = by_name.get(name)
        if known is not None:
            return known
        counter[0] += 1
        return counter[0]

    def visit(t: IcebergType, prefix: str) -> IcebergType:
        if isinstance(t, StructType):
            out = []
            for f in t.fields:
                name = prefix + f.name
                out.append(
                    NestedField(
                        next_id(name),
                        f.name,
                        visit(f.field_type, name + "."),
                        f.required,
                        f.doc,
                        f.initial_default,
                        f.write_default,
                    )
                )
            return StructType(*out)
        if isinstance(t, ListType):
            name = prefix + "element"
            return ListType(next_id(name), visit(t.element_type, name + "."), t.element_required)
        if isinstance(t, MapType):
            k, v = prefix + "key", prefix + "value"
            return MapType(
                next_id(k),
                visit(t.key_type, k + "."),
                next_id(v),
                visit(t.value_type, v + "."),
                t.value_required,
            )
        return t

    fresh = assign_fresh_ids(schema)  # consistent structure first, then final ids by name
    struct = visit(fresh.as_struct(), "")
    assert isinstance(struct, StructType)
    id_by_name = {n: f.field_id for n, f in _walk(struct)}
    identifier_names = [fresh.find_column_name(i) for i in fresh.identifier_field_ids]
    return Schema(
        *struct.fields, identifier_field_ids=[id_by_name[n] for n in identifier_names if n is not None]
    )


def _walk(struct: StructType) -> list[tuple[str, NestedField]]:
    return list(walk_fields(struct))


def _names(schema: Schema) -> list[str]:
    return [n for n, _ in _walk(schema.as_struct())]


def _repoint(source_ids: tuple[int, ...], old: Schema, new: Schema) -> tuple[int, ...]:
    out = []
    for sid in source_ids:
        name = old.find_column_name(sid)
        out.append(new.find_field(name if name is not None else sid).field_id)
    return tuple(out)


def replacement_updates(
    base: TableMetadata,
    schema: Schema | pa.Schema,
    *,
    location: str | None = None,
    partition_spec: PartitionSpec | None = None,
    sort_order: SortOrder | None = None,
    properties: Mapping[str, str] | None = None,
) -> list[TableUpdate]:
    """Updates that replace a table's definition while keeping its history (Java ``buildReplacement``).

    The new schema reuses column ids by name, the spec and sort order are re-pointed at it, properties are
    merged, and ``main`` is removed so the replaced table starts without a current snapshot.
    """
    given = to_schema(schema)
    new_schema = _reuse_ids(given, base.schema(), base.last_column_id)
    spec = partition_spec or UNPARTITIONED_SPEC
    new_spec = PartitionSpec(
        0,
        tuple(
            PartitionField(ids[0], f.field_id, f.transform, f.name, ids)
            for f in spec.fields
            for ids in [_repoint(f.source_ids, given, new_schema)]
        ),
    )
    order = sort_order or UNSORTED_SORT_ORDER
    new_order = SortOrder(
        max(order.order_id, 1) if order.is_sorted else order.order_id,
        tuple(
            SortField(ids[0], f.transform, f.direction, f.null_order, ids)
            for f in order.fields
            for ids in [_repoint(f.source_ids, given, new_schema)]
        ),
    )
    user_props = dict(properties or {})
    validate_writer_properties(new_schema, {**base.properties, **user_props}, base.location, changed=user_props)
    version = props.property_int(user_props, props.FORMAT_VERSION, base.format_version)
    user_props = props.persisted_properties(user_props)  # as Java's buildReplacement stores them
    # The builder decides which schema/spec/order ids are reused; its recorded changes are the updates.
    builder = MetadataBuilder(base)
    if version > base.format_version:
        builder.upgrade_format_version(version)
    builder.set_current_schema(
        builder.add_schema(new_schema, max(base.last_column_id, new_schema.highest_field_id))
    )
    builder.set_default_spec(builder.add_partition_spec(new_spec))
    builder.set_default_sort_order(builder.add_sort_order(new_order))
    if location and location.rstrip("/") != base.location:
        builder.set_location(location.rstrip("/"))
    builder.set_properties(user_props)
    if MAIN_BRANCH in base.refs:
        builder.remove_ref(MAIN_BRANCH)
    return list(builder.changes)
