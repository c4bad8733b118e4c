"""Row-level changes on Spark: DELETE, UPDATE and MERGE, copy-on-write or merge-on-read per table property.

The one engine behind Floe's SQL (floe.sql.handlers translate statements into these calls) and the Python
API (``table.delete``, ``table.update``, ``table.merge``, ``table.upsert``). Conditions and values are
Spark SQL expressions over the table's columns (and, in MERGE, the source's).

- ``write.delete.mode`` / ``write.update.mode`` / ``write.merge.mode`` choose copy-on-write (default) or
  merge-on-read (format v2+: position delete files plus new data files, one row delta).
- Files whose every row matches a DELETE are dropped from metadata without reading them.
- Copy-on-write rewrites only the files holding a matched row: DELETE and UPDATE find them through the
  filter (pruned by partition and metrics), MERGE by joining the target's file column with the source
  first (or testing its key against the source's keys as a bitmap), so a 1-row MERGE rewrites one file, not
  the table.
- Every commit is validated against what was committed since the scan and deletes what it wrote if it
  fails (unless the outcome is unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from floe.errors import ParseError, UnsupportedError, ValidationError
from floe.expressions.base import AlwaysTrue, BooleanExpression
from floe.expressions.metrics_evaluator import StrictMetricsEvaluator
from floe.expressions.parser import parse_filter
from floe.expressions.to_spark_sql import spark_string
from floe.scan.table_scan import TableScan
from floe.scan.tasks import FileScanTask
from floe.spark.row_level.commits import (
    file_scoped_deletes,
    rewrite_commit,
    rewrite_distribution,
    row_delta_commit,
)
from floe.spark.row_level.merge_pruning import (
    deterministic,
    equi_keys,
    key_only_join,
    only_equalities,
    source_key_words,
    source_matched_rows,
    source_range_filter,
)
from floe.spark.row_level.observed_positions import ObservedPositions
from floe.spark.row_level.position_deletes import per_file_granularity
from floe.spark.row_level.source_keys import (
    integral,
    key_matches,
)
from floe.spark.runtime.call_sites import without_call_sites
from floe.spark.runtime.configure import session
from floe.spark.runtime.connect import application_id
from floe.spark.scan.driver_rows import LONG_ARRAY_COLUMN, empty_frame
from floe.spark.scan.row_columns import (
    ROW_FILE_COLUMN,
    ROW_ID_STORED,
    ROW_POS_COLUMN,
    ROW_SEQ_STORED,
    natively_positioned,
    quoted,
)
from floe.spark.scan.table_read import dataframe_for_scan
from floe.spark.types import to_spark_schema, to_spark_type
from floe.spark.write.dataframe_write import distribution_mode
from floe.spark.write.session_settings import session_distribution_mode
from floe.spec import properties as P
from floe.spec.types import NestedField, StructType
from floe.table.row_changes import Clause as RowClause
from floe.table.row_changes import UpsertResult
from floe.table.table import Table

__all__ = [
    "MergeClause",
    "SparkRowLevelEngine",
    "delete_rows",
    "merge_into",
    "merge_on_read",
    "plan_candidates",
    "pruning_filter",
    "update_rows",
]

_TID = "__floe_tid"  # target row id: NULL on the joined side means "no target row"
_SRC = "__floe_src"  # source marker: NULL means "no source row"


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause of a MERGE.

    Args:
        match: ``matched``, ``not_matched`` or ``not_matched_by_source``.
        action: ``update``, ``delete`` or ``insert``.
        condition: an extra Spark SQL condition (``AND ...`` of the clause), or None.
        values: target column -> Spark SQL value for ``update`` (columns left out keep their value) and
            ``insert`` (columns left out are NULL).
    """

    match: str
    action: str
    condition: str | None = None
    values: Mapping[str, str] = field(default_factory=dict)


def merge_on_read(table: Table, mode_property: str, what: str) -> bool:
    """Whether ``mode_property`` (``write.delete.mode`` etc.) asks for merge-on-read on ``table``.

    Raises:
        ValidationError: an unknown mode, or merge-on-read on a format v1 table (no delete files in v1).
    """
    mode = table.properties.get(mode_property, P.ROW_LEVEL_MODE_DEFAULT).strip().lower()
    if mode == P.COPY_ON_WRITE:
        return False
    if mode != P.MERGE_ON_READ:
        raise ValidationError(
            f"{what}: table {table.name()} has {mode_property}={mode!r}; expected {P.COPY_ON_WRITE} or {P.MERGE_ON_READ}"
        )
    if table.format_version < 2:
        raise ValidationError(
            f"{what}: table {table.name()} is format version 1 but {mode_property}={P.MERGE_ON_READ} needs "
            f"delete files (format version 2 or later); upgrade with ALTER TABLE ... SET TBLPROPERTIES "
            f"('format-version'='2') or set {mode_property}={P.COPY_ON_WRITE}"
        )
    return True


def pruning_filter(condition: str | None) -> BooleanExpression | None:
    """A Spark SQL condition as a Floe expression for pruning; None when it is beyond Floe's filters."""
    if condition is None:
        return AlwaysTrue()
    try:
        return parse_filter(condition)
    except (ParseError, UnsupportedError):
        return None


def plan_candidates(
    table: Table, expr: BooleanExpression | None, branch: str | None = None
) -> tuple[int | None, list[FileScanTask]]:
    """The head snapshot id of ``branch`` (default main) and the data files that may hold matching rows."""
    snap = table.metadata.snapshot_by_name(branch) if branch is not None else table.metadata.current_snapshot()
    if snap is None:
        return None, []
    # Spark resolves column names case-insensitively; so does the pruning filter
    scan = table.scan(
        row_filter=expr if expr is not None else AlwaysTrue(), snapshot_id=snap.snapshot_id, case_sensitive=False
    )
    return snap.snapshot_id, list(scan.plan_files())


