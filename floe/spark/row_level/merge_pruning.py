"""The target files and rows a MERGE source can match: a filter from the source's key ranges (Spark's
dynamic partition pruning, done at planning time), and the target rows a broadcast source matches.

A MERGE without ``WHEN NOT MATCHED BY SOURCE`` never changes a target row that matches no source row, so
target files that cannot hold a match need not be read. For each ``t.col = s.col`` conjunct of the ON
condition on a top-level target column of an ordered type, one aggregation over the source gives the
column's min and max; ``col BETWEEN min AND max`` then prunes the scan by partition (days(ts) of a
two-day source reads two days) and by file metrics. Equality never matches NULL, so a key column that is
NULL in every source row means no target row can match.

Such a MERGE's outer join also needs only the target rows some source row matches: with a source Spark
broadcasts, one pass over the target (a semi join probing the source's hash table) keeps them, and the
outer join shuffles those few rows instead of the whole target (bench/mor_rounds, a 1% MERGE into 2M rows:
2M target rows shuffled with their file paths before, 20k after). A source too big to broadcast whole often
has join keys small enough to broadcast alone (bench/vs_java at 20M rows: a 3M-row source, 56 MB estimated,
its ids 17 MB), and a semi join on the keys keeps a superset of the matched rows: the MERGE of 1% matched and
14% new rows went from 16-18 s (the whole target sorted and shuffled for the outer join) to 7.5-8.5 s.
The keys alone also give a MERGE's pass over its matched pairs (touched files, cardinality) exactly when ON is
nothing but equalities and no clause has a condition (:func:`key_only_join`).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import expressions as exp

from floe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression, and_
from floe.expressions.builders import greater_than_or_equal, less_than_or_equal
from floe.spark.row_level.source_keys import integral, key_bitmap_frame, key_matches, source_key_bitmap
from floe.spark.runtime.connect import is_connect
from floe.spark.scan.driver_rows import LONG_ARRAY_COLUMN
from floe.spark.scan.row_columns import quoted
from floe.spark.types import to_spark_type
from floe.spec.schema import Schema
from floe.spec.types import (
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = ["deterministic", "equi_keys", "key_only_join", "keys_broadcastable", "only_equalities", "source_key_words", "source_matched_rows",
           "source_range_filter"]

# Estimated bytes of a source's join keys up to which they are broadcast for the semi join when the whole
# source is not (Spark's own threshold is 10 MB for whole rows).
KEY_BROADCAST_BYTES = 32 << 20
# Types whose Spark order is Iceberg's and whose bounds convert exactly (floats left out: NaN = NaN in Spark).
_ORDERED = (IntegerType, LongType, DateType, TimestampType, TimestamptzType, StringType, DecimalType)


def _conjuncts(on: str) -> list[exp.Expr]:
    """The top-level conjuncts of ``on`` (none when it does not parse)."""
    try:
        tree = sqlglot.parse_one(on, read="spark")
    except sqlglot.errors.ParseError:
        return []
    return list(tree.flatten()) if isinstance(tree, exp.And) else [tree]


def equi_keys(on: str, target_alias: str, source_alias: str) -> list[tuple[str, str]]:
    """(target column, source column) of each top-level ``t.a = s.b`` conjunct of ``on`` (either order)."""
    return _equalities(_conjuncts(on), target_alias, source_alias)


def _equalities(conjuncts: list[exp.Expr], target_alias: str, source_alias: str) -> list[tuple[str, str]]:
    t, s = target_alias.lower(), source_alias.lower()
    keys = []
    for conjunct in conjuncts:
        if not isinstance(conjunct, exp.EQ):
            continue
        left, right = conjunct.left, conjunct.right
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        sides = {left.table.lower(): left.name, right.table.lower(): right.name}
        if set(sides) == {t, s}:
            keys.append((sides[t], sides[s]))
    return keys


def _bound_expr(name: str, spark_type: T.DataType, highest: bool) -> Column:
    """max (else min) of a source column in a form Floe's literals read exactly (micros, days, text)."""
    column = F.col(quoted(name))
    value = F.max(column) if highest else F.min(column)
    if isinstance(spark_type, T.TimestampType):
        return F.unix_micros(value)
    if isinstance(spark_type, T.DateType):
        return F.unix_date(value)
    if isinstance(spark_type, (T.TimestampNTZType, T.DecimalType)):
        return value.cast("string")
    return value


