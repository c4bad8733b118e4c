"""``floe sql``: run a script's statements in order, printing each result."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from floe.cli.output import print_result
from floe.config import FloeConfig
from floe.errors import NoSuchFileError, ValidationError
from floe.sql.engine import SqlSession
from floe.sql.handlers import register_handlers
from floe.sql.lexer import split_statements
from floe.sql.parser import parse_statement
from floe.sql.spark_engine import SparkEngine, register_spark_engine_loader

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["make_session", "read_script", "run_sql", "with_console_progress"]


def make_session(config: FloeConfig, *, spark: SparkSession | None = None) -> SqlSession:
    """The session the CLI runs statements in (the one place that wires statement handlers).

    Args:
        config: the resolved configuration.
        spark: a SparkSession to use; by default one starts on the first statement that needs Spark.
    """
    register_spark_engine_loader(_load_spark_engine)
    session = SqlSession(with_console_progress(config))
    register_handlers(session, spark=spark)
    return session


def _load_spark_engine() -> SparkEngine:
    """floe.spark (pyspark) is imported on the first statement that needs Spark: SHOW, USE or DDL do not."""
    from floe.spark.runtime.sql_engine import SPARK_ENGINE

    return SPARK_ENGINE


_PROGRESS_KEY = "spark.ui.showConsoleProgress"


def with_console_progress(config: FloeConfig) -> FloeConfig:
    """Show Spark's stage progress bar on an interactive terminal, unless the user set it either way.

    Long INSERT/SELECT jobs then show ``[Stage 3:=====>  (5 + 2) / 8]`` on stderr, as spark-sql does;
    scripts and pipes (stderr not a terminal) stay clean.
    """
    if _PROGRESS_KEY in config.spark_conf or not sys.stderr.isatty():
        return config
    return dataclasses.replace(config, spark_conf={**config.spark_conf, _PROGRESS_KEY: "true"})


def read_script(statements: str | None, file: str | None) -> str:
    """The SQL to run: the argument, the file, or stdin when it is not a terminal.

    Raises:
        ValidationError: nothing to run, or both an argument and a file.
        NoSuchFileError: the file does not exist.
    """
    if statements is not None and file is not None:
        raise ValidationError("give statements or -f FILE, not both")
    if file is not None:
        path = Path(file)
        if not path.is_file():
            raise NoSuchFileError(f"SQL file not found: {file}")
        return path.read_text(encoding="utf-8")
    if statements is not None:
        return statements
    if not sys.stdin.isatty():
        return sys.stdin.read()
    raise ValidationError(
        "nothing to run: give statements (\"floe sql 'SHOW TABLES'\"), -f FILE, or SQL on stdin"
    )


def run_sql(config: FloeConfig, *, statements: str | None, file: str | None, fmt: str) -> int:
    """Parse and run each statement, printing results; the first error stops the script."""
    script = read_script(statements, file)
    session = make_session(config)
    parts = split_statements(script)
    if not parts:
        raise ValidationError("no SQL statements to run")
    for part in parts:
        stmt = parse_statement(part.sql, line=part.line, col=part.col)
        print_result(session.execute(stmt), fmt)
    return 0
