"""CREATE TABLE [AS SELECT | LIKE], DROP TABLE and every ALTER TABLE form, through the catalog and table API.

Only CREATE TABLE ... AS SELECT starts Spark (to run the query and write its rows); everything else is a
metadata commit. Partition transforms use Spark's spellings (``days(ts)``, ``bucket(16, id)``), parsed
into the spec's transforms.
"""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING

from floe.errors import NoSuchTableError, TableAlreadyExistsError, UnsupportedError, ValidationError
from floe.sql import commands as c
from floe.sql.datatypes import with_primary_key
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.dml import conform_dataframe, write_dataframe
from floe.sql.handlers.query import query_dataframe
from floe.sql.identifiers import format_name
from floe.sql.parse_common import short_sql
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from floe.spec.partitioning import PartitionSpec
    from floe.spec.schema import Schema
    from floe.table.table import Table
    from floe.table.update_schema import UpdateSchema

__all__ = ["run_alter", "run_create_table", "run_drop_table"]

_DISTRIBUTION_MODE = "write.distribution-mode"


def _transform(text: str) -> object:
    from floe.spec.transforms.parse import parse_transform
    from floe.spec.transforms.unknown import UnknownTransform

    t = parse_transform(text)
    if isinstance(t, UnknownTransform):
        raise ValidationError(f"Unknown partition transform {text!r}")
    return t


def build_spec(schema: Schema, fields: tuple[c.PartitionField, ...]) -> PartitionSpec | None:
    """The partition spec of PARTITIONED BY (column names match case-insensitively, as in Spark)."""
    from floe.spec.partitioning import PartitionSpecBuilder

    if not fields:
        return None
    builder = PartitionSpecBuilder(schema, case_sensitive=False)
    for pf in fields:
        if schema.find_field_or_none(pf.source, False) is None:
            raise ValidationError(
                f"PARTITIONED BY: no column {pf.source!r} (columns: {', '.join(f.name for f in schema.fields)})"
            )
        builder.add_field(pf.source, _transform(pf.transform), pf.name)  # type: ignore[arg-type]
    return builder.build()


