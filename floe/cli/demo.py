"""``floe demo``: the seed book's sensordata story, end to end, on the embedded catalog.

Runs in namespace ``demo`` of the embedded catalog (SQLite + local warehouse in ``$FLOE_HOME``, default
``./.floe``): create a table partitioned by ``dt``, insert, static and dynamic overwrite, delete a
partition (metadata only), hidden partitioning by days/months/years, history and snapshots, time travel
to a snapshot id, and a rollback. Every statement is printed with its result. Re-runnable: the
namespace's tables are dropped (with their files) first.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from floe.cli.output import render
from floe.cli.sql import make_session
from floe.config import EMBEDDED_CATALOG, FloeConfig
from floe.sql.lexer import split_statements
from floe.sql.parser import parse_statement
from floe.sql.result import ResultSet

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from floe.sql.engine import SqlSession

__all__ = ["NAMESPACE", "run"]

NAMESPACE = "demo"


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of the story: what it shows, then its statements (``{name}`` filled from earlier results)."""

    title: str
    sql: str


_CREATE = """CREATE TABLE sensordata (
  sensor_id STRING,
  ts BIGINT,
  temperature DOUBLE,
  dt STRING
) USING iceberg
PARTITIONED BY (dt)"""

_STORY: tuple[_Step, ...] = (
    _Step("A table partitioned by dt (metadata only: no data files yet)", _CREATE + ";\nDESC sensordata"),
    _Step("Append one row", "INSERT INTO sensordata VALUES ('sensor_01', 1635743301, -12.1, '2021-12-01')"),
    _Step(
        "Static INSERT OVERWRITE without PARTITION replaces the whole table",
        "INSERT OVERWRITE sensordata VALUES ('sensor_02', 1635743301, 23.6, '2021-12-01');\nSELECT * FROM sensordata",
    ),
    _Step(
        "Append rows in two more partitions",
        "INSERT INTO sensordata VALUES ('sensor_02', 1638421701, -22.2, '2021-12-02'),"
        " ('sensor_03', 1638508101, 17.5, '2021-12-03');\nSELECT * FROM sensordata ORDER BY dt",
    ),
    _Step(
        "Dynamic overwrite replaces only the partitions the new rows land in (2021-12-03)",
        "SET spark.sql.sources.partitionOverwriteMode=dynamic;\n"
        "INSERT OVERWRITE sensordata VALUES ('sensor_04', 1638508200, 19.5, '2021-12-03');\n"
        "SELECT * FROM sensordata ORDER BY dt",
    ),
    _Step(
        "Deleting a whole partition is a metadata-only commit (no file is rewritten)",
        "DELETE FROM sensordata WHERE dt = '2021-12-02';\nSELECT * FROM sensordata ORDER BY dt",
    ),
    _Step(
        "Hidden partitioning: days(ts) - queries filter on ts, Iceberg derives the partition",
        "CREATE TABLE sensordata_days (sensor_id STRING, ts TIMESTAMP, temperature DOUBLE)"
        " USING iceberg PARTITIONED BY (days(ts));\n"
        "INSERT INTO sensordata_days VALUES ('sensor_01', CAST(1639816497 AS TIMESTAMP), 10.2),"
        " ('sensor_01', CAST(1639730097 AS TIMESTAMP), 12.3);\n"
        "SELECT * FROM sensordata_days ORDER BY ts;\n"
        "SELECT partition, record_count, file_path FROM {catalog}.demo.sensordata_days.files",
    ),
    _Step(
        "... months(ts) and years(ts)",
        "CREATE TABLE sensordata_months (sensor_id STRING, ts TIMESTAMP, temperature DOUBLE)"
        " USING iceberg PARTITIONED BY (months(ts));\n"
        "INSERT INTO sensordata_months VALUES ('sensor_01', CAST(1637138097 AS TIMESTAMP), 10.2),"
        " ('sensor_01', CAST(1639730097 AS TIMESTAMP), 12.3);\n"
        "SELECT partition, record_count FROM {catalog}.demo.sensordata_months.files;\n"
        "CREATE TABLE sensordata_years (sensor_id STRING, ts TIMESTAMP, temperature DOUBLE)"
        " USING iceberg PARTITIONED BY (years(ts));\n"
        "INSERT INTO sensordata_years VALUES ('sensor_01', CAST(1608194097 AS TIMESTAMP), 10.2),"
        " ('sensor_01', CAST(1639730097 AS TIMESTAMP), 12.3);\n"
        "SELECT partition, record_count FROM {catalog}.demo.sensordata_years.files",
    ),
    _Step(
        "Every commit is a snapshot: history and snapshots metadata tables",
        "SELECT * FROM {catalog}.demo.sensordata.history;\n"
        "SELECT h.made_current_at, s.operation, h.snapshot_id, h.is_current_ancestor,"
        " s.summary['added-records'] AS added, s.summary['total-records'] AS total\n"
        "FROM {catalog}.demo.sensordata.history h JOIN {catalog}.demo.sensordata.snapshots s"
        " ON h.snapshot_id = s.snapshot_id ORDER BY made_current_at",
    ),
    _Step(
        "Time travel: the table as of the static overwrite's snapshot",
        "SELECT * FROM sensordata VERSION AS OF {overwrite_id}",
    ),
    _Step(
        "Roll back to the snapshot before the DELETE (the 2021-12-02 partition comes back)",
        "CALL {catalog}.system.rollback_to_snapshot('demo.sensordata', {before_delete_id});\n"
        "SELECT * FROM sensordata ORDER BY dt",
    ),
)


