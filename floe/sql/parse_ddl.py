"""CREATE TABLE, DROP TABLE and ALTER TABLE (Spark DDL plus Iceberg's SQL extensions)."""

from __future__ import annotations

from sqlglot import TokenType, exp

from floe.errors import ParseError, UnsupportedError
from floe.sql import commands as c
from floe.sql.datatypes import (
    _Ids,
    check_unique,
    column_constraints,
    column_field,
    parse_type,
    primary_key,
    schema_from_columns,
)
from floe.sql.identifiers import Name
from floe.sql.lexer import Cursor
from floe.sql.literals import evaluate
from floe.sql.parse_common import parse_sqlglot, property_list, short_sql, unsupported
from floe.sql.queries import make_query
from floe.sql.query_tables import table_name

__all__ = ["parse_alter", "parse_create", "parse_drop_table", "parse_transform", "transform_of"]

# Spark/Iceberg partition function names -> spec transform names (Iceberg accepts both spellings).
_TIME_TRANSFORMS = {
    "years": "year",
    "year": "year",
    "months": "month",
    "month": "month",
    "days": "day",
    "day": "day",
    "hours": "hour",
    "hour": "hour",
    "date": "day",  # Spark's alias, as Iceberg's Spark extensions accept it
    "date_hour": "hour",
}


# -- CREATE TABLE ----------------------------------------------------------------------------------------


def parse_create(cur: Cursor) -> c.Statement:
    """``CREATE [OR REPLACE] [EXTERNAL] TABLE ...`` and ``REPLACE TABLE ...`` (Iceberg's RTAS)."""
    sql = cur.sql
    if cur.at("REPLACE", "TABLE"):
        sql = "CREATE OR " + sql
        cur = Cursor(sql)
    cur.expect("CREATE")
    cur.accept("OR", "REPLACE")
    cur.accept("EXTERNAL")
    if not cur.at("TABLE"):
        raise unsupported(cur.sql)
    node = parse_sqlglot(sql)
    if not isinstance(node, exp.Create) or str(node.args.get("kind", "")).upper() != "TABLE":
        raise unsupported(cur.sql)
    target = node.this
    columns: list[exp.Expression] = []
    if isinstance(target, exp.Schema):
        columns = list(target.expressions)
        target = target.this
    if not isinstance(target, exp.Table):
        raise ParseError(f"Expected a table name in {short_sql(sql)!r}")
    info: dict[str, object] = {"properties": {}, "partition_spec": (), "external": False}
    hive_partition_columns: list[exp.ColumnDef] = []
    props = node.args.get("properties")
    for prop in props.expressions if props is not None else ():
        _create_property(prop, info, hive_partition_columns)
    all_columns = columns + hive_partition_columns
    key = primary_key(all_columns)
    check_unique(all_columns, key, info["properties"])  # type: ignore[arg-type]
    has_columns = any(isinstance(col, exp.ColumnDef) for col in all_columns)
    query = node.expression
    return c.CreateTable(
        sql=cur.sql,
        name=table_name(target),
        schema=schema_from_columns(all_columns) if has_columns else None,
        primary_key=key,
        partition_spec=info["partition_spec"],  # type: ignore[arg-type]
        properties=info["properties"],  # type: ignore[arg-type]
        location=info.get("location"),  # type: ignore[arg-type]
        comment=info.get("comment"),  # type: ignore[arg-type]
        provider=info.get("provider"),  # type: ignore[arg-type]
        if_not_exists=bool(node.args.get("exists")),
        replace=bool(node.args.get("replace")),
        external=bool(info["external"]),
        as_select=make_query(query) if query is not None else None,
        like=info.get("like"),  # type: ignore[arg-type]
    )


def _text(node: exp.Expression) -> str:
    if isinstance(node, (exp.Literal, exp.Identifier, exp.Var)):
        return node.name
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    return node.sql(dialect="spark")