def _whole_file_matches(table: Table, task: FileScanTask, expr: BooleanExpression | None) -> bool:
    """Every row of the task's file matches: strict partition projection (residual true) or strict metrics."""
    # Deletes attached to the file do not matter: if every row of the file matches, so do the live ones.
    if expr is None:
        return False  # the condition is beyond Floe's filters: only Spark can tell, so rewrite
    if isinstance(expr, AlwaysTrue) or isinstance(task.residual, AlwaysTrue):
        return True
    return StrictMetricsEvaluator(table.schema(), expr, case_sensitive=False).eval(task.data_file)


def _spark_properties(spark: SparkSession) -> dict[str, str]:
    """Iceberg's Spark writer records the application id in every snapshot summary (seed ch.3 queries it)."""
    try:
        return {"spark.app.id": application_id(spark)}
    except Exception:  # noqa: BLE001 - a summary nicety must never fail a write
        return {}


# -- DELETE -----------------------------------------------------------------------------------------------
@without_call_sites()
def delete_rows(
    table: Table,
    condition: str | None,
    *,
    spark: Callable[[], SparkSession],
    snapshot_properties: Mapping[str, str] | None = None,
    what: str = "DELETE",
    target_alias: str | None = None,
    branch: str | None = None,
    commit_unmatched: bool = False,
) -> bool:
    """Delete the rows matching ``condition`` (Spark SQL; None: every row). Returns whether anything changed.

    ``commit_unmatched``: a filter no file can match still commits (SQL's DELETE, as Iceberg Java's).

    ``target_alias`` names the table's rows for subqueries in the condition that refer to them; ``branch``
    is the branch changed (default main).

    Files whose every row matches are dropped from metadata without starting Spark (``spark`` is called
    only when rows must be read); the others are rewritten (copy-on-write) or get position deletes
    (merge-on-read, per ``write.delete.mode``).

    Raises:
        ValidationError: the table's delete mode is unknown or impossible.
    """
    mor = merge_on_read(table, P.DELETE_MODE, what)
    expr = pruning_filter(condition)
    snapshot_id, tasks = plan_candidates(table, expr, branch)
    if not tasks:
        if snapshot_id is None or expr is None or not commit_unmatched:
            return False
        # As Iceberg Java's metadata delete: a filter no file can match still commits a delete snapshot
        empty = table.new_delete(branch=branch)
        empty.validate_from_snapshot(snapshot_id)
        for k, v in (snapshot_properties or {}).items():
            empty.set(k, v)
        empty.commit()
        return True
    whole = [t for t in tasks if _whole_file_matches(table, t, expr)]
    partial = [t for t in tasks if t not in whole]
    if not partial:
        props = dict(snapshot_properties or {})
        op = table.new_delete(branch=branch)
        op.case_sensitive(False)
        for t in whole:
            op.delete_file(t.data_file)
            for f in file_scoped_deletes(t):  # they would name a file no longer live (as Java drops them)
                op.delete_file(f)
        op.validate_from_snapshot(snapshot_id)
        if expr is not None:
            op.conflict_detection_filter(expr).validate_no_conflicting_data()
        for k, v in props.items():
            op.set(k, v)
        op.commit()
        return True
    assert condition is not None  # without a condition every file matches whole
    session = spark()
    props = {**_spark_properties(session), **(snapshot_properties or {})}
    scan = table.scan(snapshot_id=snapshot_id)
    if mor:
        rows = _aliased(dataframe_for_scan(session, scan, partial, with_position=True), target_alias)
        matched = rows.where(f"({condition})")  # NULL drops the row either way; no coalesce keeps pushdown
        observer = _position_observer(table, session, partial, what)
        if observer is not None:  # one job with no shuffle: the scan hands the positions to the driver
            observed = observer.observe(matched, F.col(ROW_FILE_COLUMN), F.col(ROW_POS_COLUMN), F.lit(True), F.lit(True))
            row_delta_commit(table, snapshot_id=snapshot_id, tasks=partial, deleted_rows=None, new_rows=None,
                              dropped=whole, expr=expr, snapshot_properties=props, branch=branch,
                              observed_positions=lambda: observer.run(observed), spark=session)
            return True
        row_delta_commit(table, snapshot_id=snapshot_id, tasks=partial, deleted_rows=matched, new_rows=None,
                          dropped=whole, expr=expr, snapshot_properties=props, branch=branch)
        return True
    # Iceberg Java commits the copy-on-write overwrite even when no candidate file holds a match
    partial = _files_with_matches(session, scan, partial, condition, target_alias)
    keep: DataFrame | None = None
    write_options: dict[str, str] = {}
    if partial:
        positioned = all(_natively_positioned(t) for t in partial)
        lineage = _keeps_lineage(table, positioned)
        rows = _aliased(dataframe_for_scan(session, scan, partial, with_position=positioned, lineage=lineage), target_alias)
        rows, write_options = rewrite_distribution(table, rows.where(f"NOT coalesce(({condition}), false)"), "DELETE", partial)
        # surviving rows keep their row id and last-updated sequence number (v3 row lineage)
        keep = rows.select(*(F.col(quoted(f.name)) for f in table.schema().fields), *_lineage_columns(lineage))
    rewrite_commit(table, snapshot_id=snapshot_id, removed=whole + partial, new_rows=keep, expr=expr,
                    snapshot_properties=props, branch=branch, write_options=write_options)
    return True


def _files_with_matches(
    session: SparkSession, scan: TableScan, tasks: Sequence[FileScanTask], condition: str, alias: str | None
) -> list[FileScanTask]:
    """The tasks whose file holds a row matching ``condition``: copy-on-write rewrites only those files, as
    Iceberg Java does (one filtering pass over the candidates; all of them when files lack row positions)."""
    if not tasks or not all(_natively_positioned(t) for t in tasks):
        return list(tasks)
    rows = _aliased(dataframe_for_scan(session, scan, list(tasks), with_position=True), alias)
    paths = {r[0] for r in rows.where(f"({condition})").select(ROW_FILE_COLUMN).distinct().collect()}
    return [t for t in tasks if t.data_file.file_path in paths]


