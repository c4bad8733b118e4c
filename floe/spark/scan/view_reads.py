"""The scan behind a SQL query's temporary view, reused while the table and the session stay the same.

A SQL query registers each Floe table it reads as a temporary view over ``floe.spark.read``'s DataFrame
(floe.sql.handlers.query). Building that DataFrame is some sixty calls into the JVM, each analysed by Spark:
50-80 ms of a 0.4 s read of a merge-on-read table on the 2-core machine of bench/mor_rounds. A dashboard or a
pipeline reads the same table state again and again between two commits, so the DataFrame is kept and
registered again when a query reads:

- the same table state: its metadata file, table uuid and last update (a commit, a rollback or a table
  replaced at the same location names another state);
- with the same read options (snapshot, ref, time, the filter pushed down from the WHERE, metadata columns);
- in the same Spark session, with the same SQL settings (Spark analysed the DataFrame with them: case
  sensitivity, time zone, ANSI casts).

Only a query's views use it, and each query gets the kept scan under new column ids (one projection,
which Spark's optimizer removes): two queries' DataFrames over one table state then join as two relations,
as two reads of a Spark table do (``a.join(b, a.id == b.id)`` with ``a`` and ``b`` from ``spark.sql``; the
same ids on both sides fail as an ambiguous self-join). ``floe.spark.read`` and ``spark.table`` build a new
DataFrame each call. Data files are never rewritten in place, so a kept DataFrame reads what a
new one would (Iceberg Java trusts the manifests' file sizes just as the kept relation does). Spark Connect
sessions build plans on the client, cheaply, and keep none.

A kept DataFrame holds the rows its driver made for Spark (deleted positions' words, equality arrays, delete
rows read on the driver) for as long as it is kept, including those the delete caches have since let go: so
at most :data:`MAX_KEPT_BYTES` of them are kept in all, oldest-used evicted first, and a scan holding more
than that is not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from floe.scan.table_scan import TableLike
from floe.spark.runtime.connect import is_connect
from floe.spark.runtime.frame_calls import select_exprs
from floe.spark.scan.driver_rows import driver_bytes
from floe.spark.scan.row_columns import quoted
from floe.spark.scan.table_read import read

__all__ = ["MAX_KEPT_SCANS", "kept_scans", "read_for_view"]

# Query shapes kept (a table, its options and session): one DataFrame each, for the table's latest state.
MAX_KEPT_SCANS = 32
# Bytes of driver-made rows the kept DataFrames may hold in all (as much as the delete caches keep).
MAX_KEPT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class _Kept:
    session: SparkSession  # kept with the entry: its id names no other session meanwhile
    state: Hashable
    frame: DataFrame
    driver_bytes: int  # of rows the driver made for it (floe.spark.scan.driver_rows.driver_bytes)


_KEPT: OrderedDict[Hashable, _Kept] = OrderedDict()
_LOCK = threading.Lock()


def _settings(spark: SparkSession) -> str:
    """The session's SQL settings as one string (four calls into the JVM): a changed setting misses."""
    return str(spark._jsparkSession.sessionState().conf().getAllConfs().toString())


def _shape_and_state(spark: SparkSession, table: TableLike, options: dict[str, Any],
                     metadata_columns: tuple[str, ...]) -> tuple[Hashable, Hashable] | None:
    location = getattr(table, "metadata_location", None)  # a catalog's Table has one, a handle may not
    if location is None or is_connect(spark):
        return None
    metadata = table.metadata
    shape = (id(spark), type(table).__name__, str(getattr(table, "identifier", "")), metadata.table_uuid,
             tuple(sorted(options.items())), metadata_columns)
    state = (location, metadata.last_updated_ms, _settings(spark))
    try:
        hash(shape)
    except TypeError:  # an option value that cannot name a read (a filter holding a list): not kept
        return None
    return shape, state


def _with_new_ids(frame: DataFrame) -> DataFrame:
    """``frame``'s columns under new ids (an alias is a new attribute), in one call into Spark."""
    return select_exprs(frame, [f"{quoted(c)} AS {quoted(c)}" for c in frame.columns])


def read_for_view(spark: SparkSession, table: TableLike, *,
                  metadata_columns: list[str] | tuple[str, ...] = (), **options: Any) -> DataFrame:
    """``floe.spark.read(spark, table, **options, metadata_columns=...)``, or the DataFrame an earlier query's view got
    for the same table state, options, session and settings. For a temporary view only (see the module)."""
    columns = tuple(metadata_columns)
    keys = _shape_and_state(spark, table, options, columns)
    if keys is None:
        return read(spark, table, **options, metadata_columns=list(columns))
    shape, state = keys
    with _LOCK:
        kept = _KEPT.get(shape)
        hit = kept is not None and kept.session is spark and kept.state == state
        if hit:
            _KEPT.move_to_end(shape)
    if hit and kept is not None:
        return _with_new_ids(kept.frame)
    with driver_bytes() as held:
        frame = read(spark, table, **options, metadata_columns=list(columns))
    size = held.total
    with _LOCK:
        _KEPT.pop(shape, None)  # the table's older state goes
        if size <= MAX_KEPT_BYTES:
            _KEPT[shape] = _Kept(spark, state, frame, size)
        while len(_KEPT) > MAX_KEPT_SCANS or sum(k.driver_bytes for k in _KEPT.values()) > MAX_KEPT_BYTES:
            _KEPT.popitem(last=False)
    return frame


def kept_scans() -> int:
    """How many DataFrames are kept (for tests)."""
    with _LOCK:
        return len(_KEPT)
