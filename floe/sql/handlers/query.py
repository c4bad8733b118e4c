"""SELECT (and EXPLAIN SELECT): Floe tables become temporary views of Floe's native read, Spark runs the rest.

Every table reference of the query (``db.t``, ``cat.db.t.history``, ``t VERSION AS OF 123``,
``t.branch_dev``) is registered as a temporary view: a table as ``floe.spark.read(...)`` at the
requested snapshot, a metadata table as ``floe.spark.scan.metadata_tables.metadata_table_df``. The query is
rewritten to use the view names (aliases kept) and run by ``spark.sql``; joins, aggregates and functions
are Spark's.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from floe.catalog.views import ViewCatalog
from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.sql import commands as c
from floe.sql.functions import bind_functions, iceberg_calls
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.handlers.pushdown import scan_filter
from floe.sql.identifiers import ResolvedTable
from floe.sql.parse_common import short_sql
from floe.sql.parser import parse_statement
from floe.sql.queries import table_refs
from floe.sql.query_tables import rewrite_tables, spark_sql
from floe.sql.result import ResultSet
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from floe.expressions.base import BooleanExpression
    from floe.spec.schema import Schema
    from floe.spec.view_metadata import ViewMetadata
    from floe.table.table import Table

__all__ = [
    "catalog_view", "expression_views", "query_dataframe", "result_from_dataframe", "run_explain", "run_select",
    "table_dataframe", "with_iceberg_functions",
]


def _time_travel_options(ctx: HandlerContext, table: Table, ref: c.TableRef, resolved: ResolvedTable) -> dict[str, Any]:
    """read() keyword arguments for the name's selector and the ``AS OF`` clause (the clause wins)."""
    opts: dict[str, Any] = {}
    if resolved.branch is not None:
        opts["branch"] = resolved.branch
    if resolved.tag is not None:
        opts["tag"] = resolved.tag
    if resolved.snapshot_id is not None:
        opts["snapshot_id"] = resolved.snapshot_id
    if resolved.as_of_timestamp_ms is not None:
        opts["as_of_timestamp"] = resolved.as_of_timestamp_ms
    tt = ref.time_travel
    if tt is None:
        wap_branch = ctx.read_branch(table) if not opts else None
        return {"branch": wap_branch} if wap_branch is not None else opts
    if opts:
        raise ValidationError(f"Table {ref} combines a snapshot selector with {tt.kind.upper()} AS OF")
    if tt.kind == "version":
        value = tt.value
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            if table.metadata.snapshot_by_id(value) is None:
                raise NoSuchSnapshotError(f"Cannot find snapshot {value} in table {ref}")
            return {"snapshot_id": value}
        if isinstance(value, str):
            r = table.metadata.refs.get(value)
            if r is None:
                raise NoSuchSnapshotError(f"Cannot find a branch or tag named {value!r} in table {ref}")
            return {"branch": value} if r.is_branch else {"tag": value}
        raise ValidationError(f"VERSION AS OF needs a snapshot id, branch or tag, got {tt.sql}")
    value = tt.value
    if value is None:  # not a literal (e.g. current_timestamp() - INTERVAL 1 DAY): let Spark compute it
        with spark_errors(f"TIMESTAMP AS OF {tt.sql}"):
            value = int(ctx.spark().sql(f"SELECT unix_millis(CAST(({tt.sql}) AS TIMESTAMP))").collect()[0][0])
    return {"as_of_timestamp": ctx.timestamp_ms(value)}


def _metadata_columns(node: exp.Expression) -> frozenset[str]:
    """Iceberg metadata columns (``_file``, ``_pos`` ...) a query names: only those are read (they cost)."""
    # Every part: ``_partition.category`` parses as column ``category`` of "table" ``_partition``.
    named = {part.name.lower() for col in node.find_all(exp.Column) for part in col.parts}
    return frozenset(named) & frozenset(spark_engine().metadata_columns)