def _lineage_columns(keep: bool) -> list[Column]:
    return [F.col(ROW_ID_STORED), F.col(ROW_SEQ_STORED)] if keep else []


def _keeps_lineage(table: Table, positioned: bool) -> bool:
    """Whether rewritten rows keep their v3 row lineage: ids are inherited from positions, so the rows must
    come with them (Parquet read natively); other rows are written as new rows, with new ids."""
    return table.format_version >= 3 and positioned


def _aliased(rows: DataFrame, alias: str | None) -> DataFrame:
    return rows.alias(alias) if alias else rows


def _nested_field(column: NestedField, path: Sequence[str], table: Table, what: str) -> NestedField:
    """The struct field at ``path`` under ``column`` (case-insensitive, as Spark resolves it)."""
    current = column
    for part in path:
        fields = current.field_type.fields if isinstance(current.field_type, StructType) else ()
        found = next((f for f in fields if f.name.lower() == part.lower()), None)
        if found is None:
            raise ValidationError(f"{what}: table {table.name()} has no field {'.'.join([column.name, *path])!r}")
        current = found
    return current


# -- UPDATE -----------------------------------------------------------------------------------------------
@without_call_sites()
def update_rows(
    table: Table,
    assignments: Mapping[str, str],
    condition: str | None,
    *,
    spark: SparkSession,
    snapshot_properties: Mapping[str, str] | None = None,
    what: str = "UPDATE",
    target_alias: str | None = None,
    branch: str | None = None,
    commit_unmatched: bool = False,
) -> bool:
    """Set columns (name -> Spark SQL value) on the rows matching ``condition``; returns whether any file changed.

    ``commit_unmatched``: with no candidate file the write still commits (SQL's UPDATE, as Iceberg Java's).

    A dotted name sets a struct field (``loc.lat``); ``target_alias`` names the table's rows for
    subqueries that refer to them.

    Raises:
        ValidationError: an unknown column or field, or an unknown/impossible ``write.update.mode``.
    """
    mor = merge_on_read(table, P.UPDATE_MODE, what)
    schema = table.schema()
    by_name = {f.name.lower(): f for f in schema.fields}
    sets: dict[str, Column] = {}
    for name, value in assignments.items():
        top, _, path = name.partition(".")
        target = by_name.get(top.lower())
        if target is None:
            raise ValidationError(f"{what}: table {table.name()} has no column {top!r}")
        if path:
            field_names = path.split(".")
            nested = _nested_field(target, field_names, table, what)
            base = sets.get(target.name, F.col(quoted(target.name)))
            new = F.expr(value).cast(to_spark_type(nested.field_type))
            sets[target.name] = base.withField(".".join(quoted(p) for p in field_names), new)
            continue
        if target.name in sets:
            raise ValidationError(f"{what}: column {target.name!r} is assigned twice")
        sets[target.name] = F.expr(value)
    cond = condition if condition is not None else "true"
    expr = pruning_filter(condition)
    snapshot_id, tasks = plan_candidates(table, expr, branch)
    if not tasks and (snapshot_id is None or not commit_unmatched):
        return False
    props = {**_spark_properties(spark), **(snapshot_properties or {})}
    if not tasks:  # as Iceberg Java: the row-level write commits, with nothing to change (an overwrite)
        if mor:
            empty = table.new_row_delta(branch=branch)
            empty.validate_from_snapshot(snapshot_id)
            for k, v in props.items():
                empty.set(k, v)
            empty.commit()
        else:
            rewrite_commit(table, snapshot_id=snapshot_id, removed=[], new_rows=None, expr=expr,
                           snapshot_properties=props, branch=branch)
        return True
    scan = table.scan(snapshot_id=snapshot_id)
    if not mor:
        tasks = _files_with_matches(spark, scan, tasks, cond, target_alias)
        if not tasks:  # as Iceberg Java: the copy-on-write overwrite commits, with nothing to swap
            rewrite_commit(table, snapshot_id=snapshot_id, removed=[], new_rows=None, expr=expr,
                           snapshot_properties=props, branch=branch)
            return True
    positioned = mor or all(_natively_positioned(t) for t in tasks)
    lineage = _keeps_lineage(table, positioned)
    rows = _aliased(dataframe_for_scan(spark, scan, tasks, with_position=positioned, lineage=lineage), target_alias)
    matched = F.coalesce(F.expr(f"({cond})"), F.lit(False))
    if mor:
        rows = rows.where(F.expr(f"({cond})"))  # only matching rows; a bare condition is pushed down
    cols = []
    for f in schema.fields:
        if f.name in sets:
            new = sets[f.name].cast(to_spark_type(f.field_type))
            cols.append(F.when(matched, new).otherwise(F.col(quoted(f.name))).alias(f.name))
        else:
            cols.append(F.col(quoted(f.name)))
    if lineage:  # an updated row keeps its id; its sequence number is the new commit's (null: inherited)
        cols += [F.col(ROW_ID_STORED), F.when(matched, F.lit(None)).otherwise(F.col(ROW_SEQ_STORED)).alias(ROW_SEQ_STORED)]
    if mor:
        updated = rows.select(*cols)
    else:
        located = [F.col(ROW_FILE_COLUMN), F.col(ROW_POS_COLUMN)] if positioned else []
        distributed, write_options = rewrite_distribution(table, rows.select(*cols, *located), "UPDATE", tasks)
        updated = distributed.select(*(F.col(quoted(f.name)) for f in schema.fields), *_lineage_columns(lineage))
    observer = _position_observer(table, spark, tasks, what) if mor else None
    if observer is not None:
        # One job: the updated rows' write also gathers their positions (floe.spark.row_level.observed_positions).
        observed = observer.observe(rows, F.col(ROW_FILE_COLUMN), F.col(ROW_POS_COLUMN), F.lit(True), F.lit(True))
        row_delta_commit(table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=None, new_rows=observed.select(*cols),
                          expr=expr, snapshot_properties=props, branch=branch,
                          observed_positions=lambda: observer.positions(None, lambda: False), spark=spark)
    elif mor:
        # Both writes read the matching rows: cached, the table is scanned once (as Java's one delta write).
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            row_delta_commit(table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=rows, new_rows=updated,
                              expr=expr, snapshot_properties=props, branch=branch)
        finally:
            rows.unpersist()
    else:
        rewrite_commit(table, snapshot_id=snapshot_id, removed=tasks, new_rows=updated, expr=expr,
                        snapshot_properties=props, branch=branch, write_options=write_options)
    return True


