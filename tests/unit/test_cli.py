"""The ``floe`` command, run as a subprocess: help, output formats, one-line errors, no Spark import."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SEED_CREATE = """CREATE TABLE sensordata(
  sensor_id STRING,
  ts BIGINT,
  temperature DOUBLE,
  dt STRING
) USING iceberg
PARTITIONED BY(dt)"""


@pytest.fixture
def sensordata(tmp_path: Path) -> Path:
    """The seed's sensordata table in the embedded catalog of ``tmp_path``, with two appends (metadata only).

    The schema and partitioning come from parsing the seed's CREATE TABLE; the data files are descriptors
    (the inspection commands read metadata and manifests, never data).
    """
    from floe.catalog.loader import open_catalog
    from floe.config import FloeConfig
    from floe.spec.manifest import DataFile, FileContent, FileFormat
    from floe.spec.partitioning import PartitionSpecBuilder
    from floe.sql import CreateTable, parse_statement

    stmt = parse_statement(SEED_CREATE)
    assert isinstance(stmt, CreateTable)
    assert stmt.schema is not None
    builder = PartitionSpecBuilder(stmt.schema)
    for field in stmt.partition_spec:
        builder.identity(field.source)
    cfg = FloeConfig.load(environ={"HOME": str(tmp_path)}, cwd=tmp_path)
    catalog = open_catalog("floe", cfg.catalogs["floe"])
    catalog.create_namespace(("db",))  # type: ignore[attr-defined]
    table = catalog.create_table(("db", "sensordata"), stmt.schema, partition_spec=builder.build())  # type: ignore[attr-defined]
    for i, day in enumerate(("2021-12-01", "2021-12-02")):
        table.append(
            [
                DataFile(
                    content=FileContent.DATA,
                    file_path=f"{table.location()}/data/dt={day}/0000{i}.parquet",
                    file_format=FileFormat.PARQUET,
                    partition=(day,),
                    record_count=1 + i,
                    file_size_in_bytes=1247,
                )
            ]
        )
    return tmp_path


def floe(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    environ["PYTHONPATH"] = str(REPO) + os.pathsep + environ.get("PYTHONPATH", "")
    environ["HOME"] = str(cwd)
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "floe.cli.main", *args],
        cwd=cwd,
        env=environ,
        input=stdin if stdin is not None else "",
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_cli_help_lists_commands_exit_0(tmp_path: Path) -> None:
    proc = floe("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for cmd in ("sql", "shell", "demo", "tables", "describe", "history", "snapshots", "files"):
        assert cmd in proc.stdout


def test_cli_sql_help_mentions_file_option(tmp_path: Path) -> None:
    proc = floe("sql", "--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "--file" in proc.stdout
    assert "--conf" in proc.stdout


def test_cli_sql_json_format_one_array_per_statement(tmp_path: Path) -> None:
    proc = floe("sql", "--format", "json", "SET spark.a=1; SET spark.b = 'two words'", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    arrays = [json.loads(line) for line in proc.stdout.splitlines()]
    assert arrays == [[{"key": "spark.a", "value": "1"}], [{"key": "spark.b", "value": "two words"}]]


def test_cli_sql_csv_format_has_header(tmp_path: Path) -> None:
    proc = floe("sql", "SET spark.x=1;SET", "--format", "csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows == [["key", "value"], ["spark.x", "1"], ["key", "value"], ["spark.x", "1"]]


def test_cli_sql_table_format_aligned_with_row_count(tmp_path: Path) -> None:
    proc = floe("sql", "SET spark.some.long.key=v", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["key", "value"]
    assert lines[2].split() == ["spark.some.long.key", "v"]
    assert lines[0].index("value") == lines[2].index("v")
    assert lines[-1] == "(1 row)"


def test_cli_conf_before_or_after_command_is_used(tmp_path: Path) -> None:
    conf = [
        "--conf",
        "spark.sql.catalog.h.type=hadoop",
        "--conf",
        f"spark.sql.catalog.h.warehouse={tmp_path}/wh",
    ]
    before = floe(*conf, "sql", "SHOW CATALOGS", "--format", "json", cwd=tmp_path)
    after = floe("sql", "SHOW CATALOGS", "--format", "json", *conf, cwd=tmp_path)
    for proc in (before, after):
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == [{"catalog": "floe"}, {"catalog": "h"}]


def test_cli_sql_file_option_runs_script(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text("-- settings\nSET spark.a = 1;\n/* show it */\nSET spark.a;\n")
    proc = floe("sql", "-f", str(script), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == [{"key": "spark.a", "value": "1"}]


def test_cli_sql_reads_stdin_when_no_argument(tmp_path: Path) -> None:
    proc = floe("sql", "--format", "csv", cwd=tmp_path, stdin="SET spark.q=2;")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["key,value", "spark.q,2"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("sql", "SELECT * FROMM t"), "Syntax error at line 1, col 16 near 'FROMM t'"),
        (("sql", "SET spark.a=1;\nGRANT SELECT ON t TO u"), "Unsupported statement: GRANT SELECT ON t TO u"),
        (("sql", "SELECT 'open"), "unterminated string"),
        (("--conf", "novalue", "sql", "SET"), "--conf expects KEY=VALUE, got 'novalue'"),
        (
            ("--conf", "spark.sql.defaultCatalog=nope", "sql", "SET"),
            "Default catalog 'nope' is not configured",
        ),
        (("sql", "-f", "missing.sql"), "SQL file not found: missing.sql"),
        (("sql", "USE CATALOG nope"), "Unknown catalog 'nope'"),
    ],
)
def test_cli_errors_one_red_line_exit_1(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    line = one_error_line(floe(*args, cwd=tmp_path))
    assert fragment in line


def test_cli_error_with_debug_shows_traceback(tmp_path: Path) -> None:
    proc = floe("--debug", "sql", "SELECT * FROMM t", cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_cli_bad_format_is_usage_error_exit_2(tmp_path: Path) -> None:
    proc = floe("sql", "SET", "--format", "xml", cwd=tmp_path)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_cli_shell_reads_multiline_statements_and_survives_errors(tmp_path: Path) -> None:
    stdin = "SET spark.a\n  = 1;\nSELECT * FROMM t;\nSET spark.a;\n"
    proc = floe("shell", "--format", "csv", cwd=tmp_path, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["key,value", "spark.a,1", "key,value", "spark.a,1"]
    assert proc.stderr.strip().splitlines() == [
        "error: Syntax error at line 1, col 16 near 'FROMM t': Invalid expression / Unexpected token"
    ]


def test_cli_tables_runs_without_importing_pyspark_or_sqlglot(sensordata: Path) -> None:
    tmp_path = sensordata
    code = (
        "import sys, time\n"
        "from floe.cli.main import main\n"
        "t = time.perf_counter()\n"
        "rc = main(['tables'])\n"
        "print('RC', rc, 'PYSPARK', 'pyspark' in sys.modules, 'SQLGLOT', 'sqlglot' in sys.modules,"
        " 'SECONDS', time.perf_counter() - t)\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    environ["PYTHONPATH"] = str(REPO)
    environ["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1].split()
    # Latency is measured in bench/cli_latency.py; here only the no-Spark promise is checked.
    assert last[:6] == ["RC", "0", "PYSPARK", "False", "SQLGLOT", "False"], proc.stdout + proc.stderr


def test_cli_tables_lists_catalog_tables(sensordata: Path) -> None:
    proc = floe("tables", "--format", "json", cwd=sensordata)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"namespace": "db", "table": "sensordata"}]
    proc = floe("tables", "floe.db", "--format", "csv", cwd=sensordata)
    assert proc.stdout.splitlines() == ["namespace,table", "db,sensordata"]


def test_cli_describe_identifier_schema_and_partitioning(sensordata: Path) -> None:
    proc = floe("describe", "db.sensordata", "--format", "json", cwd=sensordata)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["col_name"], r["data_type"]) for r in rows[:4]] == [
        ("sensor_id", "string"),
        ("ts", "long"),
        ("temperature", "double"),
        ("dt", "string"),
    ]
    assert {"col_name": "Part 0", "data_type": "dt", "comment": "dt"} in rows
    assert any(r["col_name"] == "Name" and r["data_type"] == "floe.db.sensordata" for r in rows)


def test_cli_history_snapshots_files_from_metadata(sensordata: Path) -> None:
    history = json.loads(floe("history", "floe.db.sensordata", "--format", "json", cwd=sensordata).stdout)
    snapshots = json.loads(floe("snapshots", "db.sensordata", "--format", "json", cwd=sensordata).stdout)
    files = json.loads(floe("files", "db.sensordata", "--format", "json", cwd=sensordata).stdout)
    assert len(history) == 2
    assert all(h["is_current_ancestor"] for h in history)
    assert history[1]["parent_id"] == history[0]["snapshot_id"]
    assert [s["operation"] for s in snapshots] == ["append", "append"]
    assert snapshots[1]["summary"]["total-records"] == "3"
    assert sorted((f["partition"]["dt"], f["record_count"]) for f in files) == [
        ("2021-12-01", 1),
        ("2021-12-02", 2),
    ]


def test_cli_inspect_by_location_matches_identifier(sensordata: Path) -> None:
    by_name = json.loads(floe("describe", "db.sensordata", "--format", "json", cwd=sensordata).stdout)
    location = next(r["data_type"] for r in by_name if r["col_name"] == "Location")
    proc = floe("snapshots", location, "--format", "json", cwd=sensordata)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 2


def test_cli_inspect_missing_table_one_line(sensordata: Path) -> None:
    line = one_error_line(floe("history", "db.nope", cwd=sensordata))
    assert "nope" in line


def test_cli_history_files_hadoop_catalog_import_no_spark_sqlglot_sqlalchemy(tmp_path: Path) -> None:
    from floe.catalog.hadoop import HadoopCatalog
    from floe.spec.manifest import DataFile, FileContent, FileFormat
    from floe.spec.schema import Schema
    from floe.spec.types import LongType, NestedField

    warehouse = tmp_path / "wh"
    catalog = HadoopCatalog("h", warehouse=str(warehouse))
    catalog.create_namespace(("db",))
    table = catalog.create_table(("db", "t"), Schema(NestedField(1, "id", LongType(), required=False)))
    for i in range(3):
        path = f"{table.location()}/data/{i}.parquet"
        table.new_fast_append().append_file(
            DataFile(
                content=FileContent.DATA,
                file_path=path,
                file_format=FileFormat.PARQUET,
                partition=(),
                record_count=10 + i,
                file_size_in_bytes=100,
            )
        ).commit()
    code = (
        "import sys\n"
        "from floe.cli.main import main\n"
        f"conf = ['--conf', 'spark.sql.catalog.h.type=hadoop', '--conf', 'spark.sql.catalog.h.warehouse={warehouse}']\n"
        "rcs = [main([cmd, 'h.db.t', '--format', 'csv', *conf]) for cmd in ('history', 'files')]\n"
        "heavy = ('pyspark', 'sqlglot', 'sqlalchemy', 'floe.table.table', 'floe.scan.planner')\n"
        "print('RCS', *rcs, 'LOADED', *[m for m in heavy if m in sys.modules])\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    environ["PYTHONPATH"] = str(REPO)
    environ["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    # The table layer (producers, expressions, scan planning) and SQL/Spark stacks stay unloaded.
    assert lines[-1].split() == ["RCS", "0", "0", "LOADED"], proc.stdout + proc.stderr
    history = list(csv.reader(lines[1:4]))
    assert len(history) == 3
    assert all(row[3] == "true" for row in history)
    files = list(csv.DictReader(lines[4:-1]))
    assert sorted(int(f["record_count"]) for f in files) == [10, 11, 12]


def test_cli_table_format_many_rows_aligned_and_wide_cells_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    from floe.cli.output import render
    from floe.sql.result import ResultSet

    monkeypatch.setenv("COLUMNS", "40")
    rows = [(i, f"s3://bucket/{'x' * 50}/{i}.parquet", i % 2 == 0) for i in range(1000)]
    text = render(ResultSet(columns=["id", "file_path", "even"], rows=rows), "table")
    lines = text.splitlines()
    assert lines[0].split() == ["id", "file_path", "even"]
    assert set(lines[1]) == {"\u2500"}
    assert lines[-1] == "(1000 rows)"
    assert max(len(line) for line in lines) <= 40
    second = next(k for k, line in enumerate(lines) if line.startswith("1 "))
    first_row = lines[2:second]  # the path folds over several lines; id and even stay in their columns
    assert len(first_row) > 1
    assert first_row[0].split()[0] == "0"
    assert first_row[0].split()[-1] == "true"
    start, end = lines[0].index("file_path"), lines[0].index("even")
    assert "".join(line[start:end].strip() for line in first_row) == rows[0][1]
    assert lines[second].index("false") == first_row[0].index("true") == end


def test_with_console_progress_terminal_turns_progress_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from floe.cli.sql import with_console_progress
    from floe.config import FloeConfig

    config = FloeConfig.load(environ={"FLOE_HOME": str(tmp_path)}, cwd=tmp_path)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert with_console_progress(config).spark_conf["spark.ui.showConsoleProgress"] == "true"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert "spark.ui.showConsoleProgress" not in with_console_progress(config).spark_conf


def test_with_console_progress_user_setting_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from floe.cli.sql import with_console_progress
    from floe.config import FloeConfig

    config = FloeConfig.load(
        {"spark.ui.showConsoleProgress": "false"}, environ={"FLOE_HOME": str(tmp_path)}, cwd=tmp_path
    )
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert with_console_progress(config).spark_conf["spark.ui.showConsoleProgress"] == "false"
