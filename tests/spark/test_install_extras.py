"""What each extra the README names makes work, in the clean-install venv once it is added
(``make test-install``: ``pip install '.[postgres,mysql,s3]'``): ``postgres`` and ``mysql`` are the SQL
catalog's drivers (Spark writes and reads through an Iceberg JDBC catalog URL), ``s3`` makes metadata
writes on S3 atomic (a second writer of the same file loses instead of overwriting the first).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import floe.spark
from floe.errors import FileAlreadyExistsError
from floe.io.fileio import FileIO

pytestmark = [pytest.mark.smoke_extras]


@pytest.mark.parametrize(("jdbc_url", "user", "fixture"), [
    ("jdbc:postgresql://127.0.0.1:5432/test", "postgres", "postgres_url"),
    ("jdbc:mysql://127.0.0.1:3306/test", "root", "mysql_url"),
], ids=["postgres", "mysql"])
def test_sql_catalog_driver_extra_serves_spark(
    request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path, jdbc_url: str, user: str, fixture: str
) -> None:
    request.getfixturevalue(fixture)  # reachable (and its driver importable), else fails under CI
    name = f"ext_{uuid.uuid4().hex[:8]}"
    p = f"spark.sql.catalog.{name}"
    conf = {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "jdbc", f"{p}.uri": jdbc_url,
            f"{p}.jdbc.user": user, f"{p}.warehouse": str(tmp_path / "wh")}
    floe.spark.attach(spark, conf=conf)
    try:
        spark.sql(f"CREATE NAMESPACE {name}.db")
        spark.sql(f"CREATE TABLE {name}.db.t (id bigint, s string) USING iceberg")
        spark.sql(f"INSERT INTO {name}.db.t VALUES (1, 'a'), (2, 'b')")
        spark.sql(f"DELETE FROM {name}.db.t WHERE id = 1")
        assert [tuple(r) for r in spark.sql(f"SELECT * FROM {name}.db.t").collect()] == [(2, "b")]
        spark.sql(f"DROP TABLE {name}.db.t PURGE")
        spark.sql(f"DROP NAMESPACE {name}.db")
    finally:
        for key in conf:
            spark.conf.unset(key)


def test_s3_extra_makes_exclusive_creates_atomic(s3_endpoint) -> None:  # type: ignore[no-untyped-def]
    io = FileIO(s3_endpoint.properties)
    target = s3_endpoint.location(f"race-{uuid.uuid4().hex[:8]}", "v1.metadata.json")
    first, second = io.new_output(target).create(), io.new_output(target).create()  # both pass the check
    first.write(b"first")
    second.write(b"second")
    first.close()
    with pytest.raises(FileAlreadyExistsError):
        second.close()  # without boto3 this would overwrite the winner
    assert io.new_input(target).read_bytes() == b"first"
