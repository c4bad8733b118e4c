"""Typed, frozen command objects produced by the SQL parser (one per statement form).

Every command carries ``sql``: the statement text as written, for messages. Table and namespace names
are *unresolved* multi-part names (``("hadoop_catalog", "db", "sensordata")`` or ``("sensordata",)``);
resolve them with :mod:`floe.sql.identifiers` against the session's current catalog and namespace.
Pieces that stay SQL (a ``WHERE`` condition, a ``SELECT``) are :class:`SqlExpr` / :class:`Query` values
carrying both normalised Spark SQL text and the sqlglot tree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from floe.spec.schema import Schema
from floe.spec.types import IcebergType
from floe.sql.identifiers import Name, format_name
from floe.sql.query_tables import rewrite_tables

__all__ = [
    "AddColumns",
    "AddPartitionField",
    "AlterColumnComment",
    "AlterColumnNullability",
    "AlterColumnPosition",
    "AlterColumnType",
    "AlterTable",
    "Assignment",
    "Call",
    "ColumnPosition",
    "CreateBranch",
    "CreateNamespace",
    "CreateTable",
    "CreateTag",
    "Delete",
    "DescribeTable",
    "DropBranch",
    "DropColumns",
    "DropIdentifierFields",
    "DropNamespace",
    "DropPartitionField",
    "DropTable",
    "DropTag",
    "Explain",
    "Insert",
    "Merge",
    "MergeClause",
    "Name",
    "NewColumn",
    "PartitionField",
    "ProcedureArg",
    "Query",
    "RenameColumn",
    "RenameTable",
    "ReplacePartitionField",
    "ResetConf",
    "Select",
    "SetConf",
    "SetIdentifierFields",
    "SetProperties",
    "ShowCatalogs",
    "ShowCreateTable",
    "ShowNamespaces",
    "ShowTables",
    "ShowTblProperties",
    "SortField",
    "SqlExpr",
    "Statement",
    "TableRef",
    "TimeTravel",
    "UnsetProperties",
    "Update",
    "UseStmt",
    "WriteOrderedBy",
]

# A constant SQL value evaluated to Python (see floe.sql.literals): None, bool, int, float, Decimal,
# str, bytes, datetime.date, datetime.datetime, list or dict of those.
LiteralValue = object


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """Base of every command: ``sql`` is the statement's text as written."""

    sql: str = field(default="", compare=False)

    @property
    def kind(self) -> str:
        """A short human name of the statement (``CREATE TABLE``), used in messages."""
        return type(self).__name__


