"""The streaming driver the crash test kills (tests/spark/test_streaming_crash.py), run as a subprocess.

``python -m tests.spark._stream_driver <mode> <workdir> <catalog> <n_batches>`` builds a local[2] session
with ``floe.spark.session`` and a JDBC-on-SQLite catalog in ``workdir``, and streams the changelog files of
``workdir/in`` (one file per micro-batch) into ``<catalog>.db.cdc`` with Floe's sink, processingTime trigger,
checkpoint ``workdir/cp``. Modes:

- ``run``: stream until killed.
- ``finish``: stream until epoch ``n_batches - 1`` is in the checkpoint's commit log, stop the query
  cleanly, then print ``ROWS <json>`` (the table's rows read through Spark) and ``DONE``.

Progress lines on stdout (flushed) let the test time its kills: ``READY`` (query started), ``BATCH <e>``
(the sink got micro-batch ``e``), ``COMMITTED <e>`` (the table commit of ``e`` returned; Spark's own commit
log is written after the sink returns), ``SKIPPED <e>`` (a replayed epoch the table already holds),
``SINK-DONE <e>``. With ``FLOE_CRASH_HOLD_S`` set, the sink waits that long after each table commit so a
kill can land between the table commit and Spark's commit log.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

STREAM_SCHEMA = "seq bigint, op string, id bigint, dt string, v string"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def catalog_conf(workdir: Path, catalog: str) -> dict[str, str]:
    return {
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{catalog}.type": "jdbc",
        f"spark.sql.catalog.{catalog}.uri": f"jdbc:sqlite:{workdir / 'catalog.db'}",
        f"spark.sql.catalog.{catalog}.warehouse": str(workdir / "wh"),
    }


def _instrument() -> None:
    """Progress lines around the sink (driver-side only; the sink's own code runs unchanged)."""
    from floe.spark.streaming import sink as streaming

    hold = float(os.environ.get("FLOE_CRASH_HOLD_S", "0") or 0)
    original_call = streaming.StreamSink.__call__
    original_apply = streaming.apply_changes
    current: dict[str, int] = {}

    def call(self: streaming.StreamSink, batch: object, epoch_id: int) -> None:
        current["epoch"] = epoch_id
        say(f"BATCH {epoch_id}")
        skipped = self.batches_skipped
        original_call(self, batch, epoch_id)  # type: ignore[arg-type]
        if self.batches_skipped > skipped:
            say(f"SKIPPED {epoch_id}")
        say(f"SINK-DONE {epoch_id}")

    def apply(*args: object, **kwargs: object) -> object:
        result = original_apply(*args, **kwargs)  # type: ignore[arg-type]
        say(f"COMMITTED {current.get('epoch')}")
        if hold:
            time.sleep(hold)
        return result

    streaming.StreamSink.__call__ = call  # type: ignore[method-assign]
    streaming.apply_changes = apply  # type: ignore[assignment]


def main(mode: str, workdir: Path, catalog: str, n_batches: int) -> None:
    import floe.spark

    _instrument()
    spark = floe.spark.session(
        {"spark.master": "local[2]", "spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "2",
         "spark.ui.enabled": "false", **catalog_conf(workdir, catalog)},
        app_name="floe-stream-crash",
    )
    name = f"{catalog}.db.cdc"
    checkpoint = workdir / "cp"
    stream = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "in"))
    query = (
        stream.writeStream.format("iceberg").outputMode("append")
        .option("checkpointLocation", str(checkpoint)).option("op-column", "op").option("order-column", "seq")
        .trigger(processingTime="500 milliseconds").toTable(name)
    )
    say(f"READY {query.id}")
    if mode == "run":
        query.awaitTermination()
        return
    last = checkpoint / "commits" / str(n_batches - 1)
    deadline = time.monotonic() + 600
    while not last.exists():
        if query.exception() is not None:
            raise RuntimeError(f"stream failed: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"epoch {n_batches - 1} not committed after 600 s")
        time.sleep(0.2)
    query.stop()
    rows = [[r.id, r.dt, r.v] for r in spark.sql(f"SELECT id, dt, v FROM {name}").collect()]
    say("ROWS " + json.dumps(rows))
    spark.stop()
    say("DONE")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