# -- MERGE ------------------------------------------------------------------------------------------------
@without_call_sites()
def merge_into(
    table: Table,
    source: DataFrame,
    on: str,
    clauses: Sequence[MergeClause],
    *,
    target_alias: str = "t",
    source_alias: str = "s",
    snapshot_properties: Mapping[str, str] | None = None,
    what: str = "MERGE",
    branch: str | None = None,
) -> bool:
    """``MERGE INTO table t USING source s ON on WHEN ...``; returns whether anything was committed.

    ``on``, clause conditions and values are Spark SQL over ``target_alias``/``source_alias`` columns.

    Raises:
        ValidationError: no clause, equal aliases, a target row matched by two source rows
            (MERGE_CARDINALITY_VIOLATION), or an unknown/impossible ``write.merge.mode``.
    """
    t, s = target_alias, source_alias
    if t.lower() == s.lower():
        raise ValidationError(f"{what}: target and source need different aliases")
    if not clauses:
        raise ValidationError(f"{what}: no WHEN clause")
    mor = merge_on_read(table, P.MERGE_MODE, what)
    spark = source.sparkSession
    insert_only = all(cl.match == "not_matched" for cl in clauses)
    by_source = any(cl.match == "not_matched_by_source" for cl in clauses)
    snapshot_id, tasks = plan_candidates(table, AlwaysTrue(), branch)
    if not by_source and len(tasks) > 1:
        tasks = _matchable(table, snapshot_id, tasks, source, equi_keys(on, t, s))
    # Row files and positions come from Parquet data files read natively; other layouts are rewritten whole.
    positioned = all(_natively_positioned(task) for task in tasks)
    if mor and not positioned:
        raise UnsupportedError(f"{what}: merge-on-read of table {table.name()} needs Parquet data and delete files")
    lineage = _keeps_lineage(table, positioned)
    if tasks:
        target = dataframe_for_scan(
            spark, table.scan(snapshot_id=snapshot_id), tasks, with_position=positioned, lineage=lineage
        )
        if not positioned:
            target = target.select("*", F.lit(None).cast("string").alias(ROW_FILE_COLUMN),
                                   F.lit(None).cast("long").alias(ROW_POS_COLUMN))
    else:
        target = empty_frame(spark, to_spark_schema(table.schema())).select(
            "*", F.lit(None).cast("string").alias(ROW_FILE_COLUMN), F.lit(None).cast("long").alias(ROW_POS_COLUMN)
        )
    # Without lineage to keep (rows written get new ids) the values are NULL literals, not target columns a
    # join would carry
    kept_lineage = ROW_ID_STORED in target.columns
    located = target  # each row with its file and position (when positioned), before the row ids
    target = target.withColumn(_TID, F.monotonically_increasing_id())
    source = source.withColumn(_SRC, F.lit(True))
    tv, sv = f"__floe_merge_target_{id(target):x}", f"__floe_merge_source_{id(source):x}"
    target.createOrReplaceTempView(tv)
    source.createOrReplaceTempView(sv)
    props = {**_spark_properties(spark), **(snapshot_properties or {})}
    views, cached = [tv, sv], []
    try:
        t_in, s_in = f"{quoted(t)}.{_TID} IS NOT NULL", f"{quoted(s)}.{_SRC} IS NOT NULL"
        presence = {"matched": f"{t_in} AND {s_in}", "not_matched": f"NOT ({t_in})", "not_matched_by_source": f"NOT ({s_in})"}
        whens = []
        by_action: dict[str, list[int]] = {"delete": [], "insert": [], "update": []}
        for i, clause in enumerate(clauses, start=1):
            if clause.match not in presence or clause.action not in by_action:
                raise ValidationError(f"{what}: unknown clause WHEN {clause.match} THEN {clause.action}")
            cond = f" AND coalesce(({clause.condition}), false)" if clause.condition is not None else ""
            whens.append(f"WHEN {presence[clause.match]}{cond} THEN {i}")
            by_action[clause.action].append(i)
        action = "CASE " + " ".join(whens) + " ELSE 0 END"

        def among(ids: list[int]) -> str:
            return f"({action}) IN ({', '.join(map(str, ids or [-1]))})"

        def value(branches: list[str], keep: str) -> str:
            return f"CASE ({action}) {' '.join(branches)} ELSE {keep} END" if branches else keep

        cols, new_cols = [], []  # the values of every joined row; of updated and inserted rows only
        for f in table.schema().fields:
            branches = []
            for i, clause in enumerate(clauses, start=1):
                if clause.action == "update" and f.name in clause.values:
                    branches.append(f"WHEN {i} THEN {clause.values[f.name]}")
                elif clause.action == "insert":
                    branches.append(f"WHEN {i} THEN {clause.values.get(f.name, 'NULL')}")
            cast = f"AS {to_spark_type(f.field_type).simpleString()}) AS {quoted(f.name)}"
            keep = f"{quoted(t)}.{quoted(f.name)}"
            cols.append(f"CAST({value(branches, keep)} {cast}")
            # A column that every UPDATE clause assigns is never kept in an updated or inserted row; without
            # it in the ELSE, Spark prunes it from the target's scan and from the join's shuffle.
            assigned = all(f.name in cl.values for cl in clauses if cl.action == "update")
            new_cols.append(f"CAST({value(branches, 'NULL' if assigned else keep)} {cast}")
        added = f"NOT ({t_in}) AND {among(by_action['insert'])}"
        changed = f"{t_in} AND {among(by_action['update'] + by_action['delete'])}"
        updated = f"{t_in} AND {among(by_action['update'])}"
        # v3 row lineage: a kept or updated target row keeps its id, an updated one gets the new commit's
        # sequence number (null: inherited), an inserted row gets both anew (no target row: null)
        lineage_cols = [
            f"{quoted(t)}.{ROW_ID_STORED} AS {ROW_ID_STORED}",
            f"CASE WHEN {updated} THEN NULL ELSE {quoted(t)}.{ROW_SEQ_STORED} END AS {ROW_SEQ_STORED}",
        ] if kept_lineage else [f"CAST(NULL AS BIGINT) AS {ROW_ID_STORED}", f"CAST(NULL AS BIGINT) AS {ROW_SEQ_STORED}"]
        join_kind = "FULL OUTER" if by_source or not insert_only else "RIGHT OUTER"
        once = mor and positioned and not by_source and not insert_only
        scanned, matched_rows = tv, None
        split: tuple[DataFrame, _KeyMatches] | None = None  # a copy-on-write rewrite in two parts (_split_rewrite)
        if once and tasks:  # only matched target rows reach the join (merge_pruning.source_matched_rows)
            reduced = source_matched_rows(spark, tv, sv, t, s, on, source)
            if reduced is not None:
                reduced = reduced.persist(StorageLevel.MEMORY_AND_DISK)
                cached.append(reduced)
                matched_rows = reduced.count()
                scanned = f"__floe_merge_matched_{id(reduced):x}"
                reduced.createOrReplaceTempView(scanned)
                views.append(scanned)
        join = f"{quoted(scanned)} AS {quoted(t)} {join_kind} JOIN {quoted(sv)} AS {quoted(s)} ON {on}"
        matched = [cl for cl in clauses if cl.match == "matched"]
        # As Spark: one unconditional matched DELETE cannot be ambiguous, so several matches are allowed.
        only_delete = len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None
        if once:
            return _merge_on_read_once(
                table, spark, tasks, snapshot_id, branch, props, what, matched_rows=matched_rows,
                joined=spark.sql(
                    f"SELECT {', '.join(new_cols + lineage_cols)}, ({action}) AS {_ACTION}, {quoted(t)}.{_TID} AS {_TID}, "
                    f"{quoted(t)}.{ROW_FILE_COLUMN} AS {_RFILE}, {quoted(t)}.{ROW_POS_COLUMN} AS {_RPOS} "
                    f"FROM {join} WHERE {s_in}"
                ),
                columns=[f.name for f in table.schema().fields] + [ROW_ID_STORED, ROW_SEQ_STORED],
                check_cardinality=bool(matched) and not only_delete,
                ids=by_action,
            )
        check_cardinality = bool(matched) and not only_delete
        if insert_only:  # no clause for matched rows: no cardinality to check, no file touched
            before = len(table.metadata.snapshots)
            rows = spark.sql(f"SELECT {', '.join(new_cols)} FROM {join} WHERE {added}")
            return len(table.append(rows, snapshot_properties=props, branch=branch).metadata.snapshots) != before
        # Without NOT MATCHED BY SOURCE a changed target row has a source row: the inner join (the source
        # broadcast when small) finds the matched rows; the outer join is needed only for the rewrite.
        matches = join if by_source else f"{quoted(tv)} AS {quoted(t)} JOIN {quoted(sv)} AS {quoted(s)} ON {on}"
        if positioned:
            # One pass for both: the files holding a target row some clause changes (only they are
            # rewritten or get deletes) and whether a target row matches twice. With no clause condition the
            # ON keys alone decide it (the clauses read only the source's presence column).
            hint, pairs = "", matches
            keyed = not by_source and all(cl.condition is None for cl in clauses)
            by_key = _key_bitmap_matches(spark, located, source, sv, t, s, on) if keyed and tasks else None
            if by_key is not None:
                # no clause condition, no BY SOURCE: every matched row is changed (the first matched clause,
                # unconditional, updates or deletes it), and no key repeats in the source
                touched_paths, duplicated, every_match_changes = by_key.files, False, True
            else:
                if keyed:
                    narrow = key_only_join(spark, tv, sv, t, s, on, carried=(_SRC,))
                    if narrow is not None:
                        hint, pairs = narrow
                touched_paths, duplicated, every_match_changes = _touched_files(spark.sql(
                    f"SELECT {hint} {quoted(t)}.{_TID} AS {_TID}, {quoted(t)}.{ROW_FILE_COLUMN} AS {_RFILE}, "
                    f"CASE WHEN {changed} THEN 1 ELSE 0 END AS {_CHANGED} FROM {pairs} WHERE {t_in}"
                ))
            touched = [task for task in tasks if task.data_file.file_path in touched_paths]
            listed = ", ".join(spark_string(p) for p in touched_paths) or "NULL"
            in_touched = f"{quoted(t)}.{ROW_FILE_COLUMN} IN ({listed})"
            if not mor and not by_source and every_match_changes and deterministic(source):
                # Every target row a source row matches lies in a touched file, so the rewrite's join needs
                # only those files' rows to tell matched from not matched, and no file paths: carried through
                # the join's shuffle and sort, a path per row was most of their bytes (docs/ARCHITECTURE.md)
                narrowed = _rewrite_target(spark, table, snapshot_id, touched, positioned, kept_lineage)
                in_touched = "true"
                if by_key is None:
                    tv = f"__floe_merge_rewritten_{id(narrowed):x}"
                    narrowed.withColumn(_TID, F.monotonically_increasing_id()).createOrReplaceTempView(tv)
                    views.append(tv)
                    join = f"{quoted(tv)} AS {quoted(t)} {join_kind} JOIN {quoted(sv)} AS {quoted(s)} ON {on}"
                else:
                    split = narrowed, by_key
        else:
            duplicated = check_cardinality and bool(spark.sql(
                f"SELECT 1 FROM {matches} WHERE {t_in} GROUP BY {quoted(t)}.{_TID} HAVING count(*) > 1 LIMIT 1"
            ).collect())
            touched, in_touched = list(tasks), "true"
        if check_cardinality and duplicated:
            raise ValidationError(_cardinality_violation(what))
        if mor:
            rows = spark.sql(f"SELECT {', '.join(new_cols + lineage_cols)} FROM {join} WHERE ({updated}) OR ({added})")
            gone = spark.sql(
                f"SELECT DISTINCT {quoted(t)}.{ROW_FILE_COLUMN}, {quoted(t)}.{ROW_POS_COLUMN} FROM {join} "
                f"WHERE {changed}"
            ) if touched else None
            before = len(table.metadata.snapshots)
            row_delta_commit(table, snapshot_id=snapshot_id, tasks=touched, deleted_rows=gone, new_rows=rows,
                              expr=AlwaysTrue(), snapshot_properties=props, branch=branch)
            return len(table.refresh().metadata.snapshots) != before
        kept = f"{t_in} AND {in_touched} AND NOT {among(by_action['delete'])}"
        def written(rows_from: str) -> DataFrame:
            return spark.sql(f"SELECT {', '.join(cols + lineage_cols)} FROM {rows_from} WHERE ({kept}) OR ({added})")

        if split is not None:
            narrowed, by_key = split
            matched_view = f"__floe_merge_matched_{id(narrowed):x}"
            views.append(matched_view)
            new_rows = _split_rewrite(narrowed, by_key, matched_view, kept_lineage, lambda matched: written(
                f"{quoted(sv)} AS {quoted(s)} LEFT OUTER JOIN {quoted(matched)} AS {quoted(t)} ON {on}"
            ))
        else:
            new_rows = written(join)
        rows, write_options = rewrite_distribution(table, new_rows, "MERGE")
        rewrite_commit(table, snapshot_id=snapshot_id, removed=touched, new_rows=rows, expr=AlwaysTrue(),
                        snapshot_properties=props, branch=branch, write_options=write_options)
        return True
    finally:
        for view in views:
            spark.catalog.dropTempView(view)
        for frame in cached:
            frame.unpersist()


