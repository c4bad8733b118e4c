"""``CALL <cat>.system.rewrite_equality_deletes``: equality deletes become position deletes (deletion vectors
on v3) naming exactly the rows they removed, and the equality delete files go in the same row delta.

Every scenario is checked against a Python model of the table: inserts append rows, an equality delete
removes the rows present at that moment (so never rows added later) in its partition, or in every
partition when written with an unpartitioned spec, matching keys null-safely. Rows are compared before
and after the conversion, and no equality delete file may be left.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _delete_files import write_equality_delete
from _sql_helpers import hadoop_lake, iceberg_catalog
from pyspark.sql import SparkSession

import floe.spark
import floe.spark.procedures.rewrite_equality_deletes as conversion
from floe.errors import CommitConflictError, ValidationError
from floe.maintenance.dangling_deletes import live_entries
from floe.maintenance.equality_delete_conversion import CONVERSION_SUMMARY_KEY
from floe.spark.procedures.rewrite_equality_deletes import rewrite_equality_deletes
from floe.spark.scan.table_read import load_table
from floe.spec.manifest import FileContent, FileFormat
from floe.sql.engine import SqlSession
from floe.table.table import Table
from floe.write import write
from tests.conftest import Jsql

pytestmark = pytest.mark.spark

_N = itertools.count()
Row = tuple[Any, ...]  # (id, dt, v)


@dataclass
class Model:
    """The table's rows as the spec defines them: each delete removes what is there when it commits."""

    rows: list[Row] = field(default_factory=list)

    def insert(self, rows: list[Row]) -> None:
        self.rows += rows

    def delete_keys(self, cols: tuple[int, ...], keys: set[tuple[Any, ...]], dt: str | None) -> None:
        # Python's None == None is the spec's null-safe equality
        self.rows = [r for r in self.rows if not ((dt is None or r[1] == dt) and tuple(r[c] for c in cols) in keys)]

    def delete_where(self, pred: Callable[[Row], bool]) -> None:
        self.rows = [r for r in self.rows if not pred(r)]

    def sorted(self) -> list[Row]:
        return sorted(self.rows, key=repr)


def _table(session: SqlSession, name: str) -> Table:
    t = session.catalog().load_table(f"db.{name}")  # type: ignore[attr-defined]
    assert isinstance(t, Table)
    return t


def _rows(spark: SparkSession, t: Table) -> list[Row]:
    return sorted((tuple(r) for r in floe.spark.read(spark, t.refresh()).collect()), key=repr)


def _insert(session: SqlSession, name: str, model: Model, rows: list[Row]) -> None:
    def lit(x: Any) -> str:
        return "NULL" if x is None else (f"'{x}'" if isinstance(x, str) else str(x))

    session.sql(f"INSERT INTO db.{name} VALUES " + ", ".join("(" + ", ".join(map(lit, r)) + ")" for r in rows))
    model.insert(rows)


def _eq_delete(t: Table, model: Model, names: tuple[str, ...], keys: list[tuple[Any, ...]], dt: str | None,
               *, spec_id: int = 0) -> None:
    """An equality delete on ``names`` in partition ``dt`` (None: written unpartitioned, a global delete)."""
    schema = t.refresh().schema()
    fields = [schema.find_field(n) for n in names]
    arrow = pa.table({n: pa.array([k[i] for k in keys], pa.int32() if n == "id" else pa.string())
                      for i, n in enumerate(names)})
    write_equality_delete(t, f"eq-{next(_N)}.parquet", arrow, schema=schema, equality_ids=tuple(f.field_id for f in fields),
                          partition=() if dt is None else (dt,), spec_id=spec_id)
    cols = tuple({"id": 0, "dt": 1, "v": 2}[n] for n in names)
    model.delete_keys(cols, set(keys), dt)