def source_range_filter(
    schema: Schema, source: DataFrame, keys: Sequence[tuple[str, str]]
) -> BooleanExpression:
    """A filter every target row matching some source row on ``keys`` passes (AlwaysTrue when none applies)."""
    by_name = {f.name.lower(): f for f in schema.fields}
    source_types = {f.name.lower(): f.dataType for f in source.schema.fields}
    usable: list[tuple[NestedField, str, T.DataType]] = []
    for target_col, source_col in keys:
        f = by_name.get(target_col.lower())
        spark_type = source_types.get(source_col.lower())
        if f is None or spark_type is None or not isinstance(f.field_type, _ORDERED):
            continue
        if to_spark_type(f.field_type) != spark_type:  # an implicit cast: Spark's order may differ
            continue
        usable.append((f, source_col, spark_type))
    if not usable:
        return AlwaysTrue()
    aggs = []
    for i, (_, col, spark_type) in enumerate(usable):
        aggs += [_bound_expr(col, spark_type, False).alias(f"lo{i}"), _bound_expr(col, spark_type, True).alias(f"hi{i}")]
    row = source.agg(*aggs).first()
    assert row is not None  # a global aggregate has one row
    expr: BooleanExpression = AlwaysTrue()
    for i, (f, _, _) in enumerate(usable):
        lo, hi = row[f"lo{i}"], row[f"hi{i}"]
        if lo is None:  # no source row has a non-NULL key: nothing can match
            return AlwaysFalse()
        # micros, days, text and integers: what Floe's literal conversion reads exactly for each type
        expr = and_(expr, greater_than_or_equal(f.name, lo), less_than_or_equal(f.name, hi))
    return expr


def deterministic(frame: DataFrame) -> bool:
    """Whether ``frame`` gives the same rows each time it is read (false when its plan cannot be asked: Spark
    Connect)."""
    jdf = getattr(frame, "_jdf", None)
    return jdf is not None and bool(jdf.queryExecution().analyzed().deterministic())


def source_matched_rows(
    spark: SparkSession, target_view: str, source_view: str, target_alias: str, source_alias: str, on: str,
    source: DataFrame,
) -> DataFrame | None:
    """The rows of ``target_view`` some row of ``source_view`` matches on ``on``: by a bitmap of the source's
    keys when an equality of ``on`` is on integral columns (:func:`_key_bitmap_rows`), else a left semi join
    when Spark broadcasts the source for it (its estimated size is under ``spark.sql.autoBroadcastJoinThreshold`` and
    ``on`` has an equality to hash on), or else its equi-join keys alone (estimated under the larger of that
    threshold and :data:`KEY_BROADCAST_BYTES`; the rows kept are those matching the keys, a superset that the
    outer join narrows); else None: a semi join that shuffles the target, or loops over both, costs more
    than it saves. Also None when the source may give other rows when read again (a non-deterministic
    plan), as the outer join reads it a second time, when broadcasts are off (threshold -1), or when the plan
    cannot be asked (Spark Connect)."""
    if not deterministic(source):
        return None
    by_bitmap = _key_bitmap_rows(spark, target_view, source_view, target_alias, source_alias, on, source)
    if by_bitmap is not None:
        return by_bitmap
    t, s = quoted(target_alias), quoted(source_alias)
    rows = spark.sql(
        f"SELECT {t}.* FROM {quoted(target_view)} AS {t} LEFT SEMI JOIN {quoted(source_view)} AS {s} ON {on}"
    )
    if _broadcast_semi_join(rows):
        return rows
    keys = equi_keys(on, target_alias, source_alias)
    threshold = int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
    if not keys or threshold < 0:
        return None
    # Every target row ON matches also matches its equalities alone.
    k = quoted("__floe_keys")
    projected = ", ".join(f"{s}.{quoted(sc)} AS {quoted(f'k{i}')}" for i, (_, sc) in enumerate(keys))
    key_rows = f"(SELECT {projected} FROM {quoted(source_view)} AS {s})"
    estimate = spark.sql(f"SELECT * FROM {key_rows}")._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    if int(str(estimate)) > max(threshold, KEY_BROADCAST_BYTES):
        return None
    matches = " AND ".join(f"{t}.{quoted(tc)} = {k}.{quoted(f'k{i}')}" for i, (tc, _) in enumerate(keys))
    rows = spark.sql(
        f"SELECT /*+ BROADCAST({k}) */ {t}.* FROM {quoted(target_view)} AS {t} LEFT SEMI JOIN {key_rows} AS {k} ON {matches}"
    )
    return rows if _broadcast_semi_join(rows) else None


