"""Checking incoming data's schema against a table's before writing, and evolving the table on request.

Columns match by name (as Spark's and PyIceberg's writers do). The data may omit optional columns (they
are written as nulls) and may carry narrower types the spec lets a column be promoted from (int -> long,
float -> double, decimal(P,S) -> decimal(P',S)); anything else is a :class:`ValidationError` naming the
column and both types. With ``merge_schema`` (Spark's ``mergeSchema`` option or the table property
``write.spark.accept-any-schema``) new columns are added and types widened on the table first.
"""

from __future__ import annotations

from dataclasses import dataclass

from floe.errors import ValidationError
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    FixedType,
    IcebergType,
    StringType,
    UUIDType,
    ListType,
    MapType,
    NestedField,
    StructType,
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

    Returns:
        The schema changes to apply first (empty unless ``merge_schema``).

    Raises:
        ValidationError: a required column is missing, a type is incompatible, or (without
            ``merge_schema``) the data has a column the table lacks.
    """
    data = data_schema.as_struct() if isinstance(data_schema, Schema) else data_schema
    add: list[tuple[str, IcebergType]] = []
    widen: list[tuple[str, IcebergType]] = []
    fv = -format_version if spark_types else format_version  # sign carries the flag through the recursion
    _check_struct(table_schema.as_struct(), data, "", table_name, merge_schema, fv, add, widen)
    return SchemaChanges(tuple(add), tuple(widen))


def _check_struct(
    table: StructType,
    data: StructType,
    prefix: str,
    table_name: str,
    merge: bool,
    fv: int,
    add: list[tuple[str, IcebergType]],
    widen: list[tuple[str, IcebergType]],
) -> None:
    data_by_name = {f.name: f for f in data.fields}
    for tf in table.fields:
        name = prefix + tf.name
        df = data_by_name.pop(tf.name, None)
        if df is None:
            if tf.required and tf.write_default is None:
                raise ValidationError(f"Cannot write to table {table_name}: required column {name!r} is missing")
            continue
        _check_field(tf, df, name, table_name, merge, fv, add, widen)
    for extra in data_by_name.values():
        if not merge:
            raise ValidationError(
                f"Cannot write to table {table_name}: column {prefix + extra.name!r} ({extra.field_type}) is not in "
                "the table schema (use the mergeSchema option or write.spark.accept-any-schema to add it)"
            )
        add.append((prefix + extra.name, extra.field_type))


def _incompatible(name: str, table_name: str, t: IcebergType, d: IcebergType) -> ValidationError:
    return ValidationError(
        f"Cannot write to table {table_name}: column {name!r} has type {d} in the data but {t} in the table"
    )


def _check_field(
    tf: NestedField,
    df: NestedField,
    name: str,
    table_name: str,
    merge: bool,
    fv: int,
    add: list[tuple[str, IcebergType]],
    widen: list[tuple[str, IcebergType]],
) -> None:
    t, d = tf.field_type, df.field_type
    if isinstance(t, StructType):
        if not isinstance(d, StructType):
            raise _incompatible(name, table_name, t, d)
        _check_struct(t, d, name + ".", table_name, merge, fv, add, widen)
        return
    if isinstance(t, ListType):
        if not isinstance(d, ListType):
            raise _incompatible(name, table_name, t, d)
        _check_field(t.element_field, d.element_field, name + ".element", table_name, merge, fv, add, widen)
        return
    if isinstance(t, MapType):
        if not isinstance(d, MapType):
            raise _incompatible(name, table_name, t, d)
        _check_field(t.key_field, d.key_field, name + ".key", table_name, merge, fv, add, widen)
        _check_field(t.value_field, d.value_field, name + ".value", table_name, merge, fv, add, widen)
        return
    spark, version = fv < 0, abs(fv)
    if t == d or is_promotion_allowed(d, t, version):
        return
    if spark and ((isinstance(t, UUIDType) and isinstance(d, StringType)) or (isinstance(t, FixedType) and isinstance(d, BinaryType))):
        return
    if merge and is_promotion_allowed(t, d, version) and not name.endswith((".element", ".key", ".value")):
        widen.append((name, d))
        return
    raise _incompatible(name, table_name, t, d)