def _contents(t: Table) -> dict[str, int]:
    snap = t.refresh().current_snapshot()
    assert snap is not None
    out: dict[str, int] = {}
    for e in live_entries(t, snap):
        f = e.data_file
        kind = "dv" if f.file_format == FileFormat.PUFFIN else f.content.name.lower()
        out[kind] = out.get(kind, 0) + 1
    return out


def _create(session: SqlSession, fmt: int, *, partitioned: bool = True) -> str:
    name = f"eq_{next(_N)}"
    session.sql(
        f"CREATE TABLE db.{name} (id INT, dt STRING, v STRING) USING iceberg "
        + ("PARTITIONED BY (dt) " if partitioned else "")
        + f"TBLPROPERTIES ('format-version'='{fmt}', 'write.delete.mode'='merge-on-read')"
    )
    return name


def _story(session: SqlSession, fmt: int) -> tuple[str, Table, Model]:
    """A partitioned table with null keys, a two-column key, rows re-added after their delete, and
    position deletes (or a vector) on a data file the equality deletes also reach."""
    name, model = _create(session, fmt), Model()
    _insert(session, name, model, [(i, "a" if i % 2 else "b", f"v{i}") for i in range(12)] + [(None, "a", "n1"), (None, "b", "n2")])
    t = _table(session, name)
    _eq_delete(t, model, ("id",), [(1,), (3,), (None,)], "a")
    _insert(session, name, model, [(1, "a", "again"), (3, "b", "b3"), (None, "a", "n3"), (20, "b", "v20")])
    session.sql(f"DELETE FROM db.{name} WHERE v IN ('v5', 'v4')")
    model.delete_where(lambda r: r[2] in ("v5", "v4"))
    _eq_delete(t, model, ("id",), [(2,), (20,), (3,)], "b")
    _eq_delete(t, model, ("id", "v"), [(7, "v7"), (9, "other"), (1, "again")], "a")
    return name, t, model


@pytest.mark.parametrize("fmt", [2, 3])
def test_conversion_keeps_rows_and_leaves_no_equality_deletes(session: SqlSession, spark: SparkSession, fmt: int) -> None:
    name, t, model = _story(session, fmt)
    assert _rows(spark, t) == model.sorted()
    before = _contents(t)
    assert before["equality_deletes"] == 3
    out = session.sql(f"CALL system.rewrite_equality_deletes(table => 'db.{name}')")[-1]
    assert out.columns[:2] == ["rewritten_delete_files_count", "added_delete_files_count"]
    assert out.rows[0][0] == 3 and out.rows[0][1] > 0
    after = _contents(t)
    assert "equality_deletes" not in after and after["data"] == before["data"]
    assert ("dv" in after) == (fmt == 3) and ("position_deletes" in after) == (fmt == 2)
    assert _rows(spark, t) == model.sorted()
    assert t.current_snapshot().summary.get(CONVERSION_SUMMARY_KEY) == "true"  # type: ignore[union-attr]
    # nothing left: a second call commits nothing
    snap = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert session.sql(f"CALL system.rewrite_equality_deletes(table => 'db.{name}')")[-1].rows[0][0] == 0
    assert t.refresh().current_snapshot().snapshot_id == snap  # type: ignore[union-attr]


def test_global_delete_reaches_every_partition_but_not_later_rows(session: SqlSession, spark: SparkSession) -> None:
    name, model = _create(session, 2), Model()
    _insert(session, name, model, [(1, "a", "x"), (1, "b", "y"), (2, "b", "z"), (None, "a", "n")])
    session.sql(f"ALTER TABLE db.{name} DROP PARTITION FIELD dt")  # spec 1 is unpartitioned
    t = _table(session, name)
    _insert(session, name, model, [(1, "c", "later-before")])
    spec = t.refresh().spec().spec_id
    _eq_delete(t, model, ("id",), [(1,), (None,)], None, spec_id=spec)
    _insert(session, name, model, [(1, "a", "after"), (None, "b", "after-null")])
    assert _rows(spark, t) == model.sorted()
    # a where selects partitions: a global delete belongs to all of them, so it stays
    res = rewrite_equality_deletes(t, spark=spark, where="dt = 'a'")
    assert res.rewritten_delete_files_count == 0 and _contents(t).get("equality_deletes") == 1
    res = rewrite_equality_deletes(t, spark=spark)
    assert res.rewritten_delete_files_count == 1
    assert "equality_deletes" not in _contents(t)
    assert _rows(spark, t) == model.sorted() == sorted(
        [(2, "b", "z"), (1, "a", "after"), (None, "b", "after-null")], key=repr)


