"""Benchmark: Spark's native S3A path against Floe's pip-only S3 path, on moto's S3 server, in one session.

One SparkSession with hadoop-aws on its classpath (../shared/tools/s3a/setup.sh) and two catalogs on the
same moto bucket, identical but for ``spark.floe.s3.data-path`` set per case (``native``: Spark's Parquet
reader and writer through S3A; ``python``: pyarrow's S3 client in Spark's Python workers, what a plain
``pip install`` runs). Each case runs on both paths, alternating, median of RUNS; what the reads return is checked equal.
Prints seconds and python/native (above 1.0 the native path is faster).

moto answers on loopback from one Python process, so this is a sanity ratio of the two data planes' own
costs on this machine, not a claim about real S3 (where latency and bandwidth dominate).

    PYTHONPATH=. flock /tmp/floe-spark.lock python3 bench/s3a.py [--rows 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pyarrow.fs import S3FileSystem
from pyspark.sql import SparkSession

import floe.spark
from floe.spark.runtime.storage import S3_DATA_PATH_CONF

S3A_SETUP = Path(__file__).resolve().parents[2] / "shared" / "tools" / "s3a" / "setup.sh"
# hadoop-aws 3.3 cannot parse some defaults of the Hadoop 3.5 client pyspark bundles (tools/s3a/README.md).
S3A_COMPAT = {
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.connection.establish.timeout": "30000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.multipart.purge.age": "86400",
}
PATHS = ("native", "python")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _moto(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto did not start")


def _session(url: str, bucket: str, tmp: Path) -> SparkSession:
    jars = subprocess.run(["bash", str(S3A_SETUP)], check=True, capture_output=True, text=True).stdout.strip()
    conf = {"spark.master": "local[2]", "spark.sql.session.timeZone": "UTC", "spark.jars": jars.splitlines()[-1],
            **{f"spark.hadoop.{k}": v for k, v in S3A_COMPAT.items()}}
    props = {"s3.endpoint": url, "s3.access-key-id": "testing", "s3.secret-access-key": "testing",
             "s3.region": "us-east-1", "s3.path-style-access": "true"}
    p = "spark.sql.catalog.bench"
    conf |= {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": f"jdbc:sqlite:{tmp}/c.db",
             f"{p}.warehouse": f"s3://{bucket}/wh", **{f"{p}.{k}": v for k, v in props.items()}}
    spark = floe.spark.session(conf)
    spark.sql("CREATE NAMESPACE bench.db")
    return spark


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    port = _free_port()
    moto = _moto(port)
    url, bucket = f"http://127.0.0.1:{port}", f"bench-{uuid.uuid4().hex[:8]}"
    S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                 endpoint_override=url, force_virtual_addressing=False,
                      allow_bucket_creation=True).create_dir(bucket)
    tmp = Path(tempfile.mkdtemp(prefix="floe-bench-s3a-"))
    try:
        spark = _session(url, bucket, tmp)
        source = spark.range(0, args.rows, numPartitions=4).selectExpr(
            "id", "cast(id % 97 as int) AS k", "concat('v', id % 1000) AS s", "id * 0.5 AS d")
        source.cache().count()
        source.createOrReplaceTempView("src")
        spark.range(0, args.rows, 50).selectExpr("id", "-1 AS k").createOrReplaceTempView("upd")
        cases: dict[str, Callable[[str], object]] = {
            "INSERT INTO": lambda t: spark.sql(f"INSERT INTO {t} SELECT * FROM src").collect(),
            "scan + aggregate": lambda t: spark.sql(f"SELECT k, count(*), sum(d) FROM {t} GROUP BY k ORDER BY k").collect(),
            "DELETE 1% merge-on-read": lambda t: spark.sql(f"DELETE FROM {t} WHERE id % 100 = 7").collect(),
            "read after it": lambda t: spark.sql(f"SELECT count(*), sum(id) FROM {t}").collect(),
            "MERGE 2% merge-on-read": lambda t: spark.sql(
                f"MERGE INTO {t} t USING upd u ON t.id = u.id WHEN MATCHED THEN UPDATE SET k = u.k").collect(),
            "rewrite_data_files": lambda t: spark.sql(
                f"CALL bench.system.rewrite_data_files(table => '{t.split('.', 1)[1]}', "
                "options => map('rewrite-all', 'true'))").collect(),
            "read after compaction": lambda t: spark.sql(f"SELECT count(*), sum(k), sum(d) FROM {t}").collect(),
        }
        times: dict[str, dict[str, list[float]]] = {c: {p: [] for p in PATHS} for c in cases}
        for run in range(args.runs):
            for path in PATHS if run % 2 == 0 else PATHS[::-1]:
                spark.conf.set(S3_DATA_PATH_CONF, path)
                table = f"bench.db.t_{path}_{run}"
                spark.sql(f"CREATE TABLE {table} (id bigint, k int, s string, d double) USING iceberg "
                          "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
                          "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
                results = {}
                for case, fn in cases.items():
                    seconds, results[case] = _timed(lambda fn=fn, t=table: fn(t))
                    times[case][path].append(seconds)
                reads = {c: r for c, r in results.items() if "read" in c or "scan" in c}  # CALL rows carry bytes
                if run == 0 and path == PATHS[0]:
                    expected = reads
                else:
                    assert reads == expected, f"{path} read other rows: {reads} != {expected}"
                spark.sql(f"DROP TABLE {table} PURGE")
        print(f"rows={args.rows} runs={args.runs} (median seconds; python/native above 1.0: native faster)")
        print(f"{'case':<32} {'native':>8} {'python':>8} {'ratio':>7}")
        for case in cases:
            n, p = (statistics.median(times[case][x]) for x in PATHS)
            print(f"{case:<32} {n:8.2f} {p:8.2f} {p / n:7.2f}")
        spark.stop()
    finally:
        moto.terminate()
        moto.wait()


if __name__ == "__main__":
    main()
