"""Iceberg Java (1.10 on Spark 3.5) in one long-lived process that runs a statement when asked, for benchmarks
that alternate Java's statements with Floe's (``_jsql.JavaSession``).

Runs with the Python of jsql's venv (``$FLOE_JAVA_ICEBERG_HOME/venv``), in a session configured as jsql
configures its own (the same jars, the Iceberg SQL extensions, no UI). Reads one JSON string per stdin line,
a statement; answers one JSON line per statement: ``seconds`` (``spark.sql(...)`` and the collect of its rows,
timed here as the benchmarks time Floe's), ``rows`` as jsql prints them, or ``error``. Prints ``{"ready": true}``
once the session is up.

    <venv>/bin/python bench/_java_session.py <jsql folder> <jsql home> [--conf KEY=VALUE ...]
"""

import json
import os
import sys
import time


def _message(e: Exception) -> str:
    """The exception's first line, and the Java exception's own where py4j wraps one."""
    lines = str(e).strip().splitlines() or [type(e).__name__]
    cause = next((x.strip() for x in lines if "Exception:" in x), "")
    return (lines[0] + (" " + cause if cause and cause != lines[0] else ""))[:2000]


def main() -> None:
    tool, home, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.path.insert(0, tool)
    from jsql import plain  # jsql's own JSON form of values, so rows compare as jsql's do
    from pyspark.sql import SparkSession

    jars = []
    for listing in ("jars.txt", "jars-s3.txt"):
        path = os.path.join(home, listing)
        if os.path.exists(path):
            with open(path) as f:
                jars += [line.strip() for line in f if line.strip()]
    builder = (SparkSession.builder.master("local[2]").appName("java-session")
               .config("spark.jars", ",".join(jars))
               .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1"))
    for flag, kv in zip(rest[::2], rest[1::2]):
        if flag == "--conf":
            key, _, value = kv.partition("=")
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        sql = json.loads(line)
        start = time.perf_counter()
        try:
            rows = [[plain(x) for x in r] for r in spark.sql(sql).collect()]
            answer = {"seconds": time.perf_counter() - start, "rows": rows}
        except Exception as e:  # noqa: BLE001 - any failure is reported to the benchmark, which stops
            answer = {"seconds": time.perf_counter() - start, "error": _message(e)}
        print(json.dumps(answer), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