def _create_property(prop: exp.Expression, info: dict[str, object], hive_cols: list[exp.ColumnDef]) -> None:
    if isinstance(prop, exp.FileFormatProperty):
        info["provider"] = _text(prop.this).lower()
    elif isinstance(prop, exp.StorageHandlerProperty):
        handler = _text(prop.this)
        # Hive's Iceberg storage handler declares an Iceberg table (seed chapter 6).
        info["provider"] = "iceberg" if "iceberg" in handler.lower() else handler
    elif isinstance(prop, exp.PartitionedByProperty):
        fields = []
        for e in prop.this.expressions if isinstance(prop.this, exp.Schema) else [prop.this]:
            if isinstance(e, exp.ColumnDef):  # Hive style: PARTITIONED BY (dt STRING) adds a column
                hive_cols.append(e)
                fields.append(c.PartitionField(source=e.name))
            else:
                fields.append(transform_of(e))
        info["partition_spec"] = tuple(fields)
    elif isinstance(prop, exp.LocationProperty):
        info["location"] = _text(prop.this)
    elif isinstance(prop, exp.SchemaCommentProperty):
        info["comment"] = _text(prop.this)
    elif isinstance(prop, exp.ExternalProperty):
        info["external"] = True
    elif isinstance(prop, exp.LikeProperty):
        info["like"] = table_name(prop.this)
    elif type(prop) is exp.Property:
        info["properties"][_text(prop.this)] = _text(prop.args["value"])  # type: ignore[index]
    else:
        raise UnsupportedError(f"Unsupported clause in CREATE TABLE: {prop.sql(dialect='spark')}")


def _column_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    if isinstance(node, (exp.Identifier, exp.Var, exp.Literal)):
        return node.name
    if isinstance(node, exp.Dot):
        return ".".join(p.name for p in node.flatten())
    col = node.find(exp.Column)
    if col is None:
        raise ParseError(f"Expected a column in partition transform {node.sql(dialect='spark')}")
    return _column_name(col)


def _int_arg(node: exp.Expression, what: str) -> int:
    if isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit():
        return int(node.name)
    raise ParseError(f"Expected an integer {what}, got {node.sql(dialect='spark')}")


def transform_of(node: exp.Expression) -> c.PartitionField:
    """A partition field from a sqlglot PARTITIONED BY term (``dt``, ``bucket(16, id)``, ``days(ts)``)."""
    if isinstance(node, (exp.Identifier, exp.Column, exp.Dot)):
        return c.PartitionField(source=_column_name(node))
    if isinstance(node, exp.PartitionedByBucket):
        return c.PartitionField(
            source=_column_name(node.this), transform=f"bucket[{_int_arg(node.expression, 'bucket count')}]"
        )
    if isinstance(node, exp.PartitionByTruncate):
        return c.PartitionField(
            source=_column_name(node.this), transform=f"truncate[{_int_arg(node.expression, 'width')}]"
        )
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE):  # sqlglot reads date(ts) as a cast
        return c.PartitionField(source=_column_name(node.this), transform="day")
    for cls, name in ((exp.Year, "year"), (exp.Month, "month"), (exp.Day, "day"), (exp.Hour, "hour")):
        if isinstance(node, cls):
            return c.PartitionField(source=_column_name(node.this), transform=name)
    if isinstance(node, exp.Anonymous):
        fname = str(node.this).lower()
        args = list(node.expressions)
        return _function_transform(fname, args, node.sql(dialect="spark"))
    raise UnsupportedError(f"Unsupported partition transform: {node.sql(dialect='spark')}")


def _function_transform(fname: str, args: list[exp.Expression], text: str) -> c.PartitionField:
    if fname in _TIME_TRANSFORMS and len(args) == 1:
        return c.PartitionField(source=_column_name(args[0]), transform=_TIME_TRANSFORMS[fname])
    if fname in ("identity", "void") and len(args) == 1:
        return c.PartitionField(source=_column_name(args[0]), transform=fname)
    if fname in ("bucket", "truncate") and len(args) == 2:
        nums = [a for a in args if isinstance(a, exp.Literal) and not a.is_string]
        cols = [a for a in args if a not in nums]
        if len(nums) == 1 and len(cols) == 1:
            return c.PartitionField(
                source=_column_name(cols[0]), transform=f"{fname}[{_int_arg(nums[0], 'parameter')}]"
            )
    raise UnsupportedError(f"Unsupported partition transform: {text}")