# -- SQL fragments ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SqlExpr:
    """A SQL expression kept as SQL: ``sql`` is normalised Spark SQL, ``node`` the sqlglot tree."""

    sql: str
    node: exp.Expression = field(compare=False, repr=False, hash=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeTravel:
    """``VERSION AS OF`` / ``TIMESTAMP AS OF`` (and ``FOR SYSTEM_VERSION|SYSTEM_TIME AS OF``).

    ``value`` is the snapshot id (int) or a branch/tag name (str) for ``version``; for ``timestamp`` it
    is the literal's value (a ``datetime``/``str``) or, when not a literal, the SQL text in ``sql``.
    """

    kind: str  # "version" | "timestamp"
    value: LiteralValue
    sql: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRef:
    """One table reference inside a query: its name, alias and time travel, in order of appearance."""

    name: Name
    alias: str | None = None
    time_travel: TimeTravel | None = None
    index: int = 0  # position among the query's table references (key for Query.rewrite)

    def __str__(self) -> str:
        return format_name(self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A query (SELECT, VALUES, WITH ...) kept as SQL plus the tables it reads.

    ``tables`` lists every catalog table reference (CTE names excluded), including metadata-table
    names (``cat.db.t.history``) and time travel, which Spark cannot resolve itself: the engine registers
    each as a view and calls :meth:`rewrite` to get SQL that Spark can run.
    """

    sql: str
    tables: tuple[TableRef, ...]
    node: exp.Expression = field(compare=False, repr=False, hash=False)

    def rewrite(self, replace: Callable[[TableRef], str]) -> str:
        """Spark SQL with each table reference replaced by ``replace(ref)`` (a view name); aliases kept."""
        return rewrite_tables(self.node, self.tables, replace)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionField:
    """A partition (or sort) transform over a source column.

    ``transform`` is the spec's transform string: ``identity``, ``bucket[16]``, ``truncate[4]``,
    ``year``, ``month``, ``day``, ``hour`` or ``void``. ``name`` is the ``AS`` name, if given.
    """

    source: str
    transform: str = "identity"
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SortField:
    """One ``WRITE ORDERED BY`` term; direction ``asc``/``desc``, null order ``nulls-first``/``nulls-last``."""

    source: str
    transform: str = "identity"
    direction: str = "asc"
    null_order: str = "nulls-first"


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnPosition:
    """``FIRST`` (first=True) or ``AFTER <column>``."""

    first: bool = False
    after: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewColumn:
    """A column to add: ``path`` is parent path + name (``("point", "z")``).

    Nested types inside ``field_type`` carry placeholder ids; the schema update assigns real ones.
    """

    path: Name
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    position: ColumnPosition | None = None
    default: object = None  # v3: initial-default and write-default (Floe's value representation)


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignment:
    """``column = value`` in UPDATE and MERGE ... UPDATE SET."""

    column: str
    value: SqlExpr


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeClause:
    """One ``WHEN`` clause of MERGE.

    ``match`` is ``matched``, ``not_matched`` or ``not_matched_by_source``; ``action`` is ``update``,
    ``delete`` or ``insert``. ``star`` means ``UPDATE SET *`` / ``INSERT *``.
    """

    match: str
    action: str
    condition: SqlExpr | None = None
    assignments: tuple[Assignment, ...] = ()
    star: bool = False
    insert_columns: tuple[str, ...] = ()
    insert_values: tuple[SqlExpr, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcedureArg:
    """A CALL argument: ``name`` for ``name => value`` (None when positional); ``value`` evaluated."""

    name: str | None
    value: LiteralValue
    sql: str


# -- session and namespaces ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UseStmt(Statement):
    """``USE [CATALOG|NAMESPACE|DATABASE] name``; ``target`` says which keyword was given (None if none)."""

    name: Name
    target: str | None = None  # "catalog" | "namespace" | None (resolve: catalog name first)


@dataclass(frozen=True, slots=True, kw_only=True)
class SetConf(Statement):
    """``SET key=value``; ``SET key`` shows one key (value None); bare ``SET`` shows all (key None)."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterNamespaceProperties(Statement):
    """``ALTER NAMESPACE ns SET (DBPROPERTIES|PROPERTIES) (...)`` / ``UNSET PROPERTIES (...)``."""

    namespace: Name
    updates: dict[str, str] = field(default_factory=dict)
    removals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeNamespace(Statement):
    """``DESCRIBE NAMESPACE [EXTENDED] ns``."""

    namespace: Name
    extended: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewColumn:
    """A column of ``CREATE VIEW v (name [COMMENT '...'], ...)``."""

    name: str
    comment: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateView(Statement):
    """``CREATE [OR REPLACE] [TEMPORARY] VIEW [IF NOT EXISTS] v [(cols)] [COMMENT] [TBLPROPERTIES] AS query``.

    ``query_text`` is the query as the user typed it (what an Iceberg view stores).
    """

    name: Name
    select: Select
    query_text: str
    columns: tuple[ViewColumn, ...] = ()
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    replace: bool = False
    if_not_exists: bool = False
    temporary: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DropView(Statement):
    name: Name
    if_exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterViewProperties(Statement):
    """``ALTER VIEW v SET TBLPROPERTIES (...)`` / ``UNSET TBLPROPERTIES [IF EXISTS] (...)``."""

    name: Name
    updates: dict[str, str] = field(default_factory=dict)
    removals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowViews(Statement):
    namespace: Name | None = None
    pattern: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowCurrentNamespace(Statement):
    """``SHOW CURRENT NAMESPACE``: the current catalog and namespace."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetConf(Statement):
    """``RESET key`` drops one session setting; bare ``RESET`` drops every setting made with SET."""

    key: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateNamespace(Statement):
    """``CREATE NAMESPACE|DATABASE|SCHEMA``; COMMENT and LOCATION become ``comment``/``location`` properties."""

    namespace: Name
    if_not_exists: bool = False
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DropNamespace(Statement):
    namespace: Name
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowNamespaces(Statement):
    """``SHOW NAMESPACES|DATABASES|SCHEMAS [IN parent] [LIKE pattern]``."""

    parent: Name | None = None
    pattern: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowTables(Statement):
    """``SHOW TABLES [IN namespace] [LIKE pattern]``."""

    namespace: Name | None = None
    pattern: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowCatalogs(Statement):
    pattern: str | None = None


# -- tables ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTable(Statement):
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name (...) USING iceberg PARTITIONED BY ... AS SELECT``.

    ``schema`` has fresh field ids (1..n, Iceberg's order) or is None for CTAS/LIKE without columns.
    Spark ``timestamp`` maps to ``timestamptz`` and ``timestamp_ntz`` to ``timestamp``. ``provider`` is
    the USING/STORED AS format (lower case; ``iceberg`` also for Hive's Iceberg storage handler).
    """

    name: Name
    schema: Schema | None = None
    partition_spec: tuple[PartitionField, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None
    comment: str | None = None
    provider: str | None = None
    if_not_exists: bool = False
    replace: bool = False
    external: bool = False
    as_select: Query | None = None
    like: Name | None = None
    primary_key: tuple[str, ...] = ()  # ``PRIMARY KEY (...) NOT ENFORCED``: the identifier fields

    @property
    def is_iceberg(self) -> bool:
        return self.provider in (None, "iceberg")


@dataclass(frozen=True, slots=True, kw_only=True)
class DropTable(Statement):
    name: Name
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTable(Statement):
    """``DESC[RIBE] [TABLE] [EXTENDED|FORMATTED] name [column]``; mode None, ``extended`` or ``formatted``."""

    name: Name
    mode: str | None = None
    column: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowCreateTable(Statement):
    name: Name


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowTblProperties(Statement):
    name: Name
    key: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterTable(Statement):
    """Base of every ``ALTER TABLE name ...`` form."""

    table: Name


@dataclass(frozen=True, slots=True, kw_only=True)
class SetProperties(AlterTable):
    properties: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsetProperties(AlterTable):
    keys: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AddColumns(AlterTable):
    columns: tuple[NewColumn, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DropColumns(AlterTable):
    columns: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameColumn(AlterTable):
    column: str
    new_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterColumnType(AlterTable):
    column: str
    new_type: IcebergType


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterColumnComment(AlterTable):
    column: str
    comment: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterColumnNullability(AlterTable):
    """``SET NOT NULL`` (required=True) or ``DROP NOT NULL`` (required=False)."""

    column: str
    required: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterColumnDefault(AlterTable):
    """``SET DEFAULT <constant>`` / ``DROP DEFAULT`` (default=None): the column's v3 write-default only.

    ``default`` is the constant as SQL evaluates it; it is checked against the column's type when applied.
    """

    column: str
    default: object


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterColumnPosition(AlterTable):
    column: str
    position: ColumnPosition


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionField(AlterTable):
    field: PartitionField


@dataclass(frozen=True, slots=True, kw_only=True)
class DropPartitionField(AlterTable):
    """A bare name (transform ``identity``) may name a partition field or an identity source column."""

    field: PartitionField


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplacePartitionField(AlterTable):
    old: PartitionField
    new: PartitionField


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOrderedBy(AlterTable):
    """``WRITE [LOCALLY] ORDERED BY ...`` / ``WRITE DISTRIBUTED BY PARTITION [LOCALLY ORDERED BY ...]`` /
    ``WRITE UNORDERED``.

    ``distribution`` is the ``write.distribution-mode`` it implies: ``range`` (ORDERED BY), ``hash``
    (DISTRIBUTED BY PARTITION), ``none`` (UNORDERED); None (LOCALLY ORDERED BY) keeps the table's mode.
    """

    sort_fields: tuple[SortField, ...]
    distribution: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameTable(AlterTable):
    new_name: Name


@dataclass(frozen=True, slots=True, kw_only=True)
class SetIdentifierFields(AlterTable):
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DropIdentifierFields(AlterTable):
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateBranch(AlterTable):
    """``CREATE [OR REPLACE] BRANCH [IF NOT EXISTS] b [AS OF VERSION id] [RETAIN n unit]
    [WITH SNAPSHOT RETENTION [n SNAPSHOTS] [m unit]]``; durations in milliseconds. ``REPLACE BRANCH``
    sets ``replace`` and ``must_exist``."""

    branch: str
    snapshot_id: int | None = None
    if_not_exists: bool = False
    replace: bool = False
    must_exist: bool = False
    max_ref_age_ms: int | None = None
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTag(AlterTable):
    tag: str
    snapshot_id: int | None = None
    if_not_exists: bool = False
    replace: bool = False
    must_exist: bool = False
    max_ref_age_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DropBranch(AlterTable):
    branch: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DropTag(AlterTable):
    tag: str
    if_exists: bool = False


# -- DML and queries -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Insert(Statement):
    """``INSERT INTO|OVERWRITE [TABLE] t [PARTITION (k=v, k2)] [(cols) | BY NAME] VALUES ... | query | TABLE src``.

    ``partition`` maps each PARTITION key to its static value (evaluated literal) or to None for a
    dynamic key. Exactly one of ``values`` (rows of expressions) and ``query`` is set.
    """

    table: Name
    overwrite: bool = False
    partition: dict[str, LiteralValue] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None
    by_name: bool = False
    values: tuple[tuple[SqlExpr, ...], ...] | None = None
    query: Query | None = None

    def literal_rows(self) -> list[tuple[LiteralValue, ...]]:
        """The VALUES rows evaluated to Python values.

        Raises:
            UnsupportedError: a value is not a constant (e.g. ``CAST(x AS TIMESTAMP)``); run it via Spark.
        """
        from floe.sql.literals import evaluate

        if self.values is None:
            return []
        return [tuple(evaluate(v.node) for v in row) for row in self.values]


@dataclass(frozen=True, slots=True, kw_only=True)
class Delete(Statement):
    table: Name
    alias: str | None = None
    where: SqlExpr | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Update(Statement):
    table: Name
    assignments: tuple[Assignment, ...]
    alias: str | None = None
    where: SqlExpr | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Merge(Statement):
    """``MERGE INTO target [AS t] USING source [AS s] ON cond WHEN ...``.

    ``source`` is the source as a query (a plain table source becomes ``SELECT * FROM name``, with
    ``source_table`` set to its reference).
    """

    target: Name
    source: Query
    on: SqlExpr
    clauses: tuple[MergeClause, ...]
    target_alias: str | None = None
    source_alias: str | None = None
    source_table: TableRef | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Call(Statement):
    """``CALL catalog.system.procedure(args)``; ``procedure`` is the full unresolved name."""

    procedure: Name
    args: tuple[ProcedureArg, ...] = ()

    @property
    def procedure_name(self) -> str:
        return self.procedure[-1]

    @property
    def catalog(self) -> str | None:
        """The catalog part, when the name has one (``cat.system.proc``)."""
        return self.procedure[0] if len(self.procedure) >= 3 else None

    def bind(self, parameters: tuple[str, ...]) -> dict[str, LiteralValue]:
        """Arguments by name, positional ones matched to ``parameters`` in order.

        Raises:
            ValidationError: too many positional arguments, an unknown name, or a name given twice.
        """
        from floe.errors import ValidationError

        out: dict[str, LiteralValue] = {}
        positional = [a for a in self.args if a.name is None]
        if len(positional) > len(parameters):
            raise ValidationError(
                f"Procedure {self.procedure_name} takes at most {len(parameters)} arguments, got {len(positional)}"
            )
        for p, a in zip(parameters, positional):
            out[p] = a.value
        for a in self.args:
            if a.name is None:
                continue
            if a.name not in parameters:
                raise ValidationError(
                    f"Procedure {self.procedure_name} has no parameter {a.name!r} (parameters: {', '.join(parameters)})"
                )
            if a.name in out:
                raise ValidationError(f"Procedure {self.procedure_name}: parameter {a.name!r} given twice")
            out[a.name] = a.value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Select(Statement):
    query: Query


@dataclass(frozen=True, slots=True, kw_only=True)
class Explain(Statement):
    statement: Statement
    mode: str | None = None  # extended | formatted | codegen | cost