def catalog_view(ctx: HandlerContext, resolved: ResolvedTable) -> tuple[ViewCatalog, ViewMetadata, str] | None:
    """The Iceberg view a plain name resolves to when no table has it: (catalog, metadata, file), else None."""
    if resolved.location is not None or resolved.metadata_table or resolved.branch or resolved.tag:
        return None
    catalog = ctx.catalog(resolved.catalog)
    if not isinstance(catalog, ViewCatalog) or not catalog.view_exists(resolved.identifier):
        return None
    metadata, location = catalog.load_view(resolved.identifier)
    return catalog, metadata, location


def _view_dataframe(ctx: HandlerContext, name: str, catalog: str, view: ViewMetadata) -> DataFrame:
    """A view's rows: its Spark SQL run with the catalog and namespace it was created in, columns renamed
    to the view's schema."""
    version = view.current_version()
    sql = version.sql_for("spark")
    if sql is None:
        dialects = sorted({getattr(r, "dialect", r.type) for r in version.representations})
        raise UnsupportedError(f"View {name} has no Spark SQL (it has: {', '.join(dialects) or 'none'})")
    stmt = parse_statement(sql)
    if not isinstance(stmt, c.Select):
        raise ValidationError(f"View {name} does not hold a query: {short_sql(sql)}")
    session = ctx.session
    saved = session.current_catalog, session.current_namespace
    default_catalog = version.default_catalog
    session.current_catalog = default_catalog if default_catalog in session.catalog_properties else catalog
    session.current_namespace = tuple(version.default_namespace) or None
    try:
        df = query_dataframe(ctx, stmt.query, what=f"Reading view {name}")
    finally:
        session.current_catalog, session.current_namespace = saved
    names = [f.name for f in view.schema().fields]
    if len(names) != len(df.columns):
        raise ValidationError(f"View {name} stores {len(names)} columns but its query now gives {len(df.columns)}")
    return df.toDF(*names)


def table_dataframe(
    ctx: HandlerContext,
    ref: c.TableRef,
    *,
    metadata_columns: frozenset[str] = frozenset(),
    where: Callable[[Schema], BooleanExpression | None] | None = None,
) -> DataFrame:
    """The DataFrame a query's table reference reads (table, snapshot, metadata table, or view); a table gets
    the ``metadata_columns`` its schema does not shadow (a real column of that name wins, as in Spark), and
    the scan filter ``where`` gives for its schema (floe.sql.handlers.pushdown)."""
    resolved = ctx.resolve(ref.name, allow_metadata=True)
    if ref.time_travel is None and not ctx.table_exists(resolved):
        view = catalog_view(ctx, resolved)
        if view is not None:
            return _view_dataframe(ctx, str(resolved), resolved.catalog, view[1])
    base = ResolvedTable(
        catalog=resolved.catalog, namespace=resolved.namespace, name=resolved.name, location=resolved.location
    )
    table = ctx.load(base)
    spark = ctx.spark()
    opts = _time_travel_options(ctx, table, ref, resolved)
    if resolved.metadata_table == "changes":
        with spark_errors(f"Reading {resolved}"):
            return spark_engine().changelog_dataframe(spark, table)
    if resolved.metadata_table is not None:
        snapshot_id = opts.get("snapshot_id")
        if "as_of_timestamp" in opts:
            snapshot_id = table.metadata.snapshot_as_of_timestamp(opts["as_of_timestamp"]).snapshot_id
        for key in ("branch", "tag"):
            if key in opts:
                snap = table.metadata.snapshot_by_name(opts[key])
                snapshot_id = snap.snapshot_id if snap is not None else None
        with spark_errors(f"Reading {resolved}"):
            return spark_engine().metadata_table_df(spark, table, resolved.metadata_table, snapshot_id=snapshot_id)
    hidden = [n for n in sorted(metadata_columns) if table.schema().find_field_or_none(n, case_sensitive=False) is None]
    schema = _read_schema(table, opts)
    pushed = where(schema) if where is not None and schema is not None else None
    if pushed is not None:
        opts["filter"] = pushed
    # Registered as a view below: a table state read before may give the same DataFrame again.
    return spark_engine().read_for_view(spark, table, **opts, metadata_columns=hidden)


