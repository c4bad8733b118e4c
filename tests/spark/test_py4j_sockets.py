"""Floe's py4j connections without Nagle's algorithm (floe.spark.runtime.py4j_sockets): both ends of the
connection of every thread that attaches a session or runs Floe's SQL.

What it saves is timing (a reply of several segments waited up to 40 ms for a delayed ACK), measured in
docs/ARCHITECTURE.md. Whether the kernel delays an ACK depends on the connection's state: a timing check
here passed alone and failed in a full run, whose fetches before the switch showed no wait."""

from __future__ import annotations

import socket
import threading
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import floe.spark
from floe.spark.runtime.py4j_sockets import _jvm_end


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