# -- DROP TABLE ------------------------------------------------------------------------------------------


def parse_drop_table(cur: Cursor) -> c.DropTable:
    cur.expect("DROP", "TABLE")
    if_exists = cur.accept("IF", "EXISTS")
    name = cur.name()
    purge = cur.accept("PURGE")
    cur.end()
    return c.DropTable(sql=cur.sql, name=name, if_exists=if_exists, purge=purge)


# -- ALTER TABLE -----------------------------------------------------------------------------------------


def parse_transform(cur: Cursor) -> c.PartitionField:
    """A transform term in Iceberg's ALTER grammar: ``col``, ``bucket(16, col)``, ``days(ts)`` ..."""
    if cur.peek(1) is not None and cur.peek(1).token_type == TokenType.L_PAREN:  # type: ignore[union-attr]
        fname = cur.name_part().lower()
        cur.expect_type(TokenType.L_PAREN, "'('")
        num: int | None = None
        col: str | None = None
        while True:
            if cur.at_type(TokenType.NUMBER):
                num = cur.integer()
            else:
                col = ".".join(cur.name())
            if not cur.accept_type(TokenType.COMMA):
                break
        cur.expect_type(TokenType.R_PAREN, "')'")
        if col is None:
            cur.fail(f"expected a column in {fname}(...)")
        assert col is not None
        if fname in _TIME_TRANSFORMS and num is None:
            return c.PartitionField(source=col, transform=_TIME_TRANSFORMS[fname])
        if fname in ("identity", "void") and num is None:
            return c.PartitionField(source=col, transform=fname)
        if fname in ("bucket", "truncate") and num is not None:
            return c.PartitionField(source=col, transform=f"{fname}[{num}]")
        raise UnsupportedError(f"Unsupported partition transform: {fname}(...) in {short_sql(cur.sql)}")
    return c.PartitionField(source=".".join(cur.name()))


def _with_name(cur: Cursor, f: c.PartitionField) -> c.PartitionField:
    if cur.accept("AS"):
        return c.PartitionField(source=f.source, transform=f.transform, name=cur.name_part())
    return f


def _name_list(cur: Cursor) -> tuple[str, ...]:
    paren = cur.accept_type(TokenType.L_PAREN) is not None
    names = [".".join(cur.name())]
    while cur.accept_type(TokenType.COMMA):
        names.append(".".join(cur.name()))
    if paren:
        cur.expect_type(TokenType.R_PAREN, "')'")
    return tuple(names)