def _key_bitmap_rows(
    spark: SparkSession, target_view: str, source_view: str, target_alias: str, source_alias: str, on: str,
    source: DataFrame,
) -> DataFrame | None:
    """The rows of ``target_view`` whose key is among the source's keys, by a bitmap of them
    (floe.spark.row_level.source_keys) for the first ``t.a = s.b`` conjunct of ``on`` on integral columns
    whose keys are small enough to collect and span few enough values; else None. A superset of the matched
    rows when ``on`` has other conjuncts: the outer join narrows it."""
    target = spark.table(quoted(target_view))
    for target_col, source_col in equi_keys(on, target_alias, source_alias):
        if not (integral(target, target_col) and integral(source, source_col)):
            continue
        # Repeated keys are fine here: the outer join pairs the rows and sees a target row matched twice.
        words = source_key_words(spark, source, source_view, source_alias, source_col, unique=False)
        if words is None:
            return None
        return target.crossJoin(F.broadcast(words)).where(F.expr(key_matches(quoted(target_col)))).drop(LONG_ARRAY_COLUMN)
    return None


def source_key_words(
    spark: SparkSession, source: DataFrame, source_view: str, source_alias: str, column: str, *, unique: bool
) -> DataFrame | None:
    """The one-row relation of the bitmap of ``source``'s keys in ``column`` (integral; floe.spark.row_level.
    source_keys), when they are estimated under the key-broadcast bound (:func:`keys_broadcastable`: they are
    collected to the driver) and pack (a narrow enough range; with ``unique``, no key repeated); else None."""
    s = quoted(source_alias)
    if not keys_broadcastable(spark, f"(SELECT {s}.{quoted(column)} FROM {quoted(source_view)} AS {s})"):
        return None
    bitmap = source_key_bitmap(source, column, unique=unique)
    return None if bitmap is None else key_bitmap_frame(spark, bitmap)


def key_only_join(
    spark: SparkSession, target_view: str, source_view: str, target_alias: str, source_alias: str, on: str,
    carried: Sequence[str] = (),
) -> tuple[str, str] | None:
    """(SELECT hint, FROM text) of an inner join of ``target_view`` with only the source's join keys (and the
    ``carried`` source columns), broadcast. It gives the same (target row, source row) pairs as the join with
    the whole source, since ``on`` must be nothing but ``t.a = s.b`` equalities; None otherwise, when those
    columns are estimated over the larger of Spark's broadcast threshold and :data:`KEY_BROADCAST_BYTES`, or
    on Spark Connect (no plan statistics to ask).

    For a MERGE's pass over its matched rows (the files they touch, whether a target row matches twice) when
    no clause has a condition: a source too big to broadcast whole then costs a broadcast of its keys instead
    of a shuffle of the whole target (bench/vs_java at 20M rows, a 3M-row source)."""
    keys = only_equalities(on, target_alias, source_alias)
    if not keys:
        return None
    t, s = quoted(target_alias), quoted(source_alias)
    columns = list(dict.fromkeys([sc for _, sc in keys] + list(carried)))
    narrow = f"(SELECT {', '.join(f'{s}.{quoted(c)}' for c in columns)} FROM {quoted(source_view)} AS {s})"
    if not keys_broadcastable(spark, narrow):
        return None
    return f"/*+ BROADCAST({s}) */", f"{quoted(target_view)} AS {t} JOIN {narrow} AS {s} ON {on}"


def only_equalities(on: str, target_alias: str, source_alias: str) -> list[tuple[str, str]]:
    """(target column, source column) of each conjunct of ``on`` when ON is nothing but ``t.a = s.b``
    equalities; else none."""
    conjuncts = _conjuncts(on)
    keys = _equalities(conjuncts, target_alias, source_alias)
    return keys if len(conjuncts) == len(keys) else []


def keys_broadcastable(spark: SparkSession, rows: str) -> bool:
    """Whether the source key rows of the query ``rows`` (a parenthesized SELECT) are estimated under the
    larger of Spark's broadcast threshold and :data:`KEY_BROADCAST_BYTES`; false when broadcasts are off
    (threshold -1) or the plan cannot be asked (Spark Connect)."""
    if is_connect(spark):
        return False
    threshold = int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
    if threshold < 0:
        return False
    estimate = spark.sql(f"SELECT * FROM {rows}")._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    return int(str(estimate)) <= max(threshold, KEY_BROADCAST_BYTES)


def _broadcast_semi_join(rows: DataFrame) -> bool:
    # The semi join is the plan's topmost join; the target's and the source's own joins sit below it.
    plan = str(rows._jdf.queryExecution().executedPlan().toString())
    top = next((line for line in plan.splitlines() if "Join" in line), "")
    return "BroadcastHashJoin" in top and "LeftSemi" in top
