"""Metadata tables and metadata columns through SQL, as Iceberg Java 1.10 on Spark 3.5 shows them:
``position_deletes``, the ``all_`` tables, ``_file``/``_pos``/``_spec_id``/``_partition``, tables named like
metadata tables, and the sort order id Spark writes record."""

from __future__ import annotations

import pytest

from floe.sql.engine import SqlSession


def rows(session: SqlSession, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in session.sql(sql)[-1].rows]


@pytest.fixture(scope="module")
def mor(session: SqlSession) -> str:
    """A partitioned merge-on-read table: 3 rows in x/y, one more in y, row id=1 deleted by position."""
    session.sql(
        "CREATE TABLE mt (id bigint, data string, category string) USING iceberg PARTITIONED BY (category) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    session.sql("INSERT INTO mt SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y') AS v(id, data, category)")
    session.sql("INSERT INTO mt VALUES (4, 'd', 'y')")
    session.sql("DELETE FROM mt WHERE id = 1")
    return "mt"


def test_metadata_columns_pos_counts_deleted_rows(session: SqlSession, mor: str) -> None:
    assert rows(session, f"SELECT id, _pos FROM {mor} ORDER BY id") == [(2, 1), (3, 0), (4, 0)]


def test_metadata_columns_spec_id_and_partition(session: SqlSession, mor: str) -> None:
    got = rows(session, f"SELECT _spec_id, _partition.category FROM {mor} WHERE id = 2")
    assert got == [(0, "x")]


def test_metadata_columns_file_is_the_manifest_path(session: SqlSession, mor: str) -> None:
    files = {r[0] for r in rows(session, f"SELECT file_path FROM {mor}.data_files")}
    assert {r[0] for r in rows(session, f"SELECT _file FROM {mor}")} <= files


def test_metadata_columns_absent_unless_named(session: SqlSession, mor: str) -> None:
    assert session.sql(f"SELECT * FROM {mor}")[-1].columns == ["id", "data", "category"]


def test_position_deletes_lists_the_deleted_position(session: SqlSession, mor: str) -> None:
    assert rows(session, f"SELECT pos, partition.category, spec_id FROM {mor}.position_deletes") == [(0, "x", 0)]


def test_all_files_counts_data_and_delete_files(session: SqlSession, mor: str) -> None:
    assert rows(session, f"SELECT content, count(*) FROM {mor}.all_files GROUP BY content ORDER BY content") == [(0, 3), (1, 1)]


def test_all_files_refuses_version_as_of(session: SqlSession, mor: str) -> None:
    with pytest.raises(Exception, match="all_files"):
        session.sql(f"SELECT count(*) FROM {mor}.all_files VERSION AS OF 'main'")


def test_spark_written_data_files_record_sort_order_zero(session: SqlSession) -> None:
    session.sql("CREATE TABLE sorted_t (id bigint) USING iceberg")
    session.sql("ALTER TABLE sorted_t WRITE ORDERED BY id")
    session.sql("INSERT INTO sorted_t VALUES (2), (1)")
    assert rows(session, "SELECT sort_order_id FROM sorted_t.files") == [(0,)]


def test_table_named_like_a_metadata_table_is_a_table(session: SqlSession) -> None:
    session.sql("CREATE TABLE refs (x int) USING iceberg")
    session.sql("INSERT INTO db.refs VALUES (1)")
    assert rows(session, "SELECT * FROM db.refs") == [(1,)]
