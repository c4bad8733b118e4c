"""Floe's py4j connections without Nagle's algorithm (floe.spark.runtime.py4j_sockets): both ends of the
connection of every thread that runs Floe's SQL, and the transfers that waited on delayed ACKs before."""

from __future__ import annotations

import socket
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import floe.spark
from floe.spark.runtime.py4j_sockets import _jvm_end, send_py4j_without_delay


def _ends(spark: SparkSession) -> tuple[bool, bool]:
    """(Python end, JVM end) of this thread's connection: whether each has TCP_NODELAY."""
    client: Any = spark.sparkContext._gateway._gateway_client  # type: ignore[union-attr]
    spark.sparkContext._jvm.java.lang.System.nanoTime()  # type: ignore[union-attr]  # opens the connection
    sock = client.get_thread_connection().socket
    python_end = bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    return python_end, bool(_jvm_end(spark).getTcpNoDelay())


def test_attach_and_every_thread_running_floe_sql_send_without_delay(spark: SparkSession, tmp_path: Path) -> None:
    floe.spark.attach(spark)
    assert _ends(spark) == (True, True)
    name = f"floe.db_nodelay.t{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id bigint) USING iceberg LOCATION '{tmp_path}/t'")
    seen: list[tuple[bool, bool]] = []

    def other_thread() -> None:
        before = _ends(spark)  # a new thread has a new connection, with py4j's defaults
        spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
        seen.extend([before, _ends(spark)])

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert seen == [(False, False), (True, True)]
    assert spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0] == 2


def test_a_reply_of_many_segments_does_not_wait_for_a_delayed_ack(spark: SparkSession) -> None:
    row: Any = spark.range(1).selectExpr("repeat('-1234567890123456789,1234567,1,', 20000) AS s")._jdf.collect()[0]

    def fetch_times() -> list[float]:
        out = []
        for _ in range(15):
            t = time.perf_counter()
            assert len(row.getString(0)) == 620_000
            out.append(time.perf_counter() - t)
        return out

    timed: dict[str, list[float]] = {}

    def in_a_new_thread() -> None:  # a connection of its own, with py4j's defaults, then switched
        timed["nagle"] = fetch_times()
        send_py4j_without_delay(spark)
        timed["nodelay"] = fetch_times()

    worker = threading.Thread(target=in_a_new_thread)
    worker.start()
    worker.join()
    # With Nagle's algorithm on the JVM's end most of these took 40-55 ms (the last short segment waits for
    # the delayed ACK of the one before); without it, 6-8 ms (local[2], 2026-12-06).
    assert statistics.mean(timed["nodelay"]) < statistics.mean(timed["nagle"]), timed