_ACTION, _RFILE, _RPOS, _CHANGED = "_floe_action", "_floe_rfile", "_floe_rpos", "_floe_changed"


def _touched_files(matched: DataFrame) -> tuple[set[str], bool, bool]:
    """From a MERGE's matched target rows (``_TID``, ``_RFILE``, ``_CHANGED`` 0/1), in one pass: the files
    holding a row some clause changes, whether a target row matched more than one source row, and whether
    every file holding one of these rows is among the first (no row of another file is matched)."""
    per_file = (
        matched.groupBy(_TID, _RFILE).agg(F.count(F.lit(1)).alias("n"), F.max(_CHANGED).alias("ch"))
        .groupBy(_RFILE).agg(F.max("n").alias("n"), F.max("ch").alias("ch"))
        .collect()
    )
    touched = {r[_RFILE] for r in per_file if r["ch"] == 1}
    return touched, any(r["n"] > 1 for r in per_file), len(touched) == len(per_file)


@dataclass(frozen=True)
class _KeyMatches:
    """The files holding a target row some source row matches, found by the source's keys as a bitmap (its
    one-row relation ``words``, built once for the pass and the rewrite)."""

    files: set[str]
    words: DataFrame
    target_column: str


def _key_bitmap_matches(
    spark: SparkSession, located: DataFrame, source: DataFrame, source_view: str, t: str, s: str, on: str
) -> _KeyMatches | None:
    """The files of ``located``'s rows (``ROW_FILE_COLUMN``) some source row matches, by the source's keys as
    a bitmap (floe.spark.row_level.source_keys), when ON is one equality of integral columns, the source
    is deterministic (it is read again by the join), its keys are small enough to collect and pack, and
    none repeats; else None."""
    keys = only_equalities(on, t, s)
    if len(keys) != 1 or not deterministic(source):
        return None
    target_col, source_col = keys[0]
    if not integral(located, target_col) or not integral(source, source_col):
        return None
    words = source_key_words(spark, source, source_view, s, source_col, unique=True)
    if words is None:
        return None
    hits = located.crossJoin(F.broadcast(words)).where(F.expr(key_matches(quoted(target_col))))
    return _KeyMatches({r[0] for r in hits.select(ROW_FILE_COLUMN).distinct().collect()}, words, target_col)


