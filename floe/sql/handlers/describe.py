"""DESCRIBE [EXTENDED|FORMATTED], SHOW TBLPROPERTIES and SHOW CREATE TABLE, from metadata alone (no Spark).

Rows follow Iceberg on Spark: ``col_name, data_type, comment`` with Spark type names, then an empty row,
``# Partitioning`` and ``Part 0..N`` (``dt``, ``days(ts)``, ``bucket(16, id)``); EXTENDED/FORMATTED add
``# Metadata Columns`` and ``# Detailed Table Information`` (name, location, provider, owner, table
properties).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.expressions.literals import format_literal
from floe.scan.partition_struct import partition_struct_type
from floe.spec import types as T
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext
from floe.sql.handlers.query import catalog_view
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from floe.spec.partitioning import PartitionSpec
    from floe.spec.schema import Schema
    from floe.table.table import Table

__all__ = ["partition_texts", "run_describe", "run_show_create_table", "run_show_tblproperties", "spark_type_name"]

_SIMPLE: dict[type, str] = {
    T.BooleanType: "boolean",
    T.IntegerType: "int",
    T.LongType: "bigint",
    T.FloatType: "float",
    T.DoubleType: "double",
    T.DateType: "date",
    T.TimeType: "time",
    T.TimestampType: "timestamp_ntz",
    T.TimestamptzType: "timestamp",
    T.StringType: "string",
    T.UUIDType: "string",
    T.BinaryType: "binary",
}

_COLUMNS = ["col_name", "data_type", "comment"]
_RESERVED_PROPERTIES = frozenset({"comment", "location", "provider", "owner", "external", "is_managed_location"})


def spark_type_name(t: T.IcebergType, *, sql: bool = False) -> str:
    """How Spark SQL names an Iceberg type (``long`` -> ``bigint``, ``timestamptz`` -> ``timestamp``).

    Nested types as DESCRIBE prints them (``struct<a:int,b:string>``), or with ``sql`` as SHOW CREATE
    TABLE writes them (``struct<a: int, b: string>``).
    """
    simple = _SIMPLE.get(type(t))
    if simple is not None:
        return simple
    colon, comma = (": ", ", ") if sql else (":", ",")
    if isinstance(t, T.DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, T.FixedType):
        return "binary"
    if isinstance(t, T.StructType):
        inner = comma.join(f"{f.name}{colon}{spark_type_name(f.field_type, sql=sql)}" for f in t.fields)
        return f"struct<{inner}>"
    if isinstance(t, T.ListType):
        return f"array<{spark_type_name(t.element_type, sql=sql)}>"
    if isinstance(t, T.MapType):
        return f"map<{spark_type_name(t.key_type, sql=sql)}{comma}{spark_type_name(t.value_type, sql=sql)}>"
    return str(t)  # timestamp_ns, variant, geometry ...: Iceberg's own name


def partition_texts(spec: PartitionSpec, schema: Schema) -> list[str]:
    """Spark's spelling of each partition field: ``dt``, ``days(ts)``, ``bucket(16, id)``, ``truncate(4, s)``."""
    plural = {"year": "years", "month": "months", "day": "days", "hour": "hours"}
    out = []
    for pf in spec.fields:
        source = schema.find_column_name(pf.source_id) or f"<dropped column {pf.source_id}>"
        t = str(pf.transform)
        if t == "identity":
            out.append(source)
        elif "[" in t:
            name, arg = t.rstrip("]").split("[", 1)
            out.append(f"{name}({arg}, {source})")
        else:
            out.append(f"{plural.get(t, t)}({source})")
    return out


def _column_rows(schema: Schema) -> list[tuple[object, ...]]:
    return [(f.name, spark_type_name(f.field_type), f.doc) for f in schema.fields]


def _properties_text(props: dict[str, str]) -> str:
    return "[" + ",".join(f"{k}={v}" for k, v in sorted(props.items())) + "]"


def _table_properties(table: Table) -> dict[str, str]:
    """What Iceberg on Spark lists as table properties: the table's plus format and sort/identifier info."""
    props = dict(table.properties)
    props.setdefault("format", f"iceberg/{table.properties.get('write.format.default', 'parquet')}")
    props["format-version"] = str(table.format_version)
    snap = table.metadata.current_snapshot()
    props["current-snapshot-id"] = str(snap.snapshot_id) if snap is not None else "none"
    order = table.sort_order()
    if order.fields:
        props["sort-order"] = ", ".join(
            f"{src} {str(f.direction).upper()} {str(f.null_order).upper().replace('-', ' ')}"
            for f, src in zip(order.fields, _sort_sources(table))
        )
    ids = table.schema().identifier_field_names
    if ids:
        props["identifier-fields"] = "[" + ",".join(sorted(ids)) + "]"
    return props


def _sort_sources(table: Table) -> list[str]:
    schema = table.schema()
    out = []
    for f in table.sort_order().fields:
        source = schema.find_column_name(f.source_id) or str(f.source_id)
        t = str(f.transform)
        out.append(source if t == "identity" else f"{t}({source})")
    return out


