"""Spark SQL types (as sqlglot parses them) to Iceberg types, and column definitions to schemas.

Mapping (Iceberg's Spark integration, SparkTypeToType): string/varchar/char -> string; tinyint,
smallint, int -> int; bigint/long -> long; float -> float; double -> double; decimal(p,s) -> decimal
(bare ``decimal`` is Spark's decimal(10,0)); date -> date; timestamp -> timestamptz (Spark's
``timestamp`` is zoned); timestamp_ntz -> timestamp; boolean; binary; array/map/struct -> list/map/struct
with optional elements and values (Spark's default ``containsNull``/``valueContainsNull`` = true).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from floe.errors import UnsupportedError, ValidationError
from floe.expressions.literals import convert_default
from floe.spec import properties as P
from floe.spec.schema import Schema, assign_fresh_ids
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
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
from floe.sql.literals import evaluate

__all__ = [
    "ColumnConstraints",
    "check_unique",
    "column_constraints",
    "column_default",
    "column_field",
    "parse_type",
    "primary_key",
    "schema_from_columns",
    "to_iceberg_type",
    "with_primary_key",
]

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
    T.VARIANT: VariantType(),  # format v3 (older tables refuse it when the schema is set)
}


def _geo_type(dtype: exp.DataType) -> IcebergType:
    """Spark's ``GEOMETRY(srid)`` / ``GEOGRAPHY(srid)`` as Iceberg's geometry/geography by the CRS Spark
    names for the SRID (4326: ``OGC:CRS84``, the spec's default; 0: ``srid:0``; else ``EPSG:n``)."""
    spelled = dtype.sql(dialect="spark")
    params = [p.sql(dialect="spark") for p in dtype.expressions]
    if len(params) != 1 or not params[0].isdigit():
        raise UnsupportedError(f"Spark type {spelled}: Iceberg needs one SRID (a column of any SRID has no CRS)")
    srid = int(params[0])
    crs = "OGC:CRS84" if srid == 4326 else "srid:0" if srid == 0 else f"EPSG:{srid}"
    return GeometryType(crs) if dtype.this == T.GEOMETRY else GeographyType(crs)


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
    if kind in (T.GEOMETRY, T.GEOGRAPHY):
        return _geo_type(dtype)
    raise UnsupportedError(f"Spark type {dtype.sql(dialect='spark')} has no Iceberg equivalent")


def _as_type(node: exp.Expression) -> exp.DataType:
    if isinstance(node, exp.DataType):
        return node
    kind = node.args.get("kind") if isinstance(node, exp.ColumnDef) else None
    if isinstance(kind, exp.DataType):
        return kind
    raise ValidationError(f"Expected a type, got {node.sql(dialect='spark')}")


@dataclass(frozen=True, slots=True)
class ColumnConstraints:
    """What a column definition declares beyond its type."""

    required: bool = False
    doc: str | None = None
    primary_key: bool = False  # ``id INT PRIMARY KEY NOT ENFORCED``: an identifier field
    unique: bool = False  # ``UNIQUE``: allowed only where an upsert keeps it true (see key_constraints)
    default: exp.Expression | None = None  # ``DEFAULT <constant>`` (v3 column default), see column_default


def _not_enforced(node: exp.Expression, what: str, column: str) -> None:
    """Iceberg cannot enforce a key on write (Flink's rule): ``ENFORCED`` is refused, not ignored."""
    options = " ".join(str(o).upper() for o in node.args.get("options") or ())
    if "ENFORCED" in options.replace("NOT ENFORCED", ""):
        raise UnsupportedError(
            f"Column {column!r}: {what} ENFORCED is not supported (Iceberg does not check keys on write; "
            f"declare it {what} NOT ENFORCED, and set 'write.upsert.enabled'='true' to keep one row per key)"
        )


def column_constraints(col: exp.ColumnDef) -> ColumnConstraints:
    """NOT NULL, COMMENT, PRIMARY KEY, UNIQUE and DEFAULT of a column definition; any other is refused.

    Raises:
        UnsupportedError: a constraint Floe would otherwise drop (CHECK, GENERATED ..., or an ENFORCED key),
            naming the column and the constraint.
    """
    required = primary_key = unique = False
    doc: str | None = None
    default: exp.Expression | None = None
    name = col.name
    for c in col.args.get("constraints") or ():
        kind = c.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint):
            required = not kind.args.get("allow_null")
        elif isinstance(kind, exp.CommentColumnConstraint):
            doc = kind.this.name if isinstance(kind.this, exp.Literal) else kind.this.sql(dialect="spark")
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            _not_enforced(kind, "PRIMARY KEY", name)
            primary_key = required = True
        elif isinstance(kind, exp.UniqueColumnConstraint):
            unique = True
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = kind.this
        else:
            raise UnsupportedError(
                f"Column {name!r}: constraint {c.sql(dialect='spark')!r} is not supported; the statement was not run"
            )
    return ColumnConstraints(required, doc, primary_key, unique, default)