def _split_rewrite(
    narrowed: DataFrame, by_key: _KeyMatches, matched_view: str, kept_lineage: bool, joined: Callable[[str], DataFrame]
) -> DataFrame:
    """A copy-on-write MERGE's new rows in two parts, told apart by the source's key bitmap: the touched
    files' rows no source row matches, written as they are without a join, and the rest, ``joined(view)``
    of the matched rows (registered as ``matched_view``) with the source, giving the updated and inserted
    rows. The whole target then crosses no shuffle: at 20M target rows against a 3M-row source, the outer
    join shuffled and sorted every target row (docs/ARCHITECTURE.md, row-level changes)."""
    both = narrowed.crossJoin(F.broadcast(by_key.words))
    hit = F.expr(key_matches(quoted(by_key.target_column)))
    columns = [c for c in narrowed.columns if c not in (ROW_ID_STORED, ROW_SEQ_STORED)]
    lineage = [F.col(ROW_ID_STORED), F.col(ROW_SEQ_STORED)] if kept_lineage else [
        F.lit(None).cast("long").alias(ROW_ID_STORED), F.lit(None).cast("long").alias(ROW_SEQ_STORED)
    ]
    unmatched = both.where(~hit).select(*[F.col(quoted(c)) for c in columns], *lineage)
    both.where(hit).drop(LONG_ARRAY_COLUMN).withColumn(_TID, F.monotonically_increasing_id()).createOrReplaceTempView(matched_view)
    return unmatched.unionByName(joined(matched_view))


