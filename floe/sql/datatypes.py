"""Spark SQL types (as sqlglot parses them) to Iceberg types, and column definitions to schemas.

Mapping (Iceberg's Spark integration, SparkTypeToType): string/varchar/char -> string; tinyint,
smallint, int -> int; bigint/long -> long; float -> float; double -> double; decimal(p,s) -> decimal
(bare ``decimal`` is Spark's decimal(10,0)); date -> date; timestamp -> timestamptz (Spark's
``timestamp`` is zoned); timestamp_ntz -> timestamp; boolean; binary; array/map/struct -> list/map/struct
with optional elements and values (Spark's default ``containsNull``/``valueContainsNull`` = true).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlglot import exp

from floe.errors import UnsupportedError, ValidationError
from floe.spec.schema import Schema, assign_fresh_ids
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    VariantType,
)

__all__ = ["column_constraints", "column_field", "parse_type", "schema_from_columns", "to_iceberg_type"]

T = exp.DataType.Type
_SIMPLE: dict[object, IcebergType] = {
    T.TEXT: StringType(),
    T.VARCHAR: StringType(),
    T.NVARCHAR: StringType(),
    T.CHAR: StringType(),
    T.NCHAR: StringType(),
    T.TINYINT: IntegerType(),
    T.SMALLINT: IntegerType(),
    T.INT: IntegerType(),
    T.BIGINT: LongType(),
    T.FLOAT: FloatType(),
    T.DOUBLE: DoubleType(),
    T.DATE: DateType(),
    T.TIMESTAMPTZ: TimestamptzType(),
    T.TIMESTAMPLTZ: TimestamptzType(),
    T.TIMESTAMP: TimestamptzType(),
    T.TIMESTAMPNTZ: TimestampType(),
    T.BOOLEAN: BooleanType(),
    T.BINARY: BinaryType(),
    T.VARBINARY: BinaryType(),
    T.TIME: TimeType(),
    T.VARIANT: VariantType(),
}


class _Ids:
    """Placeholder ids for nested types; real ids come from assign_fresh_ids or the schema update."""

    def __init__(self) -> None:
        self._next = 0

    def __call__(self) -> int:
        self._next += 1
        return self._next


def parse_type(text: str) -> IcebergType:
    """Parse a Spark SQL type string (``decimal(9,2)``, ``array<struct<a:int>>``) to an Iceberg type.

    Raises:
        ParseError: not a type; UnsupportedError: a Spark type Iceberg cannot store.
    """
    from floe.errors import ParseError

    try:
        dtype = exp.DataType.build(text, dialect="spark")
    except Exception as e:  # sqlglot raises ParseError/ValueError variants for bad type text
        raise ParseError(f"Invalid type {text!r}") from e
    return to_iceberg_type(dtype)


def to_iceberg_type(dtype: exp.DataType, ids: _Ids | None = None) -> IcebergType:
    """The Iceberg type for a parsed Spark type.

    Raises:
        UnsupportedError: no Iceberg equivalent (interval, void, ...), naming the type.
    """
    ids = ids or _Ids()
    kind = dtype.this
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind in (T.DECIMAL, T.BIGDECIMAL):
        params = [
            int(p.this.this) if isinstance(p.this, exp.Literal) else int(p.name) for p in dtype.expressions
        ]
        precision = params[0] if params else 10
        scale = params[1] if len(params) > 1 else 0
        return DecimalType(precision, scale)
    if kind == T.ARRAY:
        (elem,) = dtype.expressions
        eid = ids()
        return ListType(eid, to_iceberg_type(_as_type(elem), ids), element_required=False)
    if kind == T.MAP:
        key, value = dtype.expressions
        kid, vid = ids(), ids()
        return MapType(
            kid, to_iceberg_type(_as_type(key), ids), vid, to_iceberg_type(_as_type(value), ids), False
        )
    if kind == T.STRUCT:
        return StructType(*(column_field(c, ids) for c in dtype.expressions))
    raise UnsupportedError(f"Spark type {dtype.sql(dialect='spark')} has no Iceberg equivalent")


def _as_type(node: exp.Expression) -> exp.DataType:
    if isinstance(node, exp.DataType):
        return node
    kind = node.args.get("kind") if isinstance(node, exp.ColumnDef) else None
    if isinstance(kind, exp.DataType):
        return kind
    raise ValidationError(f"Expected a type, got {node.sql(dialect='spark')}")


def column_constraints(col: exp.ColumnDef) -> tuple[bool, str | None]:
    """(required, comment) from a column definition's NOT NULL and COMMENT constraints."""
    required = False
    doc: str | None = None
    for c in col.args.get("constraints") or ():
        kind = c.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint):
            required = not kind.args.get("allow_null")
        elif isinstance(kind, exp.CommentColumnConstraint):
            doc = kind.this.name if isinstance(kind.this, exp.Literal) else kind.this.sql(dialect="spark")
    return required, doc


def column_field(col: exp.Expression, ids: _Ids) -> NestedField:
    """A field (placeholder id) for ``name type [NOT NULL] [COMMENT '...']``."""
    if not isinstance(col, exp.ColumnDef):
        raise ValidationError(f"Expected a column definition, got {col.sql(dialect='spark')}")
    dtype = col.args.get("kind")
    if not isinstance(dtype, exp.DataType):
        raise ValidationError(f"Column {col.name!r} has no type")
    fid = ids()
    required, doc = column_constraints(col)
    return NestedField(fid, col.name, to_iceberg_type(dtype, ids), required, doc)


def schema_from_columns(columns: Sequence[exp.Expression]) -> Schema:
    """A schema with fresh ids (Iceberg's numbering) from column definitions.

    Raises:
        ValidationError: duplicate column names (case-insensitive, as Spark compares them).
    """
    ids = _Ids()
    fields = [column_field(c, ids) for c in columns]
    seen: set[str] = set()
    for f in fields:
        low = f.name.lower()
        if low in seen:
            raise ValidationError(f"Duplicate column {f.name!r} in table definition")
        seen.add(low)
    return assign_fresh_ids(Schema(*fields))


def iter_column_defs(node: exp.Expression) -> Iterator[exp.ColumnDef]:
    """Column definitions directly under a Schema node."""
    for e in node.expressions:
        if isinstance(e, exp.ColumnDef):
            yield e