def parse_alter(cur: Cursor) -> c.Statement:
    """Every ``ALTER TABLE`` form Spark and Iceberg's extensions define (see floe.sql.commands)."""
    cur.expect("ALTER", "TABLE")
    table = cur.name()
    sql = cur.sql
    if cur.accept("SET", "TBLPROPERTIES") or cur.accept("SET", "PROPERTIES"):
        props = property_list(cur)
        cur.end()
        return c.SetProperties(sql=sql, table=table, properties=props)
    if cur.accept("UNSET", "TBLPROPERTIES") or cur.accept("UNSET", "PROPERTIES"):
        if_exists = cur.accept("IF", "EXISTS")
        cur.expect_type(TokenType.L_PAREN, "'('")
        keys = [cur.string() if cur.at_type(TokenType.STRING) else ".".join(cur.name())]
        while cur.accept_type(TokenType.COMMA):
            keys.append(cur.string() if cur.at_type(TokenType.STRING) else ".".join(cur.name()))
        cur.expect_type(TokenType.R_PAREN, "')'")
        cur.end()
        return c.UnsetProperties(sql=sql, table=table, keys=tuple(keys), if_exists=if_exists)
    if cur.at("ADD", "COLUMN") or cur.at("ADD", "COLUMNS"):
        return _add_columns(sql, table)
    if cur.accept("DROP", "COLUMNS") or cur.accept("DROP", "COLUMN"):
        if_exists = cur.accept("IF", "EXISTS")
        cols = _name_list(cur)
        cur.end()
        return c.DropColumns(sql=sql, table=table, columns=cols, if_exists=if_exists)
    if cur.accept("RENAME", "COLUMN"):
        col = ".".join(cur.name())
        cur.expect("TO")
        new = cur.name_part()
        cur.end()
        return c.RenameColumn(sql=sql, table=table, column=col, new_name=new)
    if cur.accept("RENAME", "TO"):
        new_name = cur.name()
        cur.end()
        return c.RenameTable(sql=sql, table=table, new_name=new_name)
    if cur.word() in ("ALTER", "CHANGE"):
        cur.pos += 1
        cur.accept("COLUMN")
        return _alter_column(cur, table)
    if cur.accept("ADD", "PARTITION", "FIELD"):
        f = _with_name(cur, parse_transform(cur))
        cur.end()
        return c.AddPartitionField(sql=sql, table=table, field=f)
    if cur.accept("DROP", "PARTITION", "FIELD"):
        f = parse_transform(cur)
        cur.end()
        return c.DropPartitionField(sql=sql, table=table, field=f)
    if cur.accept("REPLACE", "PARTITION", "FIELD"):
        old_field = parse_transform(cur)
        cur.expect("WITH")
        new_field = _with_name(cur, parse_transform(cur))
        cur.end()
        return c.ReplacePartitionField(sql=sql, table=table, old=old_field, new=new_field)
    if cur.accept("WRITE"):
        return _write_order(cur, table)
    if cur.accept("SET", "IDENTIFIER", "FIELDS"):
        cols = _name_list(cur)
        cur.end()
        return c.SetIdentifierFields(sql=sql, table=table, columns=cols)
    if cur.accept("DROP", "IDENTIFIER", "FIELDS"):
        cols = _name_list(cur)
        cur.end()
        return c.DropIdentifierFields(sql=sql, table=table, columns=cols)
    if cur.at("CREATE") or cur.at("REPLACE"):
        return _create_ref(cur, table)
    if cur.accept("DROP", "BRANCH") or cur.accept("DROP", "TAG"):
        is_branch = cur.tokens[cur.pos - 1].text.upper() == "BRANCH"
        if_exists = cur.accept("IF", "EXISTS")
        ref = cur.name_part()
        cur.end()
        if is_branch:
            return c.DropBranch(sql=sql, table=table, branch=ref, if_exists=if_exists)
        return c.DropTag(sql=sql, table=table, tag=ref, if_exists=if_exists)
    raise unsupported(sql)


def _add_columns(sql: str, table: Name) -> c.AddColumns:
    node = parse_sqlglot(sql)
    if not isinstance(node, exp.Alter):
        raise unsupported(sql)
    defs: list[exp.ColumnDef] = []
    for action in node.args.get("actions") or ():
        if isinstance(action, exp.Schema):
            defs.extend(e for e in action.expressions if isinstance(e, exp.ColumnDef))
        elif isinstance(action, exp.ColumnDef):
            defs.append(action)
        else:
            raise unsupported(sql)
    columns = []
    for d in defs:
        target = d.this
        path = tuple(p.name for p in target.flatten()) if isinstance(target, exp.Dot) else (target.name,)
        dtype = d.args.get("kind")
        if not isinstance(dtype, exp.DataType):
            raise ParseError(f"Column {'.'.join(path)!r} has no type in {short_sql(sql)!r}")
        declared = column_constraints(d)
        if declared.primary_key or declared.unique:
            raise UnsupportedError(
                f"ALTER TABLE ... ADD COLUMN {'.'.join(path)}: a key is declared with ALTER TABLE ... SET IDENTIFIER "
                "FIELDS, not in ADD COLUMN"
            )
        field = column_field(d, _Ids())
        columns.append(
            c.NewColumn(
                path=path,
                field_type=field.field_type,
                required=declared.required,
                doc=declared.doc,
                position=_position(d.args.get("position")),
                default=field.write_default,
            )
        )
    return c.AddColumns(sql=sql, table=table, columns=tuple(columns))