def _rewrite_target(
    spark: SparkSession, table: Table, snapshot_id: int | None, touched: list[FileScanTask], positioned: bool,
    lineage: bool,
) -> DataFrame:
    """The rows of a copy-on-write MERGE's touched files for its rewrite join: the table's columns, the row
    lineage values when kept, without the row's file and position."""
    if touched:
        rows = dataframe_for_scan(
            spark, table.scan(snapshot_id=snapshot_id), touched, with_position=positioned and lineage, lineage=lineage
        ).drop(ROW_FILE_COLUMN, ROW_POS_COLUMN)
    else:
        rows = empty_frame(spark, to_spark_schema(table.schema()))
    if lineage and ROW_ID_STORED not in rows.columns:
        rows = rows.withColumns({ROW_ID_STORED: F.lit(None).cast("long"), ROW_SEQ_STORED: F.lit(None).cast("long")})
    return rows


def _matchable(
    table: Table, snapshot_id: int | None, tasks: list[FileScanTask], source: DataFrame, keys: list[tuple[str, str]]
) -> list[FileScanTask]:
    """The tasks whose files may hold a row the source matches, pruned by the source's key ranges on the
    columns the table is laid out by (partition sources and sort columns: where ranges prune, as Iceberg
    Java's runtime filters on Spark)."""
    laid_out = {i for spec in table.metadata.partition_specs for f in spec.fields for i in f.source_ids}
    laid_out |= {f.source_id for order in table.metadata.sort_orders for f in order.fields}
    schema = table.schema()
    names = {f.name.lower() for i in laid_out if (f := schema.find_field_or_none(i)) is not None}
    keys = [(tc, sc) for tc, sc in keys if tc.lower() in names]
    if not keys:
        return tasks
    expr = source_range_filter(schema, source, keys)
    if isinstance(expr, AlwaysTrue):
        return tasks
    return list(table.scan(row_filter=expr, snapshot_id=snapshot_id, case_sensitive=False).plan_files())


def _merge_on_read_once(
    table: Table, spark: SparkSession, tasks: Sequence[FileScanTask], snapshot_id: int | None, branch: str | None,
    props: Mapping[str, str], what: str, *, joined: DataFrame, columns: list[str], check_cardinality: bool,
    ids: Mapping[str, list[int]], matched_rows: int | None,
) -> bool:
    """A merge-on-read MERGE without ``NOT MATCHED BY SOURCE``: every row it needs has a source row, so the
    join (target scan included) runs once. When the driver may write the delete files, the new rows' write
    observes the matched target rows (one Spark job); otherwise the join goes into a cached frame of
    source-sized rows, and the deleted positions (grouped per target row, which checks the cardinality)
    and the new rows come from it. ``matched_rows``: how many target rows reach the join when known (the
    source's matches alone, counted), which bounds the observed positions instead of the candidate rows."""

    def among(kinds: tuple[str, ...]) -> Column:
        wanted = [i for k in kinds for i in ids[k]]
        return F.col(_ACTION).isin(wanted or [-1])

    target_row = F.col(_TID).isNotNull()
    changed = target_row & among(("update", "delete"))
    new_rows = (target_row & among(("update",))) | (~target_row & among(("insert",)))
    observer = _position_observer(table, spark, tasks, what, matched_rows)
    if observer is not None:
        # One job: the new rows' write also gathers the deleted positions (floe.spark.row_level.observed_positions).
        observed = observer.observe(joined, F.col(_RFILE), F.col(_RPOS), target_row, changed)
        before = len(table.metadata.snapshots)

        def matched_twice() -> bool:  # the metric suggested it (a retried stage counts twice): confirm
            twice = joined.where(target_row).groupBy(_RFILE, _RPOS).count().where(F.col("count") > 1)
            return bool(twice.limit(1).collect())

        violation = _cardinality_violation(what) if check_cardinality else None
        row_delta_commit(table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=None,
                          new_rows=observed.where(new_rows).select(*[F.col(quoted(c)) for c in columns]),
                          expr=AlwaysTrue(), snapshot_properties=props, branch=branch,
                          observed_positions=lambda: observer.positions(violation, matched_twice), spark=spark)
        return len(table.refresh().metadata.snapshots) != before
    joined = joined.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        gone: DataFrame | None
        if _merges_earlier_deletes(table, tasks):
            # The touched files' earlier delete files are read on the driver and merged into their new ones:
            # learn which files first (and the cardinality with them).
            touched_paths, duplicated, _ = _touched_files(
                joined.where(target_row).select(_TID, _RFILE, changed.cast("int").alias(_CHANGED))
            )
            if check_cardinality and duplicated:
                raise ValidationError(_cardinality_violation(what))
            tasks = [task for task in tasks if task.data_file.file_path in touched_paths]
            gone = joined.where(changed).select(F.col(_RFILE).alias(ROW_FILE_COLUMN), F.col(_RPOS).alias(ROW_POS_COLUMN)).distinct()
        else:  # no pass of its own: the delete write checks the cardinality as it groups the positions
            gone = _checked_positions(joined.where(target_row).select(_RFILE, _RPOS, changed.cast("int").alias(_CHANGED)),
                                      _cardinality_violation(what) if check_cardinality else None)
        rows = _rebalanced(table, joined.where(new_rows).select(*[F.col(quoted(c)) for c in columns]))
        before = len(table.metadata.snapshots)
        try:
            row_delta_commit(table, snapshot_id=snapshot_id, tasks=tasks, deleted_rows=gone if tasks else None,
                              new_rows=rows, expr=AlwaysTrue(), snapshot_properties=props, branch=branch)
        except Exception as e:
            if check_cardinality and _CARDINALITY in str(e):  # raised in a task of the delete write
                raise ValidationError(_cardinality_violation(what)) from None
            raise
        return len(table.refresh().metadata.snapshots) != before
    finally:
        joined.unpersist()


_CARDINALITY = "MERGE_CARDINALITY_VIOLATION"