def test_unpartitioned_table_v3_merges_with_existing_vectors(session: SqlSession, spark: SparkSession) -> None:
    name, model = _create(session, 3, partitioned=False), Model()
    _insert(session, name, model, [(i, "a", f"v{i}") for i in range(10)])
    session.sql(f"DELETE FROM db.{name} WHERE id = 0")  # a deletion vector on the one data file
    model.delete_where(lambda r: r[0] == 0)
    t = _table(session, name)
    # the data files that hold ids 1 and 2 (the rows of one INSERT may land in several files)
    files = {r[1] for r in floe.spark.read(spark, t, metadata_columns=("_file",)).where("id IN (1, 2)")
             .select("id", "_file").collect()}
    _eq_delete(t, model, ("id",), [(1,), (2,), (0,)], None)
    before = _contents(t)
    assert (before["dv"], before["equality_deletes"]) == (1, 1)
    res = rewrite_equality_deletes(t, spark=spark)
    assert (res.rewritten_delete_files_count, res.added_delete_files_count) == (1, len(files))
    owner = _vector_owner(t)
    # id 0's vector is merged into its file's new one when the conversion writes one for that file
    assert res.removed_delete_files_count == (1 if owner in files else 0)
    assert _contents(t) == {"data": before["data"], "dv": len(files | {owner})}
    owners = [e.data_file.referenced_data_file for e in live_entries(t, t.current_snapshot())  # type: ignore[arg-type]
              if e.data_file.file_format == FileFormat.PUFFIN]
    assert len(owners) == len(set(owners))  # one vector per data file
    assert _rows(spark, t) == model.sorted()


def _vector_owner(t: Table) -> str:
    """The data file of the vector the table had before the conversion (its first DELETE's)."""
    first = next(s for s in t.snapshots() if str(s.operation) == "delete")
    return next(e.data_file.referenced_data_file for e in live_entries(t, first)
                if e.data_file.file_format == FileFormat.PUFFIN) or ""


def test_where_converts_only_matching_partitions(session: SqlSession, spark: SparkSession) -> None:
    name, model = _create(session, 2), Model()
    _insert(session, name, model, [(1, "a", "x"), (2, "b", "y"), (3, "c", "z")])
    t = _table(session, name)
    for dt, key in (("a", 1), ("b", 2), ("c", 3)):
        _eq_delete(t, model, ("id",), [(key,)], dt)
    out = session.sql(f"CALL system.rewrite_equality_deletes(table => 'db.{name}', where => 'dt = \\'a\\' OR dt = \\'c\\'')")[-1]
    assert out.rows[0][0] == 2
    left = [e.data_file.partition for e in live_entries(t.refresh(), t.current_snapshot())  # type: ignore[arg-type]
            if e.data_file.content == FileContent.EQUALITY_DELETES]
    assert left == [("b",)]
    assert _rows(spark, t) == model.sorted() == []


def test_where_on_a_column_that_is_not_a_partition_source_is_refused(session: SqlSession) -> None:
    name = _create(session, 2)
    with pytest.raises(ValidationError, match=rf"rewrite_equality_deletes of table .*{name}: where may name only "
                                              r"partition source columns .* id is not one"):
        session.sql(f"CALL system.rewrite_equality_deletes(table => 'db.{name}', where => 'id = 1')")
    with pytest.raises(ValidationError, match=r"Cannot use options \[bogus\]"):
        session.sql(f"CALL system.rewrite_equality_deletes(table => 'db.{name}', options => map('bogus', '1'))")