def run_create_table(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t (...) USING iceberg ... [AS SELECT | LIKE src]``."""
    assert isinstance(stmt, c.CreateTable)
    what = short_sql(stmt.sql) or "CREATE TABLE"
    if not stmt.is_iceberg:
        raise UnsupportedError(f"Not supported: {what} (Floe creates Iceberg tables only, not USING {stmt.provider})")
    if stmt.external:
        raise UnsupportedError(f"Not supported: {what} (Iceberg tables are managed; use LOCATION without EXTERNAL)")
    ref = ctx.resolve(stmt.name)
    if ref.location is not None:
        raise ValidationError(f"{what}: give a table name, not a location")
    catalog = ctx.catalog(ref.catalog)
    if ctx._table_exists(ref.catalog, ref.namespace, ref.name) and not stmt.replace:
        if stmt.if_not_exists:
            return ResultSet.empty(f"Table {ref} already exists")
        raise TableAlreadyExistsError(f"Table already exists: {ref}")
    properties = dict(stmt.properties)
    if stmt.comment is not None:
        properties["comment"] = stmt.comment
    owner = _current_user()
    if owner and stmt.like is None:  # Spark records who created the table (DESCRIBE EXTENDED shows it)
        properties.setdefault("owner", owner)
    sort_order = None
    df = None
    schema = stmt.schema
    if stmt.like is not None:
        if stmt.primary_key:
            raise UnsupportedError(f"{what}: CREATE TABLE ... LIKE copies the source's identifier fields; "
                                   "declare no PRIMARY KEY")
        source = ctx.load(stmt.like)
        schema = source.schema()
        spec = source.spec() if not stmt.partition_spec else build_spec(schema, stmt.partition_spec)
        sort_order = source.sort_order()
        properties = {**dict(source.properties), **properties}
    else:
        if stmt.as_select is not None:
            if schema is not None:
                raise ValidationError(f"{what}: give either a column list or AS SELECT, not both")
            df = query_dataframe(ctx, stmt.as_select, what=what)
            with spark_errors(what):
                schema = with_primary_key(spark_engine().from_spark_schema(df.schema), stmt.primary_key)
        if schema is None:
            raise ValidationError(f"{what}: no columns")
        spec = build_spec(schema, stmt.partition_spec)
    kwargs = {"location": stmt.location, "partition_spec": spec, "sort_order": sort_order, "properties": properties}
    # Iceberg on Spark creates a table's namespace implicitly (Hadoop and JDBC catalogs alike).
    catalog.create_namespace_if_not_exists(ref.identifier[:-1])
    if stmt.replace:
        table = catalog.create_or_replace_table(ref.identifier, schema, **kwargs)
    else:
        table = catalog.create_table(ref.identifier, schema, **kwargs)
    if df is None:
        return ResultSet.empty(f"Created table {ref}")
    try:
        with spark_errors(what):
            data = conform_dataframe(table, df, columns=None, static={}, what=what)
        write_dataframe(ctx, table, data, mode="overwrite" if stmt.replace else "append", what=what)
    except BaseException:
        if not stmt.replace:  # CTAS is atomic in Iceberg: no half-created table stays behind
            catalog.drop_table(ref.identifier, purge=True)
        raise
    return ResultSet.empty(f"Created table {ref} with {_records(table)} rows")


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in this environment
        return None


def _records(table: Table) -> str:
    snap = table.metadata.current_snapshot()
    if snap is None or snap.summary is None:
        return "0"
    return snap.summary.as_dict().get("total-records", "0")


def run_drop_table(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``DROP TABLE [IF EXISTS] t [PURGE]``."""
    assert isinstance(stmt, c.DropTable)
    ref = ctx.resolve(stmt.name)
    catalog = ctx.catalog(ref.catalog)
    try:
        catalog.drop_table(ref.identifier, purge=stmt.purge)
    except NoSuchTableError:
        if stmt.if_exists:
            return ResultSet.empty(f"Table {ref} does not exist")
        raise NoSuchTableError(f"Table not found: {ref}") from None
    return ResultSet.empty(f"Dropped table {ref}" + (" and its files" if stmt.purge else ""))


# -- ALTER TABLE --------------------------------------------------------------------------------------


def _column(table: Table, name: str) -> str:
    """The column's name as the schema spells it (Spark resolves names case-insensitively)."""
    f = table.schema().find_field_or_none(name, False)
    if f is None:
        raise ValidationError(f"Table {table.name()} has no column {name!r}")
    return table.schema().find_column_name(f.field_id) or name


def _schema_change(
    table: Table, update: UpdateSchema, change: c.AlterTable, moves: list[tuple[str, c.ColumnPosition]]
) -> None:
    if isinstance(change, c.AddColumns):
        for col in change.columns:
            update.add_column(col.path, col.field_type, doc=col.doc, required=col.required, default=col.default)
            if col.position is not None:
                moves.append((".".join(col.path), col.position))
    elif isinstance(change, c.DropColumns):
        for name in change.columns:
            if change.if_exists and table.schema().find_field_or_none(name, False) is None:
                continue
            update.delete_column(_column(table, name))
    elif isinstance(change, c.RenameColumn):
        update.rename_column(_column(table, change.column), change.new_name)
    elif isinstance(change, c.AlterColumnType):
        update.update_column(_column(table, change.column), field_type=change.new_type)
    elif isinstance(change, c.AlterColumnComment):
        update.update_column_doc(_column(table, change.column), change.comment or "")
    elif isinstance(change, c.AlterColumnNullability):
        name = _column(table, change.column)
        if change.required:
            if not table.schema().find_field(name).required:
                raise ValidationError(
                    f"Cannot change nullable column {name!r} of table {table.name()} to NOT NULL (existing rows may be null)"
                )
        else:
            update.make_column_optional(name)
    elif isinstance(change, c.AlterColumnPosition):
        _position(update, _column(table, change.column), change.position, table)
    elif isinstance(change, c.AlterColumnDefault):
        update.update_column_default(_column(table, change.column), change.default)
    else:
        raise UnsupportedError(f"Not supported yet: ALTER TABLE ... {type(change).__name__}")


def _position(update: UpdateSchema, name: str, position: c.ColumnPosition | None, table: Table) -> None:
    if position is None:
        return
    if position.first:
        update.move_first(name)
    elif position.after is not None:
        after = position.after
        if "." in name:  # AFTER names a sibling inside the same struct
            after = name.rsplit(".", 1)[0] + "." + after
        update.move_after(name, after)


def _spec_field_name(table: Table, pf: c.PartitionField) -> str:
    """The current spec's field a DROP/REPLACE PARTITION FIELD names (by name, or by transform and column)."""
    spec, schema = table.spec(), table.schema()
    if pf.transform == "identity":
        for f in spec.fields:
            if f.name == pf.source:
                return f.name
    want = str(_transform(pf.transform))
    source = schema.find_field_or_none(pf.source, False)
    for f in spec.fields:
        if source is not None and f.source_id == source.field_id and str(f.transform) == want:
            return f.name
    raise ValidationError(f"Table {table.name()} has no partition field {pf.transform}({pf.source})")


def _alter_spec(table: Table, stmt: c.AlterTable) -> None:
    update = table.update_spec(case_sensitive=False)
    if isinstance(stmt, c.AddPartitionField):
        update.add_field(_column(table, stmt.field.source), _transform(stmt.field.transform), stmt.field.name)  # type: ignore[arg-type]
    elif isinstance(stmt, c.DropPartitionField):
        update.remove_field(_spec_field_name(table, stmt.field))
    elif isinstance(stmt, c.ReplacePartitionField):
        update.remove_field(_spec_field_name(table, stmt.old))
        update.add_field(_column(table, stmt.new.source), _transform(stmt.new.transform), stmt.new.name)  # type: ignore[arg-type]
    update.commit()


def _write_ordered_by(table: Table, stmt: c.WriteOrderedBy) -> None:
    from floe.spec.sort_order import NullOrder

    txn = table.transaction()
    order = txn.replace_sort_order(case_sensitive=False)
    for f in stmt.sort_fields:
        t = None if f.transform == "identity" else _transform(f.transform)
        nulls = NullOrder.NULLS_FIRST if f.null_order == "nulls-first" else NullOrder.NULLS_LAST
        if f.direction == "desc":
            order.desc(_column(table, f.source), t, nulls)  # type: ignore[arg-type]
        else:
            order.asc(_column(table, f.source), t, nulls)  # type: ignore[arg-type]
    order.commit()
    if stmt.distribution is not None:
        txn.set_properties({_DISTRIBUTION_MODE: stmt.distribution})
    txn.commit_transaction()


def _refs(table: Table, stmt: c.AlterTable) -> None:
    manage = table.manage_snapshots()
    refs = table.metadata.refs
    if isinstance(stmt, c.CreateBranch):
        exists = stmt.branch in refs
        if exists and stmt.if_not_exists:
            return
        if stmt.must_exist and not exists:
            raise ValidationError(f"Table {table.name()} has no branch {stmt.branch!r} to replace")
        if exists and stmt.replace:
            snap = stmt.snapshot_id or table.metadata.current_snapshot_id
            if snap is None:
                raise ValidationError(f"Table {table.name()} has no snapshot for branch {stmt.branch!r}")
            manage.replace_branch(
                stmt.branch, snap, min_snapshots_to_keep=stmt.min_snapshots_to_keep,
                max_snapshot_age_ms=stmt.max_snapshot_age_ms, max_ref_age_ms=stmt.max_ref_age_ms,
            )
        else:
            manage.create_branch(
                stmt.snapshot_id, stmt.branch, min_snapshots_to_keep=stmt.min_snapshots_to_keep,
                max_snapshot_age_ms=stmt.max_snapshot_age_ms, max_ref_age_ms=stmt.max_ref_age_ms,
            )
    elif isinstance(stmt, c.CreateTag):
        exists = stmt.tag in refs
        if exists and stmt.if_not_exists:
            return
        if stmt.must_exist and not exists:
            raise ValidationError(f"Table {table.name()} has no tag {stmt.tag!r} to replace")
        if exists and stmt.replace:
            snap = stmt.snapshot_id or table.metadata.current_snapshot_id
            if snap is None:
                raise ValidationError(f"Table {table.name()} has no snapshot for tag {stmt.tag!r}")
            manage.replace_tag(stmt.tag, snap, max_ref_age_ms=stmt.max_ref_age_ms)
        else:
            manage.create_tag(stmt.snapshot_id, stmt.tag, max_ref_age_ms=stmt.max_ref_age_ms)
    elif isinstance(stmt, c.DropBranch):
        if stmt.branch not in refs and stmt.if_exists:
            return
        manage.remove_branch(stmt.branch)
    elif isinstance(stmt, c.DropTag):
        if stmt.tag not in refs and stmt.if_exists:
            return
        manage.remove_tag(stmt.tag)
    manage.commit()


def run_alter(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """Every ``ALTER TABLE`` form: properties, columns, partition fields, write order, refs, rename."""
    assert isinstance(stmt, c.AlterTable)
    ref = ctx.resolve(stmt.table)
    if isinstance(stmt, c.RenameTable):
        target = ctx.resolve(stmt.new_name)
        if target.catalog != ref.catalog:
            raise ValidationError(f"Cannot rename {ref} to {target}: tables cannot move between catalogs")
        if len(stmt.new_name) == 1:  # Spark: a bare new name stays in the table's namespace
            target = type(target)(catalog=ref.catalog, namespace=ref.namespace, name=stmt.new_name[0])
        ctx.catalog(ref.catalog).rename_table(ref.identifier, target.identifier)
        return ResultSet.empty(f"Renamed table {ref} to {target}")
    table = ctx.load(ref)
    if isinstance(stmt, c.SetProperties):
        table.set_properties(stmt.properties)
    elif isinstance(stmt, c.UnsetProperties):
        table.remove_properties(*stmt.keys)
    elif isinstance(stmt, (c.AddColumns, c.DropColumns, c.RenameColumn, c.AlterColumnType, c.AlterColumnComment,
                           c.AlterColumnNullability, c.AlterColumnPosition, c.AlterColumnDefault)):
        # One transaction, one commit; positions of added columns go in a second schema update because a
        # column must exist before it can be moved.
        txn = table.transaction()
        update = txn.update_schema(case_sensitive=False)
        moves: list[tuple[str, c.ColumnPosition]] = []
        _schema_change(table, update, stmt, moves)
        update.commit()
        if moves:
            mover = txn.update_schema(case_sensitive=False)
            for name, position in moves:
                _position(mover, name, position, table)
            mover.commit()
        txn.commit_transaction()
    elif isinstance(stmt, (c.AddPartitionField, c.DropPartitionField, c.ReplacePartitionField)):
        _alter_spec(table, stmt)
    elif isinstance(stmt, c.WriteOrderedBy):
        _write_ordered_by(table, stmt)
    elif isinstance(stmt, c.SetIdentifierFields):
        table.update_schema(case_sensitive=False).set_identifier_fields(*(_column(table, n) for n in stmt.columns)).commit()
    elif isinstance(stmt, c.DropIdentifierFields):
        current = table.schema().identifier_field_names
        drop = {_column(table, n) for n in stmt.columns}
        missing = drop - set(current)
        if missing:
            raise ValidationError(f"Table {table.name()}: {min(missing)!r} is not an identifier field")
        table.update_schema(case_sensitive=False).set_identifier_fields(*(n for n in current if n not in drop)).commit()
    elif isinstance(stmt, (c.CreateBranch, c.CreateTag, c.DropBranch, c.DropTag)):
        _refs(table, stmt)
    else:
        raise UnsupportedError(f"Not supported yet: {short_sql(stmt.sql) or type(stmt).__name__}")
    return ResultSet.empty(f"Altered table {format_name((ref.catalog, *ref.identifier))}")