def _read_schema(table: Table, opts: dict[str, Any]) -> Schema | None:
    """The schema a read with ``opts`` sees: the current one, or a tag's or snapshot's (time travel reads
    the snapshot's schema, as Iceberg on Spark does); None when not known up front."""
    if not opts:
        return table.schema()
    if set(opts) - {"branch"}:
        return None  # a snapshot or timestamp: its schema may differ; no pushdown
    return table.schema()


def _register_views(
    ctx: HandlerContext, refs: Sequence[c.TableRef], registered: list[str], metadata_columns: frozenset[str] = frozenset(),
    node: exp.Expression | None = None,
) -> dict[int, str]:
    """A view name per table reference (Floe tables registered as views, appended to ``registered``); with
    the query ``node``, each view reads only what the query's WHERE lets Floe prune (floe.sql.handlers.pushdown)."""
    spark = ctx.spark()
    views: dict[int, str] = {}
    zone: list[dt.tzinfo | None] = []

    def where_of(index: int) -> Callable[[Schema], BooleanExpression | None] | None:
        if node is None:
            return None

        def where(schema: Schema) -> BooleanExpression | None:
            if not zone:
                zone.append(_spark_time_zone(spark))
            return scan_filter(node, index, schema, zone[0])

        return where

    for ref in refs:
        if _is_spark_temp_view(spark, ref):
            views[ref.index] = ref.name[0]  # the caller's own temporary view: Spark resolves it first
            continue
        frame = table_dataframe(ctx, ref, metadata_columns=metadata_columns, where=where_of(ref.index))
        views[ref.index] = ctx.temp_view(frame, ref.name[-1])
        registered.append(views[ref.index])
    return views


def query_dataframe(ctx: HandlerContext, query: c.Query, *, what: str = "SELECT", prefix: str = "") -> DataFrame:
    """Run a query (SELECT, VALUES, WITH ...) with its Floe tables as views; returns the lazy DataFrame.

    ``prefix`` goes before the rewritten SQL (``EXPLAIN EXTENDED ``).
    """
    registered: list[str] = []
    try:
        views = _register_views(ctx, query.tables, registered, _metadata_columns(query.node), query.node)

        def text(node: exp.Expression) -> str:
            return rewrite_tables(node, query.tables, lambda r: views[r.index]) if query.tables else spark_sql(node)

        with spark_errors(what):
            node = with_iceberg_functions(ctx, query.node, lambda n: ctx.spark().sql(text(n)))
            sql = text(node) if node is not query.node else (query.rewrite(lambda r: views[r.index]) if query.tables
                                                             else query.sql)
            # spark.sql analyses eagerly: the plan holds the views' plans, so the views can go right after
            return ctx.spark().sql(prefix + sql)
    finally:
        ctx.drop_views(registered)


def with_iceberg_functions(ctx: HandlerContext, node: exp.Expression,
                           analyse: Callable[[exp.Expression], DataFrame]) -> exp.Expression:
    """``node`` with calls of Iceberg's functions (``cat.system.bucket(16, id)``) bound through Spark's
    analysis (floe.sql.functions); ``node`` itself when it has none."""
    names = {n.lower() for n in ctx.session.catalog_names}
    calls = iceberg_calls(node, lambda c: c.lower() in names)
    if not calls:
        return node
    return bind_functions(node, calls, ctx.spark(), analyse, ctx.session.current_catalog)


@contextmanager
def expression_views(ctx: HandlerContext, node: exp.Expression,
                     frame: Callable[[], DataFrame] | None = None) -> Iterator[str]:
    """Spark SQL of an expression whose subqueries read catalog tables (``id IN (SELECT id FROM cat.db.k)``),
    with those tables registered as views until the block ends (the expression is analysed lazily).
    ``frame`` gives the rows the expression is over, for typing calls of Iceberg's functions in it.
    """
    refs = table_refs(node)
    registered: list[str] = []
    try:
        views = _register_views(ctx, refs, registered, node=node) if refs else {}

        def text(n: exp.Expression) -> str:
            return rewrite_tables(n, refs, lambda r: views[r.index]) if refs else spark_sql(n)

        if frame is not None:
            target = frame

            def analyse(n: exp.Expression) -> DataFrame:
                from pyspark.sql import functions as F

                return target().select(F.expr(text(n)))

            node = with_iceberg_functions(ctx, node, analyse)
        yield text(node)
    finally:
        ctx.drop_views(registered)


