"""SELECT (and EXPLAIN SELECT): Floe tables become temporary views of Floe's native read, Spark runs the rest.

Every table reference of the query (``db.t``, ``cat.db.t.history``, ``t VERSION AS OF 123``,
``t.branch_dev``) is registered as a temporary view: a table as ``floe.spark.read(...)`` at the
requested snapshot, a metadata table as ``floe.spark.metadata_tables.metadata_table_df``. The query is
rewritten to use the view names (aliases kept) and run by ``spark.sql``; joins, aggregates and functions
are Spark's.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from floe.errors import NoSuchSnapshotError, ValidationError
from floe.sql import commands as c
from floe.sql.handlers.context import HandlerContext, spark_errors
from floe.sql.identifiers import ResolvedTable
from floe.sql.parser import short_sql
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from floe.table.table import Table

__all__ = ["query_dataframe", "result_from_dataframe", "run_explain", "run_select", "table_dataframe"]


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
        return opts
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


def table_dataframe(ctx: HandlerContext, ref: c.TableRef) -> DataFrame:
    """The DataFrame a query's table reference reads (table, snapshot, or metadata table)."""
    resolved = ctx.resolve(ref.name, allow_metadata=True)
    base = ResolvedTable(
        catalog=resolved.catalog, namespace=resolved.namespace, name=resolved.name, location=resolved.location
    )
    table = ctx.load(base)
    spark = ctx.spark()
    opts = _time_travel_options(ctx, table, ref, resolved)
    if resolved.metadata_table is not None:
        from floe.spark.metadata_tables import metadata_table_df

        snapshot_id = opts.get("snapshot_id")
        if "as_of_timestamp" in opts:
            snapshot_id = table.metadata.snapshot_as_of_timestamp(opts["as_of_timestamp"]).snapshot_id
        for key in ("branch", "tag"):
            if key in opts:
                snap = table.metadata.snapshot_by_name(opts[key])
                snapshot_id = snap.snapshot_id if snap is not None else None
        with spark_errors(f"Reading {resolved}"):
            return metadata_table_df(spark, table, resolved.metadata_table, snapshot_id=snapshot_id)
    from floe.spark.read import read

    return read(spark, table, **opts)


def query_dataframe(ctx: HandlerContext, query: c.Query, *, what: str = "SELECT", prefix: str = "") -> DataFrame:
    """Run a query (SELECT, VALUES, WITH ...) with its Floe tables as views; returns the lazy DataFrame.

    ``prefix`` goes before the rewritten SQL (``EXPLAIN EXTENDED ``).
    """
    views: dict[int, str] = {}
    registered: list[str] = []
    spark = ctx.spark()
    try:
        for ref in query.tables:
            if _is_spark_temp_view(spark, ref):
                views[ref.index] = ref.name[0]  # the caller's own temporary view: Spark resolves it first
                continue
            df = table_dataframe(ctx, ref)
            views[ref.index] = ctx.temp_view(df, ref.name[-1])
            registered.append(views[ref.index])
        sql = query.rewrite(lambda r: views[r.index]) if query.tables else query.sql
        with spark_errors(what):
            # spark.sql analyses eagerly: the plan holds the views' plans, so the views can go right after
            return spark.sql(prefix + sql)
    finally:
        ctx.drop_views(registered)


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