def run_describe(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``DESC[RIBE] [EXTENDED|FORMATTED] t [column]``."""
    assert isinstance(stmt, c.DescribeTable)
    ref = ctx.resolve(stmt.name)
    view = catalog_view(ctx, ref) if not ctx.table_exists(ref) else None
    if view is not None and stmt.column is None:
        return ResultSet(columns=_COLUMNS, rows=_column_rows(view[1].schema()))
    table = ctx.load(ref)
    schema = table.schema()
    if stmt.column is not None:
        f = schema.find_field_or_none(stmt.column, False)
        if f is None:
            raise ValidationError(f"Table {ref} has no column {stmt.column!r}")
        rows: list[tuple[object, ...]] = [
            ("col_name", schema.find_column_name(f.field_id) or f.name),
            ("data_type", spark_type_name(f.field_type)),
            ("comment", f.doc or "NULL"),
        ]
        return ResultSet(columns=["info_name", "info_value"], rows=rows)
    rows = _column_rows(schema)
    spec = table.spec()
    if spec.fields:
        rows += [("", "", ""), ("# Partitioning", "", "")]
        rows += [(f"Part {i}", text, "") for i, text in enumerate(partition_texts(spec, schema))]
    if stmt.mode in ("extended", "formatted"):
        rows += [("", "", ""), ("# Metadata Columns", "", "")]
        rows += [
            ("_spec_id", "int", ""),
            ("_partition", spark_type_name(partition_struct_type(table.metadata)), ""),
            ("_file", "string", ""),
            ("_pos", "bigint", ""),
            ("_deleted", "boolean", ""),
            ("_row_id", "bigint", ""),
            ("_last_updated_sequence_number", "bigint", ""),
        ]
        rows += [("", "", ""), ("# Detailed Table Information", "", ""), ("Name", str(ref), ""), ("Type", "MANAGED", "")]
        comment = table.properties.get("comment")
        if comment:
            rows.append(("Comment", comment, ""))
        rows += [("Location", table.location(), ""), ("Provider", "iceberg", "")]
        owner = table.properties.get("owner")
        if owner:
            rows.append(("Owner", owner, ""))
        shown = {k: v for k, v in _table_properties(table).items() if k not in _RESERVED_PROPERTIES}
        rows.append(("Table Properties", _properties_text(shown), ""))
    return ResultSet(columns=_COLUMNS, rows=rows)


def run_show_tblproperties(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``SHOW TBLPROPERTIES t [(key)]``."""
    assert isinstance(stmt, c.ShowTblProperties)
    ref = ctx.resolve(stmt.name)
    view = catalog_view(ctx, ref) if not ctx.table_exists(ref) else None
    # Spark hides the table properties it reserves for DDL clauses (COMMENT, LOCATION, USING, OWNER)
    stored = dict(view[1].properties) if view is not None else _table_properties(ctx.load(ref))
    props = {k: v for k, v in stored.items() if k not in _RESERVED_PROPERTIES}
    if stmt.key is not None:
        value = props.get(stmt.key, f"{'View' if view else 'Table'} {ref} does not have property: {stmt.key}")
        return ResultSet(columns=["key", "value"], rows=[(stmt.key, value)])
    return ResultSet(columns=["key", "value"], rows=sorted(props.items()))


def _quote(name: str) -> str:
    return name if name.replace("_", "a").isalnum() and not name[0].isdigit() else "`" + name.replace("`", "``") + "`"


def run_show_create_table(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``SHOW CREATE TABLE t``: a CREATE TABLE statement that recreates the schema, partitioning and properties."""
    assert isinstance(stmt, c.ShowCreateTable)
    ref = ctx.resolve(stmt.name)
    table = ctx.load(ref)
    schema = table.schema()
    cols = []
    for f in schema.fields:
        line = f"  {_quote(f.name)} {spark_type_name(f.field_type, sql=True).upper()}"
        if f.required:
            line += " NOT NULL"
        if f.write_default is not None:  # v3 column default, in Spark's place: after NOT NULL, before COMMENT
            line += " DEFAULT " + format_literal(f.write_default, f.field_type)
        if f.doc:
            line += " COMMENT '" + f.doc.replace("'", "\\'") + "'"
        cols.append(line)
    text = f"CREATE TABLE {ref} (\n" + ",\n".join(cols) + ")\nUSING iceberg\n"
    # as Spark prints a v2 table: bucket transforms as CLUSTERED BY ... INTO n BUCKETS (the last one), the
    # rest as PARTITIONED BY; then COMMENT, LOCATION and the properties DESCRIBE lists
    parts, bucket = [], None
    for pf, part in zip(table.spec().fields, partition_texts(table.spec(), schema)):
        if str(pf.transform).startswith("bucket["):
            bucket = (str(pf.transform)[len("bucket["):-1], schema.find_column_name(pf.source_id) or str(pf.source_id))
        else:
            parts.append(part)
    if parts:
        text += "PARTITIONED BY (" + ", ".join(parts) + ")\n"
    if bucket is not None:
        text += f"CLUSTERED BY ({_quote(bucket[1])})\nINTO {bucket[0]} BUCKETS\n"
    comment = table.properties.get("comment")
    if comment:
        text += "COMMENT '" + comment.replace("'", "\\'") + "'\n"
    text += f"LOCATION '{table.location()}'\n"
    props = {k: v for k, v in sorted(_table_properties(table).items()) if k not in _RESERVED_PROPERTIES}
    text += "TBLPROPERTIES (\n" + ",\n".join(f"  '{k}' = '{v}'" for k, v in sorted(props.items())) + ")\n"
    return ResultSet(columns=["createtab_stmt"], rows=[(text,)])