def _position(node: exp.Expression | None) -> c.ColumnPosition | None:
    if not isinstance(node, exp.ColumnPosition):
        return None
    if str(node.args.get("position", "")).upper() == "FIRST":
        return c.ColumnPosition(first=True)
    return c.ColumnPosition(after=_column_name(node.this))


_COLUMN_OPTION_WORDS = ("TYPE", "COMMENT", "FIRST", "AFTER", "SET", "DROP")


def _alter_column(cur: Cursor, table: Name) -> c.Statement:
    sql = cur.sql
    col = ".".join(cur.name())
    changes: list[c.AlterTable] = []
    while not cur.done:
        if cur.accept("TYPE"):
            start = cur.pos
            while not cur.done and cur.word() not in _COLUMN_OPTION_WORDS[1:]:
                cur.pos += 1
            type_text = cur.text_between(start, cur.pos)
            if not type_text:
                cur.fail("expected a type")
            changes.append(
                c.AlterColumnType(sql=sql, table=table, column=col, new_type=parse_type(type_text))
            )
        elif cur.accept("COMMENT"):
            comment = None if cur.accept("NULL") else cur.string()
            changes.append(c.AlterColumnComment(sql=sql, table=table, column=col, comment=comment))
        elif cur.accept("FIRST"):
            changes.append(
                c.AlterColumnPosition(sql=sql, table=table, column=col, position=c.ColumnPosition(first=True))
            )
        elif cur.accept("AFTER"):
            after = ".".join(cur.name())
            changes.append(
                c.AlterColumnPosition(
                    sql=sql, table=table, column=col, position=c.ColumnPosition(after=after)
                )
            )
        elif cur.accept("SET", "NOT", "NULL"):
            changes.append(c.AlterColumnNullability(sql=sql, table=table, column=col, required=True))
        elif cur.accept("DROP", "NOT", "NULL"):
            changes.append(c.AlterColumnNullability(sql=sql, table=table, column=col, required=False))
        elif cur.accept("DROP", "DEFAULT"):
            changes.append(c.AlterColumnDefault(sql=sql, table=table, column=col, default=None))
        elif cur.accept("SET", "DEFAULT"):
            text = cur.rest_text()
            cur.pos = len(cur.tokens)
            changes.append(c.AlterColumnDefault(sql=sql, table=table, column=col, default=_constant(text, col)))
        else:
            cur.fail("expected TYPE, COMMENT, FIRST, AFTER, SET NOT NULL or DROP NOT NULL")
        if not cur.done:  # Spark's grammar: one change per ALTER COLUMN (TYPE ... COMMENT is a syntax error)
            cur.fail("expected the end of the statement: ALTER COLUMN makes one change")
    if not changes:
        cur.fail("expected a column change")
    return changes[0]


def _constant(text: str, column: str) -> object:
    """The value of ``SET DEFAULT <text>``: a constant, as Iceberg stores values, not expressions."""
    try:
        node = parse_sqlglot("SELECT " + text)
        assert isinstance(node, exp.Select) and len(node.expressions) == 1
        return evaluate(node.expressions[0])
    except (ParseError, AssertionError, UnsupportedError):
        raise UnsupportedError(
            f"ALTER COLUMN {column} SET DEFAULT {text}: not a constant (Iceberg stores default values, not "
            "expressions); the statement was not run"
        ) from None


def _sort_field(cur: Cursor) -> c.SortField:
    f = parse_transform(cur)
    direction = "asc"
    if cur.accept("DESC"):
        direction = "desc"
    else:
        cur.accept("ASC")
    # Spark's default null order: NULLS FIRST for ASC, NULLS LAST for DESC
    null_order = "nulls-first" if direction == "asc" else "nulls-last"
    if cur.accept("NULLS", "FIRST"):
        null_order = "nulls-first"
    elif cur.accept("NULLS", "LAST"):
        null_order = "nulls-last"
    return c.SortField(source=f.source, transform=f.transform, direction=direction, null_order=null_order)