def _rebalanced(table: Table, rows: DataFrame) -> DataFrame:
    """A merge-on-read MERGE's new rows (from the cached join), for a table whose write does not shuffle
    them (unpartitioned and not range-sorted: ``hash`` has no key to cluster by there), rebalanced: Spark's
    adaptive execution then packs them into as few tasks as their size needs, where each of the join's
    shuffle partitions would write a file of its own (Iceberg Java's delta writer asks for a distribution and
    writes one). bench/mor_rounds: 4 data files a round before, each later MERGE and read meeting all of them. Not on the one-job path: there adaptive
    execution may replace the observed plan once the shuffle shows no rows, and the metric is lost."""
    asked = session_distribution_mode(rows.sparkSession, {}, table_name=table.name())
    mode = distribution_mode(table, {} if asked is None else {"distribution-mode": asked})
    if table.spec().is_partitioned or (table.sort_order().is_sorted and mode == "range"):
        return rows
    return rows.hint("rebalance")


def _cardinality_violation(what: str) -> str:
    return f"{what}: a target row matches more than one source row ({_CARDINALITY})"


def _position_observer(
    table: Table, spark: SparkSession, tasks: Sequence[FileScanTask], what: str, rows: int | None = None
) -> ObservedPositions | None:
    """An observer of the positions a merge-on-read change deletes, when the driver may write their delete
    files (format v2, few candidate rows, or ``rows`` target rows known to reach the change; the touched
    files' earlier file-scoped deletes are read and merged on the driver after the job); else None."""
    if not tasks or table.format_version >= 3:
        return None
    return ObservedPositions.for_tasks(spark, tasks, what, rows)


def _merges_earlier_deletes(table: Table, tasks: Sequence[FileScanTask]) -> bool:
    """Whether a row delta's new position deletes replace earlier file-scoped delete files (format v2, file
    granularity, some candidate file has them): only the touched files' may be read and replaced."""
    return table.format_version < 3 and per_file_granularity(table) and any(file_scoped_deletes(t) for t in tasks)


def _checked_positions(matched: DataFrame, violation: str | None) -> DataFrame:
    """The positions of the matched target rows (``_RFILE``, ``_RPOS``, ``_CHANGED`` 0/1) some clause changes;
    with ``violation``, a target row matched twice fails the Spark job with that message."""
    per_row = matched.groupBy(_RFILE, _RPOS).agg(F.count(F.lit(1)).alias("_floe_n"), F.max(_CHANGED).alias(_CHANGED))
    keep = F.col(_CHANGED) == 1
    if violation is not None:  # one expression: Spark cannot evaluate the filter without the check
        keep = F.when(F.col("_floe_n") > 1, F.raise_error(F.lit(violation))).otherwise(keep)
    return per_row.where(keep).select(F.col(_RFILE).alias(ROW_FILE_COLUMN), F.col(_RPOS).alias(ROW_POS_COLUMN))


_natively_positioned = natively_positioned


# -- the Python API's engine (table.delete / update / merge / upsert) ---------------------------------------
def _session(spark: object | None) -> SparkSession:
    if isinstance(spark, SparkSession):
        return spark
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return session()  # a local session only when the caller runs none


class SparkRowLevelEngine:
    """floe.table.row_changes.RowLevelEngine on Spark (registered by ``import floe.spark``)."""

    def delete(self, table: Table, condition: str | None, *, spark: object | None) -> bool:
        return delete_rows(table, condition, spark=lambda: _session(spark), what=f"DELETE FROM {table.name()}")

    def update(self, table: Table, assignments: Mapping[str, str], condition: str | None, *, spark: object | None) -> bool:
        return update_rows(table, assignments, condition, spark=_session(spark), what=f"UPDATE {table.name()}")

    def merge(self, table: Table, source: object, on: str, clauses: Sequence[RowClause], *, target_alias: str,
              source_alias: str) -> bool:
        if not isinstance(source, DataFrame):
            raise ValidationError(f"MERGE INTO {table.name()}: the source must be a Spark DataFrame")
        merge_clauses = [MergeClause(c.match, c.action, c.condition, c.values) for c in clauses]
        return merge_into(table, source, on, merge_clauses, target_alias=target_alias, source_alias=source_alias,
                          what=f"MERGE INTO {table.name()}")

    def upsert(self, table: Table, source: object, join_cols: Sequence[str], *, update: bool, insert: bool) -> UpsertResult:
        if not isinstance(source, DataFrame):
            raise ValidationError(f"Upsert into {table.name()}: the source must be a Spark DataFrame")
        if not join_cols:
            raise ValidationError(f"Upsert into {table.name()}: give join_cols (or set the table's identifier fields)")
        wanted = {c.lower() for c in source.columns}
        names = [f.name for f in table.schema().fields if f.name.lower() in wanted]
        missing = [c for c in join_cols if c not in names]
        if missing:
            raise ValidationError(f"Upsert into {table.name()}: join column {missing[0]!r} is not a column of both")
        values = {c: f"s.{quoted(c)}" for c in names}
        on = " AND ".join(f"t.{quoted(c)} = s.{quoted(c)}" for c in join_cols)
        # Like PyIceberg: a matched row is rewritten only when one of its other columns changes.
        changed = " OR ".join(f"NOT (t.{quoted(c)} <=> s.{quoted(c)})" for c in names if c not in join_cols) or "false"
        spark = source.sparkSession
        target = dataframe_for_scan(spark, table.scan(selected_fields=tuple(names))) if table.current_snapshot() else None
        keys = [F.col(f"s.{quoted(c)}") == F.col(f"t.{quoted(c)}") for c in join_cols]
        joined = source.alias("s").join(target.alias("t"), keys, "left") if target is not None else None
        first_key = f"t.{quoted(join_cols[0])}"
        updated = joined.where(f"{first_key} IS NOT NULL AND ({changed})").count() if joined is not None and update else 0
        inserted = (joined.where(f"{first_key} IS NULL").count() if joined is not None else source.count()) if insert else 0
        clauses = []
        if update:
            clauses.append(MergeClause("matched", "update", changed, values))
        if insert:
            clauses.append(MergeClause("not_matched", "insert", None, values))
        if clauses:
            merge_into(table, source, on, clauses, what=f"Upsert into {table.name()}")
        return UpsertResult(rows_updated=updated, rows_inserted=inserted)