class _Printer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def title(self, n: int, text: str) -> None:
        self.out.write(f"\n== {n}. {text}\n")

    def statement(self, sql: str) -> None:
        lines = sql.strip().splitlines()
        self.out.write("floe> " + "\n   -> ".join(lines) + ";\n")

    def result(self, result: ResultSet) -> None:
        if result.columns:
            self.out.write(render(result, "table") + "\n")
        elif result.message:
            self.out.write(result.message + "\n")
        self.out.flush()


def _reset(session: SqlSession, catalog: str, printer: _Printer) -> None:
    """Start from an empty ``demo`` namespace: drop (and purge) what an earlier run left."""
    setup = f"CREATE NAMESPACE IF NOT EXISTS {catalog}.{NAMESPACE}"
    printer.statement(setup)
    session.execute(parse_statement(setup))
    for _, table, _ in session.sql(f"SHOW TABLES IN {catalog}.{NAMESPACE}")[-1].rows:
        drop = f"DROP TABLE {catalog}.{NAMESPACE}.{table} PURGE"
        printer.statement(drop)
        printer.result(session.execute(parse_statement(drop)))
    use = f"USE {catalog}.{NAMESPACE}"
    printer.statement(use)
    session.execute(parse_statement(use))


def _snapshot_ids(session: SqlSession, catalog: str) -> dict[str, object]:
    result = session.sql(
        f"SELECT snapshot_id, operation FROM {catalog}.{NAMESPACE}.sensordata.snapshots ORDER BY committed_at"
    )[-1]
    ops = [(r[0], r[1]) for r in result.rows]
    overwrite = next(sid for sid, op in ops if op == "overwrite")
    delete_at = next(i for i, (_, op) in enumerate(ops) if op == "delete")
    return {"overwrite_id": overwrite, "before_delete_id": ops[delete_at - 1][0]}


def run(config: FloeConfig, *, spark: SparkSession | None = None, out: TextIO | None = None) -> int:
    """Run the walkthrough, printing each statement and its result.

    Args:
        config: the configuration; the embedded catalog ``floe`` is used (else the default catalog).
        spark: a SparkSession to use (default: Floe starts one when the first INSERT needs it).
        out: where to print (default stdout).

    Returns:
        0 on success (errors propagate to the CLI, which prints one line).
    """
    printer = _Printer(out or sys.stdout)
    catalog = EMBEDDED_CATALOG if EMBEDDED_CATALOG in config.catalogs else config.default_catalog
    session = make_session(config, spark=spark)
    session.execute(parse_statement(f"USE {catalog}"))
    printer.out.write(f"Floe demo: the sensordata story in {catalog}.{NAMESPACE} (FLOE_HOME={config.home})\n")
    _reset(session, catalog, printer)
    values: dict[str, object] = {"catalog": catalog}
    for n, step in enumerate(_STORY, start=1):
        if "{overwrite_id}" in step.sql or "{before_delete_id}" in step.sql:
            values.update(_snapshot_ids(session, catalog))
        printer.title(n, step.title)
        for part in split_statements(step.sql.format(**values)):
            printer.statement(part.sql)
            printer.result(session.execute(parse_statement(part.sql, line=part.line, col=part.col)))
    printer.out.write("\nDone. Explore further with: floe shell   (tables are in namespace demo)\n")
    return 0