def _sort_list(cur: Cursor) -> tuple[c.SortField, ...]:
    paren = cur.accept_type(TokenType.L_PAREN) is not None
    fields = [_sort_field(cur)]
    while cur.accept_type(TokenType.COMMA):
        fields.append(_sort_field(cur))
    if paren:
        cur.expect_type(TokenType.R_PAREN, "')'")
    return tuple(fields)


def _write_order(cur: Cursor, table: Name) -> c.WriteOrderedBy:
    sql = cur.sql
    if cur.accept("UNORDERED"):
        cur.end()
        return c.WriteOrderedBy(sql=sql, table=table, sort_fields=(), distribution="none")
    if cur.accept("ORDERED", "BY"):
        fields = _sort_list(cur)
        cur.end()
        return c.WriteOrderedBy(sql=sql, table=table, sort_fields=fields, distribution="range")
    if cur.accept("LOCALLY", "ORDERED", "BY"):
        fields = _sort_list(cur)
        cur.end()  # as Iceberg Java: the sort order only, the distribution mode stays as it is
        return c.WriteOrderedBy(sql=sql, table=table, sort_fields=fields, distribution=None)
    if cur.accept("DISTRIBUTED", "BY", "PARTITION"):
        local = _sort_list(cur) if cur.accept("LOCALLY", "ORDERED", "BY") else ()
        cur.end()
        return c.WriteOrderedBy(sql=sql, table=table, sort_fields=local, distribution="hash")
    cur.fail("expected ORDERED BY, LOCALLY ORDERED BY, DISTRIBUTED BY PARTITION or UNORDERED")
    raise AssertionError("unreachable")


_MS = {
    "DAYS": 86_400_000,
    "DAY": 86_400_000,
    "HOURS": 3_600_000,
    "HOUR": 3_600_000,
    "MINUTES": 60_000,
    "MINUTE": 60_000,
}


def _duration_ms(cur: Cursor) -> int:
    n = cur.integer()
    unit = cur.word()
    if unit not in _MS:
        cur.fail("expected DAYS, HOURS or MINUTES")
    cur.pos += 1
    return n * _MS[unit]


def _create_ref(cur: Cursor, table: Name) -> c.Statement:
    sql = cur.sql
    replace = must_exist = False
    if cur.accept("REPLACE"):
        replace = must_exist = True
    else:
        cur.expect("CREATE")
        replace = cur.accept("OR", "REPLACE")
    kind = cur.word()
    if kind not in ("BRANCH", "TAG"):
        raise unsupported(sql)
    cur.pos += 1
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    ref = cur.name_part()
    snapshot_id = max_ref_age = min_keep = max_snap_age = None
    while not cur.done:
        if cur.accept("AS", "OF", "VERSION"):
            snapshot_id = cur.integer()
        elif cur.accept("RETAIN"):
            max_ref_age = _duration_ms(cur)
        elif kind == "BRANCH" and cur.accept("WITH", "SNAPSHOT", "RETENTION"):
            if cur.at_type(TokenType.NUMBER) and cur.word(1) == "SNAPSHOTS":
                min_keep = cur.integer()
                cur.pos += 1
            if cur.at_type(TokenType.NUMBER):
                max_snap_age = _duration_ms(cur)
            if min_keep is None and max_snap_age is None:
                cur.fail("expected '<n> SNAPSHOTS' or a duration")
        else:
            cur.fail("expected AS OF VERSION, RETAIN or WITH SNAPSHOT RETENTION")
    if kind == "BRANCH":
        return c.CreateBranch(
            sql=sql,
            table=table,
            branch=ref,
            snapshot_id=snapshot_id,
            if_not_exists=if_not_exists,
            replace=replace,
            must_exist=must_exist,
            max_ref_age_ms=max_ref_age,
            min_snapshots_to_keep=min_keep,
            max_snapshot_age_ms=max_snap_age,
        )
    return c.CreateTag(
        sql=sql,
        table=table,
        tag=ref,
        snapshot_id=snapshot_id,
        if_not_exists=if_not_exists,
        replace=replace,
        must_exist=must_exist,
        max_ref_age_ms=max_ref_age,
    )
