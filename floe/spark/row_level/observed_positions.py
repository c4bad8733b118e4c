"""Deleted positions learnt from the Spark job that writes a change's new rows (merge-on-read MERGE).

A merge-on-read MERGE writes new rows (inserted and updated) and position deletes (updated and deleted
target rows), both from one join of target and source; Iceberg Java writes both in one Spark job. Here
Spark's writer writes the new rows, and the same job gathers each matched target row's file and position
as an observed metric (Spark's ``Dataset.observe``: aggregates computed as the rows pass, handed to the
driver with the job's end). The driver checks that no target row matched twice and writes the few delete
files itself (:func:`~floe.spark.row_level.position_deletes.write_position_deletes_on_driver`). The join then runs
once, with no cached copy of it and no second job to group, sort and write positions (measured on
local[2], a MERGE of 300k source rows into 2M: the cache, the grouping and the second write took about
0.7 s of 2.5).

The metric holds a row's file as Spark's ``xxhash64`` of its path (the driver maps it back; planned files
whose paths share a hash take the other way), so it stays small; it is taken only when at most
:data:`DRIVER_POSITION_ROWS` target rows reach the join (the candidate files' rows, or the rows a MERGE
source was counted to match), which bounds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pyspark.errors import PySparkAssertionError
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from floe.errors import FloeError, ValidationError
from floe.scan.tasks import FileScanTask
from floe.spark.runtime.py4j_sockets import send_py4j_without_delay
from floe.spark.scan.driver_rows import spark_xxhash64

_CONNECT = object()  # a Connect Observation has no JVM object (_jo)
__all__ = ["DRIVER_POSITION_ROWS", "ObservedPositions"]

# Target rows reaching a change up to which their deleted positions are observed and written on the
# driver (each matched target row is about 30 bytes of metric; the set holds a row at most twice).
DRIVER_POSITION_ROWS = 2_000_000
# Seconds to wait for Spark's listener to hand over the metric after the job ended (it arrives within
# milliseconds; a metric that never comes means the write skipped the observed rows: fail, commit nothing).
_METRIC_WAIT_S = 60.0


class ObservedPositions:
    """The positions of matched target rows, observed while another action (the new rows' write) runs."""

    def __init__(self, by_hash: dict[int, str], what: str) -> None:
        self._by_hash = by_hash
        self._what = what
        self._observation = Observation()

    @classmethod
    def for_tasks(
        cls, spark: SparkSession, tasks: Sequence[FileScanTask], what: str, rows: int | None = None
    ) -> ObservedPositions | None:
        """An observer for rows read from ``tasks`` (their file column holds the manifest's paths), of which
        ``rows`` (default: every row of the tasks) reach the observed frame; None when that is too many
        rows or two of the tasks' paths share a hash."""
        if rows is None:
            rows = sum(t.data_file.record_count for t in tasks)
        if rows > DRIVER_POSITION_ROWS:
            return None
        send_py4j_without_delay(spark)  # the metric crosses py4j as one string of up to tens of MB
        paths = list(dict.fromkeys(t.data_file.file_path for t in tasks))
        hashes = spark_xxhash64(spark, paths)
        if len(set(hashes)) != len(hashes):
            return None
        return cls(dict(zip(hashes, paths, strict=True)), what)

    def observe(self, df: DataFrame, file: Column, pos: Column, target: Column, changed: Column) -> DataFrame:
        """``df`` observed: for each row where ``target`` holds, its ``file`` and ``pos`` and whether a clause
        ``changed`` it. The first action on the returned frame (or one derived from it) must process every
        row of ``df``: the write of rows filtered from it does."""
        # Three fields always (concat_ws skips nulls): a position Spark left null is -1, refused below.
        entry = F.concat_ws(
            ",", F.xxhash64(file), F.coalesce(pos.cast("long"), F.lit(-1)), F.coalesce(changed, F.lit(False)).cast("int")
        )
        return df.observe(
            self._observation,
            # A set: a target row matched by several source rows (allowed for an unconditional DELETE)
            # counts once per distinct entry, so the metric stays bounded by the candidate rows.
            F.array_join(F.collect_set(F.when(target, entry)), ",").alias("entries"),
            F.count(F.when(target, F.lit(1))).alias("matches"),
        )

    def run(self, observed: DataFrame) -> dict[str, np.ndarray]:
        """Run ``observed`` (from :meth:`observe`) for its metric alone, when no write reads it (a DELETE): a
        Spark job that reads its rows and keeps none; then the changed positions."""
        observed.write.format("noop").mode("overwrite").save()
        return self.positions(None, lambda: False)

    def _metric(self) -> tuple[str, int]:
        """The observed (entries, matches) once the action is over."""
        jo: Any = getattr(self._observation, "_jo", _CONNECT)
        if jo is _CONNECT:  # Spark Connect: the metrics came back with the action's result
            try:
                metric = self._observation.get
            except PySparkAssertionError:
                raise FloeError(f"{self._what}: Spark reported no matched rows for the write; nothing was committed") from None
            return str(metric.get("entries") or ""), int(metric.get("matches") or 0)
        deadline = time.monotonic() + _METRIC_WAIT_S
        while jo is None or not jo.future().isCompleted():
            if jo is None or time.monotonic() > deadline:
                raise FloeError(f"{self._what}: Spark reported no matched rows for the write; nothing was committed")
            time.sleep(0.002)
        # The row straight from the JVM: Observation.get pickles it and py4j decodes the bytes one by one
        # (0.13 s for 20k matches), where a string crosses whole.
        row = jo.getRow()
        return str(row.getString(0) or ""), int(row.getLong(1))

    def positions(self, violation: str | None, matched_twice: Callable[[], bool]) -> dict[str, np.ndarray]:
        """After the action: the changed positions by data file path. With ``violation``, a target row
        matched by more than one source row raises ValidationError(violation): the metric counts matches,
        which a stage run again after a lost task counts twice, so ``matched_twice()`` (a query of its own)
        confirms it."""
        text, matches = self._metric()
        flat = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)
        if flat.size % 3:
            raise FloeError(f"{self._what}: the matched rows' metric is malformed; nothing was committed")
        rows = flat.reshape(-1, 3)
        if rows.size and int(rows[:, 1].min()) < 0:
            raise FloeError(f"{self._what}: a matched row has no position in its file; nothing was committed")
        if violation is not None and rows.size:
            distinct = np.unique(rows[:, :2], axis=0).shape[0]
            if matches > distinct and matched_twice():
                raise ValidationError(violation)
        changed = rows[rows[:, 2] == 1]
        out: dict[str, np.ndarray] = {}
        if not changed.size:
            return out
        order = np.lexsort((changed[:, 1], changed[:, 0]))
        changed = changed[order]
        cuts = np.flatnonzero(np.diff(changed[:, 0])) + 1
        for part in np.split(changed, cuts):
            path = self._by_hash.get(int(part[0, 0]))
            if path is None:
                raise FloeError(f"{self._what}: a matched row's file is not among the planned files; nothing was committed")
            out[path] = part[:, 1]
        return out
