"""Checking incoming data's schema against a table's before writing, and evolving the table on request.

Columns match by name (as Spark's and PyIceberg's writers do). The data may omit optional columns (they
are written as nulls) and may carry narrower types the spec lets a column be promoted from (int -> long,
float -> double, decimal(P,S) -> decimal(P',S)); anything else is a :class:`ValidationError` naming the
column and both types. With ``merge_schema`` (Spark's ``mergeSchema`` option, ``spark.sql.iceberg.merge-schema``)
new columns are added and types widened on the table first. Iceberg's two strict checks are optional
(floe.spark.write.session_settings says when a Spark write makes them): ``check_nullability`` refuses an
optional column written to a required one, ``check_ordering`` columns in another order than the table's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from floe.errors import ValidationError
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
    is_promotion_allowed,
)

__all__ = ["SchemaChanges", "check_write_schema"]


@dataclass(frozen=True, slots=True)
class SchemaChanges:
    """What the table schema needs so the data fits: new columns and widened types (dotted names)."""

    add: tuple[tuple[str, IcebergType], ...] = ()
    widen: tuple[tuple[str, IcebergType], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.add and not self.widen


def check_write_schema(
    table_schema: Schema,
    data_schema: Schema | StructType,
    *,
    table_name: str,
    merge_schema: bool = False,
    format_version: int = 2,
    spark_types: bool = False,
    check_nullability: bool = False,
    check_ordering: bool = False,
) -> SchemaChanges:
    """Check that data laid out as ``data_schema`` can be written to a table with ``table_schema``.

    Args:
        table_schema: the table's current schema.
        data_schema: the data's schema (ids are ignored; columns match by name).
        table_name: for messages.
        merge_schema: collect the changes that make the data fit instead of failing on extra columns
            or wider types.
        format_version: the table's format version (type promotions allowed).
        spark_types: the data comes from Spark, which shows ``uuid`` as string and ``fixed`` as binary.
        check_nullability: refuse an optional column (or list element, map value) where the table's is
            required; without it a null in such a column fails the write when it is met.
        check_ordering: refuse columns (and struct fields) the data has in another order than the table.

    Returns:
        The schema changes to apply first (empty unless ``merge_schema``).

    Raises:
        ValidationError: a required column is missing, a type is incompatible, (without
            ``merge_schema``) the data has a column the table lacks, or a strict check fails.
    """
    data = data_schema.as_struct() if isinstance(data_schema, Schema) else data_schema
    ctx = _Context(table_name, merge_schema, format_version, spark_types, check_nullability, check_ordering)
    _check_struct(table_schema.as_struct(), data, "", ctx)
    return SchemaChanges(tuple(ctx.add), tuple(ctx.widen))


@dataclass(slots=True)
class _Context:
    table_name: str
    merge: bool
    format_version: int
    spark_types: bool
    check_nullability: bool
    check_ordering: bool
    add: list[tuple[str, IcebergType]] = field(default_factory=list)
    widen: list[tuple[str, IcebergType]] = field(default_factory=list)


def _check_struct(table: StructType, data: StructType, prefix: str, ctx: _Context) -> None:
    data_by_name = {f.name: f for f in data.fields}
    if ctx.check_ordering:
        _check_order(table, data, prefix, ctx)
    for tf in table.fields:
        name = prefix + tf.name
        df = data_by_name.pop(tf.name, None)
        if df is None:
            if tf.required and tf.write_default is None:
                raise ValidationError(f"Cannot write to table {ctx.table_name}: required column {name!r} is missing")
            continue
        _check_field(tf, df, name, ctx)
    for extra in data_by_name.values():
        if not ctx.merge:
            raise ValidationError(
                f"Cannot write to table {ctx.table_name}: column {prefix + extra.name!r} ({extra.field_type}) is not "
                "in the table schema (the mergeSchema option or spark.sql.iceberg.merge-schema=true adds it)"
            )
        ctx.add.append((prefix + extra.name, extra.field_type))


def _check_order(table: StructType, data: StructType, prefix: str, ctx: _Context) -> None:
    """The data's columns that the table has must come in the table's order (Iceberg's ``check-ordering``)."""
    position = {f.name: i for i, f in enumerate(table.fields)}
    shared = [f.name for f in data.fields if f.name in position]
    for before, after in pairwise(shared):
        if position[after] < position[before]:
            raise ValidationError(
                f"Cannot write to table {ctx.table_name}: column {prefix + before!r} comes before {prefix + after!r} "
                "in the data but after it in the table (check-ordering; set spark.sql.iceberg.check-ordering=false "
                "to match columns by name)"
            )


def _incompatible(name: str, table_name: str, t: IcebergType, d: IcebergType) -> ValidationError:
    return ValidationError(
        f"Cannot write to table {table_name}: column {name!r} has type {d} in the data but {t} in the table"
    )


def _spark_alias(t: IcebergType, d: IcebergType) -> bool:
    """Spark shows ``uuid`` as string and ``fixed`` as binary; the writers convert them back."""
    return (isinstance(t, UUIDType) and isinstance(d, StringType)) or (
        isinstance(t, FixedType) and isinstance(d, BinaryType)
    )


def _check_field(tf: NestedField, df: NestedField, name: str, ctx: _Context) -> None:
    t, d = tf.field_type, df.field_type
    if ctx.check_nullability and tf.required and not df.required:
        raise ValidationError(
            f"Cannot write to table {ctx.table_name}: column {name!r} is required but nullable in the data "
            "(check-nullability; set spark.sql.iceberg.check-nullability=false to check the values as they are written)"
        )
    if isinstance(t, StructType):
        if not isinstance(d, StructType):
            raise _incompatible(name, ctx.table_name, t, d)
        _check_struct(t, d, name + ".", ctx)
        return
    if isinstance(t, ListType):
        if not isinstance(d, ListType):
            raise _incompatible(name, ctx.table_name, t, d)
        _check_field(t.element_field, d.element_field, name + ".element", ctx)
        return
    if isinstance(t, MapType):
        if not isinstance(d, MapType):
            raise _incompatible(name, ctx.table_name, t, d)
        _check_field(t.key_field, d.key_field, name + ".key", ctx)
        _check_field(t.value_field, d.value_field, name + ".value", ctx)
        return
    if t == d or is_promotion_allowed(d, t, ctx.format_version) or (ctx.spark_types and _spark_alias(t, d)):
        return
    nested_in_collection = name.endswith((".element", ".key", ".value"))
    if ctx.merge and is_promotion_allowed(t, d, ctx.format_version) and not nested_in_collection:
        ctx.widen.append((name, d))
        return
    raise _incompatible(name, ctx.table_name, t, d)
