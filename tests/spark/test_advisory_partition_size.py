"""``write.spark.advisory-partition-size-bytes``, the ``advisory-partition-size`` write option and the session's
``spark.sql.iceberg.advisory-partition-size`` size the shuffle partitions of a write as in Iceberg on Spark: a
range-distributed write makes about one file per advisory size of shuffled rows, and the session's own setting
is back once the write ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from floe.errors import ValidationError
from floe.spark.write.advisory import (
    ADVISORY_PARTITION_SIZE_SESSION_CONF,
    SPARK_ADVISORY_CONF,
    write_advisory_size,
)
from floe.spark.write.dataframe_write import write_dataframe
from floe.sql.engine import SqlSession
from floe.table.table import Table

pytestmark = pytest.mark.spark

ROWS = "SELECT id, sha2(cast(id AS string), 256) AS s FROM range(0, 200000)"  # ~ 20 MB of shuffled rows


@pytest.fixture()
def many_shuffle_partitions(spark: SparkSession) -> Iterator[None]:
    """Spark's 200 shuffle partitions (Floe's local sessions start with 4, which caps files per write at 4)."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "64")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def _table(session: SqlSession, name: str) -> Table:
    return session.catalog().load_table(("db", name))  # type: ignore[attr-defined,no-any-return]


def _file_count(session: SqlSession, name: str) -> int:
    return int(session.sql(f"SELECT count(*) AS n FROM db.{name}.files")[0].rows[0][0])  # type: ignore[arg-type]


def _sorted_table(session: SqlSession, name: str, properties: str = "") -> None:
    extra = f", {properties}" if properties else ""
    session.sql(f"CREATE TABLE {name} (id bigint, s string) USING iceberg "
                f"TBLPROPERTIES ('write.distribution-mode'='range'{extra})")
    session.sql(f"ALTER TABLE {name} WRITE ORDERED BY id")


@pytest.mark.usefixtures("many_shuffle_partitions")
def test_range_write_makes_a_file_per_advisory_size(session: SqlSession, spark: SparkSession) -> None:
    _sorted_table(session, "dflt")
    _sorted_table(session, "small", "'write.spark.advisory-partition-size-bytes'='1048576'")
    session.sql(f"INSERT INTO dflt {ROWS}")
    session.sql(f"INSERT INTO small {ROWS}")
    # Iceberg Java on the same statements (3M rows, 200 partitions): 3 files by default, 29 at 8 MB.
    default_files, small_files = _file_count(session, "dflt"), _file_count(session, "small")
    assert default_files <= 3, default_files
    assert small_files >= 8, small_files
    assert spark.conf.get(SPARK_ADVISORY_CONF, None) is None  # the session's (unset) value is back
    assert session.sql("SELECT count(*), count(DISTINCT id) FROM small")[0].rows == [(200000, 200000)]


@pytest.mark.usefixtures("many_shuffle_partitions")
def test_write_option_overrides_property_and_session_value_is_kept(session: SqlSession, spark: SparkSession) -> None:
    _sorted_table(session, "opt", "'write.spark.advisory-partition-size-bytes'='1048576'")
    spark.conf.set(SPARK_ADVISORY_CONF, "8m")
    try:
        write_dataframe(_table(session, "opt"), spark.sql(ROWS), options={"advisory-partition-size": str(1 << 30)})
        assert spark.conf.get(SPARK_ADVISORY_CONF) == "8m"
    finally:
        spark.conf.unset(SPARK_ADVISORY_CONF)
    assert _file_count(session, "opt") <= 3


@pytest.mark.usefixtures("many_shuffle_partitions")
def test_session_conf_sits_between_option_and_property(session: SqlSession, spark: SparkSession) -> None:
    """Iceberg's ``spark.sql.iceberg.advisory-partition-size`` beats the table property, as in Iceberg Java."""
    _sorted_table(session, "sess", f"'write.spark.advisory-partition-size-bytes'='{1 << 30}'")
    spark.conf.set(ADVISORY_PARTITION_SIZE_SESSION_CONF, "1048576")
    try:
        write_dataframe(_table(session, "sess"), spark.sql(ROWS))
    finally:
        spark.conf.unset(ADVISORY_PARTITION_SIZE_SESSION_CONF)
    assert _file_count(session, "sess") >= 8


def test_bad_values_are_refused(session: SqlSession, spark: SparkSession) -> None:
    session.sql("CREATE TABLE bad (id bigint) USING iceberg")
    for value in ("0", "-5", "big"):
        with pytest.raises(ValidationError, match="write.spark.advisory-partition-size-bytes"):
            session.sql(f"ALTER TABLE bad SET TBLPROPERTIES ('write.spark.advisory-partition-size-bytes'='{value}')")
    with pytest.raises(ValidationError, match="advisory-partition-size '0'"):
        write_dataframe(_table(session, "bad"), spark.range(3), options={"advisory-partition-size": "0"})
    assert session.sql("SELECT count(*) FROM bad")[0].rows == [(0,)]


def test_overlapping_writes_share_the_largest_size_then_restore(spark: SparkSession) -> None:
    small = {"write.spark.advisory-partition-size-bytes": str(10 << 20)}
    large = {"write.spark.advisory-partition-size-bytes": str(20 << 20)}
    entered, release = threading.Event(), threading.Event()

    def other_write() -> None:
        with write_advisory_size(spark, large, {}):
            entered.set()
            release.wait(30)

    with write_advisory_size(spark, small, {}) as size:
        assert size == 10 << 20 and spark.conf.get(SPARK_ADVISORY_CONF) == str(10 << 20)
        worker = threading.Thread(target=other_write)
        worker.start()
        assert entered.wait(30)
        assert spark.conf.get(SPARK_ADVISORY_CONF) == str(20 << 20)
        release.set()
        worker.join(30)
        assert spark.conf.get(SPARK_ADVISORY_CONF) == str(10 << 20)
    assert spark.conf.get(SPARK_ADVISORY_CONF, None) is None