def column_default(node: exp.Expression | None, field_type: IcebergType, column: str) -> object:
    """The value of ``DEFAULT <constant>`` for a column of ``field_type`` (``None``: no default).

    Raises:
        UnsupportedError: the default is not a constant (``current_timestamp()`` ...): Iceberg stores values.
        ValidationError: the value does not fit the type (names column, value and type).
    """
    if node is None:
        return None
    try:
        value = evaluate(node)
    except UnsupportedError:
        raise UnsupportedError(
            f"Column {column!r}: DEFAULT {node.sql(dialect='spark')} is not a constant (Iceberg stores default "
            "values, not expressions); the statement was not run"
        ) from None
    return convert_default(value, field_type, column=column)


def column_field(col: exp.Expression, ids: _Ids) -> NestedField:
    """A field (placeholder id) for ``name type [NOT NULL] [COMMENT '...']``."""
    if not isinstance(col, exp.ColumnDef):
        raise ValidationError(f"Expected a column definition, got {col.sql(dialect='spark')}")
    dtype = col.args.get("kind")
    if not isinstance(dtype, exp.DataType):
        raise ValidationError(f"Column {col.name!r} has no type")
    fid = ids()
    declared = column_constraints(col)
    field_type = to_iceberg_type(dtype, ids)
    # A new column's default is both the value for rows written before it (initial) and for writers that
    # omit it (write); format versions below 3 refuse both when the table is built.
    default = column_default(declared.default, field_type, col.name)
    return NestedField(fid, col.name, field_type, declared.required, declared.doc, default, default)


def primary_key(columns: Sequence[exp.Expression]) -> tuple[str, ...]:
    """The columns of the table's ``PRIMARY KEY`` (table or column constraint), empty when none is declared.

    Raises:
        UnsupportedError: an ENFORCED key, or a table constraint other than a primary key.
        ValidationError: two primary keys.
    """
    keys: list[tuple[str, ...]] = []
    for node in columns:
        if isinstance(node, exp.ColumnDef):
            if column_constraints(node).primary_key:
                keys.append((node.name,))
            continue
        inner = node.expressions[0] if isinstance(node, exp.Constraint) and len(node.expressions) == 1 else node
        if not isinstance(inner, exp.PrimaryKey):
            raise UnsupportedError(
                f"Table constraint {node.sql(dialect='spark')!r} is not supported (only PRIMARY KEY ... NOT ENFORCED); "
                "the statement was not run"
            )
        names = tuple(e.name for e in inner.expressions)
        _not_enforced(inner, "PRIMARY KEY", ", ".join(names))
        keys.append(names)
    if len(keys) > 1:
        raise ValidationError(f"A table has one PRIMARY KEY, got {len(keys)}: {', '.join(map(str, keys))}")
    return keys[0] if keys else ()


def check_unique(columns: Sequence[exp.Expression], key: Sequence[str], properties: Mapping[str, str]) -> None:
    """``UNIQUE`` holds only where the table keeps it: the whole primary key of an upsert table.

    Raises:
        UnsupportedError: a UNIQUE column Iceberg would not keep unique, naming it and the rule.
    """
    upsert = str(properties.get(P.UPSERT_ENABLED, "false")).strip().lower() == "true"
    for node in columns:
        unique = isinstance(node, exp.ColumnDef) and column_constraints(node).unique
        if unique and not (upsert and [k.lower() for k in key] == [node.name.lower()]):
            raise UnsupportedError(
                f"Column {node.name!r}: UNIQUE cannot be enforced by Iceberg; only the PRIMARY KEY of a table "
                "with 'write.upsert.enabled'='true' stays unique (one row per key)"
            )


def with_primary_key(schema: Schema, key: Sequence[str]) -> Schema:
    """``schema`` with ``key`` as its identifier fields, which become required (as Flink's connector does).

    Raises:
        ValidationError: a key column that is not a top-level column of the table.
    """
    if not key:
        return schema
    by_name = {f.name.lower(): f for f in schema.fields}
    ids = []
    for name in key:
        f = by_name.get(name.lower())
        if f is None:
            raise ValidationError(
                f"PRIMARY KEY column {name!r} is not a column of the table (columns: "
                f"{', '.join(f.name for f in schema.fields)})"
            )
        ids.append(f.field_id)
    fields = [dataclasses.replace(f, required=True) if f.field_id in ids else f for f in schema.fields]
    return Schema(*fields, schema_id=schema.schema_id, identifier_field_ids=ids)


def schema_from_columns(columns: Sequence[exp.Expression]) -> Schema:
    """A schema with fresh ids (Iceberg's numbering) from column definitions and a primary key.

    Raises:
        ValidationError: duplicate column names (case-insensitive, as Spark compares them).
    """
    ids = _Ids()
    fields = [column_field(c, ids) for c in columns if isinstance(c, exp.ColumnDef)]
    seen: set[str] = set()
    for f in fields:
        low = f.name.lower()
        if low in seen:
            raise ValidationError(f"Duplicate column {f.name!r} in table definition")
        seen.add(low)
    return with_primary_key(assign_fresh_ids(Schema(*fields)), primary_key(columns))


def iter_column_defs(node: exp.Expression) -> Iterator[exp.ColumnDef]:
    """Column definitions directly under a Schema node."""
    for e in node.expressions:
        if isinstance(e, exp.ColumnDef):
            yield e