_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})?$")


def _spark_time_zone(spark: Any) -> dt.tzinfo | None:
    """Spark's session time zone (it reads ``TIMESTAMP '...'`` literals in it); None when Floe cannot read it."""
    name = str(spark.conf.get("spark.sql.session.timeZone", "UTC")).strip()
    if name.upper() in ("UTC", "Z", "GMT"):
        return dt.timezone.utc
    offset = _OFFSET.match(name)
    if offset is not None:
        sign = -1 if offset.group(1) == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0)))
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


def _is_spark_temp_view(spark: Any, ref: c.TableRef) -> bool:
    """A one-part name of a temporary view registered in the Spark session (Spark resolves those first)."""
    if len(ref.name) != 1 or ref.time_travel is not None:
        return False
    name = ref.name[0]
    try:
        return bool(spark.catalog.tableExists(name)) and bool(spark.catalog.getTable(name).isTemporary)
    except Exception:  # noqa: BLE001 - any lookup failure means "not a Spark view": Floe resolves the name
        return False


# -- results -----------------------------------------------------------------------------------------


def _python(value: Any, t: pa.DataType, tz: dt.tzinfo) -> Any:
    """An Arrow value (already to_pylist'ed) shaped like Spark shows it: maps as dicts, local timestamps."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_timestamp(t) and t.tz is not None and isinstance(value, dt.datetime):
        return value.astimezone(tz).replace(tzinfo=None)
    if pa.types.is_map(t):
        return {_python(k, t.key_type, tz): _python(v, t.item_type, tz) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_python(v, t.value_type, tz) for v in value]
    if pa.types.is_struct(t):
        return {f.name: _python(value.get(f.name), f.type, tz) for f in t}
    return value


def result_from_arrow(table: pa.Table, tz: dt.tzinfo) -> ResultSet:
    """Rows of an Arrow table as Python values, timestamps in the session time zone."""
    columns = list(table.column_names)
    cols = []
    for i in range(table.num_columns):
        t = table.schema.field(i).type
        cols.append([_python(v, t, tz) for v in table.column(i).to_pylist()])
    return ResultSet(columns=columns, rows=list(zip(*cols)) if cols else [])


def result_from_dataframe(ctx: HandlerContext, df: DataFrame, *, what: str) -> ResultSet:
    """Collect a DataFrame (through Arrow) into a ResultSet."""
    with spark_errors(what):
        table = df.toArrow()
    return result_from_arrow(table, ctx.time_zone())


def run_select(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``SELECT ...``: the rows."""
    assert isinstance(stmt, c.Select)
    what = short_sql(stmt.sql) or "SELECT"
    return result_from_dataframe(ctx, query_dataframe(ctx, stmt.query, what=what), what=what)


def run_explain(ctx: HandlerContext, stmt: c.Statement) -> ResultSet:
    """``EXPLAIN [mode] SELECT ...``: Spark's plan of the rewritten query."""
    assert isinstance(stmt, c.Explain)
    if not isinstance(stmt.statement, c.Select):
        raise ValidationError(f"EXPLAIN supports queries only: {short_sql(stmt.sql)}")
    mode = (stmt.mode or "").upper()
    if mode not in ("", "EXTENDED", "FORMATTED", "CODEGEN", "COST"):
        raise ValidationError(f"Unknown EXPLAIN mode {stmt.mode!r}")
    prefix = f"EXPLAIN {mode} " if mode else "EXPLAIN "
    df = query_dataframe(ctx, stmt.statement.query, what="EXPLAIN", prefix=prefix)
    return result_from_dataframe(ctx, df, what="EXPLAIN")
