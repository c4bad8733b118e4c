"""The ``floe`` command: argument parsing and dispatch only.

    floe sql "USE floe; SHOW TABLES"          run statements (or -f file.sql, or stdin)
    floe shell                                 interactive SQL (history in $FLOE_HOME/history)
    floe tables [NAMESPACE]                    list tables            } answer from metadata alone,
    floe describe|history|snapshots|files T    inspect one table      } without starting Spark
    floe health T | --all NAMESPACE            table health: score, findings, fixing statements (no Spark)
    floe demo                                  the sensordata walkthrough
    floe serve [--host H] [--port P] [--catalog NAME] [--token T ...]   an Iceberg REST catalog server

Common options: ``--conf KEY=VALUE`` (repeatable; Spark-style catalog keys, see floe.config),
``--format table|json|csv``, ``--debug`` (show tracebacks). Errors print one red line on stderr and
exit with status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from floe.cli.output import FORMATS, print_error
from floe.errors import FloeError, ValidationError

__all__ = ["build_parser", "main", "parse_conf_pairs"]


def parse_conf_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` to a dict (later pairs win).

    Raises:
        ValidationError: a pair has no ``=`` or an empty key.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise ValidationError(f"--conf expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        default=default if suppress else [],
        help="configuration, e.g. spark.sql.catalog.hadoop_catalog.type=hadoop (repeatable)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=default if suppress else "table",
        help="output format (default table)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default if suppress else False,
        help="show tracebacks on errors",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (options may come before or after the command)."""
    parser = argparse.ArgumentParser(
        prog="floe", description="Apache Iceberg tables in Python, with Spark moving the data."
    )
    _common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("sql", help="run SQL statements")
    p.add_argument("statements", nargs="?", help="statements separated by ';' (default: stdin)")
    p.add_argument("-f", "--file", help="read statements from a file")
    _common(p, suppress=True)

    p = sub.add_parser("shell", help="interactive SQL shell")
    _common(p, suppress=True)

    p = sub.add_parser("demo", help="run the sensordata walkthrough")
    _common(p, suppress=True)

    p = sub.add_parser("tables", help="list tables (no Spark)")
    p.add_argument("namespace", nargs="?", help="[catalog.]namespace (default: every namespace)")
    _common(p, suppress=True)

    p = sub.add_parser("serve", help="serve a catalog over Iceberg's REST catalog protocol")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8181, help="port (default 8181; 0 takes a free one)")
    p.add_argument("--catalog", help="catalog to serve (default: the default catalog)")
    p.add_argument(
        "--token", action="append", default=[], metavar="T", help="a static bearer token with admin rights (repeatable)"
    )
    _common(p, suppress=True)

    p = sub.add_parser("health", help="table health: score, findings and the statements that fix them (no Spark)")
    p.add_argument("table", nargs="?", help="[catalog.]namespace.table, or the table's location")
    p.add_argument("--all", metavar="NAMESPACE", dest="all_namespace", help="rank every table of a namespace")
    p.add_argument("--orphans", action="store_true", help="also list the table folder for orphan candidates")
    p.add_argument(
        "--record", action="store_true", help="append each report's summary row to <namespace>.floe_health_history"
    )
    p.add_argument("--record-to", metavar="TABLE", help="append the summary rows to this table instead")
    _common(p, suppress=True)

    for name, what in (
        ("describe", "schema, partitioning, properties and location"),
        ("history", "the table's history (snapshot log)"),
        ("snapshots", "the table's snapshots"),
        ("files", "data and delete files of the current snapshot"),
    ):
        p = sub.add_parser(name, help=f"{what} (no Spark)")
        p.add_argument("table", help="[catalog.]namespace.table, or the table's location")
        _common(p, suppress=True)
    return parser


def _run(args: argparse.Namespace) -> int:
    from floe.config import FloeConfig

    config = FloeConfig.load(parse_conf_pairs(args.conf or []))
    cmd = args.command
    if cmd == "sql":
        from floe.cli.sql import run_sql

        return run_sql(config, statements=args.statements, file=args.file, fmt=args.format)
    if cmd == "shell":
        from floe.cli.shell import run_shell

        return run_shell(config, fmt=args.format)
    if cmd == "serve":
        from floe.cli.serve import run_serve

        return run_serve(config, host=args.host, port=args.port, catalog=args.catalog, tokens=args.token)
    if cmd == "health":
        from floe.cli.health import run_health

        return run_health(
            config,
            table=args.table,
            namespace=args.all_namespace,
            fmt=args.format,
            orphans=args.orphans,
            record=args.record,
            record_to=args.record_to,
        )
    if cmd == "demo":
        from floe.cli.demo import run as run_demo

        return int(run_demo(config) or 0)
    from floe.cli import inspect

    return inspect.run(cmd, config, args, fmt=args.format)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``floe`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # the CLI boundary: every failure becomes one line (traceback with --debug)
        if args.debug:
            raise
        message = str(e) if isinstance(e, FloeError) else f"{type(e).__name__}: {e}"
        print_error(message)
        return 1


if __name__ == "__main__":
    sys.exit(main())