def _with_concurrent(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None], times: int) -> list[int]:
    """Run ``action`` (another writer's commit) just before the conversion's commit, ``times`` times."""
    calls: list[int] = []
    real = conversion.commit_conversion

    def commit(*args: Any, **kwargs: Any) -> None:
        if len(calls) < times:
            calls.append(1)
            action()
        real(*args, **kwargs)

    monkeypatch.setattr(conversion, "commit_conversion", commit)
    return calls


def test_concurrent_append_of_deleted_keys_keeps_its_rows(session: SqlSession, spark: SparkSession,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    name, model = _create(session, 2), Model()
    _insert(session, name, model, [(1, "a", "x"), (2, "a", "y")])
    t = _table(session, name)
    _eq_delete(t, model, ("id",), [(1,)], "a")
    calls = _with_concurrent(monkeypatch, lambda: _insert(session, name, model, [(1, "a", "concurrent")]), 1)
    res = rewrite_equality_deletes(t, spark=spark)
    assert calls and res.rewritten_delete_files_count == 1  # no conflict: the new row is never named
    assert _rows(spark, t) == model.sorted() == [(1, "a", "concurrent"), (2, "a", "y")]
    assert "equality_deletes" not in _contents(t)


def test_concurrent_change_of_a_named_file_conflicts_and_is_planned_again(session: SqlSession, spark: SparkSession,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    name, model = _create(session, 3), Model()
    _insert(session, name, model, [(1, "a", "x"), (2, "a", "y"), (3, "a", "z")])
    t = _table(session, name)
    _eq_delete(t, model, ("id",), [(1,)], "a")

    def concurrent_delete() -> None:  # replaces the data file's vector the conversion merges with
        session.sql(f"DELETE FROM db.{name} WHERE id = 2")
        model.delete_where(lambda r: r[0] == 2)

    session.sql(f"DELETE FROM db.{name} WHERE id = 3")  # a first vector, which the conversion replaces
    model.delete_where(lambda r: r[0] == 3)
    calls = _with_concurrent(monkeypatch, concurrent_delete, 1)
    res = rewrite_equality_deletes(t, spark=spark)
    assert calls == [1] and res.rewritten_delete_files_count == 1
    assert _contents(t) == {"data": 1, "dv": 1}
    assert _rows(spark, t) == model.sorted() == []


@pytest.mark.slow  # four compactions and conversions: about 20 s
def test_conversion_conflicting_every_time_fails_clearly_and_keeps_the_deletes(
        session: SqlSession, spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    name, model = _create(session, 2), Model()
    _insert(session, name, model, [(1, "a", "x"), (2, "a", "y")])
    t = _table(session, name)
    _eq_delete(t, model, ("id",), [(1,)], "a")
    session.sql(f"DELETE FROM db.{name} WHERE id = 2")  # a file-scoped position delete file, merged by the conversion
    model.delete_where(lambda r: r[0] == 2)
    n = itertools.count()

    def rewrite() -> None:
        # compaction replaces the data file the conversion names; then a row the next plan must name
        session.sql(f"CALL system.rewrite_data_files(table => 'db.{name}', options => map('rewrite-all', 'true'))")
        _insert(session, name, model, [(1, "a", f"more{next(n)}")])
        _eq_delete(t, model, ("id",), [(1,)], "a")

    _with_concurrent(monkeypatch, rewrite, 100)
    with pytest.raises(CommitConflictError, match="concurrent snapshot"):
        rewrite_equality_deletes(t, spark=spark)
    assert _contents(t).get("equality_deletes", 0) >= 1
    assert _rows(spark, t) == model.sorted()
    # what the failed attempts wrote is deleted: every delete file on disk is one some snapshot lists
    data = Path(t.location().removeprefix("file:")) / "data"
    named = {Path(str(r["data_file"]["file_path"]).removeprefix("file:")).name for r in t.inspect.all_entries().to_pylist()}
    assert [p.name for p in data.rglob("*-deletes.parquet") if p.name not in named] == []


# -- the schedule: writers convert every N commits --------------------------------------------------------


def _upsert_table(session: SqlSession, props: str = "") -> tuple[str, Table]:
    name = f"up_{next(_N)}"
    session.sql(f"CREATE TABLE db.{name} (id INT NOT NULL, data STRING, PRIMARY KEY (id) NOT ENFORCED) USING iceberg "
                f"TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='true'{props})")
    return name, _table(session, name)


def test_upsert_writes_convert_every_n_commits_by_table_property(session: SqlSession, spark: SparkSession) -> None:
    _, t = _upsert_table(session, ", 'write.rewrite-equality-deletes.commit-count'='2'")
    model: dict[int, str] = {}
    for i, batch in enumerate([[(1, "a"), (2, "b")], [(1, "a2")], [(2, "b2"), (3, "c")], [(3, "c2")]]):
        t.append(spark.createDataFrame(batch, "id int, data string").coalesce(1))
        model.update(batch)
        assert sorted(tuple(r) for r in floe.spark.read(spark, t.refresh()).collect()) == sorted(model.items())
        converted = [s for s in t.snapshots() if (s.summary or {}).get(CONVERSION_SUMMARY_KEY) == "true"]
        # every upsert commit adds an equality delete of its keys: every second one is converted after it
        assert len(converted) == [0, 1, 1, 2][i], f"after batch {i}"
    assert "equality_deletes" not in _contents(t)
    with pytest.raises(ValidationError, match="rewrite-equality-deletes.commit-count needs a Spark DataFrame"):
        write(t, pa.table({"id": pa.array([9], pa.int32()), "data": ["z"]}),
              options={"rewrite-equality-deletes.commit-count": "1"})


def test_schedule_values_are_checked(session: SqlSession, spark: SparkSession) -> None:
    name, t = _upsert_table(session)
    with pytest.raises(ValidationError, match=r"write.rewrite-equality-deletes.commit-count must be an integer"):
        session.sql(f"ALTER TABLE db.{name} SET TBLPROPERTIES ('write.rewrite-equality-deletes.commit-count'='often')")
    with pytest.raises(ValidationError, match=r"must be an integer >= 0"):
        session.sql(f"ALTER TABLE db.{name} SET TBLPROPERTIES ('write.rewrite-equality-deletes.commit-count'='-1')")
    df = spark.createDataFrame([(1, "a")], "id int, data string")
    with pytest.raises(ValidationError, match=rf"Write to table .*{name}: write option rewrite-equality-deletes.commit-count "
                                              r"must be an integer >= 0 .* got 'x'"):
        write(t, df, options={"rewrite-equality-deletes.commit-count": "x"})
    assert t.refresh().current_snapshot() is None  # nothing committed


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    with hadoop_lake(spark, tmp_path, "eqc") as name:
        yield name


def test_stream_option_converts_and_plain_appends_refuse_it(spark: SparkSession, lake: str, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    spark.sql(f"CREATE TABLE {lake}.db.s (id INT NOT NULL, data STRING, PRIMARY KEY (id) NOT ENFORCED) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.upsert.enabled'='true')")
    feed = tmp_path / "feed"
    feed.mkdir()
    model: dict[int, str] = {}
    for i, batch in enumerate([[(1, "a"), (2, "b")], [(1, "a2")], [(2, "b2")]]):
        pq.write_table(pa.table({"id": pa.array([k for k, _ in batch], pa.int32()), "data": [v for _, v in batch]}),
                       feed / f"b{i}.parquet")
        stream = spark.readStream.schema("id int, data string").parquet(str(feed))
        (stream.writeStream.format("iceberg").option("checkpointLocation", str(tmp_path / "cp"))
         .option("rewrite-equality-deletes.commit-count", "1").trigger(availableNow=True)
         .toTable(f"{lake}.db.s").awaitTermination())
        model.update(batch)
    t = load_table(spark, f"{lake}.db.s")
    assert isinstance(t, Table)
    assert sorted(tuple(r) for r in spark.table(f"{lake}.db.s").collect()) == sorted(model.items())
    assert "equality_deletes" not in _contents(t)
    assert sum((s.summary or {}).get(CONVERSION_SUMMARY_KEY) == "true" for s in t.snapshots()) == 3
    spark.sql(f"CREATE TABLE {lake}.db.p (id INT, data STRING) USING iceberg")
    with pytest.raises(Exception, match="rewrite-equality-deletes.commit-count applies to changelogs"):
        (spark.readStream.schema("id int, data string").parquet(str(feed)).writeStream.format("iceberg")
         .option("checkpointLocation", str(tmp_path / "cp2")).option("rewrite-equality-deletes.commit-count", "1")
         .trigger(availableNow=True).toTable(f"{lake}.db.p"))


# -- Iceberg Java reads the converted tables --------------------------------------------------------------


@pytest.mark.slow
def test_iceberg_java_reads_converted_tables_equal(spark: SparkSession, tmp_path: Path, jsql: Jsql) -> None:
    from _sql_parity import catalog_conf

    conf = catalog_conf(tmp_path)
    props = {k.removeprefix("spark.sql.catalog.cat."): v for k, v in conf.items() if k.startswith("spark.sql.catalog.cat.")}
    expected: dict[int, list[list[Any]]] = {}
    with iceberg_catalog(spark, "cat", **props):
        spark.sql("CREATE NAMESPACE IF NOT EXISTS cat.db")
        for fmt in (2, 3):
            spark.sql(f"CREATE TABLE cat.db.t{fmt} (id INT, dt STRING, v STRING) USING iceberg PARTITIONED BY (dt) "
                      f"TBLPROPERTIES ('format-version'='{fmt}', 'write.delete.mode'='merge-on-read')")
            spark.sql(f"INSERT INTO cat.db.t{fmt} VALUES (1, 'a', 'x'), (2, 'a', 'y'), (NULL, 'b', 'n'), (3, 'b', 'z')")
            spark.sql(f"DELETE FROM cat.db.t{fmt} WHERE id = 2")
            t = load_table(spark, f"cat.db.t{fmt}")
            assert isinstance(t, Table)
            _eq_delete(t, Model([]), ("id",), [(1,)], "a")
            _eq_delete(t, Model([]), ("id",), [(None,)], "b")
            spark.sql(f"INSERT INTO cat.db.t{fmt} VALUES (1, 'a', 'again')")
            spark.sql(f"CALL cat.system.rewrite_equality_deletes(table => 'db.t{fmt}')")
            assert "equality_deletes" not in _contents(t)
            expected[fmt] = [list(r) for r in spark.sql(f"SELECT id, dt, v FROM cat.db.t{fmt} ORDER BY v").collect()]
            assert expected[fmt] == [[1, "a", "again"], [3, "b", "z"]]
    out = jsql.run([q for fmt in (2, 3) for q in (
        f"SELECT id, dt, v FROM cat.db.t{fmt} ORDER BY v",
        f"SELECT content, count(*) FROM cat.db.t{fmt}.files GROUP BY content ORDER BY content")], conf)
    for i, fmt in enumerate((2, 3)):
        assert out[2 * i]["rows"] == expected[fmt]
        assert [r[0] for r in out[2 * i + 1]["rows"]] == [0, 1]  # data and position deletes/vectors, no equality
