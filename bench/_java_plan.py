"""Iceberg Java's own planner (``Table.newScan().planFiles()``, Iceberg 1.10 in the java-iceberg venv's JVM).

Run by bench/plan.py with the java-iceberg venv's Python (pyspark 3.5 starts the JVM with Iceberg's runtime
jar); never imported by Floe. The table is opened from its metadata JSON with ``StaticTableOperations``, as
PyIceberg's ``StaticTable`` and Floe's ``load_table`` open it, and files are counted inside the JVM (one
Py4J call per plan, not per file). The first run of each case is the cold one (class loading, JIT, no
manifest in any cache); Java's manifest cache stays at its default (off), as in a Spark job.

    <java-venv>/bin/python bench/_java_plan.py --jars jars.txt --metadata v1.metadata.json --runs 3 \
        --case full --case 'one-partition:ts>=2022-01-01T00:00:00,ts<2022-01-02T00:00:00' --case 'point:id=5'

Prints one JSON object: ``{case: {"files": n, "seconds": [cold, warm, ...]}}``.
"""

from __future__ import annotations

import argparse
import json
import time


def _filter(jvm, text):  # type: ignore[no-untyped-def]
    """``col>=v,col<v,col=v`` conjuncts as Iceberg expressions (literals bound by the column's type)."""
    expressions = jvm.org.apache.iceberg.expressions.Expressions
    both = getattr(expressions, "and")  # a Python keyword, so not expressions.and
    result = expressions.alwaysTrue()
    for term in filter(None, text.split(",")):
        for op, build in ((">=", expressions.greaterThanOrEqual), ("<", expressions.lessThan), ("=", expressions.equal)):
            if op in term:
                column, value = term.split(op, 1)
                result = both(result, build(column, int(value) if value.lstrip("-").isdigit() else value))
                break
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jars", required=True)
    parser.add_argument("--metadata", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", default=[], help="name or name:filter")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    with open(args.jars) as listing:
        jars = [line.strip() for line in listing if line.strip()]
    spark = (
        SparkSession.builder.master("local[2]").appName("java-plan").config("spark.jars", ",".join(jars))
        .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1").getOrCreate()
    )
    jvm = spark._jvm
    io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(spark._jsc.hadoopConfiguration())
    iterables = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables
    results: dict[str, dict[str, object]] = {}
    for case in args.case:
        name, _, text = case.partition(":")
        expression = _filter(jvm, text)
        seconds: list[float] = []
        files = -1
        for _ in range(args.runs):
            ops = jvm.org.apache.iceberg.StaticTableOperations(args.metadata, io)
            table = jvm.org.apache.iceberg.BaseTable(ops, "bench")
            start = time.perf_counter()
            tasks = table.newScan().filter(expression).planFiles()
            files = iterables.size(tasks)
            tasks.close()
            seconds.append(time.perf_counter() - start)
        results[name] = {"files": files, "seconds": seconds}
    print(json.dumps(results), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
