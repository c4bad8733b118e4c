"""View statements: Iceberg views stored in a catalog (as Iceberg on Spark stores them) and Spark's temporary
views, whose queries may read Floe tables.

* ``CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(cols)] [COMMENT] [TBLPROPERTIES] AS query`` writes view
  metadata (the query text as typed, its output schema from Spark's analysis, the current catalog and
  namespace its names resolve in) through the catalog (floe.catalog.views); reading the view runs that
  query (floe.sql.handlers.query).
* ``CREATE TEMPORARY VIEW`` registers the analysed query as a Spark temporary view, so Floe tables in it
  resolve now, not when the view is read.
* ``DROP VIEW`` (a temporary view first, as Spark resolves it), ``ALTER VIEW ... [UN]SET TBLPROPERTIES``,
  ``SHOW VIEWS``; DESCRIBE and SHOW TBLPROPERTIES of a view are answered in floe.sql.handlers.describe.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from floe.catalog.rest import SERVER_PLACED, RestCatalog
from floe.catalog.views import ViewCatalog, new_view_metadata, view_with_properties, view_with_version
from floe.errors import NoSuchViewError, TableAlreadyExistsError, UnsupportedError, ValidationError
from floe.spec.schema import Schema
from floe.sql import commands as c
from floe.sql.engine import show_pattern_matches
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.query import catalog_view, query_dataframe
from floe.sql.identifiers import ResolvedTable, format_name, resolve_namespace
from floe.sql.parse_common import short_sql
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from floe.spec.view_metadata import ViewMetadata

__all__ = ["run_alter_view", "run_create_view", "run_drop_view", "run_show_views"]


def _view_catalog(ctx: HandlerContext, ref: ResolvedTable) -> ViewCatalog:
    catalog = ctx.catalog(ref.catalog)
    if ref.location is not None or not isinstance(catalog, ViewCatalog):
        raise UnsupportedError(f"Catalog {ref.catalog} does not store views (view {ref})")
    return catalog


def _spark_temp_view_exists(ctx: HandlerContext, name: c.Name) -> bool:
    if len(name) != 1:
        return False
    spark = ctx.spark()
    return any(t.name == name[0] and t.isTemporary for t in spark.catalog.listTables())


def _named_columns(df: DataFrame, columns: tuple[c.ViewColumn, ...], what: str) -> DataFrame:
    if columns and len(columns) != len(df.columns):
        raise ValidationError(
            f"{what}: the view lists {len(columns)} columns but its query gives {len(df.columns)}"
        )
    return df.toDF(*(col.name for col in columns)) if columns else df


def _view_schema(df: DataFrame, columns: tuple[c.ViewColumn, ...]) -> Schema:
    """The view's schema: the query's output (optional fields), with the column list's comments."""
    schema = spark_engine().from_spark_schema(df.schema)
    docs = {col.name: col.comment for col in columns}
    fields = [dataclasses.replace(f, required=False, doc=docs.get(f.name)) for f in schema.fields]
    return Schema(*fields, schema_id=0)


def run_create_view(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.CreateView)
    what = short_sql(stmt.sql) or "CREATE VIEW"
    if stmt.temporary:
        if len(stmt.name) != 1:
            raise ValidationError(f"{what}: a temporary view has a one-part name, got {format_name(stmt.name)}")
        if _spark_temp_view_exists(ctx, stmt.name) and not stmt.replace:
            if stmt.if_not_exists:
                return ResultSet.empty()
            raise TableAlreadyExistsError(f"Temporary view {stmt.name[0]} already exists")
        df = _named_columns(query_dataframe(ctx, stmt.select.query, what=what), stmt.columns, what)
        with spark_errors(what):
            df.createOrReplaceTempView(stmt.name[0])  # the analysed plan: Floe tables are resolved now
        return ResultSet.empty()
    ref = ctx.resolve(stmt.name)
    catalog = _view_catalog(ctx, ref)
    if ctx.table_exists(ref):
        raise TableAlreadyExistsError(f"{what}: a table named {ref} exists")
    existing = catalog_view(ctx, ref)
    if existing is not None and stmt.if_not_exists:
        return ResultSet.empty()
    if existing is not None and not stmt.replace:
        raise TableAlreadyExistsError(f"View {ref} already exists")
    df = _named_columns(query_dataframe(ctx, stmt.select.query, what=what), stmt.columns, what)
    spark = ctx.spark()
    properties = dict(stmt.properties)
    if stmt.comment is not None:
        properties["comment"] = stmt.comment
    version = {
        "schema": _view_schema(df, stmt.columns), "sql": stmt.query_text, "dialect": "spark",
        "catalog": ctx.session.current_catalog, "namespace": ctx.session.namespace(), "properties": properties,
        "engine": {"engine-name": "spark", "engine-version": spark.version},
    }
    if existing is None:
        # a REST server places the view itself (its client cannot know the server's layout)
        location = SERVER_PLACED if isinstance(catalog, RestCatalog) else catalog.default_table_location(ref.identifier)
        catalog.create_view(ref.identifier, new_view_metadata(location=location, **version))  # type: ignore[arg-type]
    else:
        _, base, base_location = existing
        catalog.replace_view(ref.identifier, base_location, view_with_version(base, **version))  # type: ignore[arg-type]
    return ResultSet.empty(f"Created view {ref}")


def run_drop_view(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.DropView)
    if _spark_temp_view_exists(ctx, stmt.name):
        ctx.spark().catalog.dropTempView(stmt.name[0])
        return ResultSet.empty()
    ref = ctx.resolve(stmt.name)
    catalog = _view_catalog(ctx, ref)
    try:
        catalog.drop_view(ref.identifier)
    except NoSuchViewError:
        if not stmt.if_exists:
            raise
    return ResultSet.empty()


def _load_view(ctx: HandlerContext, name: c.Name) -> tuple[ResolvedTable, ViewCatalog, ViewMetadata, str]:
    ref = ctx.resolve(name)
    existing = catalog_view(ctx, ref)
    if existing is None:
        raise NoSuchViewError(f"View not found: {ref}")
    return ref, *existing


def run_alter_view(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    assert isinstance(stmt, c.AlterViewProperties)
    ref, catalog, metadata, location = _load_view(ctx, stmt.name)
    catalog.replace_view(ref.identifier, location, view_with_properties(metadata, stmt.updates, stmt.removals))
    return ResultSet.empty()


def run_show_views(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """Spark's rows: ``namespace, viewName, isTemporary``: the namespace's views, then temporary views."""
    assert isinstance(stmt, c.ShowViews)
    if stmt.namespace is None:
        catalog_name, ns = ctx.session.current_catalog, ctx.session.namespace()
    else:
        catalog_name, ns = resolve_namespace(
            stmt.namespace, current_catalog=ctx.session.current_catalog, catalogs=ctx.session.catalog_properties
        )
    catalog = ctx.catalog(catalog_name)
    stored = catalog.list_views(ns) if isinstance(catalog, ViewCatalog) else []
    rows: list[tuple[object, ...]] = [
        (format_name(v[:-1]), v[-1], False) for v in stored if show_pattern_matches(stmt.pattern, v[-1])
    ]
    if ctx.spark_started:
        temporary = [t.name for t in ctx.spark().catalog.listTables() if t.isTemporary and not t.name.startswith("__floe")]
        rows += [("", n, True) for n in sorted(temporary) if show_pattern_matches(stmt.pattern, n)]
    return ResultSet(columns=["namespace", "viewName", "isTemporary"], rows=rows)
